"""Recognition round 15 (r15a): serving OOM / KV refusals, cold start and generation tail in fresh threads.

- vLLM V1's worker processes print `(VllmWorker rank=0 pid=N)` (the rank before the pid): that is a process prefix,
  and vLLM's own processes (`VllmWorker`, `EngineCore_DP0`, `Worker_TP1_EP1`, `APIServer`...) are the engine's side,
  so a CUDA OOM inside torch.cuda.graph's capture_end under such a prefix is the engine's graph-capture OOM, not the
  trainer's (real-extra 1202, vllm issue 18446).
- SGLang's 2026 wording of its KV-pool refusal, "Loaded weights leave no GPU memory for the KV cache under
  --mem-fraction-static=X" (real-extra 1201, InferenceX issue 2128), next to the older "Not enough memory. Please try
  to increase --mem-fraction-static" (1200, gpustack issue 3831 on an Ascend NPU).
- vLLM's hybrid (Mamba / linear-attention) admission refusal "max_num_seqs (N) exceeds available Mamba cache blocks
  (M)" (real-extra 1209, kaito issue 2319; 1210, vllm issue 49064): the mamba-slot rule, max_num_seqs as the current
  admission.
- vLLM V0's memory summary with a negative KV budget, "# cuda blocks: 0" and "Maximum concurrency ...: 0.00x" when the
  traceback is cut before its exception (real-extra 1203, vllm issue 13882).
- An engine's own total start time in plain words, colibri's "[K3] init done in 2540.5s" (real-extra 1205): a timed
  engine_init phase, slow past three minutes.
"""

from __future__ import annotations

from conftest import FIXTURES, by_rule, knob_names, top, triage_dir, triage_files
from domain import SIX

EXTRA = FIXTURES / "real-extra"


def _case(name: str):
    return triage_dir(next(EXTRA.glob(name + "-*")) / "input")


def test_vllm_v1_worker_oom_in_graph_capture_end_is_the_engines_graph_capture():
    f = top(_case("1202"))
    assert (f.category, f.rule, f.severity) == ("serving-oom-retraction", "serving.engine-oom-graph-capture", "error")
    assert [(e.file, e.line) for e in f.evidence][:1] == [("serve.log", 5)]
    assert knob_names(f)[:2] == ["inference.sglang_cuda_graph_max_bs_decode", "inference.sglang_mem_fraction_static"]


def test_a_numbered_vllm_process_prefix_places_a_bare_oom_on_the_engine(tmp_path):
    # vLLM 0.11 V1 worker names (vllm/v1/executor/multiproc_executor.py): no frame of the traceback is left
    report = triage_files(tmp_path, {"serve.log": (
        "(Worker_TP1_EP1 pid=9197) ERROR 01-19 05:52:54 [multiproc_executor.py:703] RuntimeError: CUDA error: "
        "out of memory\n")})
    f = top(report)
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.engine-cuda-oom")
    assert [(e.file, e.line) for e in f.evidence] == [("serve.log", 1)]


def test_the_same_oom_under_a_trainer_actor_stays_the_trainers(tmp_path):
    report = triage_files(tmp_path, {"driver.log": (
        "(FSDPTrainRayActor pid=9197) RuntimeError: CUDA error: out of memory\n")})
    assert top(report).category == "trainer-oom"


def test_sglang_2026_weights_leave_no_kv_cache_names_the_static_fraction_and_its_value():
    f = top(_case("1201"))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.no-memory-for-kv-pool")
    assert [(e.file, e.line) for e in f.evidence] == [("server.log", 3)]
    assert f.numbers["mem_fraction_static"] == 0.88
    knob = next(k for k in f.knobs if k.name == "inference.sglang_mem_fraction_static")
    assert knob.current == 0.88


def test_sglang_refusal_with_its_suggested_floor_reads_both_numbers(tmp_path):
    report = triage_files(tmp_path, {"server.log": (
        "[2026-08-28 01:41:18] ValueError: Loaded weights leave no GPU memory for the KV cache under "
        "--mem-fraction-static=0.95. Raise --mem-fraction-static above 0.923 (minimum viable = 1 - available/pre = "
        "0.9224). If using speculative decoding, draft weights are now counted.\n")})
    f = by_rule(report)["serving.no-memory-for-kv-pool"]
    assert (f.numbers["mem_fraction_static"], f.numbers["min_mem_fraction_static"]) == (0.95, 0.923)


def test_sglang_not_enough_memory_on_an_npu_reads_the_current_fraction():
    f = top(_case("1200"))
    assert (f.rule, [(e.file, e.line) for e in f.evidence]) == ("serving.no-memory-for-kv-pool", [("error.txt", 1)])
    assert f.numbers["mem_fraction_static"] == 0.2


def test_vllm_hybrid_admission_over_mamba_blocks_is_the_mamba_slot_rule_with_max_num_seqs():
    f = top(_case("1209"))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.mamba-slots-exhausted")
    assert [(e.file, e.line) for e in f.evidence] == [("workspace.log", 1)]
    assert (f.numbers["max_num_seqs"], f.numbers["mamba_blocks"]) == (1024, 614)
    admission = next(k for k in f.knobs if k.name == "inference.sglang_max_running_requests")
    assert admission.current == 1024


def test_two_machines_refusing_for_mamba_blocks_are_one_finding_with_both_lines():
    f = top(_case("1210"))
    assert f.rule == "serving.mamba-slots-exhausted"
    assert sorted((e.file, e.line) for e in f.evidence) == [("h100.log", 1), ("rocm-tp2.log", 1)]


def test_vllm_v0_negative_kv_budget_is_found_when_the_traceback_is_cut():
    f = top(_case("1203"))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.vllm-kv-memory-negative")
    assert (f.evidence[0].file, f.evidence[0].line) == ("run.log", 4)
    assert f.numbers["kv_gib"] == -1.05
    assert knob_names(f)[0] == "inference.sglang_mem_fraction_static"


def test_positive_kv_budget_and_real_blocks_are_not_a_refusal(tmp_path):
    report = triage_files(tmp_path, {"run.log": (
        "INFO 05-30 06:40:55 worker.py:267] model weights take 2.89GiB; non_torch_memory takes 0.01GiB; PyTorch "
        "activation peak memory takes 2.02GiB; the rest of the memory reserved for KV Cache is 2.36GiB.\n"
        "INFO 05-30 06:40:55 executor_base.py:110] # CUDA blocks: 5517, # CPU blocks: 9362\n"
        "INFO 05-30 06:40:55 executor_base.py:115] Maximum concurrency for 32768 tokens per request: 2.69x\n")})
    assert "serving.vllm-kv-memory-negative" not in by_rule(report)


def test_an_engines_init_done_in_minutes_is_a_slow_start():
    f = top(_case("1205"))
    assert (f.category, f.rule) == ("cold-start", "cold.startup-init-slow")
    assert [(e.file, e.line) for e in f.evidence] == [("coli.log", 14)]
    assert "engine.startup_timeout" in knob_names(f)


def test_an_engines_init_done_in_a_minute_and_a_half_is_only_reported_as_a_phase(tmp_path):
    report = triage_files(tmp_path, {"coli.log": (
        "[K3] loaded layer 89/93 (246.1s, RSS 32.7 GB)\n"
        "[K3] init done in 96.4s | 93 layers | expert cache 136/layer (17.5 MB/slot) | RSS 35.2 GB\n")})
    assert [(f.rule, f.severity) for f in report.findings if f.category in SIX] == [("cold.startup-phases", "info")]


def test_warmup_502_through_a_proxy_after_a_fast_start_is_other_not_cold_start():
    report = _case("1204")
    f = top(report)
    assert f.category not in SIX
    assert [(e.file, e.line) for e in f.evidence][:1] == [("server.log", 11)]
    assert not [x for x in report.findings if x.category == "cold-start"]


# vllm issue 18260 (vLLM 0.8.5.post1, Llama 3.3 70B at TP 8 in a RunPod container): the API server's wait in 0.8.x's
# core_client.py words, between the workers' `(VllmWorker rank=N pid=M)` lines.
VLLM_085_WAIT = [
    "2025-05-16T13:08:58.099318151Z (VllmWorker rank=0 pid=249) DEBUG 05-16 13:08:58 [parallel_state.py:867] "
    "world_size=8 rank=0 local_rank=0 distributed_init_method=tcp://127.0.0.1:39977 backend=nccl",
    "2025-05-16T13:12:16.645427617Z DEBUG 05-16 13:12:16 [core_client.py:425] Waiting for 1 core engine proc(s) to "
    "start: {0}",
]


def test_vllm_08_core_client_wait_is_a_startup_wait_and_the_worker_prefix_names_its_process():
    from triage.model import Line
    from triage.parsers import startup
    from triage.scan.origins import split_ray

    msg, actor, pid, _ = split_ray(VLLM_085_WAIT[0])
    assert (actor, pid) == ("VllmWorker", "249")
    assert "world_size=8 rank=0" in msg
    text = VLLM_085_WAIT[1]
    msg, actor, pid, repeat = split_ray(text)
    ev = startup.parse(Line("<t>", 2, text, msg, actor, pid, repeat))
    assert ev is not None and ev.fields["phase"] == "wait"


def test_a_vllm_08_wait_of_minutes_that_nothing_answers_is_a_cold_start_warning(tmp_path):
    waits = "".join(f"2025-05-16T13:{m:02d}:{s:02d}.645427617Z DEBUG 05-16 13:{m:02d}:{s:02d} [core_client.py:425] "
                    f"Waiting for 1 core engine proc(s) to start: {{0}}\n"
                    for m in range(12, 16) for s in range(6, 60, 10))
    report = triage_files(tmp_path, {"vllm.log": VLLM_085_WAIT[0] + "\n" + waits})
    f = top(report)
    assert (f.category, f.severity) == ("cold-start", "warning")
    assert "core engine proc(s) to start" in f.evidence[0].text


def test_an_oom_before_jupyter_style_vllm_frames_is_the_engines():
    # vllm issue 8073: the error block of a Databricks notebook, IPython 8's `File /path:N, in f(...)` frames
    f = top(_case("1213"))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.engine-cuda-oom")
    assert [(e.file, e.line) for e in f.evidence] == [("trace.txt", 1)]
    assert f.numbers["tried"] == 1.86


def test_the_same_oom_before_jupyter_style_trl_frames_stays_the_trainers(tmp_path):
    report = triage_files(tmp_path, {"cell.txt": (
        "OutOfMemoryError: CUDA out of memory. Tried to allocate 1.86 GiB. GPU 0 has a total capacity of 21.99 GiB "
        "of which 337.38 MiB is free.\n"
        "File /usr/local/lib/python3.11/dist-packages/trl/trainer/grpo_trainer.py:1056, in GRPOTrainer._compute_loss("
        "self, model, inputs)\n")})
    assert top(report).category == "trainer-oom"


# vLLM V0's metrics row (metrics.py, the form of vllm issue 12314), every 5 s; `prompt` > 0 marks a new request.
def _v0_row(minute: int, second: int, running: int, prompt: float = 0.0, pending: int = 0) -> str:
    return (f"INFO 01-22 18:{minute:02d}:{second:02d} metrics.py:449] Avg prompt throughput: {prompt} tokens/s, Avg "
            f"generation throughput: 41.7 tokens/s, Running: {running} reqs, Swapped: 0 reqs, Pending: {pending} reqs, "
            f"GPU KV cache usage: 2.0%, CPU KV cache usage: 0.0%.\n")


def _one_at_a_time(start: int, minutes: int) -> str:
    rows = [_v0_row(start, 0, 1, prompt=812.4)]
    rows += [_v0_row(start + m, s, 1) for m in range(minutes) for s in range(5 if m == 0 else 0, 60, 5)]
    return "".join(rows)


def test_a_low_concurrency_eval_server_cut_inside_a_long_answer_is_no_straggler_warning(tmp_path):
    # two long answers one after the other, never more than one request, the log stops inside the second
    report = triage_files(tmp_path, {"vllm.log": _one_at_a_time(10, 7) + _one_at_a_time(18, 7)})
    lone = by_rule(report).get("tail.stats-lone-decode")
    assert lone is not None and lone.severity == "info"
    assert not [f for f in report.findings if f.category == "generation-tail" and f.severity != "info"]


def test_the_same_lone_answer_after_a_batch_drained_is_a_straggler(tmp_path):
    batch = "".join(_v0_row(9, s, 16, pending=4) for s in range(0, 60, 5))
    report = triage_files(tmp_path, {"vllm.log": batch + _one_at_a_time(10, 7)[len(_v0_row(10, 0, 1, 812.4)):]})
    f = by_rule(report)["tail.stats-lone-decode"]
    assert (f.category, f.severity) == ("generation-tail", "warning")
