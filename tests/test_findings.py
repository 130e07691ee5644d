"""Scanning + findings on inline logs: one finding per problem, side decides engine vs trainer, symptoms
fold into their cause, root cause ranks first, knobs carry current values, fingerprints ignore line numbers."""

from __future__ import annotations

from conftest import top, triage_files

OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 11.72 GiB. GPU 5 has a total capacity of "
       "139.81 GiB of which 6.30 GiB is free. Process 2211 has 58.40 GiB memory in use. Including non-PyTorch memory, "
       "this process has 75.02 GiB memory in use. Of the allocated memory 61.33 GiB is allocated by PyTorch, and "
       "10.24 GiB is reserved by PyTorch but unallocated.")
RETRACT = "[2025-09-01 10:00:{s:02d} TP0] KV cache pool is full. Retract requests. #retracted_reqs: 5, #new_token_ratio: 0.2233 -> 0.4871"


def test_repeated_lines_are_one_finding_with_count_and_first_last(tmp_path) -> None:
    log = "\n".join(RETRACT.format(s=i) for i in range(50)) + "\n"
    report = triage_files(tmp_path, {"sglang-engine-0.log": log})
    f = top(report)
    assert (f.rule, f.count) == ("serving.kv-retraction", 50)
    assert (f.first.line, f.last.line) == (1, 50)
    assert f.numbers["retracted"] == 5 and f.numbers["ratio_after"] == 0.4871
    assert len(report.findings) == 1


def test_ray_prefix_decides_engine_or_trainer_oom_in_one_driver_log(tmp_path) -> None:
    engine = triage_files(tmp_path / "a", {"driver.log": f"(SGLangEngine pid=4100, ip=10.0.0.2) {OOM}\n"})
    trainer = triage_files(tmp_path / "b", {"driver.log": f"(MegatronTrainRayActor pid=4200) {OOM}\n"})
    assert top(engine).rule == "serving.engine-cuda-oom"
    assert top(trainer).rule == "trainer.cuda-oom"
    assert top(trainer).numbers["reserved_unallocated"] == 10.24
    assert "PYTORCH_CUDA_ALLOC_CONF" in [k.name for k in top(trainer).knobs]  # 10 GiB reserved but unallocated


def test_traceback_frames_decide_the_oom_location(tmp_path) -> None:
    log = "\n".join([
        "Traceback (most recent call last):",
        '  File "/root/miles/miles/backends/megatron_utils/loss.py", line 120, in get_log_probs_and_entropy',
        "    log_probs = calculate_log_probs_and_entropy(logits, tokens)",
        '  File "/root/miles/miles/utils/ppo_utils.py", line 88, in calculate_log_probs_and_entropy',
        "    logits = logits.to(torch.float32, copy=True)",
        OOM,
    ]) + "\n"
    f = top(triage_files(tmp_path, {"train.log": log}))
    assert f.rule == "trainer.oom-logprobs"
    assert f.knobs[0].name == "miles.log_probs_chunk_size"
    assert (f.evidence[0].file, f.evidence[0].line) == ("train.log", 6)


def test_actor_death_folds_into_the_oom_that_caused_it(tmp_path) -> None:
    log = (f"(MegatronTrainRayActor pid=4200) {OOM}\n"
           "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n")
    report = triage_files(tmp_path, {"train.log": log})
    assert [f.rule for f in report.findings] == ["trainer.cuda-oom"]
    assert [e.line for e in report.findings[0].evidence] == [1, 2]


def test_actor_death_alone_is_reported_as_other(tmp_path) -> None:
    report = triage_files(tmp_path, {"train.log": "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n"})
    assert top(report).rule == "other.actor-died" and top(report).category == "other"


def test_oom_that_killed_the_run_outranks_the_retractions_before_it(tmp_path) -> None:
    engine = "\n".join(RETRACT.format(s=i) for i in range(5)) + "\n"
    report = triage_files(tmp_path, {"sglang-engine-0.log": engine, "train.log": OOM + "\n"})
    assert [f.rule for f in report.findings] == ["trainer.cuda-oom", "serving.kv-retraction"]


def test_ray_host_oom_is_not_a_gpu_oom(tmp_path) -> None:
    report = triage_files(tmp_path, {"train.log": "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.\n"})
    assert top(report).rule == "other.host-oom"
    assert all(f.category != "trainer-oom" for f in report.findings)


def test_knob_shows_the_value_the_engine_logged(tmp_path) -> None:
    log = ("[2025-08-05 12:15:15 TP0] max_total_num_tokens=734840, chunked_prefill_size=8192, max_prefill_tokens=16384, "
           "max_running_requests=4096, context_len=40960, available_gpu_mem=21.27 GB\n"
           "[2026-01-02 00:00:00] server_args=ServerArgs(mem_fraction_static=0.7, max_running_requests=None)\n"
           + RETRACT.format(s=1) + "\n")
    f = top(triage_files(tmp_path, {"sglang-engine-0.log": log}))
    current = {k.name: (k.current, k.source) for k in f.knobs}
    assert current["inference.sglang_max_running_requests"] == (4096, "engine startup sglang-engine-0.log:1")
    assert current["inference.sglang_mem_fraction_static"][0] == 0.7
    assert current["inference.sglang_max_total_tokens"][0] == 734840


def test_unexplained_errors_are_grouped_by_template(tmp_path) -> None:
    log = "\n".join(f"RuntimeError: widget {i} exploded at 0x{i:08x}" for i in range(7)) + "\nKeyError: 'x'\n"
    report = triage_files(tmp_path, {"app.log": log})
    unclassified = [f for f in report.findings if f.category == "unclassified"]
    assert [(f.count, f.numbers["template"]) for f in unclassified] == [
        (7, "RuntimeError: widget <n> exploded at <hex>"), (1, "KeyError: 'x'")]


def test_fingerprint_does_not_change_when_lines_move(tmp_path) -> None:
    a = top(triage_files(tmp_path / "a", {"train.log": OOM + "\n"}))
    b = top(triage_files(tmp_path / "b", {"train.log": "noise\n" * 30 + OOM.replace("11.72", "12.00") + "\n"}))
    assert a.evidence[0].line != b.evidence[0].line
    assert a.fingerprint == b.fingerprint


def test_secrets_in_evidence_are_redacted_by_default(tmp_path) -> None:
    line = "ModuleNotFoundError: No module named 'x' while running with HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz123\n"
    redacted = top(triage_files(tmp_path / "a", {"train.log": line}))
    plain = top(triage_files(tmp_path / "b", {"train.log": line}, redact=False))
    assert "hf_abcdefghijklmnopqrstuvwxyz123" not in redacted.evidence[0].text
    assert "HF_TOKEN=[REDACTED]" in redacted.evidence[0].text
    assert "hf_abcdefghijklmnopqrstuvwxyz123" in plain.evidence[0].text


def test_one_retraction_is_info_and_repeated_retractions_a_warning(tmp_path) -> None:
    once = top(triage_files(tmp_path / "a", {"sglang-engine-0.log": RETRACT.format(s=1) + "\n"}))
    twice = top(triage_files(tmp_path / "b", {"sglang-engine-0.log": RETRACT.format(s=1) + "\n" + RETRACT.format(s=2) + "\n"}))
    assert (once.rule, once.severity) == ("serving.kv-retraction", "info")
    assert (twice.rule, twice.severity, twice.count) == ("serving.kv-retraction", "warning", 2)


def test_each_engine_finding_shows_its_own_engines_settings(tmp_path) -> None:
    capacity = ("[2025-08-05 12:15:15 TP0] max_total_num_tokens={pool}, chunked_prefill_size=8192, max_prefill_tokens=16384, "
                "max_running_requests={running}, context_len=40960, available_gpu_mem=21.27 GB\n")
    report = triage_files(tmp_path, {
        "sglang-engine-0.log": capacity.format(pool=87000, running=64) + RETRACT.format(s=1) + "\n" + RETRACT.format(s=2) + "\n",
        "sglang-engine-1.log": capacity.format(pool=734840, running=4096),
    })
    f = top(report)
    current = {k.name: (k.current, k.source) for k in f.knobs}
    assert current["inference.sglang_max_running_requests"] == (64, "engine startup sglang-engine-0.log:1")
    assert current["inference.sglang_max_total_tokens"][0] == 87000


def test_each_dp_attention_group_gets_its_own_timeline(tmp_path) -> None:
    row = ("[2025-07-02 08:00:0{s} DP{dp} TP{dp}] Decode batch. #running-req: 4, #token: 100, token usage: {u}, "
           "cuda graph: True, gen throughput (token/s): 10.00, #queue-req: {q}")
    log = "\n".join([row.format(s=1, dp=0, u="0.20", q=0), row.format(s=2, dp=1, u="1.00", q=5),
                     row.format(s=3, dp=1, u="1.00", q=6)]) + "\n"
    report = triage_files(tmp_path, {"sglang-engine-0.log": log})
    f = top(report)
    assert (f.rule, f.count) == ("serving.kv-pool-saturated", 2)
    assert f.numbers["engine"] == "sglang-engine-0.log DP1" and f.numbers["rows"] == 2
