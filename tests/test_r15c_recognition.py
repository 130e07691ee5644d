"""Recognition round 15 (r15c): real failures outside the six named by a specific rule, and healthy exits with
alarming lines.

- A torch elastic ChildFailedError summary (torchrun, accelerate launch) only says a child failed: the child's own
  last exception printed above it is the cause, even when no rule knows its wording (signals.judge), and Python's
  bare base class (`Exception: message`, raised as is by libraries such as tokenizers) is an exception line.
- The Hugging Face Hub: a request the client retries is info (complete healthy runs hold these lines), a final
  timeout naming a Hub host or transformers' "We couldn't connect" is the Hub unreachable (unsloth#3486,
  open-instruct#620).
- Writing weights: safetensors' "Error while serializing: IoError(Os { code: 30, kind: ReadOnlyFilesystem ... })"
  (text-generation-inference#756) is a failed write; StorageFull stays disk full (OpenLLM#754).
- Ray's shared-memory object store full (ray#13443).
- The c10d exit warning "destroy_process_group() was not called" / "process group has NOT been destroyed" after a
  finished run is no failure (Megatron-LM#1541, unsloth#1959).
"""

from __future__ import annotations

from conftest import FIXTURES, top, triage_dir, triage_files
from domain import SIX

from triage.model import SEVERITY_RANK
from triage.parsers.signals import EXC_LINE
from triage.scan.scanner import FINAL_EXC

EXTRA = FIXTURES / "real-extra"

# A rank's traceback as slime printed it (THUDM/slime#1909, the frames and the ValueError as pasted), under the
# `[rank0]: ` prefix torch elastic gives a child's output, then torchrun's own lines as Firefly#32 pasted them
# (torch 1.13.1): the agent's "failed (exitcode: 1)" record and its ChildFailedError traceback.
RANK_THEN_TORCHRUN = (
    "[rank0]: Traceback (most recent call last):\n"
    '[rank0]:   File "/root/work/externalstorage/gpfsprd/sunjiahui/slime/slime/backends/megatron_utils/actor.py", '
    "line 413, in train_actor\n"
    "[rank0]:     self.fill_routing_replay(data_iterator, num_microbatches, rollout_data)\n"
    '[rank0]:   File "/root/work/externalstorage/gpfsprd/sunjiahui/slime/slime/backends/megatron_utils/actor.py", '
    "line 269, in fill_routing_replay\n"
    "[rank0]:     raise ValueError(\n"
    "[rank0]: {exc}\n"
    "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 24024) of binary: "
    "/opt/conda/bin/python\n"
    "Traceback (most recent call last):\n"
    '  File "/opt/conda/bin/torchrun", line 33, in <module>\n'
    "    sys.exit(load_entry_point('torch==1.13.1', 'console_scripts', 'torchrun')())\n"
    '  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/launcher/api.py", line 246, in launch_agent\n'
    "    raise ChildFailedError(\n"
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
    "============================================================\n"
    "train_qlora.py FAILED\n"
    "------------------------------------------------------------\n"
    "Failures:\n"
    "  <NO_OTHER_FAILURES>\n"
    "------------------------------------------------------------\n"
    "Root Cause (first observed failure):\n"
    "[0]:\n"
    "  time      : 2023-06-21_07:39:33\n"
    "  host      : localhost\n"
    "  rank      : 0 (local_rank: 0)\n"
    "  exitcode  : 1 (pid: 24024)\n"
    "  error_file: <N/A>\n"
    "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html\n"
    "============================================================\n"
)


def test_python_base_exception_is_an_exception_line():
    # tokenizers raises the bare base class (LianjiaTech/BELLE#48, Firefly#32)
    line = "Exception: expected value at line 1 column 1"
    assert FINAL_EXC.match(line) and EXC_LINE.match(line)
    assert EXC_LINE.match(line).group("name") == "Exception"  # type: ignore[union-attr]
    assert not FINAL_EXC.match("Exceptional: progress") and not EXC_LINE.match("Error: not a class")


def test_the_ranks_own_exception_outranks_torchruns_child_failed_summary(tmp_path):
    exc = "ValueError: rollout_routed_experts is required in rollout_data when use_rollout_routing_replay is set."
    report = triage_files(tmp_path, {"train.log": RANK_THEN_TORCHRUN.replace("{exc}", exc)})
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("other", "other.fatal-exit", "error")
    assert f.numbers["exception"] == "ValueError"
    assert ("train.log", 6) in [(e.file, e.line) for e in f.evidence]
    # the launcher's summary is the symptom, folded into the cause
    assert "other.job-failed" not in [g.rule for g in report.findings if not g.symptom]


def test_a_bare_exception_of_the_rank_is_the_cause_too(tmp_path):
    report = triage_files(tmp_path, {"train.log": RANK_THEN_TORCHRUN.replace(
        "{exc}", "Exception: no prompts left after filtering /data/math/train.parquet")})
    f = top(report)
    assert (f.rule, f.numbers["exception"]) == ("other.fatal-exit", "Exception")
    assert ("train.log", 6) in [(e.file, e.line) for e in f.evidence]


def test_firefly_tokenizer_exception_under_torchrun_is_named_not_the_launcher():
    report = triage_dir(EXTRA / "1241-firefly-qlora-torchrun-tokenizer-json-exception-expected-value-childfailederror"
                        / "input")
    f = top(report)
    assert (f.category, f.rule) == ("other", "other.tokenizer-file-unreadable")
    assert [(e.file, e.line) for e in f.evidence][:1] == [("train.log", 4)]


def test_hub_retry_warnings_alone_are_info_and_name_the_request():
    report = triage_dir(EXTRA / "1243-unsloth-qwen25-7b-bnb-hf-hub-head-read-timeout-huggingface-outage" / "input")
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("other", "other.hub-request-retried", "info")
    assert (f.numbers["error"], f.numbers["method"]) == ("ReadTimeoutError", "HEAD")
    assert [(e.file, e.line) for e in f.evidence][:1] == [("colab.log", 1)]


def test_a_final_hub_timeout_is_the_hub_unreachable(tmp_path):
    # open-instruct#620 (real-extra 165): the vLLM actor's requests exception, Ray prefix as pasted
    line = ("(LLMRayActor pid=12488) requests.exceptions.ReadTimeout: (ReadTimeoutError(\"HTTPSConnectionPool("
            "host='huggingface.co', port=443): Read timed out. (read timeout=10)\"), '(Request ID: "
            "b808bfa5-9b71-4e9c-b5fe-4da23fa9da26)')\n")
    f = top(triage_files(tmp_path, {"train.log": line}))
    assert (f.category, f.rule, f.severity) == ("other", "other.hub-unreachable", "error")
    assert f.numbers["host"] == "huggingface.co"


def test_healthy_runs_with_hub_retries_stay_healthy():
    # complete runs whose downloads went through on a retry (verl PPO, TRL GRPO)
    for case in ("756-verl-ppo-qwen3-06b-gsm8k-early-cap-hits-resolve-200-steps",
                 "990-trl-grpo-qwen25-7b-vllm-rho010-seed42-train-runtime-complete"):
        report = triage_dir(EXTRA / case / "input")
        retried = [f for f in report.findings if f.rule == "other.hub-request-retried"]
        assert retried and all(f.severity == "info" for f in retried)
        assert not [f for f in report.findings if SEVERITY_RANK[f.severity] <= 1]


def test_safetensors_write_on_a_read_only_volume_is_a_failed_write():
    f = top(triage_dir(EXTRA / "1245-tgi-094-llama2-70b-bin-to-safetensors-read-only-filesystem" / "input"))
    assert (f.category, f.rule, f.severity) == ("other", "other.checkpoint-write-failed", "error")
    assert (f.numbers["reason"], f.numbers["errno"]) == ("ReadOnlyFilesystem", 30)
    assert [(e.file, e.line) for e in f.evidence] == [("comment.txt", 1)]


def test_safetensors_storage_full_stays_disk_full():
    f = top(triage_dir(EXTRA / "1244-openllm-vllm-yi-34b-serialise-safetensors-storagefull-no-space-left" / "input"))
    assert (f.category, f.rule) == ("other", "other.disk-full")
    assert [(e.file, e.line) for e in f.evidence] == [("describe-the-bug.txt", 1)]


def test_ray_object_store_full_is_named_with_the_object_size():
    f = top(triage_dir(EXTRA / "1250-ray-11-actor-task-5m-row-dataframe-objectstorefullerror-put-516mb" / "input"))
    assert (f.category, f.rule, f.severity) == ("other", "other.object-store-full", "error")
    assert round(f.numbers["size"], 3) == 0.481  # 516884584 bytes, in GiB
    assert [(e.file, e.line) for e in f.evidence][:1] == [("driver.log", 7)]


def test_c10d_exit_warnings_after_a_finished_run_are_no_failure():
    for case in ("1246-megatron-lm-pretrain-gpt-four-ranks-destroy-process-group-warning-at-exit",
                 "1247-unsloth-grpo-qwen25-3b-local-vllm-prompts-done-process-group-not-destroyed-warning"):
        report = triage_dir(EXTRA / case / "input")
        assert not [f for f in report.findings if f.category in SIX]
        assert not [f for f in report.findings if SEVERITY_RANK[f.severity] <= 1]


def test_ray_gcs_unreachable_is_named_not_its_retry_line():
    # verl#659 and MM-EUREKA#54 (MASTER_ADDR unset): the retry warning, then the client's timeout
    for case, line in (("1256-verl-grpo-example-gpu-cluster-ray-gcs-connect-timeout-cluster-id", 2),
                       ("1257-mm-eureka-qwen-7b-ray-start-empty-master-addr-gcs-address-6379", 5)):
        f = top(triage_dir(EXTRA / case / "input"))
        assert (f.category, f.rule, f.severity) == ("other", "other.ray-gcs-unreachable", "error")
        assert f.numbers["what"] == "Failed to get cluster ID from GCS server"
        assert [(e.file, e.line) for e in f.evidence][:1] == [("train.log", line)]


def test_a_per_item_error_ending_a_log_full_of_handled_tracebacks_is_no_process_end():
    # real-extra 605: the env's parse errors, logged with tracebacks and caught; the log stops after one more
    report = triage_dir(EXTRA / "605-verl-gui-cursor-agent-loop-format-errors-two-steps" / "input")
    assert "other.fatal-exit" not in [f.rule for f in report.findings]


def test_a_child_killed_by_a_signal_keeps_the_launchers_own_cause(tmp_path):
    # the same output, but the Root Cause table says the child was killed (-9): that table names the cause
    exc = "ValueError: rollout_routed_experts is required in rollout_data when use_rollout_routing_replay is set."
    log = (RANK_THEN_TORCHRUN.replace("{exc}", exc).replace("failed (exitcode: 1)", "failed (exitcode: -9)")
           .replace("exitcode  : 1 (pid: 24024)", "exitcode  : -9 (pid: 24024)"))
    f = top(triage_files(tmp_path, {"train.log": log}))
    assert (f.category, f.rule) == ("other", "other.killed-sigkill")
