"""Recognition round 23 (r23f): line forms of big and wrapped deployments (real-extra 2350-2364).

Each case's failure sits behind a launcher's, container's or paste's wrapping; the finding must name it and point
at the physical line:

- a `docker compose` service prefix (`vllm-1  | `) before vLLM's KV-capacity refusal (2350);
- a Go klog record, stamped by GitHub Actions and quoted as Markdown, whose JSON body carries vLLM's "Call to wake_up
  method failed: CUDA Error: out of memory at <path>:163": serving.vllm-cumem-oom now reads the wake-up wrapper's
  wordings without the allocator's file name (2351; blind: trainer-oom);
- a Markdown-quoted EngineCore free-memory check (2352), a journalctl-prefixed ollama decode OOM with the reporter's
  ** bold marks (2353);
- torchrun --tee's `[default0]:` before the worker's `[rank0]: ` on a MetaX trainer OOM (2354), the same lines
  numbered by `grep -n` in a status page (2355), and the passing trial of the bisect near the memory ceiling (2356,
  healthy);
- a Java `Caused by: pemja.core.PythonException` wrapping vLLM's 400 (2357);
- Open MPI's `[1,3]<stderr>:` and `[host:pid]` prefixes around MPI_Init_thread aborts: other.mpi-init-failed (2358,
  blind: unexplained lines; 2359, blind: other.import-error on Open MPI's "(ignored)" plug-in lines, which are no
  failed import);
- a run directory with the launcher's log and the torchrun output in run/logs/ whose FlagGems device detector finds
  no device: other.gpu-unavailable (2360, blind: the fatal-exit fallback);
- stderr tracebacks written into the middle of a buffered stdout argument dump: the missing nvcc of a run-time kernel
  build is other.cuda-toolchain-missing (2361, blind: fallback); a TE-FL GEMM shape failure and a PEFT argument
  check stay with the fatal-exit fallback, on the worker's exception (2362, 2363);
- four nested Ray Serve / vLLM prefixes on a healthy start: no finding, and the KV pool and context length still
  read from the prefixed start-up lines (2364).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import extra_input, knob_names, top, triage_dir, triage_files, warnings_or_worse
from domain import SIX

# -- serving: the wrapping must not hide the engine's memory ---------------------------------------------------------


def test_compose_service_prefix_kv_capacity() -> None:
    f = top(triage_dir(extra_input("2350")))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.vllm-kv-capacity")
    assert (f.evidence[0].file, f.evidence[0].line) == ("docker-compose.log", 1)
    assert (f.numbers["context_length"], f.numbers["pool_tokens"]) == (32768, 16832)
    assert {"inference.max_context_length", "inference.sglang_mem_fraction_static"} <= set(knob_names(f))


def test_wake_up_oom_inside_a_klog_json_body_is_the_engines() -> None:
    report = triage_dir(extra_input("2351"))
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("serving-oom-retraction", "serving.vllm-cumem-oom", "error")
    assert (f.evidence[0].file, f.evidence[0].line) == ("controller.log", 1)
    assert "Call to wake_up method failed: CUDA Error: out of memory" in f.evidence[0].text
    assert knob_names(f) == ["inference.sglang_mem_fraction_static"]
    assert not [g for g in report.findings if g.category == "trainer-oom"]


@pytest.mark.parametrize("line, rule", [
    # the wrapper's wordings without the allocator's file (vLLM API server 500 body, V1 collective_rpc)
    ('{"error":{"message":"Call to wake_up method failed: CUDA Error: out of memory ...","type":"InternalServerError"}}',
     "serving.vllm-cumem-oom"),
    ("Exception: Call to wake_up method failed: Worker failed with error 'CUDA Error: out of memory at "
     "cumem_allocator.cpp:139'", "serving.vllm-cumem-oom"),
])
def test_wake_up_wrapper_wordings(tmp_path: Path, line: str, rule: str) -> None:
    f = top(triage_files(tmp_path, {"engine.log": line + "\n"}))
    assert (f.category, f.rule) == ("serving-oom-retraction", rule)


def test_wake_up_wrapper_invalid_argument_is_no_oom(tmp_path: Path) -> None:
    report = triage_files(tmp_path, {"engine.log": "Exception: Call to wake_up method failed: CUDA Error: invalid "
                                                   "argument at /workspace/csrc/cumem_allocator.cpp:66\n"})
    assert "serving.vllm-cumem-oom" not in [f.rule for f in report.findings]


def test_markdown_quoted_free_memory_check() -> None:
    f = top(triage_dir(extra_input("2352")))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.startup-free-memory-short")
    assert (f.evidence[0].file, f.evidence[0].line) == ("vllm-instance.log", 1)
    assert (f.numbers["free_gib"], f.numbers["total_gib"], f.numbers["gpu_memory_utilization"]) == (0.41, 79.18, 0.85)


def test_journalctl_ollama_decode_oom_with_bold_marks() -> None:
    report = triage_dir(extra_input("2353"))
    f = top(report)
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.engine-cuda-oom")
    assert (f.evidence[0].file, f.evidence[0].line) == ("journal.log", 12)
    assert f.evidence[0].text.startswith("**Jan 10 16:31:55 node1 ollama[119046]: CUDA error: out of memory")


# -- trainer: torchrun's and grep's prefixes ------------------------------------------------------------------------


def test_default0_rank0_trainer_oom_on_metax() -> None:
    f = top(triage_dir(extra_input("2354")))
    assert (f.category, f.rule) == ("trainer-oom", "trainer.oom-logprobs")
    assert (f.evidence[0].file, f.evidence[0].line) == ("host_0_localhost.output", 95)
    assert f.evidence[0].text.startswith("[default0]:[rank0]: torch.OutOfMemoryError")
    assert (f.numbers["tried"], f.numbers["capacity"], f.numbers["allocated"]) == (2.32, 63.59, 61.08)


def test_grep_numbered_status_page_trainer_oom() -> None:
    f = top(triage_dir(extra_input("2355")))
    assert (f.category, f.rule) == ("trainer-oom", "trainer.oom-logprobs")
    assert (f.evidence[0].file, f.evidence[0].line) == ("live_status.md", 40)
    assert f.evidence[0].text.startswith("1077:[default0]:WARNING:megatron.core.utils:CUDA out of memory")
    assert (f.numbers["tried"], f.numbers["capacity"]) == (2.32, 63.59)


def test_passing_trial_near_the_memory_ceiling_is_healthy() -> None:
    report = triage_dir(extra_input("2356"))
    assert not [f for f in report.findings if f.category in SIX]
    assert not warnings_or_worse(report)


# -- prompt budget behind a Java exception chain --------------------------------------------------------------------


def test_pemja_caused_by_completion_cap() -> None:
    f = top(triage_dir(extra_input("2357")))
    assert (f.category, f.rule) == ("prompt-budget", "prompt.completion-cap-too-large")
    assert (f.evidence[0].file, f.evidence[0].line) == ("kag-server.log", 1)
    assert (f.numbers["context_length"], f.numbers["total_tokens"], f.numbers["input_tokens"]) == (8192, 8218, 26)
    assert knob_names(f)[0] == "inference.max_response_length"


# -- other: launch, device and toolchain failures -------------------------------------------------------------------


@pytest.mark.parametrize("case, file, line", [
    ("2358", "70_driver_log.txt", 4),  # `2021-04-07 22:13:55 [1,3]<stderr>:*** An error occurred in MPI_Init_thread`
    ("2359", "finetune.log", 10),
])
def test_mpi_init_abort(case: str, file: str, line: int) -> None:
    report = triage_dir(extra_input(case))
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("other", "other.mpi-init-failed", "error")
    assert (f.evidence[0].file, f.evidence[0].line) == (file, line)
    assert f.numbers["call"] == "MPI_Init_thread"
    assert not f.knobs
    assert "other.import-error" not in [g.rule for g in report.findings]
    assert not [g for g in report.findings if g.category in SIX]


def test_open_mpi_ignored_plugin_is_no_import_error(tmp_path: Path) -> None:
    line = ("[gpu009:2974788] pmix_mca_base_component_repository_open: unable to open mca_gds_ds21: /x/lib/"
            "libmca_common_dstore.so.1: undefined symbol: pmix_gds_base_modex_unpack_kval (ignored)\n")
    assert "other.import-error" not in [f.rule for f in triage_files(tmp_path, {"train.log": line}).findings]
    real = "ImportError: /x/flash_attn_2_cuda.so: undefined symbol: _ZN3c104cuda9SetDeviceEi\n"
    assert top(triage_files(tmp_path / "b", {"train.log": real})).rule == "other.import-error"


def test_flag_gems_no_device_in_a_run_directory() -> None:
    report = triage_dir(extra_input("2360"))
    f = top(report)
    assert (f.category, f.rule) == ("other", "other.gpu-unavailable")
    assert (f.evidence[0].file, f.evidence[0].line) == ("run/logs/host_0_localhost.output", 65)
    assert f.numbers["what"] == "No device were detected on your machine"
    assert not [g for g in report.findings if g.category in SIX]


@pytest.mark.parametrize("line", [
    "op_builder.builder.MissingCUDAException: CUDA_HOME does not exist, unable to compile CUDA op(s)",
    "OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA install root.",
])
def test_cuda_toolchain_missing_wordings(tmp_path: Path, line: str) -> None:
    f = top(triage_files(tmp_path, {"train.log": line + "\n"}))
    assert (f.category, f.rule) == ("other", "other.cuda-toolchain-missing")


def test_nvcc_missing_traceback_inside_the_argument_dump() -> None:
    report = triage_dir(extra_input("2361"))
    f = top(report)
    assert (f.category, f.rule) == ("other", "other.cuda-toolchain-missing")
    assert (f.evidence[0].file, f.evidence[0].line) == ("host_0_localhost.output", 100)
    assert f.numbers["what"] == "No such file or directory: '/opt/maca/tools/cu-bridge/bin/nvcc'"
    assert not [g for g in report.findings if g.category in SIX]


@pytest.mark.parametrize("case, line, message", [
    ("2362", 63, "All 3 implementation(s) failed for op='generic_gemm'. Last error: mat2 must be a matrix"),
    ("2363", 47, "PEFT is only supported with transformer_engine implementation"),
])
def test_worker_exception_before_the_rest_of_stdout(case: str, line: int, message: str) -> None:
    report = triage_dir(extra_input(case))
    f = top(report)
    assert (f.category, f.rule) == ("other", "other.fatal-exit")
    assert f.numbers["message"] == message
    assert ("host_0_localhost.output", line) in [(e.file, e.line) for e in f.evidence]
    assert not [g for g in report.findings if g.category in SIX]


def test_four_nested_ray_serve_prefixes_start_quietly() -> None:
    report = triage_dir(extra_input("2364"))
    assert not report.findings
    assert report.config["inference.max_context_length"]["value"] == 131072
    assert report.config["inference.sglang_max_total_tokens"]["value"] == 396448
    assert report.config["inference.sglang_max_total_tokens"]["source"] == "engine startup serve.log:2"
