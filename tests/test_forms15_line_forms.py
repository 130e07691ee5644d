"""The same failures in other line forms (real-extra 1280-1297): a traceback joined onto one line, a relayed process
id in brackets, a UTF-16 file from a PowerShell redirect, two ranks' tracebacks interleaved without a prefix, Ray's
de-duplication notes, a log viewer's box frame, parallax's bracket-level logger, colour codes without their escape;
what the threads in those forms failed with (a rank that left a monitored barrier, a Gloo peer that stopped
answering, a c10d store read that timed out, a host thread limit); and the verdict of a run on several machines.

Each real case asserts the rule, the evidence file:line and the numbers read off it; each synthetic form is a real
line of a thread written the way another program prints it, on both scan paths."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import extra_input, triage_dir
from test_line_forms import _report

from triage.analyze import Settings, analyze
from triage.model import Report
from triage.prefixes import writer_of
from triage.report.common import verdict
from triage.scan.origins import joined_final, split_ray


def _top(report: Report) -> tuple[str, str, str, int]:
    f = report.findings[0]
    e = f.evidence[0]
    return f.category, f.rule, e.file, e.line


@pytest.mark.parametrize("case, rule, file, line, numbers", [
    # verl#472: boost's thread start failed inside Ray's core worker; the ActorDiedError above it is its symptom
    ("1280", "other.thread-limit", "train.log", 8, {}),
    # sglang#5602: rank 3's gloo monitored barrier lost rank 0 (c10's `[rank3]:[E421 ...]` form)
    ("1283", "other.monitored-barrier-failed", "server.log", 2, {"who": 3, "peer": 0}),
    # sglang#3398: the c10d store read of two ranks timed out after 30 minutes
    ("1284", "other.store-rendezvous-timeout", "node0.log", 1, {"what": "waitForInput", "ms": 1800000}),
    # xtuner#719: `[rank1]: RuntimeError: Rank 1 successfully reached monitoredBarrier ...`
    ("1287", "other.monitored-barrier-failed", "train.log", 1, {"who": 1, "peer": 0}),
    # LlamaFactory#6000: rank 0 names rank 6; the paste starts inside the traceback
    ("1288", "other.monitored-barrier-failed", "train.log", 15, {"who": 6, "ms": 180000000000}),
    # DeepSpeed#4488: torch < 2.2's `[E ProcessGroupGloo.cpp:138]` glued to the end of a tqdm bar
    ("1292", "other.monitored-barrier-failed", "train.log", 10, {"who": 3, "peer": 0}),
    # wenet#2552: gloo's receive timed out after 30 s, behind a `2024/06/05 12:08:28 ` stamp
    ("1293", "other.gloo-peer-timeout", "train.log", 1, {"what": "recv", "ms": 30000}),
    # vllm-ascend#2248: every rank's store read, one line a rank
    ("1294", "other.store-rendezvous-timeout", "node0.log", 1, {"what": "waitForInput", "ms": 1800000}),
    # vllm-ascend#7015: colour codes without their escape byte around vLLM V1's process prefix
    ("1295", "other.fatal-exit", "serve.log", 5, {"exception": "TimeoutError"}),
    # SimpleTuner#3176: an AOTInductor graph's allocation failed; the allocator's expandable-segments warning says why
    ("1296", "trainer.compiled-graph-alloc-failed", "simpletuner.log", 1, {"call": "empty_strided"}),
    # vllm#6976 behind a log viewer's frame; vllm-windows#72 behind vLLM V1's process prefix
    ("1290", "other.cuda-error", "pod.log", 1, {}),
    ("1291", "other.cuda-error", "serve.log", 1, {}),
    # LlamaFactory#9510 behind torchrun's `[rank6]: `; ChatGLM-6B#919 wrapped by the console at 120 columns
    # (sizes in GiB: 56.00 MiB, 96.00 MiB)
    ("1281", "trainer.cuda-oom", "train.log", 1, {"tried": 0.0547, "gpu": 6, "capacity": 79.33}),
    ("1286", "trainer.cuda-oom", "train.log", 1, {"tried": 0.0938, "gpu": 0, "capacity": 22.5}),
])
def test_real_forms_name_the_failure_and_its_line(case: str, rule: str, file: str, line: int,
                                                  numbers: dict[str, object]) -> None:
    report = triage_dir(extra_input(case))
    assert _top(report)[1:] == (rule, file, line)
    got = report.findings[0].numbers
    for k, v in numbers.items():
        assert got.get(k) == (pytest.approx(v, abs=1e-3) if isinstance(v, float) else v), (k, got)


def test_a_symptom_folds_into_the_thread_limit() -> None:
    report = triage_dir(extra_input("1280"))
    top = report.findings[0]
    assert "other.actor-died" in top.numbers.get("symptoms", [])
    assert not [f for f in report.findings if f.rule == "other.actor-died"]


@pytest.mark.parametrize("case", ["1290", "1291", "1297"])
def test_torchs_cuda_advice_and_blank_error_lines_are_no_findings_of_their_own(case: str) -> None:
    report = triage_dir(extra_input(case))
    assert [f.rule for f in report.findings] == ["other.cuda-error"]


def test_a_paste_that_starts_inside_a_traceback_leads_with_its_exception_line(tmp_path: Path) -> None:
    # LlamaFactory#6000's lines with the exception changed to one no rule claims: the end no rule explains leads with
    # the exception line, not with the frame the paste happened to start on
    lines = extra_input("1288").joinpath("train.log").read_text().splitlines()
    lines[-1] = "[rank0]: ValueError: bad shard"
    run = tmp_path / "run"
    run.mkdir()
    (run / "train.log").write_text("\n".join(lines) + "\n")
    report = analyze(Settings(paths=[str(run)]))
    assert _top(report) == ("other", "other.fatal-exit", "train.log", 15)


# -- synthetic forms of real lines ------------------------------------------------------------------------------
# open-r1#152's failure as one line (its newlines lost), and simpleRL-reason#95's reward traceback (math_verify's
# timeout) in the forms below.
OOM_TB = [
    "Traceback (most recent call last):",
    '  File "/w/open-r1/src/open_r1/grpo.py", line 263, in main',
    "    trainer.train()",
    '  File "/x/torch/_tensor.py", line 487, in backward',
    "    torch.autograd.backward(",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB. GPU 1 has a total capacity of 79.35 GiB "
    "of which 735.69 MiB is free.",
]
REWARD_TB = [
    "Traceback (most recent call last):",
    '  File "/w/verl/workers/reward_manager/naive.py", line 90, in __call__',
    "    score = self.compute_score(",
    '  File "/w/verl/utils/reward_score/math_verify.py", line 33, in compute_score',
    "    ret_score, _ = verify_func([ground_truth_boxed], [model_output])",
    '  File "/x/math_verify/grader.py", line 120, in verify',
    "    raise TimeoutError",
    "TimeoutError",
]


def _scan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, native: bool, data: bytes) -> Report:
    """triage over a run whose train.log holds `data` as it is, on the scan path asked for (test_line_forms sets it)."""
    _report(tmp_path, monkeypatch, native, [])
    run = tmp_path / "bytes"
    run.mkdir()
    (run / "train.log").write_bytes(data)
    return analyze(Settings(paths=[str(run)]))


def _text(lines: list[str]) -> bytes:
    return ("step 1 loss 0.41\n" + "\n".join(lines) + "\n").encode()


@pytest.mark.parametrize("native", [True, False])
def test_a_joined_traceback_is_read_by_its_final_exception(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           native: bool) -> None:
    report = _scan(tmp_path, monkeypatch, native, _text([" ".join(OOM_TB)]))
    assert _top(report) == ("trainer-oom", report.findings[0].rule, "train.log", 2)
    assert report.findings[0].rule.startswith("trainer.")
    assert report.findings[0].numbers["tried"] == 3.0


@pytest.mark.parametrize("native", [True, False])
def test_a_joined_reward_traceback_is_the_verifiers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   native: bool) -> None:
    report = _scan(tmp_path, monkeypatch, native, _text([" ".join(REWARD_TB)]))
    assert _top(report) == ("verifier", "verifier.timeout-exception", "train.log", 2)


@pytest.mark.parametrize("msg, final", [
    (" ".join(OOM_TB), OOM_TB[-1]),
    (" ".join(REWARD_TB), "TimeoutError"),  # not the source line's own `raise TimeoutError`
    ('Traceback (most recent call last): File "/a.py", line 3, in f     except ValueError: RuntimeError: boom',
     "RuntimeError: boom"),
    ('Traceback (most recent call last): File "/a.py", line 3, in f     x = g(1)', ""),  # cut before its exception
])
def test_the_final_exception_of_a_joined_traceback(msg: str, final: str) -> None:
    assert joined_final(msg) == final


@pytest.mark.parametrize("native", [True, False])
def test_a_relayed_process_id_prefix_keeps_the_frames(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      native: bool) -> None:
    report = _scan(tmp_path, monkeypatch, native, _text(["[80846] " + s for s in REWARD_TB]))
    assert _top(report) == ("verifier", "verifier.timeout-exception", "train.log", 9)


@pytest.mark.parametrize("native", [True, False])
def test_a_powershell_redirect_in_utf16_with_garbled_bars(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          native: bool) -> None:
    # Windows PowerShell 5.1's `>` writes UTF-16 LE with a BOM; the UTF-8 bytes of a progress bar come out as
    # code-page characters ("█" as "Γûê")
    bar = "  3%|ΓûêΓûê        | 4/120 [00:41<19:40, 10.17s/it]"
    data = ("\ufeff" + "\r\n".join([bar, *OOM_TB]) + "\r\n").encode("utf-16-le")
    report = _scan(tmp_path, monkeypatch, native, data)
    assert _top(report) == ("trainer-oom", "trainer.oom-backward", "train.log", 7)


@pytest.mark.parametrize("native", [True, False])
def test_two_ranks_tracebacks_interleaved_without_a_prefix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           native: bool) -> None:
    # two ranks writing one stream line by line (DeepSpeed#2899, real-extra 968, without its pdsh prefix)
    other = [s.replace("GPU 1", "GPU 0") for s in OOM_TB]
    lines = [x for pair in zip(OOM_TB, other) for x in pair]
    report = _scan(tmp_path, monkeypatch, native, _text(lines))
    assert _top(report)[:2] == ("trainer-oom", "trainer.oom-backward")
    assert report.findings[0].evidence[0].line == 12


@pytest.mark.parametrize("native", [True, False])
def test_ray_deduplication_notes_count_the_repeats(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   native: bool) -> None:
    line = ("(WorkerDict pid=27497, ip=10.0.0.2) [2025-03-04 19:28:30,014 E 27497 27497] logging.cc:113: Unhandled "
            "exception: N5boost10wrapexceptINS_6system12system_errorEEE. what(): thread: Resource temporarily "
            "unavailable [system:11] [repeated 7x across cluster]")
    report = _scan(tmp_path, monkeypatch, native, _text([line]))
    top = report.findings[0]
    assert (top.rule, top.evidence[0].line, top.count) == ("other.thread-limit", 2, 7)


@pytest.mark.parametrize("line, msg", [
    # a log viewer's frame (vllm#6976): both sides go
    ("│ ERROR 09-27 06:46:46 engine.py:157] RuntimeError: CUDA error: an illegal memory access was encountered"
     "                     │", "RuntimeError: CUDA error: an illegal memory access was encountered"),
    ("│ ERROR 09-27 06:46:46 engine.py:157]                                                  │", ""),
    # parallax (GradientHQ/parallax#210)
    ("Nov 10 09:03:46.891 [ERROR   ] launch.py:175             CUDA out of memory. Tried to allocate 1014.00 MiB.",
     "CUDA out of memory. Tried to allocate 1014.00 MiB."),
    # vLLM's logger on a line with nothing after it (vllm-windows#72)
    ("(Worker_PP0 pid=23220) ERROR 07-15 21:01:01 [multiproc_executor.py:1007]", ""),
    ("[80846] torch.OutOfMemoryError: CUDA out of memory.", "torch.OutOfMemoryError: CUDA out of memory."),
    ("[1] first item of a list", "[1] first item of a list"),  # a message's own list mark stays
    # colour codes that lost their escape byte, the reset as `[0;0m` (vllm-ascend#7015)
    ("[0;36m(EngineCore_DP0 pid=224)[0;0m ERROR 03-03 10:59:11 [core.py:938] TimeoutError", "TimeoutError"),
])
def test_more_prefixes_are_split_off(line: str, msg: str) -> None:
    assert split_ray(line)[0] == msg


# -- the verdict of a run on many nodes ---------------------------------------------------------------------------
def _two_nodes(root: Path) -> Path:
    """A run copied off two machines, one directory each: node 02's trainer rank 13 ran out of memory (accelerate#1519's
    OOM line behind torchrun's prefix), node 01's rank 2 then timed out in the all-reduce (OpenRLHF#621's watchdog)."""
    run = root / "run"
    for node in ("gpu-node-01", "gpu-node-02"):
        (run / node).mkdir(parents=True)
    (run / "gpu-node-01" / "train.log").write_text(
        "step 1\n[rank2]:[E1224 13:23:05.483840160 ProcessGroupNCCL.cpp:542] [Rank 2] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523, "
        "Timeout(ms)=600000) ran for 600020 milliseconds before timing out.\n")
    (run / "gpu-node-02" / "train.log").write_text("".join("[rank13]: " + s + "\n" for s in OOM_TB))
    return run


def test_the_verdict_names_the_node_and_rank_of_a_multi_node_root_cause(tmp_path: Path) -> None:
    report = analyze(Settings(paths=[str(_two_nodes(tmp_path))]))
    assert verdict(report) == ("error: trainer-oom: Trainer CUDA OOM in the backward pass "
                               "(on gpu-node-02, rank 13: gpu-node-02/train.log:6)")


def test_the_verdict_of_one_machine_stays_short(tmp_path: Path) -> None:
    run = _two_nodes(tmp_path)
    report = analyze(Settings(paths=[str(run / "gpu-node-02")]))
    assert verdict(report) == "error: trainer-oom: Trainer CUDA OOM in the backward pass"


@pytest.mark.parametrize("text, writer", [
    ("[rank13]: torch.OutOfMemoryError: CUDA out of memory.", "rank 13"),
    ("[default3]:torch.OutOfMemoryError: CUDA out of memory.", "local rank 3"),
    ("[gpu187:1]:torch.cuda.OutOfMemoryError: CUDA out of memory.", "gpu187 local rank 1"),
    ("3: torch.OutOfMemoryError: CUDA out of memory.", "rank 3"),
    ("[1,5]<stderr>:torch.OutOfMemoryError: CUDA out of memory.", "rank 5"),
    ("(WorkerDict pid=616, ip=192.168.149.159) torch.OutOfMemoryError: CUDA out of memory.", "ip 192.168.149.159"),
    ("torch.OutOfMemoryError: CUDA out of memory.", ""),
])
def test_the_writer_an_evidence_line_names(text: str, writer: str) -> None:
    assert writer_of(text) == writer


def test_a_chained_traceback_logged_at_error_level_reads_as_one_failure() -> None:
    # vllm-ascend issue 7015 (real-extra 1295): the engine core's TimeoutError, Python's "direct cause" line between
    # its chained tracebacks, and the API server's "AsyncLLM output_handler failed." header, all at ERROR level
    report = triage_dir(extra_input("1295-"))
    assert [(f.rule, f.severity, f.evidence[0].line) for f in report.findings] == [
        ("other.fatal-exit", "error", 5), ("other.exception-wrapper-header", "info", 8)]
