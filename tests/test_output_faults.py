"""Outputs under faults (issue 13): a full disk never destroys a baseline or a report, FIFOs and devices are refused
as baselines instead of hanging, closed or full standard output is one line and exit 2, `triage diff` refuses
malformed reports and redacts what it prints. Every subprocess here has a timeout: nothing can hang the suite."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from realcases import case, cli  # noqa: F401  (cli is a fixture)

from triage.report import outputs

TIMEOUT = 60


def triage(*args: object, **kw: object) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "triage", *map(str, args)], capture_output=True, text=True,
                          timeout=TIMEOUT, **kw)  # type: ignore[call-overload]


@pytest.fixture
def full_disk(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every write stops with ENOSPC after its first 10 bytes reached the file (what a full disk does midway)."""
    written: list[int] = []
    real = os.write

    def write_all(fd: int, data: bytes) -> None:
        written.append(real(fd, data[:10]))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(outputs, "write_all", write_all)
    return written


ANNOTATED = {"triage_baseline": 1, "entries": [{"fingerprint": "abc", "rule": "trainer.cuda-oom", "file": "train.log",
                                                "title": "t", "reason": "known OOM", "ticket": "RL-42",
                                                "expires": "2099-01-01"}]}


def test_a_full_disk_leaves_the_annotated_baseline_as_it_was(cli, tmp_path: Path, full_disk: list[int]) -> None:  # noqa: F811
    path = tmp_path / "baseline.json"
    before = json.dumps(ANNOTATED, indent=2)
    path.write_text(before)
    r = cli(case("004"), "--write-baseline", path)
    assert r.code == 2 and full_disk == [10]
    assert r.err == f"triage: error: {path}: cannot write: No space left on device (the previous file, if any, " \
                    "is unchanged)\n"
    assert path.read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["baseline.json"]  # no temporary file left behind


@pytest.mark.parametrize("flag", ["--output", "--json", "--sarif"])
def test_a_full_disk_leaves_the_previous_report_intact(cli, tmp_path: Path, full_disk: list[int], flag: str) -> None:  # noqa: F811
    path = tmp_path / "report"
    path.write_text("last night's report\n")
    r = cli(case("004"), flag, path)
    assert r.code == 2 and "No space left on device" in r.err and r.err.count("\n") == 1
    assert path.read_text() == "last night's report\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report"]


def test_a_write_replaces_the_file_whole_keeps_its_mode_and_writes_through_a_link(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("old")
    real.chmod(0o640)
    link = tmp_path / "link.json"
    link.symlink_to(real)
    outputs.write_text(link, "new\n")
    assert link.is_symlink() and real.read_text() == "new\n"
    assert real.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "real.json"]


def test_a_baseline_that_is_a_fifo_or_a_device_is_refused_not_waited_for(tmp_path: Path) -> None:
    fifo = tmp_path / "baseline.fifo"
    os.mkfifo(fifo)
    for flag, path in (("--baseline", fifo), ("--write-baseline", fifo), ("--baseline", "/dev/zero"),
                       ("--write-baseline", "/dev/null")):
        p = triage(case("004"), flag, path)
        what = "a FIFO" if path == fifo else "a device"
        assert (p.returncode, p.stderr) == (2, f"triage: error: {path}: is {what}; a baseline is a regular JSON "
                                                "file\n"), (flag, path)


def test_closed_standard_output_is_one_line_and_exit_2() -> None:
    p = subprocess.run(["sh", "-c", f'exec 1>&-; exec "{sys.executable}" -m triage "{case("004")}"'],
                       capture_output=False, stderr=subprocess.PIPE, text=True, timeout=TIMEOUT)
    assert (p.returncode, p.stderr) == (2, "triage: error: standard output is closed: cannot write the report "
                                           "(use --output FILE)\n")


def test_a_reader_that_went_away_is_one_line_and_exit_2() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "triage", str(case("004"))], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    proc.stdout.close()  # type: ignore[union-attr]  # `triage ... | head -0`
    _, err = proc.communicate(timeout=TIMEOUT)
    assert (proc.returncode, err) == (2, "triage: error: standard output: cannot write the report: Broken pipe\n")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_standard_output_on_a_full_device_is_one_line_and_exit_2() -> None:
    with open("/dev/full", "w") as full:
        p = subprocess.run([sys.executable, "-m", "triage", str(case("004"))], stdout=full, stderr=subprocess.PIPE,
                           text=True, timeout=TIMEOUT)
    assert (p.returncode, p.stderr) == (2, "triage: error: standard output: cannot write the report: "
                                           "No space left on device\n")


def _report(tmp_path: Path, name: str, data: object) -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


GOOD = {"rule": "trainer.cuda-oom", "category": "trainer-oom", "severity": "error", "title": "OOM",
        "fingerprint": "f1", "evidence": [{"file": "train.log", "line": 10, "text": "x"}]}


@pytest.mark.parametrize(("data", "problem"), [
    ({"findings": [1]}, "finding 1: is not an object"),
    ({"findings": [GOOD, GOOD | {"severity": ["error"]}]}, "finding 2: 'severity' is not a string"),
    ({"findings": [GOOD | {"fingerprint": None}]}, "finding 1: 'fingerprint' is not a string"),
    ({"findings": [GOOD | {"evidence": "train.log:10"}]}, "finding 1: 'evidence' is not a list of objects"),
    ({"findings": [GOOD | {"evidence": [{"file": {}, "line": 1}]}]},
     "finding 1: evidence 'file'/'line' are not a string and a number"),
    ({"findings": [GOOD], "figures": []}, "'figures' is not an object"),
])
def test_diff_refuses_a_wrongly_typed_report_with_one_line(cli, tmp_path: Path, data: object, problem: str) -> None:  # noqa: F811
    good = _report(tmp_path, "good.json", {"findings": [GOOD]})
    bad = _report(tmp_path, "bad.json", data)
    r = cli("diff", good, bad)
    assert (r.code, r.err) == (2, f"triage: error: {bad}: not a triage JSON report: {problem}\n")


def test_diff_refuses_a_deeply_nested_report(cli, tmp_path: Path) -> None:  # noqa: F811
    deep = _report(tmp_path, "deep.json", "[" * 200_000 + "]" * 200_000)
    r = cli("diff", deep, deep)
    assert (r.code, r.err) == (2, f"triage: error: {deep}: not a triage JSON report (nested too deeply)\n")


def test_diff_redacts_secrets_from_json_reports(cli, tmp_path: Path) -> None:  # noqa: F811
    secret = "hf_abcdefghijklmnopqrstuvwx"
    leaky = GOOD | {"fingerprint": "f2", "title": f"judge call with HF_TOKEN={secret}",
                    "evidence": [{"file": "train.log", "line": 3, "text": f"Authorization: Bearer {secret}"}]}
    old = _report(tmp_path, "old.json", {"findings": [GOOD]})
    new = _report(tmp_path, "new.json", {"findings": [GOOD, leaky]})
    for fmt in ("text", "json"):
        r = cli("diff", old, new, "--format", fmt, "--fail-on", "never")
        assert r.code == 0 and "judge call with HF_TOKEN=" in r.out
        assert secret not in r.out, fmt


def test_diff_shows_control_characters_of_a_hostile_report(cli, tmp_path: Path) -> None:  # noqa: F811
    old = _report(tmp_path, "old.json", {"findings": []})
    new = _report(tmp_path, "new.json", {"findings": [GOOD | {"title": "OOM\x1b]52;c;ZXZpbA==\x07\x1b[2J"}]})
    r = cli("diff", old, new)
    assert r.code == 1 and "OOM\\x1b]52;c;ZXZpbA==\\x07\\x1b[2J" in r.out
    assert "\x1b" not in r.out and "\x07" not in r.out


def test_with_stdout_and_stderr_both_gone_the_exit_code_still_says_so() -> None:
    p = subprocess.run(["sh", "-c", f'exec 1>&- 2>/dev/full; exec "{sys.executable}" -m triage "{case("004")}"'],
                       timeout=TIMEOUT)
    assert p.returncode == 2


def test_a_report_longer_than_a_piece_is_written_as_its_whole_encoding(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Reports are encoded and written a PIECE of characters at a time (not a second copy of a 25 MB report whole):
    the bytes are those of the whole text's encoding, a multi-byte character or an unpaired surrogate at a piece's
    edge included, to a new file, over an old one, appended, and on standard output."""
    monkeypatch.setattr(outputs, "PIECE", 7)
    text = "ab\u00e9cd\u65e5f\ud800gh" * 5 + "\U0001f600end\n"
    whole = text.encode("utf-8", "backslashreplace")
    out = tmp_path / "r.json"
    outputs.write_text(out, text)
    assert out.read_bytes() == whole
    outputs.write_text(out, "old " * 9)
    outputs.write_text(out, text)
    assert out.read_bytes() == whole
    outputs.write_text(out, text, append=True)
    assert out.read_bytes() == whole * 2
    outputs.write_text(out, "")
    assert out.read_bytes() == b""
    monkeypatch.setattr(sys, "stdout", open(tmp_path / "stdout", "w", encoding="utf-8", errors="backslashreplace"))
    outputs.write_stdout(text)
    sys.stdout.close()
    assert (tmp_path / "stdout").read_bytes() == whole
