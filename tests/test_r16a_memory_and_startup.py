"""Recognition round 16 (r16a): serving OOM at start, host-memory kills and cold-start deadlines in fresh threads.

- Ray's host-memory kill in the wordings that carry no "OutOfMemoryError": the kill's own details ("Memory on the node
  ... was 445.48GB / 468.75GB (0.950365), which exceeds the memory usage threshold of 0.95. Ray killed this worker",
  real-extra 1402, OpenRLHF issue 171), Ray 2.5x's "1 worker(s) were killed due to the node running low on memory",
  and the raylet summary hard-wrapped inside "(tasks /" + " actors) killed due to memory pressure (OOM)" in a syslog
  capture with its colour codes written as literal `#033[..m` (real-extra 1401, vllm issue 1160): other.host-oom.
- A serverless platform's start-up deadline for the engine's container, Modal's "Runner has been initializing for
  too long: 300 seconds", after vLLM's torch.compile on a cold cache (real-extra 1404, modal-examples issue 1154):
  cold-start, the launcher's deadline.
- bash's "Killed" translated by the locale, zh_CN's "已杀死" alone or in a job line (real-extra 1408, dreamerv3 issue
  203, a host-RAM kill): other.killed-sigkill.
- Blind right, kept right: vLLM V1's "No available memory for the cache blocks" (1400), a CUDA OOM during vLLM 0.3's
  graph capture behind RunPod's newest-first log viewer (1403), TensorRT-LLM's runtime-buffer cudaMallocAsync OOM at
  Triton model load (1407), the kernel OOM killer's dmesg line beside DeepSpeed's launcher kills
  (1409), and a TensorRT-LLM start that only reports its KV allocation (1406, quiet).
"""

from __future__ import annotations

from conftest import extra_input, knob_names, top, triage_dir, triage_files
from domain import SIX


def _case(prefix: str):
    return triage_dir(extra_input(prefix))


def test_ray_kill_details_name_the_host_memory_and_its_numbers():
    f = top(_case("1402"))
    assert (f.category, f.rule, f.severity) == ("other", "other.host-oom", "error")
    # the kill details, then the top-memory-users table Ray prints under them (read since r16d)
    assert [(e.file, e.line) for e in f.evidence] == [("driver.log", 1), ("driver.log", 2)]
    assert (f.numbers["used_gb"], f.numbers["total_gb"], f.numbers["fraction"]) == (445.48, 468.75, 0.950365)
    assert f.numbers["threshold"] == 0.95
    assert knob_names(f) == []


def test_the_raylet_summary_cut_by_a_hard_wrap_still_names_the_kill():
    f = top(_case("1401"))
    assert (f.category, f.rule) == ("other", "other.host-oom")
    assert [(e.file, e.line) for e in f.evidence] == [("syslog.txt", 2)]
    assert "killed due to memory pressure (OOM)" in f.evidence[0].text


RAY_25_KILL = ("(autoscaler +2m) Task map_task failed due to oom. Error: 1 worker(s) were killed due to the node "
               "running low on memory. Memory on the node (IP: 10.0.50.112, ID: 4cb25bc0) was 28.62GB / 30.00GB "
               "(0.954017), which exceeds the memory usage threshold of 0.950000\n")


def test_ray_25_worker_s_were_killed_wording_is_the_same_host_oom(tmp_path):
    f = top(triage_files(tmp_path, {"driver.log": RAY_25_KILL}))
    assert (f.category, f.rule, f.numbers["total_gb"], f.numbers["threshold"]) == ("other", "other.host-oom", 30.0, 0.95)


def test_a_memory_report_below_its_threshold_is_no_kill(tmp_path):
    report = triage_files(tmp_path, {"driver.log": (
        "Memory on the node was 20.10GB / 30.00GB (0.670000); the memory usage threshold is 0.95\n")})
    assert not [f for f in report.findings if f.rule == "other.host-oom"]


def test_modal_runner_initializing_too_long_is_the_launchers_start_deadline():
    f = top(_case("1404"))
    assert (f.category, f.rule, f.severity) == ("cold-start", "cold.engine-not-ready", "error")
    assert [(e.file, e.line) for e in f.evidence][:1] == [("container.log", 9)]
    assert f.numbers["seconds"] == 300
    assert knob_names(f)[0] == "engine.startup_timeout"


def test_a_progress_note_about_initialising_is_no_deadline(tmp_path):
    report = triage_files(tmp_path, {"container.log": "Runner is initializing (this can take a while for large models)\n"})
    assert not [f for f in report.findings if f.category == "cold-start" and f.severity == "error"]


def test_vllm_v1_no_cache_blocks_names_admission_and_the_memory_fraction():
    f = top(_case("1400"))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.vllm-kv-capacity")
    assert [(e.file, e.line) for e in f.evidence] == [("serve.log", 1)]
    assert {"inference.sglang_max_running_requests", "inference.sglang_mem_fraction_static"} <= set(knob_names(f))


def test_runpod_newest_first_viewer_keeps_the_engine_oom_on_the_engine():
    f = top(_case("1403"))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.engine-cuda-oom")
    assert [(e.file, e.line) for e in f.evidence][:1] == [("worker.log", 4)]
    assert f.numbers["capacity"] == 44.35
    assert "inference.sglang_cuda_graph_max_bs_decode" in knob_names(f)


def test_tensorrt_llm_runtime_buffer_oom_at_model_load_is_the_engines():
    f = top(_case("1407"))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.cuda-check-oom")
    assert [(e.file, e.line) for e in f.evidence] == [("triton.log", 1)]
    assert f.numbers["engine"] == "TensorRT-LLM"
    assert "inference.sglang_max_running_requests" in knob_names(f)


def test_a_tensorrt_llm_start_reporting_its_kv_allocation_stays_quiet():
    report = _case("1406")
    assert not [f for f in report.findings if f.category in SIX and f.severity in ("error", "warning")]


def test_the_shells_killed_in_a_chinese_locale_is_the_sigkill_report():
    f = top(_case("1408"))
    assert (f.category, f.rule, f.severity) == ("other", "other.killed-sigkill", "error")
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 6)]


def test_bashs_job_line_with_the_translated_word_is_a_sigkill_and_a_scripts_own_word_is_not(tmp_path):
    report = triage_files(tmp_path, {"run.log": "[1]+  已杀死               nohup python train.py\n"})
    assert top(report).rule == "other.killed-sigkill"
    quiet = triage_files(tmp_path / "q", {"run.log": "12345 进程已杀死\n"})
    assert not [f for f in quiet.findings if f.rule == "other.killed-sigkill"]


def test_the_kernel_oom_killer_line_beside_the_deepspeed_launchers_kills_is_the_host_oom():
    f = top(_case("1409"))
    assert (f.category, f.rule) == ("other", "other.host-oom-killer")
    assert [(e.file, e.line) for e in f.evidence][:1] == [("dmesg.txt", 1)]
    assert f.category not in SIX
