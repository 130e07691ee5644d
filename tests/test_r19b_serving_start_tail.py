"""Recognition round 19 (r19b): serving memory at start, engine hangs and prefill/decode transfers
(real-extra 1780-1789).

- Prefill/decode disaggregation whose KV never reached the decode side: SGLang's per-request "Prefill bootstrap
  failed" / "Prefill transfer failed" / "Decode transfer failed ... KVTransferError(...)" lines (timed out in
  KVPoll.Bootstrapping or WaitingForInput, aborted, a Mooncake peer "could be dead"), the warnings before them,
  vLLM's NIXL copy of the warning and sgl-router's PD stream error: other.pd-kv-transfer-failed (1782, 1783, 1784,
  1789; unexplained before). An engine OOM in the same log still ranks first.
- vLLM V0's "Engine iteration timed out. This should never happen!" (AsyncLLMEngine's step deadline), also inside a
  log pasted flattened into one line, with the background loop's death folded into it: other.engine-iteration-timeout
  (1785 was reported as nothing at all, 1788 as unexplained).
- SGLang's hierarchical cache whose host pool does not fit in host RAM ("Not enough host memory available. Requesting
  N GB but only have M GB free"): serving.hicache-host-pool-too-large with the knob inference.sglang_hicache_size
  (1787).
- Round 2 (from the library with round 1's fixes): Ascend ACL graph capture that runs out of the NPU's stream
  resources at engine start (torch_npu's capture_begin 207005/207008, "Stream resources are insufficient", "Alloc sq
  cq fail", "New capture stream failed" under an RL driver's vLLMHttpServer): serving.npu-graph-capture-streams-exhausted
  with the graph-size knob (1790-1793; blind 0/4, read as the Ascend runtime's trail or unexplained).
- Blind right, kept right: a negative KV budget on a 32 GB vNPU (1780), verifiers' batch generation deadline (1781),
  an engine core's fatal error after a normal step in verl's agent loop (1786).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import extra_input, knob_names, top, triage_dir, triage_files

PD = "other.pd-kv-transfer-failed"
ITER = "other.engine-iteration-timeout"


def test_decode_side_waiting_timeout_is_a_pd_transfer_failure():
    r = triage_dir(extra_input("1782"))
    f = top(r)
    assert (f.category, f.rule, f.severity) == ("other", PD, "error")
    assert [(e.file, e.line) for e in f.evidence][:2] == [("decode.log", 1), ("decode.log", 4)]
    assert f.first.line == 1 and f.last.line == 4
    assert len(r.findings) == 1 and knob_names(f) == []


def test_prefill_bootstrap_timeout_names_the_state_and_deadline():
    f = top(triage_dir(extra_input("1783")))
    assert (f.category, f.rule) == ("other", PD)
    assert [(e.file, e.line) for e in f.evidence] == [("prefill.log", 1)]
    assert (f.numbers["pd_role"], f.numbers["rank"], f.numbers["seconds"], f.numbers["state"]) == (
        "Prefill", 2, 300.0, "Bootstrapping")


def test_router_stream_error_and_aborted_bootstraps_are_one_finding():
    r = triage_dir(extra_input("1784"))
    f = top(r)
    assert (f.category, f.rule) == ("other", PD)
    assert {e.file for e in f.evidence} == {"prefill.log", "router.log"}
    assert not [g for g in r.findings if g.category == "unclassified"]


def test_warm_up_length_finish_is_no_tail_when_the_transfer_fails():
    r = triage_dir(extra_input("1789"))
    f = top(r)
    assert (f.category, f.rule) == ("other", PD)
    assert [(e.file, e.line) for e in f.evidence] == [("sglang.log", 8)]
    assert not [g for g in r.findings if g.category == "generation-tail"]


@pytest.mark.parametrize("line", [
    # SGLang 2026 with Mooncake: the prefill side blames the decode side, and the other way round
    "[2026-02-27 15:01:51 TP4] Prefill transfer failed for request rank=4 req.rid='ca271fb6eab2421f98ac61976e6f0f34' "
    "req.bootstrap_room=6593551520068383758 with exception KVTransferError(bootstrap_room=6593551520068383758): Decode "
    "instance could be dead, remote mooncake session 10.99.91.49:15295 is not alive",
    "[2026-02-27 15:01:51 TP3] Decode transfer failed for request rank=3 decode_req.req.rid='63b1b22dad53465b92560ebdda56d075' "
    "decode_req.req.bootstrap_room=6593551520068383758 with exception KVTransferError(bootstrap_room=6593551520068383758): "
    "Failed to get kvcache from prefill instance, it might be dead",
    # the bootstrap warning, and vLLM's NIXL connector on the prefill node
    "[2025-09-09 10:00:00 TP0] Some requests timed out when bootstrapping, which means prefill instances fail to receive "
    "the KV indices from the decode instance of this request. If a greater mean TTFT is acceptable, you can 'export "
    "SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT=600' (10 minutes) to relax the timeout condition.",
    "(EngineCore_DP0 pid=812) WARNING 03-02 10:11:12 [nixl_connector.py:512] Some requests in prefill node fail to receive "
    "KV Cache transfer done signal. If a greater mean TTFT is acceptable, you can 'export VLLM_NIXL_ABORT_REQUEST_TIMEOUT=600' "
    "(10 minutes) to relax the timeout condition. ",
])
def test_other_pd_transfer_wordings(tmp_path: Path, line: str):
    f = top(triage_files(tmp_path, {"sglang.log": line + "\n"}))
    assert (f.category, f.rule) == ("other", PD)


def test_an_engine_oom_outranks_the_transfers_it_broke(tmp_path: Path):
    log = ("[2025-10-15 11:00:02 DP6 TP6 EP6] Scheduler hit an exception: Traceback (most recent call last):\n"
           '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2000, in event_loop_normal\n'
           "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 6 has a total capacity of 95.00 "
           "GiB of which 1.00 GiB is free.\n"
           "[2025-10-15 11:03:35 DP6 TP6 EP6] Decode transfer failed for request rank=6 decode_req.req.rid='cd00' "
           "decode_req.req.bootstrap_room=83 with exception KVTransferError(bootstrap_room=83): Request 83 timed out "
           "after 600.0s in KVPoll.WaitingForInput\n")
    r = triage_files(tmp_path, {"decode.log": log})
    assert top(r).category == "serving-oom-retraction"
    assert PD in {f.rule for f in r.findings}


def test_the_timeout_settings_alone_are_no_failure(tmp_path: Path):
    log = ("export SGLANG_DISAGGREGATION_WAITING_TIMEOUT=600\nexport VLLM_ENGINE_ITERATION_TIMEOUT_S=180\n"
           "[2025-11-05 16:35:02] The server is fired up and ready to roll!\n")
    r = triage_files(tmp_path, {"launch.log": log})
    assert not [f for f in r.findings if f.rule in (PD, ITER)]


def test_flattened_v0_paste_is_an_engine_hang_not_memory():
    r = triage_dir(extra_input("1785"))
    f = top(r)
    assert (f.category, f.rule, f.severity) == ("other", ITER, "error")
    assert [(e.file, e.line) for e in f.evidence] == [("vllm.log", 1)]
    assert not [g for g in r.findings if g.category == "serving-oom-retraction"]


def test_run_batch_iteration_timeout_folds_the_background_loop():
    r = triage_dir(extra_input("1788"))
    f = top(r)
    assert (f.category, f.rule) == ("other", ITER)
    assert [(e.file, e.line) for e in f.evidence] == [("run_batch.log", 2), ("run_batch.log", 3)]
    assert f.numbers["symptoms"] == ["other.engine-crash"]
    assert not [g for g in r.findings if g.category == "unclassified"]


@pytest.mark.parametrize("lines", [
    ["ERROR 05-16 03:38:10 [async_llm_engine.py:52] Engine background task failed",
     "vllm.engine.async_llm_engine.AsyncEngineDeadError: Background loop has errored already."],
    ["vllm.engine.multiprocessing.MQEngineDeadError: Engine loop is not running. Inspect the stacktrace to find the "
     "original error: IndexError('pop from empty list')."],
])
def test_v0_background_loop_death_is_an_engine_crash(tmp_path: Path, lines: list[str]):
    f = top(triage_files(tmp_path, {"vllm.log": "\n".join(lines) + "\n"}))
    assert (f.category, f.rule) == ("other", "other.engine-crash")


def test_hicache_host_pool_over_host_ram():
    f = top(triage_dir(extra_input("1787")))
    assert (f.category, f.rule, f.severity) == ("serving-oom-retraction", "serving.hicache-host-pool-too-large", "error")
    assert [(e.file, e.line) for e in f.evidence] == [("sglang-server.log", 1)]
    assert (f.numbers["requested_gb"], f.numbers["free_gb"]) == (40.0, 44.87)
    assert knob_names(f)[:2] == ["inference.sglang_hicache_size", "inference.sglang_mem_fraction_static"]


def test_hicache_allocation_line_alone_is_no_failure(tmp_path: Path):
    log = "[2025-12-02 07:04:51 DisaggregationMode.IGPUDECODE TP1] Allocating 40.00 GB host memory for hierarchical KV cache.\n"
    r = triage_files(tmp_path, {"sglang.log": log})
    assert not [f for f in r.findings if f.category == "serving-oom-retraction"]


def test_blind_right_cases_stay_right():
    f = top(triage_dir(extra_input("1780")))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.vllm-kv-memory-negative")
    assert [(e.file, e.line) for e in f.evidence] == [("vllm-serve.log", 2)]
    assert "inference.sglang_mem_fraction_static" in knob_names(f)
    f = top(triage_dir(extra_input("1781")))
    assert f.category == "generation-tail"
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 1)]
    assert "rollout.timeout" in knob_names(f)
    f = top(triage_dir(extra_input("1786")))
    assert (f.category, f.rule) == ("other", "other.engine-crash")
    assert [(e.file, e.line) for e in f.evidence][0] == ("rollout.log", 11)


NPU = "serving.npu-graph-capture-streams-exhausted"


@pytest.mark.parametrize("case,line", [("1790", 2), ("1791", 1), ("1792", 1), ("1793", 3)])
def test_ascend_graph_capture_out_of_streams(case: str, line: int):
    r = triage_dir(extra_input(case))
    f = top(r)
    assert (f.category, f.rule, f.severity) == ("serving-oom-retraction", NPU, "error")
    assert f.evidence[0].line == line
    assert knob_names(f) == ["inference.sglang_cuda_graph_max_bs_decode"]
    # the runtime's generic trail folds into it instead of standing beside it
    assert "other.npu-runtime-trail" not in {g.rule for g in r.findings if g is not f}


def test_capture_begin_codes_are_read():
    f = top(triage_dir(extra_input("1792")))
    assert f.numbers["code"] == 207008
    f = top(triage_dir(extra_input("1790")))
    assert f.numbers["stream_id"] == 1987


@pytest.mark.parametrize("line", [
    "EE9999[PID: 502] 2026-07-27-06:46:08.135.452 (EE9999):  Not allow to synchronize captured-stream, stream_id=12."
    "[FUNC:StreamSynchronize][FILE:api_error.cc][LINE:1043]",
    "rtStreamEndCapture execution failed, reason=an error has invalidated the stream capture sequence"
    "[FUNC:FuncErrorReason][FILE:error_message_manage.cc][LINE:65]",
])
def test_other_capture_failures_are_not_a_stream_budget(tmp_path: Path, line: str):
    r = triage_files(tmp_path, {"worker.log": line + "\n"})
    assert NPU not in {f.rule for f in r.findings}
