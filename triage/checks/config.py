"""Cross-checks of the effective configuration: the domain document's budget arithmetic.

Each check reads knob values with their provenance from `run.config` and writes its arithmetic out in
`numbers["arithmetic"]` (rule titles show it through `{arithmetic}`). Values SGLang resolved by itself
(the capacity line's `max_running_requests=4096`, an auto-sized CUDA-graph batch) are never judged as if
someone had chosen them: checks about a person's choice read `requested` values only.
"""

from __future__ import annotations

from typing import Any

from triage.checks.base import CheckResult, Run
from triage.checks.serving import pressure_brief, pressure_seen
from triage.checks.startup import engines, served_files
from triage.effective_config import RESOLVED, Config, Setting
from triage.model import Line

CONTEXT = "inference.max_context_length"
RESPONSE = "inference.max_response_length"
PROMPT = "miles.rollout_max_prompt_len"
PACK = "trainer.packing_max_tokens"
MICRO = "trainer.micro_batch_size"
CHUNK = "miles.log_probs_chunk_size"
CONCURRENCY = "inference.sglang_server_concurrency"
RUNNING = "inference.sglang_max_running_requests"
POOL = "inference.sglang_max_total_tokens"
MAMBA = "inference.sglang_max_mamba_cache_size"
GRAPH = "inference.sglang_cuda_graph_max_bs_decode"
FRACTION = "inference.sglang_mem_fraction_static"
RADIX_OFF = "inference.sglang_disable_radix_cache"


def _lines(*settings: Setting | None) -> list[Line]:
    out: list[Line] = []
    for s in settings:
        if s is None:
            continue
        ln = s.line or Line("<config>", 0, f"{s.source}", f"{s.source}")
        if all((o.file, o.lineno, o.text) != (ln.file, ln.lineno, ln.text) for o in out):
            out.append(ln)
    return out


def _result(arithmetic: str, numbers: dict[str, Any], *settings: Setting | None, severity: str = "",
            title: str = "") -> list[CheckResult]:
    return [CheckResult(evidence=_lines(*settings), numbers=numbers | {"arithmetic": arithmetic},
                        severity=severity, title=title)]


def sequence_budget(cfg: Config) -> tuple[int, list[Setting]] | None:
    """The longest sequence the run is configured for: the requested context, else prompt + response limits.

    The engine's own context (the model's advertised maximum) is not used: it is an architecture limit, not
    a length anyone configured, and would make every short-sequence run look like a long-context one.
    """
    ctx = cfg.requested(CONTEXT)
    if ctx is not None:
        return ctx.value, [ctx]
    prompt, response = cfg.setting(PROMPT), cfg.setting(RESPONSE)
    if prompt is not None and response is not None:
        return prompt.value + response.value, [prompt, response]
    return None


def context_limit(cfg: Config) -> Setting | None:
    """The context a request must fit: the smaller of the framework's (requested) and the engine's limit."""
    found = [s for s in (cfg.requested(CONTEXT), cfg.resolved(CONTEXT)) if s is not None]
    return min(found, key=lambda s: s.value) if found else None


def admission(cfg: Config) -> list[tuple[str, Setting]]:
    """Requested admission controls: the engine ceiling and the client concurrency (never SGLang's auto value when
    nothing was requested). A requested ceiling the engine lowered is the engine's: with DP attention SGLang's
    TP worker divides --max-running-requests by dp_size, and its startup line prints each DP rank's share (real-extra
    1584: 832 requested, 26 a rank, the graph size 26)."""
    out = []
    for k in (RUNNING, CONCURRENCY):
        s = cfg.requested(k)
        if s is None:
            continue
        r = cfg.resolved(k)
        out.append((k, r if r is not None and r.value < s.value else s))
    return out


def training(run: Run) -> bool:
    cfg = run.config
    if cfg is not None and cfg.fact("training"):
        return True
    knobs = any(k.startswith("trainer.") or k == CHUNK for k in cfg.values) if cfg else False
    return knobs or any(e.fields.get("tag") in ("step", "continued", "log") for e in run.metrics())


def prompt_response_over_context(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """Check 1: the prompt limit plus the response limit must fit the context."""
    cfg = run.config
    if cfg is None:
        return []
    ctx, prompt, response = context_limit(cfg), cfg.setting(PROMPT), cfg.setting(RESPONSE)
    if ctx is None or prompt is None or response is None:
        return []
    total = prompt.value + response.value
    if total <= ctx.value:
        return []
    return _result(f"{prompt.value} + {response.value} = {total} > {ctx.value}",
                   {"prompt_limit": prompt.value, "response_limit": response.value, "context_length": ctx.value,
                    "over_by": total - ctx.value}, prompt, response, ctx)


def prompt_limit_derived(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """Check 2: no prompt limit set, so it is context − response; an error when nothing is left."""
    cfg = run.config
    if cfg is None or cfg.setting(PROMPT) is not None:
        return []
    ctx, response = context_limit(cfg), cfg.setting(RESPONSE)
    if ctx is None or response is None:
        return []
    derived = ctx.value - response.value
    numbers = {"context_length": ctx.value, "response_limit": response.value, "derived_prompt_limit": derived}
    arithmetic = f"{ctx.value} − {response.value} = {derived}"
    if derived <= 0:
        return _result(arithmetic, numbers, ctx, response, severity="error",
                       title=f"The response limit leaves no room for a prompt in the context ({arithmetic})")
    return _result(arithmetic, numbers, ctx, response)


def pack_budget_below_context(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """Check 3: the pack budget (per GPU, times context-parallel ranks) must cover the longest sequence."""
    cfg = run.config
    pack = cfg.setting(PACK) if cfg else None
    budget = sequence_budget(cfg) if cfg else None
    if pack is None or budget is None:
        return []
    cp = cfg.fact("context_parallel_size") or 1  # type: ignore[union-attr]
    covered = pack.value * cp
    longest, sources = budget
    if covered >= longest:
        return []
    lhs = f"{pack.value}" if cp == 1 else f"{pack.value} × {cp} = {covered}"
    return _result(f"{lhs} < {longest}", {"packing_max_tokens": pack.value, "context_parallel_size": cp,
                                         "sequence_budget": longest, "short_by": longest - covered},
                   pack, *sources)


def micro_batch_not_one(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """Check 4: the supported path trains with a micro-batch of one."""
    cfg = run.config
    mbs = cfg.setting(MICRO) if cfg else None
    if mbs is None or mbs.value == 1:
        return []
    arithmetic = f"micro_batch_size = {mbs.value} ≠ 1"
    if cfg.fact("use_dynamic_batch_size"):  # type: ignore[union-attr]
        return _result(arithmetic, {"micro_batch_size": mbs.value, "dynamic_batching": True}, mbs, severity="info",
                       title=f"Micro-batch size is not one, but dynamic batching ignores it ({arithmetic})")
    return _result(arithmetic, {"micro_batch_size": mbs.value}, mbs)


def pool_full_sequences(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """Check 5: how many full sequences the KV pool holds, against the admission a person requested."""
    cfg = run.config
    if cfg is None:
        return []
    long_context = int(params.get("long_context", 16384))
    budget = sequence_budget(cfg)
    pool = cfg.resolved(POOL) or cfg.requested(POOL)  # the allocated pool when the engine logged it
    admitted = admission(cfg)
    if budget is None or pool is None or not admitted or budget[0] < long_context:
        return []
    longest, sources = budget
    capacity = pool.value // longest
    knob, adm = max(admitted, key=lambda ks: ks[1].value)
    if adm.value <= capacity:
        return []
    arithmetic = f"{pool.value} ÷ {longest} = {capacity} full sequences < {adm.value} admitted"
    numbers = {"pool_tokens": pool.value, "sequence_budget": longest, "full_sequences": capacity,
               "admitted": adm.value, "admission_knob": knob, "pool_source": pool.origin}
    if capacity == 0:
        return _calm(_result(arithmetic, numbers, pool, adm, *sources, severity="error",
                             title=f"The KV pool cannot hold one full sequence ({arithmetic})"), params, run, pool)
    return _calm(_result(arithmetic, numbers, pool, adm, *sources), params, run, pool)


def pool_below_requested(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """Check 6: the pool SGLang allocated is smaller than the one requested."""
    cfg = run.config
    if cfg is None:
        return []
    tolerance = float(params.get("tolerance", 0.0))
    req, alloc = cfg.requested(POOL), cfg.resolved(POOL)
    if req is None or alloc is None or alloc.value >= req.value * (1 - tolerance):
        return []
    share = round(100 * alloc.value / req.value, 1) if req.value else 0.0
    return _calm(_result(f"allocated {alloc.value} < requested {req.value} ({share}%)",
                         {"requested_tokens": req.value, "allocated_tokens": alloc.value, "allocated_share": share,
                          "shortfall": req.value - alloc.value}, alloc, req), params, run, alloc)


def mamba_slots_vs_running(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """Check 7: recurrent-state slots must cover running requests (substantially more with radix caching)."""
    cfg = run.config
    if cfg is None:
        return []
    ratio = int(params.get("radix_ratio", 3))
    slots, running, radix = cfg.setting(MAMBA), cfg.requested(RUNNING), cfg.setting(RADIX_OFF)
    if slots is None or running is None:
        return []
    numbers = {"mamba_slots": slots.value, "running_requests": running.value}
    if radix is not None and radix.value:
        if slots.value >= running.value:
            return []
        return _result(f"{slots.value} slots < {running.value} running requests (radix cache off)",
                       numbers | {"radix_cache": False}, slots, running, radix)
    needed = ratio * running.value
    if slots.value >= needed:
        return []
    return _result(f"{slots.value} slots < {ratio} × {running.value} = {needed} (radix cache on)",
                   numbers | {"radix_cache": True, "wanted_slots": needed}, slots, running, radix, severity="warning")


def cuda_graph_vs_admission(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """Check 8: the largest captured decode batch against the admission (`direction: above|below`)."""
    cfg = run.config
    if cfg is None:
        return []
    graph = cfg.setting(GRAPH)
    admitted = admission(cfg)
    if graph is None or not admitted:
        return []
    knob, adm = min(admitted, key=lambda ks: ks[1].value)  # the tighter control bounds the decode batch
    numbers = {"cuda_graph_max_bs": graph.value, "admitted": adm.value, "admission_knob": knob,
               "graph_source": graph.origin}
    if params.get("direction") == "below":
        if graph.value >= adm.value:
            return []
        return _result(f"{graph.value} < {adm.value}", numbers, graph, adm)
    if graph.value <= adm.value:
        return []
    auto = graph.origin == RESOLVED  # SGLang sized the capture itself: worth knowing, not a misconfiguration
    return _result(f"{graph.value} > {adm.value}", numbers, graph, adm, severity="info" if auto else "")


def mem_fraction_colocated(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """Check 9: 0.6 suits disaggregated engines; on a colocated setup it is not a recommendation."""
    cfg = run.config
    if cfg is None or not cfg.fact("colocate"):
        return []
    value = float(params.get("value", 0.6))
    frac = cfg.requested(FRACTION)
    if frac is None or abs(frac.value - value) > 1e-9:
        return []
    return _result(f"mem_fraction_static = {frac.value} with colocate on", {"mem_fraction_static": frac.value,
                   "colocate": True}, frac, cfg.facts.get("colocate"))


def long_context_training(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """Check 10: 64K backward passes and high-concurrency long-context training are not established."""
    cfg = run.config
    budget = sequence_budget(cfg) if cfg else None
    if budget is None or not training(run):
        return []
    threshold = int(params.get("min_context", 65536))
    longest, sources = budget
    if longest < threshold:
        return []
    return _result(f"{longest} ≥ {threshold}", {"sequence_budget": longest, "threshold": threshold}, *sources)


def log_probs_chunk_unset(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """Check 11: long responses with unchunked log-probs (the fp32 copy of all response logits at once)."""
    cfg = run.config
    if cfg is None or not training(run):
        return []
    min_response = int(params.get("min_response", 8192))
    response, chunk = cfg.setting(RESPONSE), cfg.setting(CHUNK)
    if response is None or response.value < min_response or (chunk is not None and chunk.value > 0):
        return []
    state = "unset" if chunk is None else f"{chunk.value} (no chunking)"
    return _result(f"response cap {response.value} ≥ {min_response}, log_probs_chunk_size {state}",
                   {"response_limit": response.value, "log_probs_chunk_size": chunk.value if chunk else None},
                   response, chunk)


QUIET_PEAK = 0.9  # a pool never at the pressure threshold (usage >= 0.9), with no retraction, never limited the run


def _quiet(params: dict[str, Any], run: Run, *settings: Setting | None) -> str:
    """Why a static pool risk did not materialise in this run ('' when it may have): the engines' own stats show
    the pool never fuller than `quiet_peak` and no request retracted or preempted."""
    files = {s.line.file for s in settings if s is not None and s.line is not None}
    file = next(iter(files)) if len(files) == 1 else None
    peak, rows, retracted = pressure_seen(run, file)
    if peak < 0 and len(files) == 1:  # the setting's file has no stats rows: the run's engines as a whole
        file = None
        peak, rows, retracted = pressure_seen(run)
    limit = float(params.get("quiet_peak", QUIET_PEAK))
    if 0 <= peak < limit and not rows and not retracted:
        return f"the engine's stats peak at {peak:.2f} usage with no retraction"
    if rows and not retracted and pressure_brief(run, file):
        return (f"the pool was full with requests waiting in only {rows} stats row{'s' if rows > 1 else ''} "
                f"(peak usage {peak:.2f}), briefly, with no retraction")
    if peak < 0 and not retracted and _stopped_starting(run, files):
        return "the engine's log stops inside its startup, before it was ready, so no request reached the pool"
    if peak < 0 and not rows and not retracted and _ready_unused(run, files):
        return ("the engine was ready, logged no stats row and no generation, and was stopped: no request was seen "
                "in the pool")
    return ""


def _ready_unused(run: Run, files: set[str]) -> bool:
    """Every engine that allocated the pool said it was ready, none of them then logged a stats row or an offline
    generation (what `served_files` counts as serving), and its file records the stop (a signal, a scheduler's
    cancellation: an orderly-shutdown marker after the ready line): the server's whole life is in view, started and
    left idle until it was stopped (real-extra 1272: vLLM 0.12, ready, no request in eight hours, then Slurm's time
    limit). Its pool never held a request, so a static pool risk is information. A log that merely ends after the
    ready line says nothing about what came next."""
    mine = [e for e in engines(run) if not files or e.file in files]
    if not mine or not all(e.ready for e in mine):
        return False
    stops = [ev.line for ev in run.events if ev.kind == "shutdown"]
    if not all(any(ln.file == e.file and ln.lineno > e.ready[0].line.lineno for ln in stops) for e in mine):
        return False
    served = served_files(run)
    return not any(e.file in served for e in mine) and not any(
        es.origin.startswith(e.file) for es in run.engines.values() for e in mine)


def _stopped_starting(run: Run, files: set[str]) -> bool:
    """The engine that allocated the pool never became ready in its log: it printed startup lines, no ready line, and
    the log stops inside a startup phase (begun, never ended). Whatever ended that start (a crash, a deadline, an
    operator), the pool was never used; the start-up findings say what happened."""
    mine = [e for e in engines(run) if not files or e.file in files]
    return bool(mine) and all(not e.ready and e.unfinished() is not None for e in mine)


def _calm(result: list[CheckResult], params: dict[str, Any], run: Run, *settings: Setting | None) -> list[CheckResult]:
    """A static pool risk the run's own stats show never materialised is info, not a warning."""
    why = _quiet(params, run, *settings)
    if why and result:
        for r in result:
            r.severity = "info"
            r.numbers["not_materialised"] = why
            r.numbers["arithmetic"] += f"; not seen in this run: {why}"
    return result


def pool_below_context(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """Check 12: the KV pool the engine allocated is smaller than the context one request may use, so a full-length
    request cannot fit at all (SGLang caps the allowed input at the pool; vLLM refuses to start)."""
    cfg = run.config
    if cfg is None:
        return []
    pool = cfg.resolved(POOL)
    found = [s for s in (cfg.resolved(CONTEXT), cfg.requested(CONTEXT)) if s is not None]
    if pool is None or not found:
        return []
    ctx = min(found, key=lambda s: s.value)
    if pool.value >= ctx.value:
        return []
    arithmetic = f"pool {pool.value} < context {ctx.value}"
    return _calm(_result(arithmetic, {"pool_tokens": pool.value, "context_length": ctx.value,
                                      "short_by": ctx.value - pool.value, "pool_source": pool.source},
                         pool, ctx), params, run, pool)


def swa_pool_below_floor(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """Check 14: a hybrid sliding-window model's window-layer pool no larger than one KV page. SGLang admits a prefill
    only when the window pool has `sliding_window + page_size` free slots (its own start-up check, added later, says
    "SWA pool (N tokens) cannot hold even one request"); a pool at or below one page can never have them, so every
    request is re-queued forever and the engine hangs without an error (DeepSeek-V4 on SGLang 0.5.12, real-extra
    2020: swa=256 with page_size 256). The last pool line of each file is the pool that was kept."""
    cfg = run.config
    page = cfg.facts.get("page_size") if cfg is not None else None
    if cfg is None or page is None or not isinstance(page.value, int) or page.value <= 0:
        return []
    last: dict[str, Any] = {}
    for ev in run.events:
        if ev.kind in ("swa_pool", "swa_pool_sizes"):
            last[ev.line.file] = ev
    if not last:
        return []
    ran = {ev.line.file for ev in run.events if ev.kind == "stats"} | served_files(run)
    pool = cfg.resolved(POOL) or cfg.requested(POOL)
    out: list[CheckResult] = []
    for file, ev in last.items():
        swa = int(ev.fields["swa_layer_tokens"])
        if swa <= 0 or swa > page.value:  # no pool at all is serving.no-memory-for-kv-pool's refusal
            continue
        arithmetic = f"window pool {swa} tokens <= one page ({page.value}) < sliding window + page"
        severity = ""
        if file in ran:  # batches ran from this engine's pool: the window must be smaller than the floor assumes
            severity = "info"
            arithmetic += "; batches ran in this file"
        numbers = {"swa_pool_tokens": swa, "full_pool_tokens": int(ev.fields["full_layer_tokens"]),
                   "page_size": page.value, "arithmetic": arithmetic}
        out.append(CheckResult(evidence=[ev.line] + _lines(pool, page), numbers=numbers, severity=severity))
    return out


INPUT_SLACK = 64  # tokens: the engine's allowed input is the pool minus a small reserve (SGLang: one token)


def pool_is_input_limit(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """Check 13: the engine's allowed input (or truncation) length is its KV pool, not the context: prompts are
    rejected or cut because the pool is small, so the pool (memory fraction, explicit pool size) is the knob."""
    cfg = run.config
    if cfg is None:
        return []
    limits = [e for e in run.events if e.kind == "input_limit"]
    if not limits:
        return []
    pool = cfg.resolved(POOL)
    if pool is None:
        return []
    out = []
    for ev in limits:
        allowed = int(ev.fields["max_allowed"])
        if not pool.value - INPUT_SLACK <= allowed <= pool.value:
            continue
        ctx = cfg.resolved(CONTEXT) or cfg.requested(CONTEXT)
        if ctx is not None and ctx.value <= allowed + 1:
            continue  # the context is as tight as the pool: the context is the limit
        tail = f" < context {ctx.value}" if ctx is not None else ""
        numbers = {"max_allowed": allowed, "pool_tokens": pool.value, "input_tokens": ev.fields.get("input_tokens"),
                   "context_length": ctx.value if ctx is not None else None}
        out.append(CheckResult(evidence=[ev.line] + _lines(pool, ctx), count=1,
                               numbers=numbers | {"arithmetic": f"allowed input {allowed} ≈ pool {pool.value}{tail}"}))
        break
    return out
