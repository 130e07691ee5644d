"""Recognition round 10 (r10a): KV exhaustion and serving OOMs in engines and versions the library covered thinly.

- vLLM V0's swap-space abort: a full GPU KV cache makes the scheduler swap multi-sample groups to CPU, and when the
  swap pool is full too the engine aborts ("Aborted due to the lack of CPU swap space"): verl's bundled vLLM 0.6.3
  in DeepScaleR (real-extra 840, rllm issue 62), cmu-l3/l1 issue 4, and NVIDIA Dynamo re-raising it inside
  MQEngineDeadError (real-extra 841, dynamo issue 1471).
- TensorRT-LLM's KV cache below one sequence: "maxTokensInPagedKvCache must be large enough to process at least 1
  sequence to completion" (real-extra 843, TensorRT-LLM issue 494; issue 542) and the PyTorch executor's "Request
  requires N KV cache blocks to complete, which exceeds the total capacity of M blocks" (PR 16802).
- Text Generation Inference's OOMs are the engine's, not the trainer's: the router's relayed "Request failed during
  generation: Server error: CUDA out of memory" (real-extra 844, TGI issue 653; 849, issue 1374 as the Python client
  prints it) and a warmup CUDA-graph capture OOM (real-extra 845, issue 2572); its paged cache manager's "Out of
  available cache blocks: asked N, only M free blocks" (real-extra 852, issue 1356) is KV exhaustion at run time, as
  is TensorRT-LLM's "Can't allocate new blocks. No free blocks left." (real-extra 855, TensorRT-LLM issue 694).
- Text Generation Inference's input validation ("`inputs` tokens + `max_new_tokens` must be <= T", "`inputs` must have
  less than L tokens") is the prompt budget (real-extra 853, llm-vscode issue 94; 854, llama issue 1103).
- Failures outside the six stay other: a checkpoint write failing in torch.save (real-extra 850, simpleRL-reason
  issue 19), Ray worker and actor deaths of unknown cause (846, 847).
"""

from __future__ import annotations

from pathlib import Path

from conftest import FIXTURES, by_rule, knob_names, top, triage_dir, triage_files
from domain import SIX

EXTRA = FIXTURES / "real-extra"

# cmu-l3/l1 issue 4 (verl WorkerDict, vLLM 0.6.3): the two lines the reporter pasted.
L1_SWAP = ("(WorkerDict pid=111417)     raise RuntimeError(\n"
           "(WorkerDict pid=111417) RuntimeError: Aborted due to the lack of CPU swap space. Please increase the swap "
           "space to avoid this error.\n")

# vllm issue 546 (vLLM 0.6.3, a comment's paste): SWAP preemption while the engine keeps running (no abort).
SWAP_PREEMPTION = (
    "INFO 10-28 11:16:39 metrics.py:349] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 7154.5 "
    "tokens/s, Running: 2 reqs, Swapped: 0 reqs, Pending: 98 reqs, GPU KV cache usage: 86.1%, CPU KV cache usage: 0.0%.\n"
    "WARNING 10-28 11:16:41 scheduler.py:1483] Sequence group chat-7e630abf1a8b4c8a88775b1e98a54cf2 is preempted by "
    "PreemptionMode.SWAP mode because there is not enough KV cache space. This can affect the end-to-end performance. "
    "Increase gpu_memory_utilization or tensor_parallel_size to provide more KV cache memory. "
    "total_num_cumulative_preemption=1\n")

# TensorRT-LLM PyTorch executor's admission check (py_executor.py, NVIDIA/TensorRT-LLM PR 16802), formatted.
TRTLLM_BLOCKS = ("[TRT-LLM] [E] ValueError: Request requires 2050 KV cache blocks to complete, which exceeds the total "
                 "capacity of 1536 blocks (prompt_len=30000, max_new_tokens=2048, beam_width=1).\n")


def test_vllm_v0_swap_space_abort_in_a_verl_rollout_is_kv_exhaustion():
    report = triage_dir(EXTRA / "840-rllm-deepscaler-verl-vllm063-aborted-lack-of-cpu-swap-space" / "input")
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("serving-oom-retraction", "serving.vllm-swap-exhausted", "error")
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 1)]
    assert {"inference.sglang_mem_fraction_static", "inference.sglang_max_running_requests"} <= set(knob_names(f))


def test_the_same_abort_wrapped_by_a_dead_engine_in_dynamo_outranks_the_generic_exit():
    report = triage_dir(EXTRA / "841-dynamo-vllm-kv-router-mqenginedead-lack-of-cpu-swap-space" / "input")
    f = top(report)
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.vllm-swap-exhausted")
    assert [(e.file, e.line) for e in f.evidence] == [("dynamo.log", 12)]
    assert "MQEngineDeadError" in f.evidence[0].text


def test_the_swap_abort_behind_a_ray_worker_prefix_is_the_same_rule(tmp_path: Path):
    f = top(triage_files(tmp_path, {"train.log": L1_SWAP}))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.vllm-swap-exhausted")
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 2)]


def test_swap_preemption_without_an_abort_is_the_preemption_warning_not_the_abort(tmp_path: Path):
    report = triage_files(tmp_path, {"vllm.log": SWAP_PREEMPTION})
    assert "serving.vllm-swap-exhausted" not in by_rule(report)
    f = by_rule(report)["serving.vllm-preemption"]
    assert f.category == "serving-oom-retraction"
    assert f.numbers["mode"] == "SWAP"
    assert [(e.file, e.line) for e in f.evidence] == [("vllm.log", 2)]


def test_vllm_050_swap_preemption_under_chunked_prefill_names_the_mode():
    f = top(triage_dir(EXTRA / "842-vllm-050-chunked-prefill-n8-swap-preemption-swapped-137" / "input"))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.vllm-preemption")
    assert (f.numbers["group"], f.numbers["mode"]) == (165, "SWAP")
    assert [(e.file, e.line) for e in f.evidence] == [("bench.log", 2)]


def test_tensorrt_llm_kv_cache_below_one_sequence_is_kv_capacity_not_a_prompt_budget():
    report = triage_dir(EXTRA / "843-trtllm-triton-paged-kv-693-tokens-below-one-sequence" / "input")
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("serving-oom-retraction", "serving.vllm-kv-capacity", "error")
    assert [(e.file, e.line) for e in f.evidence][0] == ("tritonserver.log", 2)
    assert "maxTokensInPagedKvCache" in f.evidence[0].text
    assert {"inference.sglang_mem_fraction_static", "inference.sglang_max_total_tokens"} <= set(knob_names(f))


def test_tensorrt_llm_pytorch_executor_admission_check_gives_both_block_counts(tmp_path: Path):
    f = top(triage_files(tmp_path, {"trtllm.log": TRTLLM_BLOCKS}))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.vllm-kv-capacity")
    assert (f.numbers["blocks_needed"], f.numbers["pool_blocks"]) == (2050, 1536)


def test_tgi_router_relayed_cuda_oom_is_the_engines():
    report = triage_dir(EXTRA / "844-tgi-09-llama2-auto-max-batch-total-tokens-prefill-oom" / "input")
    f = top(report)
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.engine-cuda-oom")
    assert f.numbers["side"] == "engine"
    assert [(e.file, e.line) for e in f.evidence] == [("tgi.log", 1)]
    assert not [x for x in report.findings if x.category == "trainer-oom"]


def test_tgi_python_client_error_carrying_the_servers_oom_is_the_engines():
    report = triage_dir(EXTRA / "849-tgi-133-codellama-34b-eetq-client-generation-error-oom" / "input")
    f = top(report)
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.engine-cuda-oom")
    assert [(e.file, e.line) for e in f.evidence] == [("client.log", 6)]
    assert not [x for x in report.findings if x.category == "trainer-oom"]


def test_tgi_warmup_cuda_graph_capture_oom_names_the_graph_knob():
    f = top(triage_dir(EXTRA / "845-tgi-405b-fp8-8xh100-warmup-cuda-graph-capture-oom" / "input"))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.engine-oom-graph-capture")
    assert [(e.file, e.line) for e in f.evidence] == [("tgi.log", 5)]
    assert "inference.sglang_cuda_graph_max_bs_decode" in knob_names(f)


def test_a_trainer_oom_in_deepspeed_frames_stays_the_trainers(tmp_path: Path):
    log = ('  File "/opt/conda/lib/python3.10/site-packages/deepspeed/runtime/engine.py", line 2011, in backward\n'
           "    self.optimizer.backward(loss, retain_graph=retain_graph)\n"
           "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
           "79.11 GiB of which 1.02 GiB is free.\n")
    f = top(triage_files(tmp_path, {"train.log": log}))
    assert (f.category, f.rule) == ("trainer-oom", "trainer.oom-backward")


def test_checkpoint_write_failure_is_named_and_stays_outside_the_six():
    f = top(triage_dir(EXTRA / "850-simplerl-openrlhf-critic-save-checkpoint-streamwriter-write-failed" / "input"))
    assert (f.category, f.rule, f.severity) == ("other", "other.checkpoint-write-failed", "error")
    assert f.numbers["record"] == "data/0"
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 2)]


def test_ray_deaths_of_unknown_cause_are_not_forced_into_the_six():
    for case in ("846-verl-grpo-qwen3-4b-raylet-worker-died-system-error",
                 "847-verl-agent-loop-sglang-server-wake-up-actor-died"):
        report = triage_dir(EXTRA / case / "input")
        assert top(report).category not in SIX, case
        assert not [x for x in report.findings if x.category in SIX and x.severity in ("error", "warning")], case


def test_trl_all_completions_clipped_is_a_generation_tail_on_the_response_cap():
    f = top(triage_dir(EXTRA / "848-autocontext-trl-grpo-gsm8k-all-clipped-at-256-zero-reward" / "input"))
    assert (f.category, f.rule) == ("generation-tail", "gen.cap-hit-rate")
    assert [(e.file, e.line) for e in f.evidence][0] == ("metrics.log", 1)
    assert "inference.max_response_length" in knob_names(f)


def test_tgi_cache_manager_out_of_blocks_gives_the_blocks_asked_and_free():
    f = top(triage_dir(EXTRA / "852-tgi-13-prefill-out-of-available-cache-blocks-asked-107-free-4" / "input"))
    assert (f.category, f.rule, f.severity) == ("serving-oom-retraction", "serving.kv-blocks-exhausted", "error")
    assert (f.numbers["blocks_asked"], f.numbers["blocks_free"]) == (107, 4)
    assert [(e.file, e.line) for e in f.evidence][0] == ("tgi.log", 1)
    assert "inference.sglang_max_total_tokens" in knob_names(f)


def test_another_engines_no_free_blocks_wording_is_the_same_rule(tmp_path: Path):
    log = "ERROR phase_continue_prefills::run_standard: Prefill chunk error: KV cache exhausted: no free blocks\n"
    f = top(triage_files(tmp_path, {"engine.log": log}))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.kv-blocks-exhausted")


def test_tgi_input_validation_of_prompt_plus_new_tokens_reveals_the_total_limit():
    f = top(triage_dir(EXTRA / "853-llm-vscode-tgi-input-validation-inputs-plus-max-new-tokens-over-2048" / "input"))
    assert (f.category, f.rule, f.severity) == ("prompt-budget", "prompt.tgi-input-validation", "error")
    assert (f.numbers["context_length"], f.numbers["input_tokens"], f.numbers["response_tokens"]) == (2048, 3474, 60)
    assert [(e.file, e.line) for e in f.evidence] == [("llm-ls.log", 1)]
    current = {k.name: k.current for k in f.knobs}
    assert current["inference.max_context_length"] == 2048


def test_tgi_input_limit_behind_an_inference_api_422_is_a_prompt_budget_not_a_request_error():
    report = triage_dir(EXTRA / "854-llama-rag-hf-inference-tgi-inputs-must-have-less-than-4096-tokens" / "input")
    f = top(report)
    assert (f.category, f.rule) == ("prompt-budget", "prompt.tgi-input-validation")
    assert (f.numbers["input_limit"], f.numbers["input_tokens"]) == (4096, 4545)
    assert [(e.file, e.line) for e in f.evidence][0] == ("rag.log", 3)
    assert "miles.rollout_max_prompt_len" in knob_names(f)


def test_other_tgi_validation_errors_are_not_a_prompt_budget(tmp_path: Path):
    log = "Input validation error: `temperature` must be strictly positive\n"
    report = triage_files(tmp_path, {"client.log": log})
    assert "prompt.tgi-input-validation" not in by_rule(report)


def test_tensorrt_llm_kv_cache_manager_out_of_blocks_is_run_time_kv_exhaustion():
    f = top(triage_dir(EXTRA / "855-trtllm-gptq-batch64-cant-allocate-new-blocks-no-free-blocks-left" / "input"))
    assert (f.category, f.rule, f.severity) == ("serving-oom-retraction", "serving.kv-blocks-exhausted", "error")
    assert [(e.file, e.line) for e in f.evidence][0] == ("benchmark.log", 1)
