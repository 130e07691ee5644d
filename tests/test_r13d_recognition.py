"""Recognition round 13 (r13d): real failures outside the six are named as what they are, and healthy runs with
alarming lines stay quiet.

NCCL errors without torch's "NCCL error in: FILE" (vLLM's pynccl wrapper, vllm issue 16707; torch's numbered
"NCCL Error 2", vllm issue 5828; an async WorkNCCL exception, OpenRLHF issue 621), Gloo groups that cannot connect
(verl issue 967, gpustack issue 2125), device-side assertion lines pasted without the RuntimeError
(Megatron-DeepSpeed issue 207, mosaicml composer issue 2758), the VS Code debugger's pane of an uncaught exception
(ms-swift issue 5087), DataLoader workers killed on the host side, and deprecation warnings in healthy runs
(nanoGPT issue 635, Training PRO issue 19): real-extra 1048-1063."""

from __future__ import annotations

from pathlib import Path

from conftest import by_rule, triage_dir, triage_files
from conftest import extra_input as case
from domain import SIX

from triage.model import SEVERITY_RANK
from triage.report.gate import scan_exit


def lines_of(report, rule: str) -> list[int]:
    return [e.line for e in by_rule(report)[rule].evidence]


def test_nccl_errors_without_a_file_are_named_at_the_exception_line() -> None:
    for prefix, line, reason in (("1054-", 5, "unhandled system error"), ("1055-", 8, "unhandled system error")):
        report = triage_dir(case(prefix))
        top = report.findings[0]
        assert top.rule == "other.nccl-error"
        assert line in [e.line for e in top.evidence]
        assert top.numbers["reason"] == reason


NCCL_WORDINGS = [
    # OpenRLHF issue 621 (torch 2.5, NCCL 2.21.5): the async exception a broadcast raised after a peer died
    "(RayWorkerWrapper pid=92234, ip=172.19.24.110) [rank1]:[E1224 13:23:05.483840160 ProcessGroupNCCL.cpp:542] "
    "[Rank 12] Collective WorkNCCL(SeqNum=1, OpType=BROADCAST, NumelIn=778567680, NumelOut=778567680, "
    "Timeout(ms)=1800000) raised the following async exception: NCCL error: remote process exited or there was a "
    "network error, NCCL version 2.21.5",
    # ms-swift issue 6960 (title): GRPO on Qwen3-VL
    "RuntimeError: NCCL error: unhandled cuda error",
    # vllm issue 427 (vLLM 0.1, NCCL through cupy in a Ray worker)
    "[2023-07-11 15:20:41,680 E 42067 42067] logging.cc:97: Unhandled exception: St13runtime_error. what(): NCCL "
    "Error 5: invalid usage",
]


def test_torchs_explanation_under_the_nccl_error_folds_into_it() -> None:
    report = triage_dir(case("1049-"))  # DistBackendError, the user's "--", then "UnhandledCudaError: ..."
    assert [f.rule for f in report.findings] == ["other.nccl-error"]
    assert lines_of(report, "other.nccl-error") == [1, 3]


def test_other_nccl_wordings_are_nccl_errors(tmp_path: Path) -> None:
    for i, line in enumerate(NCCL_WORDINGS):
        report = triage_files(tmp_path / str(i), {"worker.log": line + "\n"})
        assert report.findings[0].rule == "other.nccl-error", line


def test_gloo_groups_that_cannot_connect_are_named() -> None:
    for prefix, line in (("1056-", 1), ("1057-", 16)):
        report = triage_dir(case(prefix))
        assert report.findings[0].rule == "other.gloo-connect-failed"
        assert line in lines_of(report, "other.gloo-connect-failed")


def test_a_connected_gloo_report_is_healthy_and_984_stays_a_cold_start(tmp_path: Path) -> None:
    ok = triage_files(tmp_path, {"engine.log": "[Gloo] Rank 0 is connected to 1 peer ranks. Expected number of "
                                               "connected peer ranks is : 1\n"})
    assert not ok.findings
    report = triage_dir(case("984-"))  # the prefill ranks never connected, and the server never came up
    assert report.findings[0].category == "cold-start"
    assert "other.gloo-connect-failed" in by_rule(report)


DEVICE_ASSERTIONS = [
    # mosaicml composer issue 2758 (ROCm)
    "/pytorch/aten/src/ATen/native/hip/Indexing.hip:1292: indexSelectLargeIndex: Device-side assertion "
    "`srcIndex < srcSelectDimSize' failed.",
    # NVIDIA flowtron issue 52 (torch 1.x on Windows, THC)
    "C:/cb/pytorch_1000000000000/work/aten/src/THC/THCTensorIndex.cu:218: block: [0,0,0], thread: [3,0,0] "
    "Assertion `srcIndex < srcSelectDimSize` failed.",
    # NVIDIA garak issue 199 (long inputs to a Hugging Face generator)
    "../aten/src/ATen/native/cuda/Indexing.cu:1236: indexSelectSmallIndex: block: [5,0,0], thread: [70,0,0] "
    "Assertion `srcIndex < srcSelectDimSize` failed.",
]


def test_device_assertion_lines_alone_are_cuda_errors(tmp_path: Path) -> None:
    report = triage_dir(case("1059-"))
    assert report.findings[0].rule == "other.cuda-error"
    assert lines_of(report, "other.cuda-error")[0] == 1
    for i, line in enumerate(DEVICE_ASSERTIONS):
        one = triage_files(tmp_path / str(i), {"train.log": line + "\n"})
        assert one.findings[0].rule == "other.cuda-error", line


def test_the_debuggers_uncaught_exception_is_a_fatal_error() -> None:
    report = triage_dir(case("1052-"))
    top = report.findings[0]
    assert top.rule == "other.debugger-uncaught-exception" and top.severity == "error"
    assert top.title == "The debugger stopped on an uncaught KeyError"
    assert top.evidence[0].line == 1


def test_an_oom_under_the_debugger_is_still_the_trainer_oom(tmp_path: Path) -> None:
    report = triage_files(tmp_path, {"train.log": (
        "Exception has occurred: OutOfMemoryError       (note: full exception trace is shown but execution is "
        "paused at: _run_module_as_main)\n"
        "CUDA out of memory. Tried to allocate 40.00 MiB (GPU 0; 15.99 GiB total capacity; 14.85 GiB already "
        "allocated; 0 bytes free; 15.13 GiB reserved in total by PyTorch)\n")})
    assert report.findings[0].category == "trainer-oom"


def test_host_side_data_loading_deaths_are_not_gpu_memory(tmp_path: Path) -> None:
    cases = {
        "RuntimeError: DataLoader worker (pid 19597) is killed by signal: Killed.":
            ("other.dataloader-worker-killed", "A DataLoader worker process was killed (Killed)"),
        "RuntimeError: DataLoader worker (pid 325) is killed by signal: Bus error.":
            ("other.dataloader-worker-killed", "A DataLoader worker process was killed (Bus error)"),
        "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).":
            ("other.shm-exhausted", "Shared memory (/dev/shm) ran out for the DataLoader workers"),
    }
    for i, (line, (rule, title)) in enumerate(cases.items()):
        report = triage_files(tmp_path / str(i), {"train.log": "step 10 loss 0.5\n" + line + "\n"})
        top = report.findings[0]
        assert (top.rule, top.title) == (rule, title)
        assert not [f for f in report.findings if f.category in SIX]
    ray = triage_files(tmp_path / "ray", {"driver.log": (
        "2023-09-21 09:59:38,239\tWARNING services.py:1889 -- WARNING: The object store is using /tmp instead of "
        "/dev/shm because /dev/shm has only 67108864 bytes available. This will harm performance!\n")})
    assert "other.shm-exhausted" not in by_rule(ray)


def test_ray_killing_a_worker_for_host_memory_is_no_trainer_oom() -> None:
    report = triage_dir(case("1061-"))
    assert report.findings[0].rule == "other.host-oom"
    assert not [f for f in report.findings if f.category == "trainer-oom"]


def test_deprecation_warnings_in_healthy_runs_stay_quiet() -> None:
    for prefix in ("1062-", "1063-"):
        report = triage_dir(case(prefix))
        assert not [f for f in report.findings if SEVERITY_RANK[f.severity] <= 1]
        assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 0


CHECKPOINT_LOADS = [
    # ReaLHF issue 44 (an RLHF actor's safetensors), QwenLM/Qwen issue 462: a truncated or half-downloaded file
    "safetensors_rust.SafetensorError: Error while deserializing header: MetadataIncompleteBuffer",
    # datalab-to/marker issue 970 (safetensors 0.6 wording)
    "safetensors_rust.SafetensorError: Error while deserializing header: incomplete metadata, file not fully covered",
    # mmdetection issue 4835 (resuming from a checkpoint that was not written whole)
    "RuntimeError: [enforce fail at inline_container.cc:144] . PytorchStreamReader failed reading zip archive: failed "
    "finding central directory",
    # DigiRL issue 11 (a checkpoint of another model size)
    "\tsize mismatch for decoder.block.1.layer.0.SelfAttention.v.weight: copying a param with shape "
    "torch.Size([768, 768]) from checkpoint, the shape in current model is torch.Size([512, 512]).",
]


def test_a_checkpoint_that_cannot_be_read_back_is_named(tmp_path: Path) -> None:
    for i, line in enumerate(CHECKPOINT_LOADS):
        report = triage_files(tmp_path / str(i), {"train.log": line + "\n"})
        top = report.findings[0]
        assert (top.rule, top.severity) == ("other.checkpoint-load-failed", "error"), line
    mismatch = triage_files(tmp_path / "m", {"train.log": CHECKPOINT_LOADS[3] + "\n"})
    assert mismatch.findings[0].numbers["checkpoint_shape"] == "768, 768"
    assert mismatch.findings[0].numbers["model_shape"] == "512, 512"


CHAT_TEMPLATES = [
    # OpenRLHF issue 613 (a base model's tokenizer, under deepspeed's rank prefix)
    "[rankx]: ValueError: Cannot use chat template functions because tokenizer.chat_template is not set and no "
    "template argument was passed! For information about writing templates and setting the tokenizer.chat_template "
    "attribute, please see the documentation at https://huggingface.co/docs/transformers/main/en/chat_templating",
    # Medusa issue 102 (the template itself raises)
    "jinja2.exceptions.TemplateError: Conversation roles must alternate user/assistant/user/assistant/...",
]


def test_a_chat_template_that_cannot_render_is_no_prompt_budget(tmp_path: Path) -> None:
    for i, line in enumerate(CHAT_TEMPLATES):
        report = triage_files(tmp_path / str(i), {"train.log": line + "\n"})
        assert report.findings[0].rule == "other.chat-template-error", line
        assert not [f for f in report.findings if f.category in SIX]
