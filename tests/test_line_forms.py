"""The forms a failure line arrives in: launcher, container, journal and logger prefixes, JSON log records.

The same traceback written behind each form must give the finding the bare lines give (rule, evidence line) on
both scan paths, and a rule anchored at the start of the message (`^Killed`) must still see its message.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import extra_input

from triage.analyze import Settings, analyze
from triage.input.unwrap import unwrap, wrap_width
from triage.library.rules import Library
from triage.model import Line
from triage.parsers.signals import is_warning_level, level_of
from triage.prefixes import json_message
from triage.rulecheck import line_matches
from triage.scan import native as c_helper
from triage.scan.origins import split_ray

# A real trainer OOM in the backward pass (huggingface/accelerate issue 1519, rank 0's traceback; the OOM line is
# rank 1's), here written as one process would.
TRACEBACK = [
    "Traceback (most recent call last):",
    '  File "/ssd003/home/junma/MedSAM/v2-1_mgpus_train_enc_dec.py", line 263, in main',
    "    accelerator.backward(loss)",
    '  File "/h/junma/anaconda3/envs/medsam/lib/python3.10/site-packages/torch/_tensor.py", line 487, in backward',
    "    torch.autograd.backward(",
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB (GPU 1; 79.35 GiB total capacity; "
    "33.66 GiB already allocated; 735.69 MiB free; 34.89 GiB reserved in total by PyTorch)",
]

# Each form as its program writes it (the ones from a real paste name it).
FORMS: dict[str, Callable[[str], str]] = {
    "plain": lambda s: s,
    "cri": lambda s: "2024-05-01T10:00:00.123456789Z stderr F " + s,  # containerd / CRI-O log file
    "docker-json": lambda s: json.dumps({"log": s + "\n", "stream": "stderr", "time": "2024-05-01T10:00:00.1Z"}),
    "journald": lambda s: "May 01 10:00:00 node1 python3[1234]: " + s,  # journalctl, syslog
    "journald-locale": lambda s: "mar 15 11:39:07 acquario3 python3[87551]: " + s,  # ollama#9782's paste
    "actions": lambda s: "2024-05-01T10:00:00.1234567Z " + s,  # GitHub Actions raw log
    "host-rank": lambda s: "[gpu187:0]:" + s,  # accelerate#1519
    "torchrun-tee": lambda s: "[default0]:" + s,
    "openmpi": lambda s: "[1,0]<stderr>:" + s,
    "vllm-v1-worker": lambda s: "(VllmWorker rank=2 pid=10743) ERROR 03-16 06:12:38 [multiproc_executor.py:375] " + s,
    # vLLM >= 0.10 names the module by its path under vllm/ (vllm-ascend issue 5699, real-extra 933)
    "vllm-module-path": lambda s: "ERROR 02-07 18:18:59 [v1/executor/multiproc_executor.py:824] " + s,
    "ray-1x": lambda s: "(pid=1234, ip=10.0.0.1) " + s,
    "loguru": lambda s: "2024-05-01 10:00:00.123 | ERROR    | __main__:main:42 - " + s,
    "ray-no-pid": lambda s: "(pid=) " + s,  # Ray 2.x before it knows the worker's pid (real-extra 987)
    "tsl": lambda s: "2025-07-18 19:09:55.245872: E torch_xla/csrc/runtime/pjrt_computation_client.cpp:682] " + s,
    "areal": lambda s: "(AReaL) 20260304-10:31:13.128 SyncRPCServer ERROR: " + s,  # AReaL issue 979 (real-extra 1365)
    # FastChat's logger, its stderr redirected at ERROR (QAnything issue 302, real-extra 1211; LLaVA, sglang's
    # FastChat worker)
    "fastchat-stderr": lambda s: "2024-04-27 10:13:05 | ERROR | stderr | " + s,
    "logging": lambda s: "2024-05-01 10:00:00,123 - trainer - ERROR - " + s,
    "json-lines": lambda s: json.dumps({"timestamp": "2024-05-01T10:00:00Z", "level": "ERROR", "message": s}),
    "pdsh": lambda s: "gpu-q-13: " + s,  # DeepSpeed's multi-node runner (real-extra 968)
    "kubectl-prefix": lambda s: "[pod/vllm-0/vllm] " + s,
    "ts": lambda s: "May 01 10:00:00 " + s,  # moreutils' ts
    "hydra": lambda s: "[2024-05-01 10:00:00,123][__main__][ERROR] - " + s,
    "rich": lambda s: "[05/01/24 10:00:00] ERROR    " + s,
    "ray-autoscaler": lambda s: "(autoscaler +2m5s) " + s,
    # glog's format as torch elastic (>= 2.4) writes it (an unsloth paste), gRPC and abseil write it
    "glog": lambda s: "E0801 13:23:20.000000 32974 torch/distributed/elastic/multiprocessing/api.py:874] " + s,
    "glog-year": lambda s: "E20240801 13:23:20.000000  4567 raylet.cc:42] " + s,  # glog >= 0.7
    "abseil-early": lambda s: "E0000 00:00:1721234567.123456   12345 cuda_dnn.cc:8310] " + s,
    # Ray's C++ components (raylet.out, gcs_server.out, python-core-worker-*.log; ray#34695, vllm#427)
    "ray-cpp": lambda s: "[2023-04-19 16:22:19,798 E 329 329] (raylet) node_manager.cc:3069: " + s,
    "ray-cpp-worker": lambda s: "[2023-07-11 15:20:05,144 I 42067 42067] core_worker_process.cc:107: " + s,
    "c10": lambda s: "[rank1]:[E1224 13:23:05.483840160 ProcessGroupNCCL.cpp:542] " + s,  # OpenRLHF#621
    "c10-old": lambda s: "[E ProcessGroupNCCL.cpp:737] " + s,  # torch < 2.2 (OFA#271)
    "markdown-quote": lambda s: ">> " + s,  # a log quoted in an issue thread (real-extra 302, simpleRL-reason#95)
    "pid-bracket": lambda s: "[80846] " + s,  # a launcher relaying its child's lines behind the child's pid
    "viewer-box": lambda s: "│ " + s.ljust(150) + " │",  # a terminal log viewer's frame (real-extra 1290, vllm#6976)
    "viewer-heavy-box": lambda s: "┃ " + s.ljust(150) + " ┃",  # the same frame drawn heavy (one box mechanism for both)
}

# Forms whose prefix names an inference engine's process (sides.yaml actors: vLLM V1's `VllmWorker*`).
ENGINE_FORMS = {"vllm-v1-worker"}


def _report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, native: bool, lines: list[str]):  # type: ignore[no-untyped-def]
    if native and not c_helper.available():
        pytest.skip("the C prefilter is not built")
    if native:
        monkeypatch.delenv("TRIAGE_NO_NATIVE", raising=False)
    else:
        monkeypatch.setenv("TRIAGE_NO_NATIVE", "1")
    run = tmp_path / "run"
    run.mkdir()
    (run / "train.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return analyze(Settings(paths=[str(run)]))


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize("form", sorted(FORMS))
def test_a_traceback_behind_any_form_gives_the_bare_finding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            form: str, native: bool) -> None:
    report = _report(tmp_path, monkeypatch, native, [FORMS[form](s) for s in TRACEBACK])
    if form in ENGINE_FORMS:  # the prefix names an engine's own process: its OOM is the engine's, whatever the frames
        assert [(f.rule, f.evidence[0].line) for f in report.findings] == [("serving.engine-cuda-oom", 6)]
        return
    assert [(f.rule, f.evidence[0].line) for f in report.findings] == [("trainer.oom-backward", 6)]
    assert report.findings[0].category == "trainer-oom"


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize("form", sorted(set(FORMS) - {"plain"}))
def test_a_rule_anchored_at_the_message_start_sees_through_the_form(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    form: str, native: bool) -> None:
    report = _report(tmp_path, monkeypatch, native, ["step 3 loss 0.41", FORMS[form]("Killed")])
    assert report.findings[0].rule == "other.killed-sigkill"
    assert report.findings[0].evidence[0].line == 2


@pytest.mark.parametrize("line, msg", [
    ("[gpu187:1]:torch.cuda.OutOfMemoryError: CUDA out of memory.", "torch.cuda.OutOfMemoryError: CUDA out of memory."),
    ("(VllmWorkerProcess pid=6499) ERROR 07-24 14:07:40 multiproc_worker_utils.py:226] ValueError: boom",
     "ValueError: boom"),
    ("(VllmWorker rank=7 pid=10948) ERROR 03-16 06:12:38 [multiproc_executor.py:375] RuntimeError: boom",
     "RuntimeError: boom"),
    ("[2024-08-02 01:24:59,694] [INFO] [launch.py:319:sigkill_handler] Killing subprocess 33131",
     "Killing subprocess 33131"),
    ("2023-07-07T17:55:43.805514Z  INFO text_generation_launcher: Shutting down shards",  # TGI: aligned level
     "INFO text_generation_launcher: Shutting down shards"),
    ("2024-06-28T06:11:52.685306698Z (LLMRayActor pid=20770) ERROR 06-28 06:11:45 worker_base.py:145]   File "
     '"/x/worker_base.py", line 137, in execute_method', '  File "/x/worker_base.py", line 137, in execute_method'),
    ("2025-12-13T19:54:35.1Z     all_reduce (vllm/distributed/parallel_state.py:514)",  # indentation kept
     "    all_reduce (vllm/distributed/parallel_state.py:514)"),
    ("W0801 13:23:17.366000 32974 torch/distributed/elastic/multiprocessing/api.py:900] Sending process 33051 "
     "closing signal SIGTERM", "Sending process 33051 closing signal SIGTERM"),  # torch elastic >= 2.4
    ("(pid=81331) E0328 18:23:00.165781 81395 core_worker.cc:382] Raylet failed. Shutting down.",  # Ray 0.8
     "Raylet failed. Shutting down."),
    ("(pid=raylet) I0807 17:00:41.812641 71814 71814 worker_pool.cc:265] Some workers of the worker process(76769) "
     "have not registered", "Some workers of the worker process(76769) have not registered"),  # Ray 1.x: pid, tid
    ("(raylet) [2025-04-02 15:02:00,117 E 135782 135782] (raylet) node_manager.cc:3069: 1 Workers (tasks / actors) "
     "killed due to memory pressure (OOM)", "1 Workers (tasks / actors) killed due to memory pressure (OOM)"),
    ("[2023-10-23 03:15:21,685 W 921 921] (gcs_server) gcs_worker_manager.cc:55: Reporting worker exit",
     "Reporting worker exit"),
    ("[rank5]:[E ProcessGroupNCCL.cpp:563] [Rank 5] Watchdog caught collective operation timeout",
     "[Rank 5] Watchdog caught collective operation timeout"),
])

def test_real_prefixes_are_split_off(line: str, msg: str) -> None:
    assert split_ray(line)[0] == msg


@pytest.mark.parametrize("line, level", [
    ("E0801 13:23:20.000000 32974 torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: 1)", "error"),
    ("F0501 12:34:56.789012  123 raylet.cc:42] Check failed: x", "fatal"),
    ("[E ProcessGroupNCCL.cpp:737] [Rank 1] Watchdog caught collective operation timeout", "error"),
    ("[2023-04-19 16:22:19,798 E 329 329] (raylet) node_manager.cc:3069: 13 Workers killed", "error"),
    ("I0801 13:23:20.000000 32974 api.py:874] failed to connect, retrying", ""),
])
def test_a_glog_level_is_read_from_the_prefix_split_off(line: str, level: str) -> None:
    msg = split_ray(line)[0]
    assert msg != line
    assert level_of(Line("f", 1, line, msg)) == level


@pytest.mark.parametrize("line", [
    "W0801 13:23:17.366000 32974 torch/distributed/elastic/multiprocessing/api.py:900] Sending process 1 closing",
    "[W ProcessGroupNCCL.cpp:1250] Warning: a barrier was called",
    "[2023-10-23 03:15:21,685 W 921 921] (gcs_server) gcs_worker_manager.cc:55: Reporting worker exit",
])
def test_a_glog_warning_is_read_from_the_prefix_split_off(line: str) -> None:
    assert is_warning_level(Line("f", 1, line, split_ray(line)[0]))


@pytest.mark.parametrize("line", ["gsm8k: 0.73", "step1: loss 3", "ValueError: boom", "Engine core: failed"])
def test_a_message_that_only_looks_like_a_prefix_stays_whole(line: str) -> None:
    assert split_ray(line)[0] == line
    assert split_ray("May 01 10:00:00 " + line)[0] == line




def test_a_json_record_gives_its_message_and_no_actor() -> None:
    line = json.dumps({"log": "(SGLangEngine pid=7) [2025-01-01 00:00:00 TP0] Killed\n", "stream": "stderr"})
    assert split_ray(line) == ("Killed", "", "", 1)
    assert json_message('{"event": "reward failed", "level": "error"}') == "reward failed"  # structlog
    assert json_message('{"text": "2024-05-01 | ERROR | m:f:1 - x\\n", "record": {}}') == "2024-05-01 | ERROR | m:f:1 - x"


@pytest.mark.parametrize("line", [
    '{"prompt": "2+2?", "text": "Killed"}',  # a rollout dump's sample: its text is the model's, not a log message
    '{"step": 3, "loss": 0.41}',
    '{"object":"error","message":"The model `qwen3` does not exist.","type":"NotFoundError","code":404}',  # API body
    '{"log": "unterminated',
    '["log", "Killed"]',
])
def test_lines_that_are_no_json_log_record_stay_as_they_are(line: str) -> None:
    assert json_message(line) is None
    assert split_ray(line)[0] == line


def test_no_prefix_takes_text_a_rule_reads(lib: Library) -> None:
    """Every rule example its rule matches is still matched on the message split_ray leaves: no prefix form eats a
    message's own tags (lmdeploy's `[TM][ERROR] CUDA runtime error`, an API error body read whole)."""
    lost = [(r.id, line) for r in lib.rules if not r.check for line in r.examples.get("match", [])
            if line_matches(r, line) and not line_matches(r, split_ray(line)[0])]
    assert lost == []


# A paste copied out of a terminal 150 columns wide (OpenRLHF issue 265, real-extra 1192): every long line cut into
# pieces of exactly the width, mid-word; the line the terminal padded with blanks ends there.
WRAPPED = [
    "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit detail: Wo"
    "rker unexpectedly exits with a connection",
    " error code 2. End of file. There are some potential root causes. (1) The process is killed by SIGKILL by OOM"
    " killer due to high memory usage. (2) ra",
    "y stop --force is called. (3) The worker is crashed unexpectedly due to SIGSEGV or other unexpected errors."
    + " " * 42,
    "step 3 loss 0.41",
]


def test_hard_wrapped_lines_are_joined_and_later_lines_keep_their_number_and_offset() -> None:
    assert {len(x) for x in WRAPPED[:3]} == {149}
    data = "\n".join(WRAPPED).encode() + b"\n"
    assert wrap_width(data) == 149
    out = unwrap(io.BufferedReader(io.BytesIO(data))).read()
    assert len(out) == len(data)
    lines = out.decode().split("\n")
    assert lines[0].startswith("The actor is dead") and "(2) ray stop --force is called" in lines[0]
    assert lines[1:4] == ["", "", "step 3 loss 0.41"]


def test_a_frame_cut_in_its_path_or_name_is_joined() -> None:
    """vLLM V1's engine traceback copied from a terminal 119 columns wide (real-extra 903): frames cut in their
    function's name are whole again, at the first piece's line."""
    data = (extra_input("903-") / "vllm.log").read_bytes()
    raw = data.decode().split("\n")
    out = unwrap(io.BufferedReader(io.BytesIO(data))).read().decode().split("\n")
    assert len(out) == len(raw)
    at = next(i for i, x in enumerate(raw) if x.endswith("in _chec"))
    assert out[at].endswith(", in _check_enough_kv_cache_memory") and out[at + 1] == ""


@pytest.mark.parametrize("native", [True, False])
def test_a_hard_wrapped_paste_gives_the_finding_of_its_whole_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   native: bool) -> None:
    report = _report(tmp_path, monkeypatch, native, WRAPPED)
    assert [(f.rule, f.evidence[0].line) for f in report.findings][:1] == [("other.actor-died", 1)]


@pytest.mark.parametrize("lines", [
    # records of one format as long as one another (stats rows): each starts like the one before
    ["[2025-07-02 07:41:59 TP0] Decode batch. #running-req: 32, #token: 12345, token usage: 0.50, #queue-req: 0"] * 4,
    # a long line followed by indented traceback lines, a frame, an exception, a prefixed line
    ["x" * 120, "    return f(*args)", "x" * 120, '  File "a.py", line 3, in f', "x" * 120, "ValueError: boom",
     "x" * 120, "[rank0]: boom"],
    # only one line of that width: no evidence of a terminal's width
    ["y" * 120, "continued here", "short"],
    # the same long line printed twice, each time followed by the same line (a warning repeated per process)
    ["W" * 99 + "models.", "model config", "W" * 99 + "models.", "model config"],
    # metric records (verl's `step:N - ...`) that happen to be as long as one another
    [f"step:{n} - train/loss:0.{n}{'7' * 60} - train/time(s):3.{n}{'1' * 30}" for n in (11, 12, 13, 14)],
    # a numbered list under lines as long as one another (a model's answer in a rollout dump)
    ["A" * 89 + "x", "2. next item", "B" * 89 + "y", "3. next item"],
    # frames whose code lines lost their indentation (real-extra 301)
    ['File "/w/train_grpo.py", line 122, in main_task' + "_" * 40, "trainer.fit()",
     'File "/w/ray_trainer.py", line 911, in fit' + "_" * 45, "gen_batch_output = self.gen(batch)"],
])
def test_lines_that_were_not_wrapped_stay_as_they_are(lines: list[str]) -> None:
    assert len({len(x) for x in lines if len(x) > 80}) <= 1
    data = "\n".join(lines).encode() + b"\n"
    assert wrap_width(data) == 0
    assert unwrap(io.BufferedReader(io.BytesIO(data))).read() == data


# Two ranks' tracebacks interleaved line by line on one stream (torchrun's `[rankN]: ` prefixes): rank 1 runs out of
# memory in its forward pass while rank 0, in its backward pass, fails on the collective. Rank 1's OOM is read with
# its own frames, not rank 0's `backward`.
RANK1 = ["Traceback (most recent call last):", '  File "/x/train.py", line 263, in main',
         "    logits = model(input_ids)", '  File "/x/model.py", line 487, in forward', "    h = self.mlp(h)",
         TRACEBACK[-1]]
RANK0 = ["Traceback (most recent call last):", '  File "/x/train.py", line 263, in main',
         "    accelerator.backward(loss)", '  File "/x/torch/_tensor.py", line 487, in backward',
         "    torch.autograd.backward(", "RuntimeError: NCCL communicator was aborted on rank 0."]


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize("form", ["[rank{}]: ", "[default{}]:", "{}: ", "[1,{}]<stderr>:", "[gpu187:{}]:"])
def test_interleaved_ranks_tracebacks_are_read_apart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, form: str,
                                                      native: bool) -> None:
    lines = [x for a, b in zip(RANK1, RANK0) for x in (form.format(1) + a, form.format(0) + b)]
    report = _report(tmp_path, monkeypatch, native, lines)
    assert (report.findings[0].rule, report.findings[0].evidence[0].line) == ("trainer.cuda-oom", 11)
