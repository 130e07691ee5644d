"""Recognition round 17 (r17d): verifiers and judges, and the failures outside the six.

Blind, every case of 1660-1674 was already filed in the right category; three were named by no rule or the wrong
one. The fixes hold for the message families, not for the cases:

- The filesystem failing an operation (EIO, ENODEV, EOPNOTSUPP, ESTALE, ENOTCONN) in Rust's "<strerror> (os error
  N)" and Python's "[Errno N] <strerror>": other.storage-io-error (real-extra 1665 safetensors to a FUSE mount, 1666
  safe_open on a Ceph mount, corpus 134 Megatron's async checkpoint writer). safetensors 0.6+'s Display form of a
  serialize error ("Error while serializing: I/O error: ... (os error N)") is other.checkpoint-write-failed.
- The Hugging Face Hub's 429 (requests and httpx wordings) is other.hub-rate-limited, not an engine request error
  and not a judge's rate limit (real-extra 1671); wandb's own 429 retry is nothing (1672).
- NCCL's socket WARN relayed under "Last error:" without its "NCCL WARN" prefix joins other.nccl-error (1674).
- verl's SandboxFusion client ("API Request Error: Gateway Timeout (504) on attempt 1/3", "Sandbox API call failed.
  Last error: ...", "Case N: API error occurred: ...") and open-r1's "Error from E2B executor: ..." are
  verifier.sandbox-api-error; the sandbox's 504 is no longer a generation gateway timeout.
- TRL's "All reward functions returned None for the following kwargs" is verifier.rewards-none; EMFILE is
  other.open-files-limit.
- Blind right, kept right: reward functions raising or uncallable (1660-1663, 1670, 1673), host OOM through Ray's
  memory monitor (1669), a swarm node's "Training timed out!" at INFO (1668).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import extra_input, knob_names, top, triage_dir, triage_files, warnings_or_worse

CORPUS = Path("/work/shared/corpus")


def test_safetensors_save_to_a_fuse_mount_is_the_filesystem_refusing_the_write():
    report = triage_dir(extra_input("1665"))
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("other", "other.storage-io-error", "error")
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 3)]
    assert f.numbers["errno"] == 95
    assert knob_names(f) == []
    # the wrapped middle line is the writer's own report of the same failure
    assert "other.checkpoint-write-failed" in [g.rule for g in report.findings]


def test_safe_open_on_a_ceph_mount_is_a_storage_error():
    f = top(triage_dir(extra_input("1666")))
    assert (f.category, f.rule) == ("other", "other.storage-io-error")
    assert [(e.file, e.line) for e in f.evidence] == [("load.log", 1)]
    assert f.numbers["errno"] == 19


@pytest.mark.skipif(not (CORPUS / "134-slime-megatron-async-checkpoint-errno5-io-error").is_dir(),
                    reason="shared corpus not mounted")
def test_megatrons_async_checkpoint_writer_hitting_eio_is_named():
    f = top(triage_dir(CORPUS / "134-slime-megatron-async-checkpoint-errno5-io-error" / "input"))
    assert (f.category, f.rule) == ("other", "other.storage-io-error")
    assert f.numbers["errno"] == 5


@pytest.mark.parametrize("line, errno", [
    # stable-baselines3's logger flush on NFS
    ("OSError: [Errno 116] Stale file handle\n", 116),
    ("OSError: [Errno 107] Transport endpoint is not connected: '/mnt/gcs/checkpoints/step_200'\n", 107),
    ("safetensors_rust.SafetensorError: Error while serializing: I/O error: Input/output error (os error 5)\n", 5),
])
def test_the_storage_family_in_python_and_rust_wordings(tmp_path: Path, line: str, errno: int):
    f = top(triage_files(tmp_path, {"train.log": line}))
    assert (f.category, f.rule, f.numbers["errno"]) == ("other", "other.storage-io-error", errno)


@pytest.mark.parametrize("line", [
    "failed printing to stdout: Input/output error (os error 5)\n",
    "WARNING: could not copy file permissions: [Errno 95] Operation not supported\n",
])
def test_a_closed_terminal_or_a_warning_naming_the_errno_is_no_storage_fault(tmp_path: Path, line: str):
    report = triage_files(tmp_path, {"train.log": line})
    assert "other.storage-io-error" not in [f.rule for f in report.findings]


@pytest.mark.parametrize("line, reason", [
    # safetensors 0.6-0.8 render the io::Error by its Display
    ("SafetensorError: Error while serializing: I/O error: specified path not found (os error 3)\n",
     "specified path not found"),
    ("safetensors._safetensors_rust.SafetensorError: Error while serializing: I/O error: No such file or directory "
     "(os error 2) at path \"/out/ckpt/.tmpA1b2C3\"\n", "No such file or directory"),
])
def test_safetensors_display_form_of_a_failed_save(tmp_path: Path, line: str, reason: str):
    f = top(triage_files(tmp_path, {"train.log": line}))
    assert (f.rule, f.numbers["reason"]) == ("other.checkpoint-write-failed", reason)


def test_a_full_disk_in_the_display_form_stays_a_full_disk(tmp_path: Path):
    line = "safetensors_rust.SafetensorError: Error while serializing: I/O error: No space left on device (os error 28)\n"
    assert top(triage_files(tmp_path, {"train.log": line})).rule == "other.disk-full"


def test_the_hubs_429_is_the_hub_not_an_engine_or_a_judge():
    f = top(triage_dir(extra_input("1671")))
    assert (f.category, f.rule, f.severity) == ("other", "other.hub-rate-limited", "error")
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 1)]
    assert f.numbers["status"] == 429
    assert f.numbers["url"] == "https://huggingface.co/api/datasets/HuggingFaceM4/WebSight"


@pytest.mark.parametrize("line", [
    "requests.exceptions.HTTPError: 429 Client Error: Too Many Requests for url: https://huggingface.co/datasets/"
    "cerebras/SlimPajama-627B/resolve/2d0accdd58c5d5511943ca1f5ff0e3eb5e293543/train/chunk1/example_train_3300.jsonl.zst",
    "huggingface_hub.errors.HfHubHTTPError: 429 Client Error: Too Many Requests for url: https://hf-mirror.com/api/"
    "datasets/hssd/hssd-hab/revision/main",
    "huggingface_hub.errors.HfHubHTTPError: Client error '429 Too Many Requests' for url "
    "'https://huggingface.co/api/models/Qwen/Qwen2.5-7B-Instruct/revision/main'",
])
def test_every_client_wording_of_the_hubs_429(tmp_path: Path, line: str):
    f = top(triage_files(tmp_path, {"train.log": line + "\n"}))
    assert (f.category, f.rule) == ("other", "other.hub-rate-limited")


def test_wandbs_own_rate_limit_retry_is_no_failure():
    report = triage_dir(extra_input("1672"))
    assert warnings_or_worse(report) == []


def test_nccls_socket_warn_under_last_error_joins_the_nccl_finding():
    report = triage_dir(extra_input("1674"))
    f = top(report)
    assert (f.category, f.rule) == ("other", "other.nccl-error")
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 1), ("train.log", 4)]
    assert not [g for g in report.findings if g.rule == "unclassified"]


@pytest.mark.parametrize("line, error", [
    ("WARNING:verl.utils.reward_score.sandbox_fusion.utils:[Request ID: 3f2a1c9e-7d41-4a8e-9a57-0c1b2d3e4f50] API "
     "Request Error: Gateway Timeout (504) on attempt 1/3", "Gateway Timeout"),
    ("ERROR:verl.utils.reward_score.sandbox_fusion.utils:Case 0: API error occurred: API Call Failed: API Request "
     "Error: 500 Server Error: Internal Server Error for url: http://localhost:8080/run_code",
     "500 Server Error: Internal Server Error for url: http://localhost:8080/run_code"),
    ("Error from E2B executor: The sandbox was not found: This error is likely due to sandbox timeout.",
     "The sandbox was not found: This error is likely due to sandbox timeout."),
])
def test_the_code_sandboxs_api_failing_is_the_verifier(tmp_path: Path, line: str, error: str):
    report = triage_files(tmp_path, {"train.log": (line + "\n") * 3})
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("verifier", "verifier.sandbox-api-error", "warning")
    assert f.numbers["error"] == error
    assert knob_names(f) == ["verifier.timeout", "verifier.reward_function"]
    assert "gen.gateway-timeout" not in [g.rule for g in report.findings]


def test_the_sandboxs_connection_refused_is_a_sandbox_not_a_judge(tmp_path: Path):
    line = ("ERROR:verl.utils.reward_score.sandbox_fusion.utils:[Request ID: 3f2a1c9e] Sandbox API call failed. Last "
            "error: [Request ID: 3f2a1c9e] API Request Error: HTTPConnectionPool(host='localhost', port=8080): Max "
            "retries exceeded with url: /run_code (Caused by NewConnectionError('<urllib3.connection.HTTPConnection "
            "object at 0x7f1c2d3e4f50>: Failed to establish a new connection: [Errno 111] Connection refused'))\n")
    f = top(triage_files(tmp_path, {"train.log": line * 2}))
    assert (f.category, f.rule) == ("verifier", "verifier.sandbox-api-error")


def test_a_read_timeout_toward_the_sandbox_stays_a_verifier_timeout(tmp_path: Path):
    line = ("(ExecutionWorker pid=121256) ERROR:2025-09-15 15:36:24,702:[Request ID: 470dd032] Sandbox API call failed. "
            "Last error: [Request ID: 470dd032] API Request Error: HTTPConnectionPool(host='0.0.0.0', port=12322): Read "
            "timed out. (read timeout=70)\n")
    f = top(triage_files(tmp_path, {"train.log": line * 3}))
    assert (f.category, f.rule) == ("verifier", "verifier.timeout")


def test_trls_all_reward_functions_returned_none_is_a_missing_reward(tmp_path: Path):
    line = ("/usr/local/lib/python3.10/dist-packages/trl/trainer/grpo_trainer.py:1104: UserWarning: All reward functions "
            "returned None for the following kwargs: {'prompt': 'Solve 2+2', 'completion': 'four'}. Please ensure that "
            "at least one reward function returns a valid reward.\n  warnings.warn(\n")
    once = top(triage_files(tmp_path / "once", {"train.log": line}))
    assert (once.rule, once.severity) == ("verifier.rewards-none", "info")
    often = top(triage_files(tmp_path / "often", {"train.log": line * 4}))
    assert (often.category, often.rule, often.severity) == ("verifier", "verifier.rewards-none", "warning")
    assert knob_names(often) == ["verifier.reward_function"]


@pytest.mark.parametrize("line", [
    "OSError: [Errno 24] Too many open files: '/tmp/pymp-tgep00l9'",
    "IOError: [Errno 24] Too many open files",
    "storage write error: Too many open files (os error 24)",
])
def test_running_out_of_file_descriptors_is_a_host_limit(tmp_path: Path, line: str):
    f = top(triage_files(tmp_path, {"train.log": line + "\n"}))
    assert (f.category, f.rule) == ("other", "other.open-files-limit")


def test_inside_the_sandboxs_response_emfile_is_the_sandboxs_error(tmp_path: Path):
    line = ("{'status': 'SandboxError', 'message': 'exception on running command bash /tmp/tmp1/run.sh: [Errno 24] Too "
            "many open files | None', 'compile_result': None}\n")
    f = top(triage_files(tmp_path, {"train.log": line * 2}))
    assert (f.category, f.rule) == ("verifier", "verifier.sandbox-internal-error")


@pytest.mark.parametrize("case, rule, line", [
    ("1660", "verifier.reward-exception", 15),
    ("1661", "verifier.reward-call-signature", 1),
    ("1662", "verifier.reward-call-signature", 17),
    ("1663", "verifier.reward-call-signature", 6),
    ("1670", "verifier.reward-exception", 14),
    ("1673", "verifier.reward-fn-retried", 2),
])
def test_reward_functions_raising_or_uncallable_stay_the_verifiers(case: str, rule: str, line: int):
    f = top(triage_dir(extra_input(case)))
    assert (f.category, f.rule) == ("verifier", rule)
    assert f.evidence[0].line == line
    assert "verifier.reward_function" in knob_names(f)


def test_rays_memory_monitor_kill_wording_with_outofmemoryerror_is_host_ram():
    f = top(triage_dir(extra_input("1669")))
    assert (f.category, f.rule) == ("other", "other.host-oom")


def test_a_swarm_nodes_training_timed_out_at_info_is_no_failure():
    report = triage_dir(extra_input("1668"))
    assert warnings_or_worse(report) == []


def test_a_reward_manager_whose_import_fails_is_the_environment_not_the_scorer(tmp_path: Path):
    # the import of a verl reward manager in the TaskRunner (AdaptThink, 2025), traceback frames through reward code
    text = ('  File "/root/AdaptThink/src/adapt_think_reward_manager.py", line 16, in <module>\n'
            "    from .adapt_think_rm import adapt_think_rm\n"
            '  File "/root/AdaptThink/src/adapt_think_rm.py", line 11, in <module>\n'
            "    from math_verify import parse, verify\n"
            "ModuleNotFoundError: No module named 'math_verify'\n")
    f = top(triage_files(tmp_path, {"train.log": text}))
    assert (f.category, f.rule) == ("other", "other.import-error")
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 5)]


def test_a_reward_function_that_raises_through_the_same_frames_stays_the_verifiers(tmp_path: Path):
    text = ('  File "/root/verl/verl/utils/reward_score/math_verify.py", line 31, in compute_score\n'
            "    score = verify(gold, pred)\n"
            "KeyError: 'ground_truth'\n")
    f = top(triage_files(tmp_path, {"train.log": text}))
    assert (f.category, f.rule) == ("verifier", "verifier.reward-exception")


def test_rays_out_of_disk_error_is_a_full_disk(tmp_path: Path):
    text = ("ray.exceptions.OutOfDiskError: Local disk is full\n"
            "The object cannot be created because the local object store is full and the local disk's utilization is "
            "over capacity (95% by default).Tip: Use `df` on this node to check disk usage and `ray memory` to check "
            "object store memory usage.\n")
    f = top(triage_files(tmp_path, {"train.log": text}))
    assert (f.category, f.rule) == ("other", "other.disk-full")
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 1)]


def test_a_node_the_gcs_stopped_hearing_from_is_a_dead_raylet(tmp_path: Path):
    line = ("2023-03-03 05:15:30,774 WARNING worker.py:1866 -- The node with node id: 9426f44574cce4866be798cfed308f2d3e21ba"
            "69487d422872cdd6e3 and address: 10.130.0.113 and node name: 10.130.0.113 has been marked dead because the "
            "detector has missed too many heartbeats from it. This can happen when a       (1) raylet crashes "
            "unexpectedly (OOM, preempted node, etc.)\n")
    f = top(triage_files(tmp_path, {"driver.log": line}))
    assert (f.category, f.rule) == ("other", "other.raylet-died")
    assert f.numbers["address"] == "10.130.0.113"
