"""Faults while reading (issue 13): a file cut or damaged mid-read, a dead reader, a MemoryError, a head of NULs or
blank lines, no C helper, a parent killed under its workers. Each failure is found, or the coverage says what
was not read; nothing hangs (every wait is bounded), nothing is left running."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from triage.analyze import Settings, analyze
from triage.checks import CHECKS
from triage.checks.base import CheckResult
from triage.input import decompress
from triage.scan import native, parallel
from triage.scan import prefiltered as fastscan

needs_fork = pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork")
OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacity of "
       "79.15 GiB of which 3.12 GiB is free.")
STATS = ("[2026-05-24 00:{m:02d}:{s:02d} TP0] Decode batch, #running-req: 40, #token: 200000, token usage: {u:.2f}, "
         "cuda graph: True, gen throughput (token/s): 2210.45, #queue-req: {q}")
STEP = "[2026-05-24 00:53:21] step {i}: {{'train/loss': 0.1, 'train/grad_norm': 1.0}}"


def run(path: Path) -> object:
    return analyze(Settings(paths=[str(path)]))


def oom_finding(report: object) -> object:
    found = [f for f in report.findings if f.rule == "trainer.cuda-oom"]  # type: ignore[attr-defined]
    assert found, [f.rule for f in report.findings]  # type: ignore[attr-defined]
    return found[0]


# --- a head of NULs or blank lines -------------------------------------------------------------------------------

def test_an_oom_after_a_mib_of_nul_bytes_is_found(tmp_path: Path) -> None:
    # `cmd > train.log` and copytruncate: the writer goes on at its old offset, the file starts with a hole of
    # zeros and the next line follows the zeros with no newline in between
    (tmp_path / "train.log").write_bytes(b"\0" * (1 << 20) + (OOM + "\n" + STEP.format(i=2) + "\n").encode())
    rep = run(tmp_path)
    f = oom_finding(rep)
    assert (f.evidence[0].file, f.evidence[0].line) == ("train.log", 1)
    (lf,) = rep.files
    assert (lf.status, lf.kind) == ("read", "trainer")
    assert lf.reason == "text starts at byte 1048576 after NUL bytes"
    assert rep.coverage_complete


def test_an_oom_after_100k_blank_lines_is_found(tmp_path: Path) -> None:
    (tmp_path / "train.log").write_bytes(b"\n" * 100_000 + (STEP.format(i=1) + "\n" + OOM + "\n").encode())
    rep = run(tmp_path)
    f = oom_finding(rep)
    assert (f.evidence[0].file, f.evidence[0].line) == ("train.log", 100_002)
    assert rep.files[0].status == "read"
    assert rep.files[0].reason == "text starts at byte 100000 after blank lines"


def test_nul_bytes_longer_than_the_look_ahead_are_read_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from triage.input import discover

    monkeypatch.setattr(discover, "LOOK_FURTHER", 1 << 20)
    (tmp_path / "train.log").write_bytes(b"\0" * (3 << 20) + (OOM + "\n").encode())  # written zeros, not a hole
    rep = run(tmp_path)
    assert oom_finding(rep).evidence[0].line == 1
    assert rep.files[0].reason == "only NUL bytes in the first 1 MiB: read whole"


def test_a_sparse_hole_is_jumped_over(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from triage.input import discover

    monkeypatch.setattr(discover, "LOOK_FURTHER", 1 << 20)
    with open(tmp_path / "train.log", "wb") as fh:  # a 3 MiB hole (a file system without holes writes zeros)
        fh.truncate(3 << 20)
        fh.seek(3 << 20)
        fh.write((OOM + "\n").encode())
    rep = run(tmp_path)
    assert oom_finding(rep).evidence[0].line == 1
    assert rep.files[0].reason in ("text starts at byte 3145728 after NUL bytes",
                                   "only NUL bytes in the first 1 MiB: read whole")


def test_a_file_of_nul_bytes_only_is_still_skipped(tmp_path: Path) -> None:
    (tmp_path / "core.log").write_bytes(b"\0" * (200 << 10))
    (lf,) = run(tmp_path).files
    assert (lf.status, lf.reason) == ("skipped", "binary data (NUL bytes only)")


# --- cut or damaged while read ------------------------------------------------------------------------------------

@pytest.mark.parametrize("steps", [2000, 5000])  # read whole in one read (< 256 KiB: read_small), and streamed
def test_a_file_truncated_while_read_is_partial_with_how_far(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             steps: int) -> None:
    lines = [OOM] + [STEP.format(i=i) for i in range(2, steps)]
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    size = log.stat().st_size
    assert (size < fastscan.COLUMNS_FROM) == (steps == 2000)
    real_open = decompress._regular

    def open_then_rotated(path):  # type: ignore[no-untyped-def]
        opened = real_open(path)
        if sys._getframe(1).f_code.co_name in ("read_small", "open_log"):  # the scan's opening, not discovery's sniff
            os.truncate(path, 100_000)  # copytruncate between opening the file (its size taken) and reading it
        return opened

    monkeypatch.setattr(decompress, "_regular", open_then_rotated)
    rep = run(tmp_path)
    assert oom_finding(rep).evidence[0].line == 1  # what was read before the cut still counts
    (lf,) = rep.files
    assert lf.status == "partial"
    assert f"truncated while being read (copytruncate?): read to byte 100000 of {size}" in lf.reason
    assert not rep.coverage_complete and rep.not_covered == [lf]


def test_a_truncated_zst_is_partial_with_the_damage_offset(tmp_path: Path) -> None:
    zstandard = pytest.importorskip("zstandard")
    body = (OOM + "\n" + "\n".join(f"{i:08d} {os.urandom(24).hex()}" for i in range(20000)) + "\n").encode()
    data = zstandard.ZstdCompressor().compress(body)
    (tmp_path / "train.log.zst").write_bytes(data[: len(data) // 2])
    rep = run(tmp_path)
    assert oom_finding(rep).evidence[0].line == 1
    (lf,) = rep.files
    assert lf.status == "partial"
    assert lf.reason.startswith("zstd stream is ")
    assert f"of {len(data) // 2}: read the " in lf.reason and "(read to line " in lf.reason
    assert not rep.coverage_complete


def test_a_memory_error_mid_file_leaves_it_partial(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not native.available():
        pytest.skip("the C prefilter is not built")
    monkeypatch.setenv("TRIAGE_JOBS", "1")
    monkeypatch.setattr(fastscan, "CHUNK", 64 << 10)
    lines = [OOM] + [STEP.format(i=i) for i in range(2, 5000)]
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    real = fastscan._fast_hits
    calls = []

    def then_out_of_memory(*args):  # type: ignore[no-untyped-def]
        calls.append(1)
        if len(calls) == 2:
            raise MemoryError()
        return real(*args)

    monkeypatch.setattr(fastscan, "_fast_hits", then_out_of_memory)
    rep = run(tmp_path)
    assert oom_finding(rep).evidence[0].line == 1
    (lf,) = rep.files
    assert lf.status == "partial"
    assert lf.reason.startswith("read stopped early: MemoryError")
    assert "(read to line " in lf.reason
    assert not rep.coverage_complete


# --- the scan path: only what is available -----------------------------------------------------------------------

@needs_fork
def test_without_the_c_helper_one_big_log_is_scanned_fully(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIAGE_NO_NATIVE", "1")
    monkeypatch.setenv("TRIAGE_JOBS", "2")
    rows = [STATS.format(m=i // 60 % 60, s=i % 60, u=0.5, q=0) for i in range(6000)]
    log = tmp_path / "sglang-engine.log"
    log.write_text("\n".join(rows) + "\n" + OOM.replace("torch.", "") + "\n")
    monkeypatch.setattr(parallel, "STAGED_ABOVE", log.stat().st_size - 1)  # just over the two-stage threshold
    rep = run(tmp_path)
    (lf,) = rep.files
    assert (lf.status, lf.reason, lf.lines) == ("read", "", 6001)
    assert not rep.errors
    assert any(f.category in ("serving-oom-retraction", "trainer-oom") and f.evidence[0].line == 6001
               for f in rep.findings), [(f.rule, f.evidence[0].line) for f in rep.findings]


# --- a check's result without evidence ----------------------------------------------------------------------------

def test_a_check_result_without_evidence_does_not_abort_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [STATS.format(m=i // 60 % 60, s=i % 60, u=1.0 if i % 400 == 7 else 0.93, q=4) for i in range(2000)]
    (tmp_path / "sglang-engine.log").write_text("\n".join(rows) + "\n")
    real = CHECKS["kv_pressure"]
    # an engine whose pressure rows were all sampled away: a result with nothing to show, first in the list
    monkeypatch.setitem(CHECKS, "kv_pressure", lambda params, run: [CheckResult(evidence=[], count=3)]
                        + real(params, run))
    rep = run(tmp_path)
    (f,) = [f for f in rep.findings if f.rule == "serving.kv-pool-saturated"]
    assert (f.evidence[0].file, f.evidence[0].line) == ("sglang-engine.log", 1)
    assert f.numbers["engine"].startswith("sglang-engine.log")
    monkeypatch.setitem(CHECKS, "kv_pressure", lambda params, run: [CheckResult(evidence=[], count=3)])
    assert not [f for f in run(tmp_path).findings if f.rule == "serving.kv-pool-saturated"]


# --- workers end with their parent --------------------------------------------------------------------------------

def _children(pid: int) -> set[int]:
    out = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.add(int(entry))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _default_signals() -> None:
    """The signals' default actions in the run under test: a test run started under nohup (a CI runner) hands its
    children SIGHUP ignored, and the SIGHUP case then waited for the whole run to end (60 s on a loaded machine)."""
    for sig in (signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)


@needs_fork
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc to list a process's children")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL, signal.SIGHUP])
def test_workers_end_when_their_parent_is_killed(tmp_path: Path, sig: signal.Signals) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    rows = "\n".join(STATS.format(m=i // 60 % 60, s=i % 60, u=0.5, q=0) for i in range(120_000)) + "\n"
    for k in range(3):  # three engine logs over the size that is shared with workers
        (run_dir / f"sglang-engine-{k}.log").write_text(rows)
    env = dict(os.environ, TRIAGE_JOBS="3", TRIAGE_NO_NATIVE="1", TRIAGE_NO_PROGRESS="1")
    proc = subprocess.Popen([sys.executable, "-m", "triage", str(run_dir)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, preexec_fn=_default_signals)
    try:
        deadline = time.monotonic() + 60
        kids: set[int] = set()
        while len(kids) < 2 and proc.poll() is None and time.monotonic() < deadline:
            kids = _children(proc.pid)
            time.sleep(0.02)
        assert kids, "no worker started"
        proc.send_signal(sig)
        proc.wait(timeout=60)
        deadline = time.monotonic() + 30  # generous: this bounds a hang, it measures no speed
        while any(_alive(k) for k in kids) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [k for k in kids if _alive(k)]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# --- hostile structured input -------------------------------------------------------------------------------------

LAUGHS = "\n".join(['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
                   + [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 10)]) + "\n"
DEEP_JSON = '[{"reward": 1, "x": ' + "[" * 10_000 + "]" * 10_000 + "}]"
DEEP_YAML = "".join("  " * i + "k:\n" for i in range(3000))


def _run_with(tmp_path: Path, name: str, text: str) -> object:
    run_dir = tmp_path / "run"
    run_dir.mkdir(exist_ok=True)
    (run_dir / "train.log").write_text(OOM + "\n")
    (run_dir / name).write_text(text)
    return analyze(Settings(paths=[str(run_dir)]))


@pytest.mark.parametrize(("name", "text", "note"), [
    ("run.yaml", LAUGHS, "aliases expand to more than 1,000,000 nodes (an alias bomb?): not read as settings"),
    ("results.json", DEEP_JSON, "nested deeper than 100 levels: not read as settings"),
    ("config.yaml", DEEP_YAML, "nested deeper than 100 levels: not read as settings"),
])
def test_a_hostile_structured_file_in_the_run_dir_is_one_note(tmp_path: Path, name: str, text: str, note: str) -> None:
    rep = _run_with(tmp_path, name, text)
    assert oom_finding(rep).evidence[0].file == "train.log"  # the rest of the run is triaged as usual
    (lf,) = [f for f in rep.files if f.rel == name]
    assert (lf.status, lf.reason) == ("read", note)


def test_a_deep_json_line_among_results_is_skipped(tmp_path: Path) -> None:
    rows = [f'{{"reward": 0, "error": "sandbox timeout", "id": {i}}}' for i in range(20)]
    text = "\n".join(rows[:10] + ['{"reward": 0, "x": ' + "[" * 10_000 + "]" * 10_000 + "}"] + rows[10:]) + "\n"
    rep = _run_with(tmp_path, "results.jsonl", text)
    (lf,) = [f for f in rep.files if f.rel == "results.jsonl"]
    assert lf.status == "read" and lf.kind == "results"


@pytest.mark.parametrize("text", [LAUGHS, DEEP_YAML])
def test_a_hostile_file_the_user_names_is_exit_2_naming_it(tmp_path: Path, text: str) -> None:
    from triage.analyze import InputError
    from triage.library.rules import LibraryError, load_library

    (tmp_path / "train.log").write_text(OOM + "\n")
    cfg = tmp_path / "given.yaml"
    cfg.write_text(text)
    with pytest.raises(InputError, match=r"^.*given\.yaml: (aliases expand|nested deeper)"):
        analyze(Settings(paths=[str(tmp_path / "train.log")], config=cfg))
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "bomb.yaml").write_text(text)
    with pytest.raises(LibraryError, match=r"bomb\.yaml(:\d+: invalid YAML)?: (aliases expand|nested deeper|exceeded max)"):
        load_library([rules])


def test_an_alias_that_contains_itself_is_refused(tmp_path: Path) -> None:
    rep = _run_with(tmp_path, "run.yaml", "inference: &a\n  loop: *a\n")
    (lf,) = [f for f in rep.files if f.rel == "run.yaml"]
    assert lf.reason == "an alias refers to a node that contains it: not read as settings"


def test_ordinary_aliases_still_read(tmp_path: Path) -> None:
    text = "inference:\n  max_context_length: &n 16384\n  max_prefill_tokens: *n\n"
    rep = _run_with(tmp_path, "run.yaml", text)
    (lf,) = [f for f in rep.files if f.rel == "run.yaml"]
    assert (lf.kind, lf.reason) == ("config", "")


@pytest.mark.parametrize("special", ["fifo", "device"])
def test_fifos_and_devices_are_refused_where_a_file_is_expected(tmp_path: Path, special: str) -> None:
    from triage.analyze import InputError
    from triage.library.rules import LibraryError, load_library

    (tmp_path / "train.log").write_text(OOM + "\n")
    if special == "fifo":
        given = tmp_path / "given.yaml"
        os.mkfifo(given)
        what = "a FIFO"
    else:
        given, what = Path("/dev/zero"), "a device"
    with pytest.raises(InputError, match="given.yaml|/dev/zero"):
        analyze(Settings(paths=[str(tmp_path / "train.log")], config=given))
    with pytest.raises(InputError, match=f"{what}, not a regular file"):
        analyze(Settings(paths=[str(tmp_path / "train.log")], config=given))
    rules = tmp_path / "rules"
    rules.mkdir()
    if special == "fifo":
        os.mkfifo(rules / "x.yaml")
    else:
        os.symlink("/dev/zero", rules / "x.yaml")
    with pytest.raises(LibraryError, match=f"x.yaml: {what}, not a regular file"):
        load_library([rules])


# --- the directory tree -------------------------------------------------------------------------------------------

def test_a_tree_1500_levels_deep_is_walked(tmp_path: Path) -> None:
    here = tmp_path / "run"
    here.mkdir()
    cwd = os.getcwd()
    try:  # built relative to each level: the full path would pass PATH_MAX on the way down
        os.chdir(here)
        for _ in range(1500):
            os.mkdir("d")
            os.chdir("d")
        Path("train.log").write_text(OOM + "\n")
    finally:
        os.chdir(cwd)
    from triage.input.discover import discover

    try:
        files, problems = discover([str(here)])
        assert not problems
        (lf,) = files
        assert lf.rel == "d/" * 1500 + "train.log" and lf.kind == "trainer"
    finally:  # taken down level by level too (a recursive removal would itself run out of stack)
        os.chdir(here)
        for _ in range(1500):
            os.chdir("d")
        try:
            os.remove("train.log")
            for _ in range(1500):
                os.chdir("..")
                os.rmdir("d")
        finally:
            os.chdir(cwd)


def test_a_link_out_of_the_run_dir_is_not_followed_unless_asked(tmp_path: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("root:$6$saltsalt$hashhashhash:19000:0:99999:7:::\n" + OOM + "\n")
    run_dir = tmp_path / "run"
    (run_dir / "logs").mkdir(parents=True)
    (run_dir / "logs" / "train.log").write_text(OOM + "\n")
    os.symlink(outside, run_dir / "shadow.log")
    os.symlink("logs/train.log", run_dir / "inside.log")  # a link inside the run dir is read
    rep = analyze(Settings(paths=[str(run_dir)]))
    by = {f.rel: f for f in rep.files}
    assert (by["shadow.log"].status, by["shadow.log"].reason) == (
        "skipped", f"symlink out of the run directory (to {outside}): not followed (--follow-links reads it)")
    assert by["inside.log"].status == "read"
    assert all(e.file != "shadow.log" for f in rep.findings for e in f.evidence)
    assert rep.coverage_complete  # left out on purpose, and said so
    rep = analyze(Settings(paths=[str(run_dir)], follow_links=True))
    shadow = {f.rel: f for f in rep.files}["shadow.log"]
    assert (shadow.status, shadow.lines) == ("read", 2)


def test_the_exit_code_knows_a_verdict_is_incomplete(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """Nothing at the gate in what was read, but a file was cut while reading: exit 3, not 0; the verdict names
    the partial file. A finding at the gate still exits 1; `--fail-on never` exits 0."""
    zstandard = pytest.importorskip("zstandard")
    quiet = "\n".join(STEP.format(i=i) for i in range(20000)) + "\n"
    data = zstandard.ZstdCompressor().compress(quiet.encode())
    (tmp_path / "train.log.zst").write_bytes(data[: len(data) // 2])
    res = cli(tmp_path)
    assert res.code == 3, res.out + res.err
    assert "partial" in res.out.splitlines()[0]
    assert cli(tmp_path, "--fail-on", "never").code == 0
    (tmp_path / "engine.log").write_text(OOM + "\n")
    assert cli(tmp_path).code == 1
