"""Hostile run directories: every case is covered, nothing crashes or hangs, the real failures are still found,
and the analysed tree is left exactly as it was."""

from __future__ import annotations

import builtins
import gzip
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest
from hostile import DISK, OOM, Case, build, case_list, hash_tree, release

from triage.analyze import Settings, analyze
from triage.input.decompress import open_log, safe_open
from triage.input.discover import discover
from triage.input.read import MAX_LINE, TRUNCATED, iter_chunks
from triage.library.rules import load_library
from triage.scan.scanner import Scanner

TRIAGE = [sys.executable, "-m", "triage"]
ROOT_USER = os.geteuid() == 0


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Case]]:
    root = tmp_path_factory.mktemp("hostile") / "run"
    cases = build(root)
    yield root, cases
    release(root)


@pytest.fixture(scope="module")
def files(tree: tuple[Path, list[Case]]) -> dict[str, object]:
    """Each file as discovered (kind, status), before any scan."""
    found, problems = discover([str(tree[0])])
    assert problems == []
    return {lf.rel: lf for lf in found}


@pytest.fixture(scope="module")
def coverage(tree: tuple[Path, list[Case]]) -> dict[str, object]:
    """Each file's final coverage entry, after the whole analysis (reading adds notes such as a cut stream)."""
    return {lf.rel: lf for lf in analyze(Settings(paths=[str(tree[0])])).files}


def _visible(case: Case) -> bool:
    return not (case.privileged and ROOT_USER)


CASES = case_list()


@pytest.mark.parametrize("rel", [c.rel for c in CASES])
def test_every_hostile_case_has_its_coverage_entry(rel: str, tree: tuple[Path, list[Case]], coverage: dict) -> None:
    case = next(c for c in tree[1] if c.rel == rel)
    if not _visible(case):
        pytest.skip("root is never denied; see test_permission_cases_as_an_unprivileged_user")
    lf = coverage[case.rel]
    assert lf.status == case.status
    if case.reason.endswith("…"):
        assert lf.reason.startswith(case.reason[:-1])
    elif case.status != "read" or case.reason:
        assert lf.reason == case.reason
    if case.kind:
        assert lf.kind == case.kind


@pytest.mark.parametrize("rel", [c.rel for c in CASES if c.rule])
def test_real_failure_inside_a_hostile_file_is_found_at_its_line(rel: str, tree: tuple[Path, list[Case]],
                                                                  files: dict) -> None:
    case = next(c for c in tree[1] if c.rel == rel)
    res = Scanner(load_library()).scan(files[case.rel])
    assert (case.rule, case.line) in [(h.rule, h.line.lineno) for h in res.hits]


def test_cut_gzip_keeps_its_lines_and_says_where_it_stopped(tree: tuple[Path, list[Case]], files: dict) -> None:
    lf = files["cut.log.gz"]
    res = Scanner(load_library()).scan(lf)
    assert [(h.rule, h.line.lineno) for h in res.hits] == [("other.disk-full", 3)]
    assert any("gzip stream is truncated" in e for e in res.errors)


def test_thousands_of_small_files_are_all_read(files: dict) -> None:
    small = [lf for rel, lf in files.items() if rel.startswith("many/")]
    assert len(small) == 2000
    assert {lf.status for lf in small} == {"read"}


def test_cli_on_the_hostile_tree_reports_without_traceback_and_leaves_it_untouched(tree) -> None:
    root = tree[0]
    before = hash_tree(root)
    for fmt in ("text", "json"):
        proc = subprocess.run([*TRIAGE, str(root), "--format", fmt], capture_output=True, timeout=120)
        assert proc.returncode == 1, proc.stderr
        assert proc.stderr == b""
        assert b"Traceback" not in proc.stdout
    report = json.loads(proc.stdout)
    rules = {f["rule"] for f in report["findings"]}
    assert {"trainer.cuda-oom", "serving.kv-retraction", "other.segfault", "other.disk-full"} <= rules
    paths = {f["path"] for f in report["files"]}
    assert {"odd\\nname.log", "latin-\\xe9t\\xe9.log", "pipe", "nested/loop"} <= paths
    assert hash_tree(root) == before


def test_analysis_opens_nothing_for_writing(tree, monkeypatch: pytest.MonkeyPatch) -> None:
    root = str(tree[0])
    seen: list[tuple[str, object]] = []
    real_open, real_os_open = builtins.open, os.open
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND

    def spy_open(file, mode="r", *args, **kwargs):  # type: ignore[no-untyped-def]
        if str(file).startswith(root):
            seen.append((str(file), mode))
        return real_open(file, mode, *args, **kwargs)

    def spy_os_open(path, flags, *args, **kwargs):  # type: ignore[no-untyped-def]
        if str(path).startswith(root):
            seen.append((str(path), flags))
        return real_os_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", spy_open)
    monkeypatch.setattr(os, "open", spy_os_open)
    monkeypatch.setenv("TRIAGE_JOBS", "1")  # every open in this process, where the spies are (not a forked sniffer)
    analyze(Settings(paths=[root]))
    assert len(seen) > 2000  # the spies did see the reads
    for path, how in seen:
        if isinstance(how, str):
            assert set(how) <= {"r", "b", "t"}, path
        else:
            assert how & write_flags == 0, path


def test_a_fifo_given_directly_is_skipped_not_opened(tree) -> None:
    proc = subprocess.run([*TRIAGE, str(tree[0] / "pipe"), "-f", "json"], capture_output=True, timeout=30)
    assert proc.returncode == 0
    entry = json.loads(proc.stdout)["files"][0]
    assert (entry["status"], entry["reason"]) == ("skipped", "FIFO: not opened")


def test_safe_open_refuses_a_fifo_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "p")
    done: list[str] = []

    def attempt() -> None:
        try:
            safe_open(str(tmp_path / "p"))
        except OSError as e:
            done.append(str(e))

    t = threading.Thread(target=attempt, daemon=True)
    t.start()
    t.join(5)
    assert done == ["FIFO: not opened"]


@pytest.mark.skipif(not ROOT_USER, reason="needs root to switch to an unprivileged user")
def test_permission_cases_as_an_unprivileged_user() -> None:
    base = Path(tempfile.mkdtemp(prefix="triage-perm-"))
    try:
        os.chmod(base, 0o755)
        root = base / "run"
        root.mkdir()
        (root / "ok.log").write_text(DISK + "\n")
        (root / "noperm.log").write_text(OOM + "\n")
        os.chmod(root / "noperm.log", 0)
        (root / "closed").mkdir()
        (root / "closed" / "inside.log").write_text(OOM + "\n")
        os.chmod(root / "closed", 0)

        def drop() -> None:
            os.setgid(65534)
            os.setuid(65534)

        try:
            subprocess.run([sys.executable, "-c", "import triage"], check=True, capture_output=True, timeout=30,
                           preexec_fn=drop, cwd=str(base))
        except (OSError, subprocess.CalledProcessError):
            pytest.skip("this interpreter or checkout is not usable by an unprivileged user")

        proc = subprocess.run([*TRIAGE, str(root), "-f", "json"], capture_output=True, timeout=60, preexec_fn=drop,
                              cwd=str(base), env={**os.environ, "HOME": str(base)})
        assert proc.returncode == 1, proc.stderr
        report = json.loads(proc.stdout)
        status = {f["path"]: (f["status"], f["reason"]) for f in report["files"]}
        assert status["noperm.log"] == ("unreadable", "permission denied")
        assert status["closed"] == ("unreadable", "Permission denied")
        assert [f["rule"] for f in report["findings"]] == ["other.disk-full"]
    finally:
        os.chmod(base / "run" / "closed", 0o755)
        shutil.rmtree(base)


def test_a_file_growing_while_read_is_read_as_of_opening(tmp_path: Path) -> None:
    p = tmp_path / "live.log"
    p.write_bytes(b"step 1\n" * 1000)
    notes: list[str] = []
    with open_log(str(p), "", notes.append) as stream:
        with open(p, "ab") as writer:  # the run keeps writing after triage opened the file
            writer.write(b"step 2\n" * 1000)
        data = stream.read()
    assert data == b"step 1\n" * 1000
    assert notes == ["file grew while being read: read the 7000 bytes present when it was opened"]


def test_a_file_growing_without_end_does_not_keep_the_run_busy(tmp_path: Path) -> None:
    p = tmp_path / "live.log"
    p.write_bytes((DISK + "\n").encode() + b"x" * 100 + b"\n")
    stop = threading.Event()

    def writer() -> None:
        with open(p, "ab") as fh:
            while not stop.is_set():
                fh.write(b"tick\n" * 10000)
                fh.flush()

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    try:
        report = analyze(Settings(paths=[str(tmp_path)]))
    finally:
        stop.set()
        t.join()
    assert [f.rule for f in report.findings] == ["other.disk-full"]


def test_a_64mb_line_without_newline_is_cut_with_bounded_memory() -> None:
    import tracemalloc

    class Endless(io.RawIOBase):  # 64 MiB of one line, produced on demand, then an error line
        def __init__(self) -> None:
            self.left = 64 << 20
            self.tail = ("\n" + DISK + "\n").encode()

        def readable(self) -> bool:
            return True

        def readinto(self, b) -> int:  # type: ignore[no-untyped-def]
            if self.left > 0:
                n = min(len(b), self.left)
                b[:n] = b"E" * n
                self.left -= n
                return n
            n = len(self.tail)
            b[:n], self.tail = self.tail, b""
            return n

    tracemalloc.start()
    chunks = list(iter_chunks(io.BufferedReader(Endless())))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    text = "".join(chunks)
    assert peak < 40 << 20
    first, second = text.split("\n")[:2]
    assert first == "E" * MAX_LINE + TRUNCATED
    assert second == DISK


def test_a_million_identical_error_lines_make_one_finding_with_a_count(tmp_path: Path) -> None:
    (tmp_path / "worker.log").write_bytes(b"start\n" + b"RuntimeError: worker 7 failed with exit code 1\n" * 1_000_000)
    proc = subprocess.run([*TRIAGE, str(tmp_path), "-f", "json"], capture_output=True, timeout=120)
    report = json.loads(proc.stdout)
    assert len(proc.stdout) < 10_000
    [finding] = report["findings"]
    assert finding["count"] == 1_000_000
    assert (finding["first"]["line"], finding["last"]["line"]) == (2, 1_000_001)


def test_standard_input_plain_and_gzip(tmp_path: Path) -> None:
    text = ("a\n" + DISK + "\n").encode()
    for data in (text, gzip.compress(text)):
        proc = subprocess.run([*TRIAGE, "-", "-f", "json"], input=data, capture_output=True, timeout=30)
        report = json.loads(proc.stdout)
        assert [(f["rule"], f["evidence"][0]["file"], f["evidence"][0]["line"]) for f in report["findings"]] == [
            ("other.disk-full", "<stdin>", 2)]


def test_permission_errors_are_reported_not_fatal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same code paths as an unprivileged user meets, for any user: the kernel refuses a file and a folder."""
    (tmp_path / "ok.log").write_text(DISK + "\n")
    (tmp_path / "noperm.log").write_text(OOM + "\n")
    (tmp_path / "closed").mkdir()
    (tmp_path / "closed" / "inside.log").write_text(OOM + "\n")
    real_os_open, real_scandir = os.open, os.scandir

    def refuse_open(path, flags, *args, **kwargs):  # type: ignore[no-untyped-def]
        if str(path).endswith("noperm.log"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_os_open(path, flags, *args, **kwargs)

    def refuse_scandir(path="."):  # type: ignore[no-untyped-def]
        if str(path).endswith("closed"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "open", refuse_open)
    monkeypatch.setattr(os, "scandir", refuse_scandir)
    report = analyze(Settings(paths=[str(tmp_path)]))
    status = {f.rel: (f.status, f.reason) for f in report.files}
    assert status["noperm.log"] == ("unreadable", "Permission denied")
    assert status["closed"] == ("unreadable", "Permission denied")
    assert [f.rule for f in report.findings] == ["other.disk-full"]
