"""parsers/: SGLang stats lines of every generation, startup lines, settings, metric lines."""

from __future__ import annotations

import pytest

from triage.model import Line
from triage.parsers import metrics, settings, sglang


def _line(text: str) -> Line:
    return Line("x.log", 1, text, text)


@pytest.mark.parametrize("text, running, usage, queue", [
    # P1/P2 2024 with cache hit rate (corpus 045)
    ("[16:43:29 TP0] Prefill batch. #new-seq: 4, #new-token: 8192, #cached-token: 291, cache hit rate: 2.76%, "
     "token usage: 0.04, #running-req: 1, #queue-req: 38", 1, 0.04, 38),
    # D1 2025-03 period
    ("Decode batch. #running-req: 1, #token: 2102, token usage: 0.51, cuda graph: True, gen throughput (token/s): 93.51, "
     "#queue-req: 0", 1, 0.51, 0),
    # D4 trailing comma
    ("[2025-09-01 10:00:00 TP0] Decode batch. #running-req: 48, #token: 245760, token usage: 0.94, cuda graph: True, "
     "gen throughput (token/s): 1533.87, #queue-req: 17, ", 48, 0.94, 17),
    # D5/D6 comma after 'batch', hybrid SWA (corpus 036)
    ("[2026-05-24 03:51:45 TP0] Decode batch, #running-req: 4, #full token: 2642688, full token usage: 1.00, "
     "#swa token: 14592, swa token usage: 0.06, cuda graph: True, gen throughput (token/s): 429.52, #queue-req: 3", 4, 1.0, 3),
    # hybrid mamba (corpus 077)
    ("[2025-12-11 06:23:21 TP0 EP0] Decode batch, #running-req: 2, #full token: 37707, full token usage: 0.01, "
     "mamba num: 4, mamba usage: 0.00, cuda graph: True, gen throughput (token/s): 200.40, #queue-req: 0, ", 2, 0.01, 0),
    # P9 2026 (corpus 033)
    ("[2026-05-28 08:41:19] Prefill batch, #new-seq: 1, #new-token: 11, #cached-token: 12, token usage: 0.00, "
     "#running-req: 0, #queue-req: 0, #pending-token: 0, cuda graph: False, input throughput (token/s): 11.79", 0, 0.0, 0),
    # D4' with forward counter
    ("Decode batch [1234], #running-req: 8, #token: 100, token usage: 0.20, cuda graph: True, "
     "gen throughput (token/s): 10.00, #queue-req: 1", 8, 0.2, 1),
])
def test_stats_line_variants(text: str, running: int, usage: float, queue: int) -> None:
    ev = sglang.parse(_line(text))
    assert ev is not None and ev.kind == "stats"
    assert ev.fields["#running-req"] == running
    assert ev.fields["usage"] == pytest.approx(usage)
    assert ev.fields["#queue-req"] == queue


def test_capacity_line() -> None:
    ev = sglang.parse(_line("[2025-08-05 12:15:15 TP0] max_total_num_tokens=734840, chunked_prefill_size=8192, "
                            "max_prefill_tokens=16384, max_running_requests=4096, context_len=40960, available_gpu_mem=21.27 GB"))
    assert ev.kind == "capacity"
    assert ev.fields == {"max_total_num_tokens": 734840, "chunked_prefill_size": 8192, "max_prefill_tokens": 16384,
                         "max_running_requests": 4096, "context_len": 40960, "available_gpu_mem": 21.27}


def test_server_args_dump() -> None:
    ev = sglang.parse(_line("[2026-05-24 00:52:40] server_args=ServerArgs(model_path='Qwen/Qwen3-8B', context_length=None, "
                            "mem_fraction_static=0.871, max_running_requests=64, cuda_graph_bs=[1, 2, 4], "
                            "disable_radix_cache=True, tp_size=2)"))
    assert ev.kind == "settings"
    assert ev.fields["mem_fraction_static"] == 0.871
    assert ev.fields["max_running_requests"] == 64
    assert ev.fields["context_length"] is None
    assert ev.fields["disable_radix_cache"] is True
    assert ev.fields["cuda_graph_bs"] == "[1, 2, 4]"


@pytest.mark.parametrize("text, field, value", [
    ("KV Cache is allocated. #tokens: 46611, K size: 1.42 GB, V size: 1.42 GB", "tokens", 46611),
    ("KV Cache is allocated. dtype: torch.bfloat16, #tokens: 1707904, K size: 117.28 GB, V size: 117.28 GB", "tokens", 1707904),
    # the startup-phase lines (weight load, graph capture) moved to parsers/startup.py: tests/test_startup_phases.py
])
def test_startup_lines(text: str, field: str, value: float) -> None:
    ev = sglang.parse(_line(text))
    assert ev.fields[field] == pytest.approx(value)


def test_launch_flags() -> None:
    ev = settings.parse(_line("python train.py --rollout-max-response-len 8192 --sglang-mem-fraction-static 0.7 "
                              "--sglang-disable-radix-cache --log-probs-chunk-size=1024"))
    assert ev.fields["--rollout-max-response-len"] == 8192
    assert ev.fields["--sglang-mem-fraction-static"] == 0.7
    assert ev.fields["--sglang-disable-radix-cache"] is True
    assert ev.fields["--log-probs-chunk-size"] == 1024


def test_slime_metric_dict_with_nan() -> None:
    ev = metrics.parse(_line("[2025-11-20 10:00:00] model.py:918 - step 12: {'train/loss': -0.0123, "
                             "'train/grad_norm': nan, 'rollout/truncated_ratio': np.float64(0.25)}"))
    assert ev.fields["tag"] == "step" and ev.fields["step"] == 12
    v = ev.fields["values"]
    assert v["train/loss"] == -0.0123 and v["rollout/truncated_ratio"] == 0.25
    assert v["train/grad_norm"] != v["train/grad_norm"]  # NaN


def test_verl_step_line_and_fragment_merge() -> None:
    a = metrics.parse(Line("t.log", 1, "", "(main_task pid=1) step:5 - response_length/max:1024.000 - critic/score/mean:0.008"))
    b = metrics.parse(Line("t.log", 2, "", "ming_s/gen:262.359 - timing_s/step:600.1 - timing_s/ref:39.101"))
    merged = metrics.merge_records([a, b])
    assert len(merged) == 1
    values = merged[0].fields["values"]
    assert values["response_length/max"] == 1024.0 and values["timing_s/step"] == 600.1
    assert merged[0].fields["lines"]["timing_s/step"].lineno == 2


def test_miles_duplicate_step_print_counts_once() -> None:
    a = metrics.parse(Line("t.log", 1, "", "log_utils.py:542 - step 36: {'train/loss': 0.1}"))
    b = metrics.parse(Line("t.log", 2, "", "model.py:854 - step 36: {'train/loss': 0.1}"))
    assert len(metrics.merge_records([a, b])) == 1
