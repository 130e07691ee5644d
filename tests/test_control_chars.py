"""Terminal control in a log never leaves triage: removed (whole escape sequences) or shown as `\\x07` when a line is
read, on the native path and the line-for-line path alike, so no format, terminal or file, can carry it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from realcases import cli  # noqa: F401  (cli is a fixture)

from triage.analyze import Settings, analyze
from triage.input.read import line_text, normalise, read_text, visible
from triage.report import FORMATS, RenderOptions, render
from triage.scan import native as c_helper

OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
HOSTILE = {
    "osc52 clipboard (BEL)": (f"\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07{OOM}", OOM),
    "osc title (ST)": (f"\x1b]0;owned\x1b\\{OOM}", OOM),
    "csi clear and colour": (f"\x1b[2J\x1b[31m{OOM}\x1b[0m", OOM),
    "charset escape": (f"\x1b(B{OOM}", OOM),
    "bel and backspace": (f"{OOM}\x07\x08\x08", OOM + "\\x07\\x08\\x08"),
    "c1 csi and del": (f"{OOM}\u009b31m\x7f", OOM + "\\x9b31m\\x7f"),
    "lone escape at the end": (f"{OOM} \x1b", OOM + " \\x1b"),
    "open osc runs to the end of the line": (f"{OOM}\x1b]0;title never ended", OOM),
}
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # anything a terminal acts on, but tab and newline


@pytest.mark.parametrize("name", HOSTILE)
def test_a_line_keeps_its_text_and_loses_its_control(name: str) -> None:
    raw, expected = HOSTILE[name]
    assert normalise(raw + "\n") == expected + "\n"
    assert line_text(raw.encode()) == expected
    assert "".join(read_text((raw + "\n").encode())) == expected + "\n"


def test_tab_newline_and_carriage_return_stay_nul_goes() -> None:
    assert normalise("a\tb\r\nc\x00d\n") == "a\tb\r\ncd\n"
    assert normalise("plain ascii\nand ünïcödé ✓\n") == "plain ascii\nand ünïcödé ✓\n"


def test_a_field_shows_every_control_line_breaks_included() -> None:
    assert visible("run\n::error::x\x1b]0;t\x07.log") == "run\\x0a::error::x\\x1b]0;t\\x07.log"
    assert visible("tab\tand space ok") == "tab\tand space ok"


def _log(tmp_path: Path, lines: list[str]) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    (run / "train.log").write_bytes(("\n".join(lines) + "\n").encode())
    return run


@pytest.mark.parametrize("native", [True, False])
def test_evidence_on_both_paths_carries_no_control(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   native: bool) -> None:
    if native and not c_helper.available():
        pytest.skip("the C prefilter is not built")
    monkeypatch.setenv("TRIAGE_NO_NATIVE", "" if native else "1")
    if native:
        monkeypatch.delenv("TRIAGE_NO_NATIVE")
    run = _log(tmp_path, ["step 1 ok"] + [raw for raw, _ in HOSTILE.values()])
    report = analyze(Settings(paths=[str(run)]))
    oom = next(f for f in report.findings if f.rule == "trainer.cuda-oom")
    texts = [e.text for e in oom.evidence] + [oom.first.text, oom.last.text]  # type: ignore[union-attr]
    assert oom.evidence[0].line == 2 and oom.evidence[0].text == OOM
    assert oom.last.line == 9 and oom.last.text == OOM  # type: ignore[union-attr]
    assert not any(CONTROL.search(t) for t in texts)


@pytest.mark.parametrize("fmt", FORMATS)
def test_no_format_carries_a_control_byte_from_a_log(tmp_path: Path, fmt: str) -> None:
    run = _log(tmp_path, [raw for raw, _ in HOSTILE.values()] + ["ERROR \x1b]52;c;ZXZpbA==\x07judge failed \x07\x08"])
    out = render(fmt, analyze(Settings(paths=[str(run)])), RenderOptions(verbose=True))
    assert "trainer.cuda-oom" in out or "trainer-oom" in out
    bad = CONTROL.findall(out)
    assert bad == [], (fmt, bad[:5])


def test_a_workflow_command_in_a_log_never_starts_a_text_line(cli, tmp_path: Path) -> None:  # noqa: F811
    marker = "::error file=x,line=1::pwned " * 12
    run = _log(tmp_path, [f"{OOM} {marker}", "ERROR judge said " + marker])
    r = cli(run, "--fail-on", "never")
    assert r.code == 0 and "::error file=x" in r.out
    assert not any(line.startswith("::") for line in r.out.splitlines())
    r = cli(run, "--fail-on", "never", env={"GITHUB_ACTIONS": "true"})
    lines = r.out.splitlines()
    token = lines[0].removeprefix("::stop-commands::")
    assert re.fullmatch(r"[0-9a-f]{32}", token) and lines[-1] == f"::{token}::"
    assert lines[1].startswith("triage: error: trainer-oom")
    assert not any(line.startswith("::") for line in lines[1:-1])
    assert token not in "\n".join(lines[1:-1])


def test_github_and_json_formats_are_not_fenced(cli, tmp_path: Path) -> None:  # noqa: F811
    run = _log(tmp_path, [OOM])
    r = cli(run, "--format", "json", env={"GITHUB_ACTIONS": "true"})
    assert json.loads(r.out)["findings"][0]["rule"] == "trainer.cuda-oom"
    r = cli(run, "--format", "github", env={"GITHUB_ACTIONS": "true"})
    assert r.out.startswith("::error file=")


def test_a_hostile_file_name_stays_on_its_line_in_the_text_report(cli, tmp_path: Path) -> None:  # noqa: F811
    run = tmp_path / "run"
    run.mkdir()
    (run / "a\n::error::x\x1b]0;t\x07.log").write_text(OOM + "\n")
    r = cli(run, "--fail-on", "never")
    assert r.code == 0 and "a\\n::error::x\\x1b]0;t\\x07.log:1  " + OOM in r.out  # discover escapes names
    assert not CONTROL.findall(r.out) and not any(line.startswith("::") for line in r.out.splitlines())


def test_the_diff_text_is_fenced_in_github_actions_too(cli, tmp_path: Path) -> None:  # noqa: F811
    run = _log(tmp_path, [f"{OOM} ::error::x"])
    r = cli("diff", run, run, env={"GITHUB_ACTIONS": "true"})
    lines = r.out.splitlines()
    token = lines[0].removeprefix("::stop-commands::")
    assert r.code == 0 and lines[-1] == f"::{token}::" and lines[1].startswith("triage diff: 0 new, 0 resolved")
