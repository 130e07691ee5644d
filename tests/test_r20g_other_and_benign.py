"""Recognition round 20 (r20g): real failures outside the six categories, and benign lines of healthy runs
(real-extra 2000-2016).

- A hung NCCL watchdog killed by PyTorch's heartbeat monitor ("ProcessGroupNCCL's watchdog got stuck for 480
  seconds", torch 2.4+; "Heartbeat monitor timed out!", 2.2/2.3; the HCCL/XCCL forks), even when the terminal wrapped
  the line: other.nccl-heartbeat-watchdog-stuck (2000, blind: no finding).
- A collective timeout known only by the C++ frame header "Exception raised from checkTimeout at
  .../ProcessGroupNCCL.cpp:NNN": other.nccl-watchdog-timeout (2001, blind: no finding).
- datasets' "Couldn't reach '<name>' on the Hub (ConnectionError)" and its 1.x URL form: other.hub-unreachable
  (2006, blind right only by the process-end fallback).
- CUDA that cannot start at all (driver too old, no driver, Error 804 forward compatibility, Error 802 fabric
  manager, a CPU-only torch, no GPU visible): other.gpu-unavailable, and torch's UserWarning form (it goes on, on
  the CPU) other.gpu-unavailable-warning, a note (2015, 2016, blind right only by the unexplained/traceback-cut fallbacks).
- "TypeError: X() got an unexpected keyword argument 'y'", two packages at versions that do not fit:
  other.library-signature-mismatch (2010, blind right only by the process-end fallback).
- Blind right, kept right: flash-attn undefined symbol (2002), ECC (2003), segfaults (2004, 2005), the Hub from
  Trainer.init_hf_repo (2007), vllm._C import warning (2008), trl/transformers import errors (2009, 2011), and no
  warning for a verl critic's newly initialised score head (2012), tokenizers' fork notice (2013), unused rotary
  buffers (2014).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import extra_input, top, triage_dir, triage_files

from triage.model import SEVERITY_RANK

SIX = {"prompt-budget", "serving-oom-retraction", "trainer-oom", "cold-start", "generation-tail", "verifier"}


def test_wrapped_heartbeat_watchdog_line_is_the_nccl_hang():
    f = top(triage_dir(extra_input("2000-")))
    assert (f.category, f.rule, f.severity) == ("other", "other.nccl-heartbeat-watchdog-stuck", "error")
    assert [(e.file, e.line) for e in f.evidence][0] == ("debug_log.txt", 2)
    assert f.numbers.get("secs") == 480
    assert f.knobs == []


@pytest.mark.parametrize("line", [
    "[rank1]:[E1111 17:10:53.111111111 ProcessGroupNCCL.cpp:1685] [PG ID 0 PG GUID 0(default_pg) Rank 1] "
    "ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in monitoring enqueued collectives.",
    "[rank1]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 1] Heartbeat monitor timed out! Process will be terminated after "
    "dumping debug info. workMetaList_.size()=103",
    "[PG 0 Rank 3] ProcessGroupHCCL's watchdog got stuck for 600 seconds without making progress in monitoring "
    "enqueued collectives.",
])
def test_heartbeat_monitor_wordings(tmp_path: Path, line: str):
    f = top(triage_files(tmp_path, {"train.log": line + "\n"}))
    assert (f.category, f.rule) == ("other", "other.nccl-heartbeat-watchdog-stuck")


def test_heartbeat_advice_alone_is_not_a_hang(tmp_path: Path):
    r = triage_files(tmp_path, {"train.log": "If you suspect the watchdog is not actually stuck and a longer timeout "
                                             "would help, you can either increase the timeout "
                                             "(TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC) to a larger value\n"})
    assert "other.nccl-heartbeat-watchdog-stuck" not in [f.rule for f in r.findings]


def test_checktimeout_frames_alone_are_the_watchdog_timeout():
    f = top(triage_dir(extra_input("2001-")))
    assert (f.category, f.rule) == ("other", "other.nccl-watchdog-timeout")
    assert [(e.file, e.line) for e in f.evidence][0] == ("skyrl_train.log", 1)
    assert "Exception raised from checkTimeout" in f.evidence[0].text


def test_a_non_timeout_frame_header_is_not_a_timeout(tmp_path: Path):
    r = triage_files(tmp_path, {"train.log": "Exception raised from checkForNCCLErrorsInternal at /pytorch/torch/csrc/"
                                             "distributed/c10d/ProcessGroupNCCL.cpp:2027 (most recent call first):\n"})
    assert "other.nccl-watchdog-timeout" not in [f.rule for f in r.findings]


def test_datasets_couldnt_reach_on_the_hub():
    f = top(triage_dir(extra_input("2006-")))
    assert (f.category, f.rule) == ("other", "other.hub-unreachable")
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 15)]
    assert "on the Hub" in f.title


@pytest.mark.parametrize("line", [
    "[rank7]: ConnectionError: Couldn't reach 'allenai/social_i_qa' on the Hub (OfflineModeIsEnabled)",
    "ConnectionError: Couldn't reach https://huggingface.co/datasets/go_emotions/resolve/add4922/README.md "
    "(ConnectionError(ProtocolError('Connection aborted.', ConnectionResetError(104, 'Connection reset by peer'))))",
])
def test_datasets_hub_wordings(tmp_path: Path, line: str):
    f = top(triage_files(tmp_path, {"train.log": line + "\n"}))
    assert f.rule == "other.hub-unreachable"


def test_a_sandbox_url_is_not_the_hub(tmp_path: Path):
    r = triage_files(tmp_path, {"train.log": "ConnectionError: Couldn't reach http://localhost:8080/run_code\n"})
    assert "other.hub-unreachable" not in [f.rule for f in r.findings]


@pytest.mark.parametrize("case", ["2015-", "2016-"])
def test_error_804_is_the_gpu_unavailable(case: str):
    f = top(triage_dir(extra_input(case)))
    assert (f.category, f.rule, f.severity) == ("other", "other.gpu-unavailable", "error")
    assert "forward compatibility" in f.title
    assert "Error 804" in f.evidence[0].text


@pytest.mark.parametrize(("line", "what"), [
    ("RuntimeError: The NVIDIA driver on your system is too old (found version 11040). Please update your GPU driver",
     "found version 11040"),
    ("(WorkerDict pid=2345) RuntimeError: No CUDA GPUs are available", "No CUDA GPUs"),
    ("AssertionError: Torch not compiled with CUDA enabled", "not compiled with CUDA"),
    ("RuntimeError: CUDA error: CUDA driver version is insufficient for CUDA runtime version", "insufficient"),
    ("RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling "
     "NumCudaDevices() that might have already set an error? Error 802: system not yet initialized", "Error 802"),
])
def test_gpu_unavailable_wordings(tmp_path: Path, line: str, what: str):
    f = top(triage_files(tmp_path, {"train.log": line + "\n"}))
    assert (f.category, f.rule) == ("other", "other.gpu-unavailable")
    assert what in f.title


def test_torch_cuda_init_warning_is_a_note_not_a_crash():
    # 1714: a complete evaluation that ran on the CPU after torch's warning (quiet at warning level, r18a)
    r = triage_dir(extra_input("1714-"))
    f = [g for g in r.findings if g.rule == "other.gpu-unavailable-warning"][0]
    assert (f.category, f.severity) == ("other", "info")
    assert "found version 12040" in f.title
    assert "other.gpu-unavailable" not in [g.rule for g in r.findings]


def test_unexpected_keyword_is_a_library_version_mismatch():
    f = top(triage_dir(extra_input("2010-")))
    assert (f.category, f.rule) == ("other", "other.library-signature-mismatch")
    assert f.title == "EngineArgs.__init__() does not take 'worker_extension_cls' in the installed version"
    assert [(e.file, e.line) for e in f.evidence] == [("vllm_serve.log", 12)]


def test_a_reward_function_signature_stays_verifier(tmp_path: Path):
    f = top(triage_files(tmp_path, {"train.log": "[rank1]: TypeError: accuracy_reward() got an unexpected keyword "
                                                 "argument 'solution'\n"}))
    assert f.category == "verifier"


@pytest.mark.parametrize(("case", "rule"), [
    ("2002-", "other.import-error"),
    ("2003-", "other.gpu-hardware-fault"),
    ("2004-", "other.segfault"),
    ("2005-", "other.segfault"),
    ("2007-", "other.hub-unreachable"),
    ("2008-", "other.import-error"),
    ("2009-", "other.import-error"),
    ("2011-", "other.import-error"),
])
def test_blind_right_other_cases_keep_their_rule(case: str, rule: str):
    f = top(triage_dir(extra_input(case)))
    assert (f.category, f.rule) == ("other", rule)


@pytest.mark.parametrize("case", ["2012-", "2013-", "2014-"])
def test_benign_warnings_of_healthy_runs_raise_nothing(case: str):
    r = triage_dir(extra_input(case))
    assert not [f for f in r.findings if SEVERITY_RANK[f.severity] <= SEVERITY_RANK["warning"]]


@pytest.mark.parametrize("line", [
    "/usr/local/lib/python3.10/dist-packages/torch/utils/checkpoint.py:464: UserWarning: torch.utils.checkpoint: the "
    "use_reentrant parameter should be passed explicitly. In version 2.4 we will raise an exception if use_reentrant "
    "is not passed.",
    "`use_cache=True` is incompatible with gradient checkpointing. Setting `use_cache=False`.",
    "(WorkerDict pid=12345) WARNING 03-02 10:11:12 config.py:2448] The model's config.json does not contain any of the "
    "following keys to determine the original maximum length of the model: ['max_position_embeddings', "
    "'n_positions']. Assuming the model's maximum length is 2048.",
    "Warning: The actor ActorRolloutRefWorker is very large (52 MiB). Check that its definition is not implicitly "
    "capturing a large array or other object in scope. Tip: use ray.put() to put large objects in the Ray object store.",
    "Setting `pad_token_id` to `eos_token_id`:151643 for open-end generation.",
    "wandb: WARNING Serializing object of type list that is 1166656 bytes",
])
def test_everyday_warnings_are_not_in_the_six(tmp_path: Path, line: str):
    r = triage_files(tmp_path, {"train.log": line + "\n"})
    assert not [f for f in r.findings if f.category in SIX and SEVERITY_RANK[f.severity] <= SEVERITY_RANK["warning"]]
