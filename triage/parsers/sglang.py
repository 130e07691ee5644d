"""SGLang engine lines: batch stats, startup memory/pool lines, the server-args dump (startup phases: startup.py).

Formats are those of sglang/srt (managers/scheduler*.py, model_executor/model_runner.py,
mem_cache/memory_pool.py, entrypoints/engine.py) from v0.3 (2024) to the 2026 main branch; see
../shared/reference/log-formats.md §A. Every variant is parsed by key, not by position:
`Decode batch.` / `Decode batch,` / `Decode batch [12],`, with or without `cuda graph:`, a trailing
comma, `#full token`/`#swa token`, `mamba num`/`mamba usage`, PD fields.
"""

from __future__ import annotations

from typing import Any

from triage.lazyre import lazy
from triage.model import Event, Line
from triage.parsers.values import literal

# `key: value` pairs of a stats line; keys hold spaces, '#', '-', '/', '(' ')' and '.'.
# Keys are short (the longest SGLang prints is under 40 characters); the bound keeps a garbage line linear.
STAT_PAIR = lazy(r"(#?[A-Za-z][A-Za-z0-9 #\-/().]{0,60}?): (-?[\d.]+%?|True|False)(?=,|$|\s)")
STATS = lazy(r"\b(Decode|Prefill) batch(?:\(mixed #running-req: \d+\))?(?: \[\d+\])?[.,] ")

# server_args=ServerArgs(... field=value, ...): values may be quoted strings, lists, or nested reprs.
SERVER_ARG = lazy(r"\b([a-z_][a-z0-9_]*)=('(?:[^'\\]|\\.)*'|\[[^\]]*\]|[^,()\[\]]+)")
CAPACITY = lazy(r"\b(max_total_num_tokens|chunked_prefill_size|max_prefill_tokens|max_running_requests|"
                      r"context_len|available_gpu_mem|available_cpu_mem)=([-\d.]+)")
KV_ALLOC = lazy(r"KV Cache is allocated\..*?#tokens: (\d+)")
MAMBA_ALLOC = lazy(r"Mamba Cache is allocated\. max_mamba_cache_size: (\d+)")
SWA_POOL = lazy(r"[Ss]liding window memory pool.*?full_layer_tokens=(\d+), swa_layer_tokens=(\d+)")
# DeepSeek-V4's pool sizing (SGLang 0.5.12, the DSV4 hook of model_runner): printed twice, the sizes memory allows and
# then the sizes kept after an explicit --max-total-tokens; the last one is the pool the scheduler admits against.
DSV4_POOLS = lazy(r"\bpool sizes: full=(\d+), swa=(\d+)")
REDUCED = lazy(r"max_running_requests was reduced from the requested (\d+) to (\d+)")
RETRACTED = lazy(r"(?:[Dd]ecode out of memory happened[.,]|Retract requests\.) #retracted_reqs: (\d+)")
# The largest input the scheduler accepts, in its rejection (2024-10 ->) and auto-truncation (2025-08 ->) messages.
INPUT_LIMIT = lazy(r"Input length \((?P<input_tokens>\d+) tokens\) exceeds the maximum allowed length \((?P<max_allowed>\d+) tokens\)"
                         r"|max_req_input_len=(?P<truncated_at>\d+)")
# Requests waiting for KV room besides the queue: PD decode's pre-allocation queue, requests retracted there.
WAITING_TOO = ("#prealloc-req", "#retracted-req")

ANCHORS = ("Decode batch", "Prefill batch", "server_args=", "max_total_num_tokens=", "KV Cache is allocated",
           "Mamba Cache is allocated", "memory pool", "max_running_requests was reduced", "Retract requests",
           "out of memory happened", "exceeds the maximum allowed length", "max_req_input_len=", "pool sizes: full=")


def _num(v: str) -> Any:
    if v in ("True", "False"):
        return v == "True"
    if v.endswith("%"):
        return float(v[:-1]) / 100
    if "." not in v:  # STAT_PAIR values are -?[\d.]+: without a dot int() accepts exactly -?\d+
        try:
            return int(v)
        except ValueError:
            return v
    try:
        return float(v)
    except ValueError:
        return v


def parse_stats(msg: str) -> dict[str, Any] | None:
    m = STATS.search(msg)
    if not m:
        return None
    fields: dict[str, Any] = {"phase": m.group(1).lower()}
    for key, value in STAT_PAIR.findall(msg[m.end():]):
        fields[key.strip()] = _num(value)
    # one name for the pool usage whatever the pool: plain, hybrid SWA (full) or hybrid mamba (full)
    usage = fields.get("token usage", fields.get("full token usage"))
    if usage is not None:
        fields["usage"] = usage
    extra = [fields[k] for k in WAITING_TOO if isinstance(fields.get(k), (int, float))]
    if extra:
        fields["#queue-req"] = fields.get("#queue-req", 0) + sum(extra)
    return fields


def parse(line: Line) -> Event | None:
    msg = line.msg
    if "batch" in msg:
        stats = parse_stats(msg)
        if stats:
            return Event("stats", line, stats)
    if "server_args=" in msg:
        body = msg[msg.index("server_args=") :]
        return Event("settings", line, {k: literal(v) for k, v in SERVER_ARG.findall(body)} | {"_source": "server_args"})
    if "max_total_num_tokens=" in msg:
        return Event("capacity", line, {k: _num(v) for k, v in CAPACITY.findall(msg)})
    m = KV_ALLOC.search(msg) if "KV Cache is allocated" in msg else None
    if m:
        return Event("kv_pool", line, {"tokens": int(m.group(1))})
    m = MAMBA_ALLOC.search(msg) if "Mamba Cache is allocated" in msg else None
    if m:
        return Event("mamba_pool", line, {"max_mamba_cache_size": int(m.group(1))})
    m = SWA_POOL.search(msg) if "memory pool" in msg else None
    if m:
        return Event("swa_pool", line, {"full_layer_tokens": int(m.group(1)), "swa_layer_tokens": int(m.group(2))})
    m = DSV4_POOLS.search(msg) if "pool sizes: full=" in msg else None
    if m:  # not a `swa_pool` event: the first of the two lines is not the pool that was kept (effective_config)
        return Event("swa_pool_sizes", line, {"full_layer_tokens": int(m.group(1)), "swa_layer_tokens": int(m.group(2))})
    m = REDUCED.search(msg) if "max_running_requests was reduced" in msg else None
    if m:
        return Event("settings", line, {"max_running_requests": int(m.group(2)), "_source": "engine"})
    m = INPUT_LIMIT.search(msg) if "max" in msg else None
    if m:
        allowed = m.group("max_allowed") or m.group("truncated_at")
        fields = {"max_allowed": int(allowed)} | ({"input_tokens": int(m.group("input_tokens"))}
                                                  if m.group("input_tokens") else {})
        return Event("input_limit", line, fields)
    m = RETRACTED.search(msg) if "#retracted_reqs" in msg else None
    if m:
        return Event("retraction", line, {"engine": "sglang", "count": int(m.group(1))})
    return None
