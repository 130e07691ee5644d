"""The eleven configuration cross-checks, each in both config layouts, with and without engine logs."""

from __future__ import annotations

import pytest
from conftest import by_rule, knob_names, run, write_run
from engine_lines import capacity, engine_log, kv_pool, mamba_pool, server_args

LAYOUTS = ["nested", "flat"]
CTX, RESP, PROMPT = "inference.max_context_length", "inference.max_response_length", "miles.rollout_max_prompt_len"
PACK, MICRO = "trainer.packing_max_tokens", "trainer.micro_batch_size"
POOL, RUNNING = "inference.sglang_max_total_tokens", "inference.sglang_max_running_requests"
CONC, GRAPH = "inference.sglang_server_concurrency", "inference.sglang_cuda_graph_max_bs_decode"


def findings(tmp_path, lib, settings, layout, logs=None):
    return by_rule(run(write_run(tmp_path / "run", settings, layout, logs), lib))


# -- 1. prompt + response > context -----------------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
def test_prompt_plus_response_over_context_from_config(tmp_path, lib, layout):
    f = findings(tmp_path, lib, {CTX: 16384, RESP: 512, PROMPT: 16384}, layout)["config.prompt-plus-response-over-context"]
    assert (f.category, f.severity) == ("prompt-budget", "error")
    assert f.numbers["arithmetic"] == "16384 + 512 = 16896 > 16384"
    assert f.numbers["over_by"] == 512
    assert "(16384 + 512 = 16896 > 16384)" in f.title
    assert knob_names(f) == [PROMPT, RESP, CTX]
    # evidence: the config lines of the prompt limit, the response limit and the context, in that order
    lines = [5, 3, 2] if layout == "nested" else [3, 2, 1]
    assert [(e.file, e.line) for e in f.evidence] == [("run.yaml", n) for n in lines]
    assert f.evidence[0].text.strip() == ("rollout_max_prompt_len: 16384" if layout == "nested"
                                          else "miles.rollout_max_prompt_len: 16384")


@pytest.mark.parametrize("layout", LAYOUTS)
def test_prompt_plus_response_checked_against_the_engine_context(tmp_path, lib, layout):
    # the config asks for 32K, but the engine's startup line says it serves 16K: the smaller limit applies
    logs = {"sglang-engine-0.log": engine_log(capacity(734840, 4096, 16384))}
    f = findings(tmp_path, lib, {CTX: 32768, RESP: 512, PROMPT: 16384}, layout, logs)[
        "config.prompt-plus-response-over-context"]
    assert f.numbers["arithmetic"] == "16384 + 512 = 16896 > 16384"
    ctx = next(k for k in f.knobs if k.name == CTX)
    assert ctx.current == 16384 and ctx.source == "engine startup sglang-engine-0.log:1"


def test_prompt_plus_response_that_fits_raises_nothing(tmp_path, lib):
    assert "config.prompt-plus-response-over-context" not in findings(
        tmp_path, lib, {CTX: 16384, RESP: 512, PROMPT: 15872}, "nested")


# -- 2. prompt limit derived -----------------------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
def test_unset_prompt_limit_is_derived_as_info(tmp_path, lib, layout):
    f = findings(tmp_path, lib, {CTX: 65536, RESP: 512}, layout)["config.prompt-limit-derived"]
    assert (f.category, f.severity) == ("prompt-budget", "info")
    assert f.numbers["derived_prompt_limit"] == 65024
    assert f.numbers["arithmetic"] == "65536 − 512 = 65024"


@pytest.mark.parametrize("layout", LAYOUTS)
def test_derived_prompt_limit_of_zero_is_an_error(tmp_path, lib, layout):
    f = findings(tmp_path, lib, {CTX: 4096, RESP: 4096}, layout)["config.prompt-limit-derived"]
    assert f.severity == "error"
    assert f.numbers["derived_prompt_limit"] == 0
    assert f.title == "The response limit leaves no room for a prompt in the context (4096 − 4096 = 0)"


def test_derived_prompt_limit_with_the_context_from_the_engine(tmp_path, lib):
    logs = {"engine.log": engine_log(capacity(734840, 4096, 40960))}
    f = findings(tmp_path, lib, {RESP: 8192}, "flat", logs)["config.prompt-limit-derived"]
    assert f.numbers["arithmetic"] == "40960 − 8192 = 32768"


# -- 3. pack budget ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
def test_pack_budget_below_context(tmp_path, lib, layout):
    f = findings(tmp_path, lib, {CTX: 16384, PACK: 9216}, layout)["config.pack-budget-below-context"]
    assert (f.category, f.severity) == ("trainer-oom", "error")
    assert f.numbers["arithmetic"] == "9216 < 16384"
    assert f.numbers["short_by"] == 7168
    assert knob_names(f) == [PACK, CTX, "trainer.sequence_packing"]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_pack_budget_counts_context_parallel_ranks(tmp_path, lib, layout):
    settings = {CTX: 40960, PACK: 16384, "trainer.context_parallel_size": 2}
    f = findings(tmp_path, lib, settings, layout)["config.pack-budget-below-context"]
    assert f.numbers["arithmetic"] == "16384 × 2 = 32768 < 40960"
    settings["trainer.context_parallel_size"] = 4
    assert "config.pack-budget-below-context" not in findings(tmp_path / "cp4", lib, settings, layout)


def test_pack_budget_against_a_context_length_set_in_server_args(tmp_path, lib):
    logs = {"engine.log": engine_log(server_args(context_length=16384, max_running_requests=None))}
    f = findings(tmp_path, lib, {PACK: 9216}, "nested", logs)["config.pack-budget-below-context"]
    assert f.numbers["arithmetic"] == "9216 < 16384"
    assert [e.file for e in f.evidence] == ["run.yaml", "engine.log"]


def test_pack_budget_ignores_the_models_advertised_context(tmp_path, lib):
    # the engine's context_len is the model's maximum, not a length anyone configured
    logs = {"engine.log": engine_log(capacity(734840, 4096, 40960))}
    assert "config.pack-budget-below-context" not in findings(tmp_path, lib, {PACK: 9216}, "nested", logs)


# -- 4. micro-batch size -----------------------------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("with_engine", [False, True])
def test_micro_batch_not_one(tmp_path, lib, layout, with_engine):
    logs = {"engine.log": engine_log(capacity(734840, 4096, 40960))} if with_engine else None
    f = findings(tmp_path, lib, {MICRO: 2}, layout, logs)["config.micro-batch-not-one"]
    assert (f.category, f.severity) == ("trainer-oom", "warning")
    assert f.numbers["arithmetic"] == "micro_batch_size = 2 ≠ 1"
    assert knob_names(f)[0] == MICRO


def test_micro_batch_with_dynamic_batching_is_info(tmp_path, lib):
    f = findings(tmp_path, lib, {MICRO: 4, "trainer.use_dynamic_batch_size": True}, "nested")[
        "config.micro-batch-not-one"]
    assert f.severity == "info"
    assert f.numbers["dynamic_batching"] is True


# -- 5. pool capacity in full sequences --------------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
def test_pool_holds_fewer_full_sequences_than_client_concurrency(tmp_path, lib, layout):
    f = findings(tmp_path, lib, {CTX: 32768, POOL: 131072, CONC: 16}, layout)["config.pool-fits-few-sequences"]
    assert (f.category, f.severity) == ("serving-oom-retraction", "warning")
    assert f.numbers["arithmetic"] == "131072 ÷ 32768 = 4 full sequences < 16 admitted"
    assert (f.numbers["full_sequences"], f.numbers["admission_knob"]) == (4, CONC)
    assert knob_names(f) == [RUNNING, CONC, POOL]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_pool_capacity_uses_the_allocated_pool_from_the_engine(tmp_path, lib, layout):
    logs = {"engine.log": engine_log(kv_pool(131072), capacity(131072, 16, 32768))}
    f = findings(tmp_path, lib, {CTX: 32768, RUNNING: 16}, layout, logs)["config.pool-fits-few-sequences"]
    assert f.numbers["arithmetic"] == "131072 ÷ 32768 = 4 full sequences < 16 admitted"
    assert (f.numbers["pool_source"], f.numbers["admission_knob"]) == ("resolved", RUNNING)


@pytest.mark.parametrize("context,expected", [(16384, 8), (32768, 4), (65536, 2)])
def test_pool_of_131072_tokens_holds_the_seeds_full_sequences(tmp_path, lib, context, expected):
    f = findings(tmp_path, lib, {CTX: context, POOL: 131072, CONC: 64}, "flat")["config.pool-fits-few-sequences"]
    assert f.numbers["full_sequences"] == expected


def test_pool_that_cannot_hold_one_sequence_is_an_error(tmp_path, lib):
    f = findings(tmp_path, lib, {CTX: 65536, POOL: 32768, CONC: 4}, "nested")["config.pool-fits-few-sequences"]
    assert f.severity == "error"
    assert f.numbers["full_sequences"] == 0


def test_auto_resolved_admission_does_not_count(tmp_path, lib):
    # SGLang's own max_running_requests=4096 in the capacity line is nobody's choice
    logs = {"engine.log": engine_log(kv_pool(131072), capacity(131072, 4096, 32768))}
    assert "config.pool-fits-few-sequences" not in findings(tmp_path, lib, {CTX: 32768}, "nested", logs)


def test_short_context_is_not_judged_by_full_sequences(tmp_path, lib):
    assert "config.pool-fits-few-sequences" not in findings(
        tmp_path, lib, {CTX: 8192, POOL: 16384, CONC: 64}, "nested")


# -- 6. requested vs allocated pool ------------------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
def test_allocated_pool_smaller_than_requested(tmp_path, lib, layout):
    logs = {"sglang-engine-0.log": engine_log(kv_pool(98304))}
    f = findings(tmp_path, lib, {POOL: 131072}, layout, logs)["config.pool-below-requested"]
    assert (f.category, f.severity) == ("serving-oom-retraction", "warning")
    assert f.numbers["arithmetic"] == "allocated 98304 < requested 131072 (75.0%)"
    assert f.numbers["shortfall"] == 32768
    assert f.evidence[0].file == "sglang-engine-0.log"


@pytest.mark.parametrize("layout", LAYOUTS)
def test_requested_pool_without_engine_logs_cannot_be_compared(tmp_path, lib, layout):
    assert "config.pool-below-requested" not in findings(tmp_path, lib, {POOL: 131072}, layout)


def test_requested_pool_from_server_args(tmp_path, lib):
    logs = {"engine.log": engine_log(server_args(max_total_tokens=131072), kv_pool(120000))}
    f = findings(tmp_path, lib, None, "nested", logs)["config.pool-below-requested"]
    assert f.numbers["arithmetic"] == "allocated 120000 < requested 131072 (91.6%)"


# -- 7. mamba slots ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
def test_mamba_slots_below_running_with_radix_off_is_an_error(tmp_path, lib, layout):
    settings = {"inference.sglang_max_mamba_cache_size": 64, RUNNING: 128, "inference.sglang_disable_radix_cache": True}
    f = findings(tmp_path, lib, settings, layout)["config.mamba-slots-below-running"]
    assert (f.category, f.severity) == ("serving-oom-retraction", "error")
    assert f.numbers["arithmetic"] == "64 slots < 128 running requests (radix cache off)"


@pytest.mark.parametrize("layout", LAYOUTS)
def test_mamba_slots_not_well_above_running_with_radix_on_is_a_warning(tmp_path, lib, layout):
    settings = {"inference.sglang_max_mamba_cache_size": 256, RUNNING: 128}
    f = findings(tmp_path, lib, settings, layout)["config.mamba-slots-below-running"]
    assert f.severity == "warning"
    assert f.numbers["arithmetic"] == "256 slots < 3 × 128 = 384 (radix cache on)"


def test_mamba_slots_from_the_engines_allocation(tmp_path, lib):
    logs = {"engine.log": engine_log(mamba_pool(64))}
    settings = {RUNNING: 128, "inference.sglang_disable_radix_cache": True}
    f = findings(tmp_path, lib, settings, "nested", logs)["config.mamba-slots-below-running"]
    assert f.numbers["mamba_slots"] == 64
    assert f.evidence[0].text.endswith("max_mamba_cache_size: 64, conv_state size: 0.56GB, ssm_state size: 18.47GB ")


# -- 8. CUDA-graph batch vs admission ----------------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
def test_cuda_graph_above_admission(tmp_path, lib, layout):
    f = findings(tmp_path, lib, {GRAPH: 256, RUNNING: 32}, layout)["config.cuda-graph-above-admission"]
    assert (f.category, f.severity) == ("serving-oom-retraction", "warning")
    assert f.numbers["arithmetic"] == "256 > 32"


@pytest.mark.parametrize("layout", LAYOUTS)
def test_cuda_graph_below_admission_is_info(tmp_path, lib, layout):
    found = findings(tmp_path, lib, {GRAPH: 16, RUNNING: 64}, layout)
    f = found["config.cuda-graph-below-admission"]
    assert f.severity == "info" and f.numbers["arithmetic"] == "16 < 64"
    assert "config.cuda-graph-above-admission" not in found


def test_auto_sized_cuda_graph_above_admission_is_only_info(tmp_path, lib):
    # cuda_graph_max_bs in server_args is filled in by SGLang itself before the dump
    logs = {"engine.log": engine_log(server_args(cuda_graph_max_bs=256, max_running_requests=32))}
    f = findings(tmp_path, lib, None, "nested", logs)["config.cuda-graph-above-admission"]
    assert f.severity == "info"
    assert (f.numbers["graph_source"], f.numbers["arithmetic"]) == ("resolved", "256 > 32")


# -- 9. mem_fraction_static 0.6 colocated -------------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
def test_mem_fraction_06_colocated_is_info(tmp_path, lib, layout):
    settings = {"inference.sglang_mem_fraction_static": 0.6, "miles.colocate": True}
    f = findings(tmp_path, lib, settings, layout)["config.mem-fraction-colocated"]
    assert (f.category, f.severity) == ("serving-oom-retraction", "info")
    assert f.numbers["arithmetic"] == "mem_fraction_static = 0.6 with colocate on"


def test_mem_fraction_06_from_the_launch_command_line(tmp_path, lib):
    logs = {"driver.log": "python3 train.py --colocate --sglang-mem-fraction-static 0.6 --rollout-batch-size 32\n"}
    f = findings(tmp_path, lib, None, "nested", logs)["config.mem-fraction-colocated"]
    frac = f.knobs[0]
    assert (frac.current, frac.source) == (0.6, "command line driver.log:1")


def test_mem_fraction_06_without_colocation_raises_nothing(tmp_path, lib):
    assert "config.mem-fraction-colocated" not in findings(
        tmp_path, lib, {"inference.sglang_mem_fraction_static": 0.6}, "nested")


# -- 10. 64K training --------------------------------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("with_engine", [False, True])
def test_long_context_training(tmp_path, lib, layout, with_engine):
    logs = {"engine.log": engine_log(capacity(2000000, 4096, 131072))} if with_engine else None
    f = findings(tmp_path, lib, {CTX: 65536, PACK: 65536}, layout, logs)["config.long-context-training"]
    assert (f.category, f.severity) == ("trainer-oom", "warning")
    assert f.numbers["arithmetic"] == "65536 ≥ 65536"


def test_long_context_serving_without_training_raises_nothing(tmp_path, lib):
    assert "config.long-context-training" not in findings(tmp_path, lib, {CTX: 65536}, "nested")


# -- 11. log-prob chunking ---------------------------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
def test_log_probs_chunk_unset_with_long_responses(tmp_path, lib, layout):
    f = findings(tmp_path, lib, {RESP: 16384, PACK: 20480}, layout)["config.log-probs-chunk-unset"]
    assert (f.category, f.severity) == ("trainer-oom", "info")
    assert f.numbers["arithmetic"] == "response cap 16384 ≥ 8192, log_probs_chunk_size unset"


def test_log_probs_chunk_minus_one_from_a_namespace_dump(tmp_path, lib):
    logs = {"train.log": "Namespace(rollout_max_response_len=16384, log_probs_chunk_size=-1, max_tokens_per_gpu=20480)\n"}
    f = findings(tmp_path, lib, None, "nested", logs)["config.log-probs-chunk-unset"]
    assert f.numbers["arithmetic"] == "response cap 16384 ≥ 8192, log_probs_chunk_size -1 (no chunking)"
    assert f.knobs[0].source == "launch args train.log:1"


def test_log_probs_chunked_raises_nothing(tmp_path, lib):
    settings = {RESP: 16384, PACK: 20480, "miles.log_probs_chunk_size": 1024}
    assert "config.log-probs-chunk-unset" not in findings(tmp_path, lib, settings, "nested")


def test_a_ceiling_the_engine_divided_among_dp_ranks_is_each_ranks_share() -> None:
    # SGLang with DP attention (Ascend nightly decode node, real-extra 1584): server_args ask 832 running requests,
    # the TP worker gives each of the 32 DP ranks 832 // 32 = 26 and prints it; the graph is captured up to 26
    from conftest import FIXTURES, triage_dir

    report = triage_dir(next((FIXTURES / "real-extra").glob("1584-*")) / "input")
    assert not [f for f in report.findings if f.rule == "config.cuda-graph-below-admission"]
    assert report.findings[0].rule == "serving.retraction-crashed"
