"""origins.py: Ray actor prefixes, Ray dedup counts, container and launcher prefixes."""

from __future__ import annotations

import pytest

from triage.scan.origins import Context, split_ray


def test_ray_prefix_with_ip_and_repeat_count() -> None:
    msg, actor, pid, repeat = split_ray(
        "(SGLangEngine pid=276799, ip=10.142.0.6) [2025-12-11 06:23:21 TP0 EP0] Decode batch, #running-req: 2, "
        "#queue-req: 0,  [repeated 4x across cluster]")
    assert (actor, pid, repeat) == ("SGLangEngine", "276799", 4)
    assert msg.startswith("Decode batch, #running-req: 2")
    assert "repeated" not in msg


def test_ray_prefix_without_ip() -> None:
    msg, actor, pid, repeat = split_ray("(MegatronTrainRayActor pid=76563) [2025-12-31 11:45:20] timer.py:24 - Timer train_wait start")
    assert (actor, pid, repeat) == ("MegatronTrainRayActor", "76563", 1)
    assert msg == "Timer train_wait start"


def test_line_without_prefix_is_unchanged() -> None:
    assert split_ray("Traceback (most recent call last):") == ("Traceback (most recent call last):", "", "", 1)


@pytest.mark.parametrize("line, msg, actor", [
    ('worker-longctx-1  |   File "/x/sglang/srt/model_executor/cuda_graph_runner.py", line 628, in __init__',
     '  File "/x/sglang/srt/model_executor/cuda_graph_runner.py", line 628, in __init__', ""),          # docker compose
    ("[rank24]: multiprocess.pool.RemoteTraceback: ", "multiprocess.pool.RemoteTraceback: ", ""),        # torchrun
    ("vllm-1  | ERROR 11-18 18:07:28 engine.py:366] ValueError: No available memory for the cache blocks.",
     "ValueError: No available memory for the cache blocks.", ""),                                        # docker + vLLM
    ("(EngineCore_DP0 pid=223840) ERROR 10-25 13:08:43 [core.py:708] ValueError: boom", "ValueError: boom",
     "EngineCore_DP0"),                                                                                   # vLLM V1
    ("[2026-03-11 17:47:54] ray.exceptions.RayTaskError(NotImplementedError): ray::TaskRunner.run()",
     "ray.exceptions.RayTaskError(NotImplementedError): ray::TaskRunner.run()", ""),                      # launcher time
    ("WARNING:2025-11-12 20:15:31,676: Timeout during comparison", "Timeout during comparison", ""),   # logging
    ("[2026-08-01 12:00:00.123 actor_cell0_rank0] log_utils.py:542 - step 12: {'train/loss': 1}",
     "step 12: {'train/loss': 1}", ""),                                                                   # MILES 2026-07
])
def test_container_rank_time_and_logger_prefixes_are_removed(line: str, msg: str, actor: str) -> None:
    got = split_ray(line)
    assert (got[0], got[1]) == (msg, actor)


def storm(n: int) -> list[str]:
    """A retraction storm: n retraction lines whose numbers change, stats rows between some of them."""
    out = []
    for i in range(n):
        ratio = (i % 50) / 100
        out.append(f"[2026-05-24 00:{i // 60 % 60:02d}:{i % 60:02d} TP0] KV cache pool is full. Retract requests. "
                   f"#retracted_reqs: {1 + i % 3}, #new_tokens_gained: {100 + i % 700}, "
                   f"#new_token_ratio: {ratio:.4f} -> {ratio + 0.2:.4f}")
        if i % 4 == 0:
            out.append(f"[2026-05-24 00:00:{i % 60:02d} TP0] Decode batch, #running-req: 40, #token: 2000, "
                       f"token usage: 0.50, cuda graph: True, gen throughput (token/s): 2210.45, #queue-req: 0")
    return out


@pytest.mark.parametrize("native", [True, False])
def test_a_retraction_storm_keeps_one_line_and_counts_every_request(tmp_path, monkeypatch, native):
    import gc

    from triage.analyze import Settings, analyze
    from triage.library.rules import load_library
    from triage.model import Line

    if native:
        monkeypatch.delenv("TRIAGE_NO_NATIVE", raising=False)
    else:
        monkeypatch.setenv("TRIAGE_NO_NATIVE", "1")
    added = []
    real_add = Context.add
    monkeypatch.setattr(Context, "add", lambda self, line: (added.append(line.lineno), real_add(self, line))[1])
    n = 20000
    lines = storm(n) + ["[2026-05-24 01:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):",
                        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."]
    (tmp_path / "sglang-engine-0.log").write_text("\n".join(lines) + "\n")
    lib = load_library()
    report = analyze(Settings(paths=[str(tmp_path)]), lib)
    retract = [f for f in report.findings if f.rule == "serving.kv-retraction"]
    assert len(retract) == 1 and retract[0].count == n
    assert retract[0].first.line == 1 and retract[0].last.line == len(lines) - 2
    assert report.figures["retractions"] == sum(1 + i % 3 for i in range(n))
    assert len(added) <= 4  # the storm's first line and the traceback: not one context line per retraction
    assert sum(isinstance(o, Line) for o in gc.get_objects()) < 200
