"""vLLM engine lines: the periodic stats line (V0 and V1), preemptions, engine configuration and KV capacity.

Stats, every few seconds (vllm/engine/metrics.py, vllm/v1/metrics/loggers.py):
- V0 (0.3 -> 0.10): `Avg prompt throughput: 522.9 tokens/s, Avg generation throughput: 39.0 tokens/s, Running: 1 reqs,
  Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 5.3%, CPU KV cache usage: 0.0%.`
- V1, first cut (0.7.x): `Avg prompt throughput: …, Avg generation throughput: …, Running: N reqs, Waiting: N reqs `
  (no cache usage at all);
- V1 (0.8 ->): `Engine 000: Avg prompt throughput: …, Running: N reqs, Waiting: N reqs, GPU KV cache usage: X%,
  Prefix cache hit rate: Y%`, later with `, MM cache hit rate: …`, and (late 2025 ->) `Preemptions: N`.
Every variant is parsed by key, so a field added or moved keeps its meaning. A row pasted from a terminal that wraps
at its width splits into two lines (`... Avg generation throughpu` / `t: 569.6 tokens/s, Running: 27 reqs, Waiting:
…`, vllm issue 27073): the head has no `Running` and is no row; the tail, which has `N reqs, Waiting|Pending|Swapped:`
and no anchor, is read as the row. The row feeds the same EngineStats as
SGLang's: usage 0..1, running, waiting (V0's swapped requests wait too), generation throughput, the row's time.

Configuration: `non-default args: {…}` (V1 API server, 0.9 ->), `Initializing a V1 LLM engine (v0.8.3) with config:
model=…, max_seq_len=…` (also `an LLM engine`, `a V0 LLM engine`), and capacity at startup: `GPU KV cache size:
620,944 tokens` and `Maximum concurrency for 262,144 tokens per request: 2.37x` (V1), `# GPU blocks: 1478, # CPU
blocks: 2048` (V0). `args: Namespace(…)` dumps are read by parsers/settings.py.
"""

from __future__ import annotations

from typing import Any

from triage.lazyre import lazy
from triage.model import Event, Line
from triage.parsers.values import literal

STATS_ANCHOR = "Avg prompt throughput"
# `Key: number unit` pairs of a stats line (`Running: 1 reqs`, `GPU KV cache usage: 5.3%`, `Preemptions: 0`).
PAIR = lazy(r"([A-Z][A-Za-z ]{2,40}?): (-?\d+(?:\.\d+)?)(%| tokens/s| reqs)?")
ENGINE_INDEX = lazy(r"\bEngine (\d{3}): ")
# The tail of a wrapped stats row: `Running: N reqs, Waiting: N reqs` (V1) / `, Swapped: …, Pending: …` (V0).
CONTINUATION = ("reqs, Waiting:", "reqs, Swapped:", "reqs, Pending:")

NON_DEFAULT = lazy(r"'(\w+)': ('(?:[^'\\]|\\.)*'|-?\d+(?:\.\d+)?(?:[eE]-?\d+)?|True|False|None)")
CONFIG_PAIR = lazy(r"\b([a-z_][a-z0-9_]*)=('(?:[^'\\]|\\.)*'|[^,()\[\]{}\s]+)")
ENGINE_CONFIG = lazy(r"Initializing an? (?:V[01] )?LLM engine \((?P<version>[^)]*)\) with config: ")
KV_TOKENS = lazy(r"GPU KV cache size: ([\d,]+) tokens")
CONCURRENCY = lazy(r"Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x")
GPU_BLOCKS = lazy(r"# GPU blocks: (\d+)")
V0_PREEMPT = lazy(r"is preempted by PreemptionMode\.(\w+) mode because there is not enough KV cache space"
                        r"(?:.*?total_num_cumulative_preemption=(\d+))?")
COMMAND = lazy(r"(?<![\w-])(--[a-z][a-z0-9_-]+)(?:=|\s+)(?!--)([^\s\\'\"]+|'[^']*'|\"[^\"]*\")")

ANCHORS = (STATS_ANCHOR, *CONTINUATION, "non-default args:", "LLM engine (", "GPU KV cache size:", "Maximum concurrency for",
           "# GPU blocks:", "is preempted by PreemptionMode", "vllm serve ", "vllm.entrypoints.openai.api_server")

BLOCK_SIZE = 16  # vLLM's default KV block size (V0 `# GPU blocks` counts blocks of it)


def parse_stats(msg: str) -> dict[str, Any] | None:
    at = msg.find(STATS_ANCHOR)
    if at < 0:
        if not any(c in msg for c in CONTINUATION):
            return None
        at = max(msg.find("Running: "), 0)  # the tail of a wrapped row
    values = {k: float(v) for k, v, _ in PAIR.findall(msg, at)}
    if "Running" not in values:
        return None
    fields: dict[str, Any] = {"phase": "vllm", "engine": "vllm", "keep": True,
                              "#running-req": values["Running"],
                              "#queue-req": values.get("Waiting", values.get("Pending", 0.0)) + values.get("Swapped", 0.0)}
    usage = values.get("GPU KV cache usage", values.get("KV cache usage"))
    if usage is not None:
        fields["usage"] = usage / 100
    if "Avg generation throughput" in values:
        fields["gen throughput (token/s)"] = values["Avg generation throughput"]
    if "Avg prompt throughput" in values:
        fields["prompt throughput (token/s)"] = values["Avg prompt throughput"]
    if "Swapped" in values:
        fields["swapped"] = values["Swapped"]
    if "Preemptions" in values:
        fields["preempted"] = int(values["Preemptions"])
    m = ENGINE_INDEX.search(msg, 0, at + 1)
    if m:
        fields["engine_index"] = m.group(1)
    return fields


def _whole(text: str) -> int:
    return int(text.replace(",", ""))


def parse(line: Line) -> Event | None:
    msg = line.msg
    if STATS_ANCHOR in msg or any(c in msg for c in CONTINUATION):
        stats = parse_stats(msg)
        return Event("stats", line, stats) if stats else None
    if "is preempted by PreemptionMode" in msg:
        m = V0_PREEMPT.search(msg)
        if m:
            fields: dict[str, Any] = {"engine": "vllm", "count": 1, "mode": m.group(1)}
            if m.group(2):
                fields["cumulative"] = int(m.group(2))
            return Event("retraction", line, fields)
        return None
    if "non-default args:" in msg:
        body = msg[msg.index("non-default args:"):]
        fields = {k: literal(v) for k, v in NON_DEFAULT.findall(body)}
        return Event("settings", line, fields | {"_source": "vllm args", "_engine": "vllm"}) if fields else None
    if "LLM engine (" in msg:
        m = ENGINE_CONFIG.search(msg)
        if m:
            fields = {k: literal(v) for k, v in CONFIG_PAIR.findall(msg, m.end())}
            fields = {ENGINE_FIELDS[k]: v for k, v in fields.items() if k in ENGINE_FIELDS}
            return Event("capacity", line, fields | {"_engine": "vllm", "vllm_version": m.group("version")})
        return None
    if "GPU KV cache size:" in msg:
        m = KV_TOKENS.search(msg)
        return Event("capacity", line, {"max_total_num_tokens": _whole(m.group(1)), "_engine": "vllm"}) if m else None
    if "Maximum concurrency for" in msg:
        m = CONCURRENCY.search(msg)
        if m:
            context, times = _whole(m.group(1)), float(m.group(2))
            return Event("capacity", line, {"max_model_len": context, "max_concurrency": times, "_engine": "vllm"})
        return None
    if "# GPU blocks:" in msg:
        m = GPU_BLOCKS.search(msg)
        if m:
            blocks = int(m.group(1))
            return Event("capacity", line, {"num_gpu_blocks": blocks, "max_total_num_tokens": blocks * BLOCK_SIZE,
                                            "_engine": "vllm"})
        return None
    if "vllm serve " in msg or "vllm.entrypoints.openai.api_server" in msg:
        # vLLM takes `--max_model_len` as well as `--max-model-len`
        fields = {k.replace("_", "-"): literal(v) for k, v in COMMAND.findall(msg)}
        return Event("settings", line, fields | {"_source": "command line", "_engine": "vllm"}) if fields else None
    return None


# Fields of the engine-config line that are the engine's own resolved values (the rest is model identity), by the
# name knobs.yaml knows them under: its `max_seq_len` is the resolved max_model_len.
ENGINE_FIELDS = {"max_seq_len": "max_model_len", "tensor_parallel_size": "tensor_parallel_size",
                 "pipeline_parallel_size": "pipeline_parallel_size", "enable_prefix_caching": "enable_prefix_caching",
                 "chunked_prefill_enabled": "enable_chunked_prefill", "kv_cache_dtype": "kv_cache_dtype",
                 "enforce_eager": "enforce_eager", "load_format": "load_format"}
