"""Cold-start checks over the StartupPhase signal (parsers/startup.py) and the first step against warm steps.

- `startup_phase_slow`: one phase (weight load, compile, graph capture, engine init) over an absolute threshold.
- `startup_not_ready`: a launcher's readiness deadline fired; names the phase the engine was in or spent longest on.
- `startup_abandoned`: no deadline line, but the run never got past a slow startup: the engine's log stops inside it.
- `startup_wait_unanswered`: a launcher (or an engine's front end) kept waiting for the engine and nothing answered.
- `engine_stall_after_ready`: after the engine was ready, its workers stopped taking work and nothing followed.
- `startup_summary`: the startup durations per phase, as information (healthy runs included).
- `first_step_slow`: the first step several times the warm median, with the timed startup phases set apart; not
  when the warm steps are fast because the responses collapsed (that is a run-health finding, not a cold start).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import median
from typing import Any

from triage.checks.base import CheckResult, Run
from triage.model import Event, Line

LABELS = {"weight_load": "weight load", "compile": "compile/JIT", "graph_capture": "CUDA-graph capture",
          "engine_init": "engine init", "profile": "memory profiling/warmup", "download": "weight download"}
SUMMED = {"autotune"}  # one line per GEMM shape, run one after the other: their times add up


@dataclass
class Span:
    """One phase of one engine: its longest (or, for per-shape autotune lines, summed) time and the line."""

    phase: str
    what: str
    seconds: float
    line: Line
    lines: int = 1
    cached: bool = False
    line_ts: float | None = None  # wall-clock time of the line (parsers/startup.timestamp)
    download: float | None = None  # a weight load's seconds of Hub download, taken out of it (_split_download)

    @property
    def key(self) -> str:
        """The name in `startup_phases`: weight_load, graph_capture, graph_capture_draft, compile_autotune..."""
        if self.phase == "graph_capture" and self.what:
            return "graph_capture_" + self.what.replace(" ", "_")
        if self.phase == "compile" and self.what in SUMMED:
            return "compile_" + self.what
        return self.phase

    @property
    def label(self) -> str:
        what = f" ({self.what})" if self.what and self.what not in ("weights", "model") else ""
        return LABELS.get(self.phase, self.phase) + what


@dataclass
class Engine:
    """The startup of the engines writing one file (TP ranks and workers of one engine run their phases at once)."""

    file: str
    spans: dict[str, Span] = field(default_factory=dict)
    begun: list[Event] = field(default_factory=list)  # begin lines, in order
    ended: set[str] = field(default_factory=set)  # phases with an end line
    waits: list[Event] = field(default_factory=list)
    timeouts: list[Event] = field(default_factory=list)
    ready: list[Event] = field(default_factory=list)
    stalls: list[Event] = field(default_factory=list)  # vLLM's shm queue blocked a minute (parsers/startup.py)
    cache_hit: Line | None = None
    capture_sizes: dict[str, int] = field(default_factory=dict)  # what ('' or 'draft') -> batch sizes captured
    last_end: Event | None = None  # the last line that finished a phase (or said ready)
    progress: dict[str, Event] = field(default_factory=dict)  # phase -> its loading bar's longest-running record

    def phases(self) -> dict[str, float]:
        return {k: s.seconds for k, s in self.spans.items()}

    def span_ts(self, events: list[Event]) -> float | None:
        """Wall-clock seconds from the first to the last of `events` that carry a time (None: fewer than two)."""
        ts = [ev.fields["ts"] for ev in events if "ts" in ev.fields]
        return round(ts[-1] - ts[0], 3) if len(ts) >= 2 and ts[-1] > ts[0] else None

    def to_ready(self) -> float | None:
        """Seconds from this file's first startup line to its first ready line (SGLang prints no total)."""
        if not self.ready or "ts" not in self.ready[0].fields:
            return None
        firsts = [ev.fields["ts"] for ev in self.begun if "ts" in ev.fields]
        firsts += [s.line_ts for s in self.spans.values() if s.line_ts is not None]
        if not firsts:
            return None
        d = self.ready[0].fields["ts"] - min(firsts)
        return round(d, 3) if d > 0 else None

    def stalls_before_ready(self) -> list[Event]:
        """The message-queue stalls before this file's first ready line (all of them when it has none) in a file that
        shows the engine starting (a phase begun or timed): warm-up. Stalls alone say nothing of when they came."""
        if not (self.spans or self.begun):
            return []
        if not self.ready:
            return list(self.stalls)
        at = self.ready[0].line.lineno
        return [ev for ev in self.stalls if ev.line.lineno < at]

    def stalls_after_ready(self) -> list[Event]:
        """The message-queue stalls after this file's first ready line: the engine had been serving."""
        if not self.ready:
            return []
        at = self.ready[0].line.lineno
        return [ev for ev in self.stalls if ev.line.lineno > at]

    def unfinished(self) -> Event | None:
        """The last phase begun and never ended, when nothing finished after it (the engine was in it when the log
        stops). Lines of one file are in log order, so a later end or ready line means the engine moved on."""
        after = (self.last_end.line.lineno, self.last_end.line.file) if self.last_end is not None else None
        for ev in reversed(self.begun):
            if after is not None and ev.line.file == after[1] and ev.line.lineno < after[0]:
                return None
            if ev.fields["phase"] not in self.ended:
                return ev
        return None


def _add(eng: Engine, ev: Event) -> None:
    f = ev.fields
    phase, seconds = f["phase"], f.get("seconds")
    if phase == "timeout":
        eng.timeouts.append(ev)
    elif phase == "stall":
        eng.stalls.append(ev)
    elif phase == "wait":
        eng.waits.append(ev)
    elif phase == "ready":
        eng.ready.append(ev)
        eng.last_end = ev
    elif f.get("mark") == "sizes":
        what = f.get("what") or ""
        eng.capture_sizes[what] = max(eng.capture_sizes.get(what, 0), int(f.get("sizes") or 0))
    elif f.get("cached"):
        eng.cache_hit = eng.cache_hit or ev.line
    elif f.get("mark") == "progress":
        old_ev = eng.progress.get(phase)
        if old_ev is None or f["elapsed"] >= old_ev.fields["elapsed"]:
            eng.progress[phase] = ev
    elif f.get("mark") == "end":
        eng.ended.add(phase)
        eng.last_end = ev
    elif f.get("mark") == "begin" or seconds is None:
        eng.begun.append(ev)
    else:
        eng.last_end = ev
        eng.ended.add(phase)
        span = Span(phase, f.get("what") or "", round(float(seconds), 2), ev.line, line_ts=f.get("ts"))
        old = eng.spans.get(span.key)
        if old is None:
            eng.spans[span.key] = span
        elif span.what in SUMMED:
            old.seconds = round(old.seconds + span.seconds, 2)
            old.lines += 1
        elif span.seconds > old.seconds:
            span.lines = old.lines + 1
            eng.spans[span.key] = span
        else:
            old.lines += 1


def engines(run: Run) -> list[Engine]:
    """The StartupPhase signal: one Engine per file that printed startup lines, in the order first seen."""
    def build(r: Run) -> list[Engine]:
        out: dict[str, Engine] = {}
        for ev in r.events:
            if ev.kind == "startup":
                eng = out.get(ev.line.file)
                if eng is None:
                    eng = out[ev.line.file] = Engine(ev.line.file)
                _add(eng, ev)
        for eng in out.values():
            if eng.cache_hit is not None and "compile" in eng.spans:
                eng.spans["compile"].cached = True
            _split_download(eng)
        return list(out.values())
    return run.once("startup_engines", build)


def _split_download(eng: Engine) -> None:
    """vLLM times the whole model load (`Model loading took X GiB and Y seconds`, V0's model runner total) with the
    Hub download of a first start inside it, and prints the download on its own line before (`Time spent downloading
    weights for M: S seconds`). A weight-load span that follows the download and holds it is the load less the
    download: reading 9 GiB in 9.7 s after an 844 s download is a fast load on an empty cache (real-extra 1821), not
    slow storage. `Loading weights took` (the loader's own loop) is already without it (shorter than the download,
    left as it is). The download stays a phase of its own in the summary."""
    down, load = eng.spans.get("download"), eng.spans.get("weight_load")
    if down is None or load is None or load.line.lineno < down.line.lineno or load.seconds < down.seconds:
        return
    load.seconds = round(load.seconds - down.seconds, 2)
    load.download = down.seconds


def total_seconds(phases: dict[str, float]) -> float:
    """Startup seconds without double counting: vLLM's engine init already holds its compile, capture and profiling;
    a weight download comes before the load, outside engine init."""
    load = phases.get("weight_load", 0.0) + phases.get("download", 0.0)
    rest = sum(v for k, v in phases.items() if k not in ("weight_load", "engine_init", "download"))
    return round(load + max(phases.get("engine_init", 0.0), rest), 3)


def _describe(phases: dict[str, Span]) -> str:
    return ", ".join(f"{s.label} {s.seconds:g} s" + (" (compile cache hit)" if s.cached else "")
                     for s in sorted(phases.values(), key=lambda s: -s.seconds))


def _threshold(params: dict[str, Any], eng: Engine, span: Span) -> tuple[float, int]:
    """The span's threshold: `min_seconds`, or for a capture whose batch sizes were listed, `per_size_seconds` per
    size when that is larger (capturing 52 sizes in 38 s is SGLang's normal pace, not a slow capture)."""
    low = float(params.get("min_seconds", 30))
    per = params.get("per_size_seconds")
    sizes = eng.capture_sizes.get(span.what, 0) if span.phase == "graph_capture" else 0
    if per and sizes:
        return max(low, float(per) * sizes), sizes
    return low, 0


def startup_phase_slow(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """The slowest span of one of `phases` at or over its threshold (`min_seconds`; for a CUDA-graph capture with a
    known number of batch sizes, `per_size_seconds` each when larger), across engines (one finding)."""
    wanted = set(params.get("phases") or [])
    hits = [(eng, s) for eng in engines(run) for s in eng.spans.values()
            if s.phase in wanted and s.seconds >= _threshold(params, eng, s)[0]]
    if not hits:
        return []
    eng, worst = max(hits, key=lambda es: es[1].seconds)
    low, sizes = _threshold(params, eng, worst)
    served = _served_after_ready(run, eng)
    evidence = [worst.line] + [s.line for e, s in hits if s is not worst and e is eng][:2]
    arithmetic = f"{worst.label} {worst.seconds:g} s ≥ {low:g} s" + (f" ({sizes} batch sizes)" if sizes else "")
    if worst.lines > 1 and worst.what in SUMMED:
        arithmetic = f"{worst.label} {worst.seconds:g} s over {worst.lines} lines ≥ {low:g} s"
    return [CheckResult(evidence=evidence, count=len(hits),
                        numbers={"phase": worst.key, "seconds": worst.seconds, "threshold": low,
                                 **({"capture_sizes": sizes} if sizes else {}),
                                 "engines_over": len({id(e) for e, _ in hits}), "startup_phases": eng.phases(),
                                 "served_after_ready": served, "arithmetic": arithmetic},
                        severity="info" if served else "")]


def _served_after_ready(run: Run, eng: Engine) -> bool:
    """The engine said it was ready, no readiness deadline fired anywhere, and the same file then logged engine stats
    rows (it served): the slow phase was paid once and the run went on, the cost of a cold start rather than a
    failure, so it is information (the startup summary), not a warning."""
    if not eng.ready or any(e.timeouts for e in engines(run)):
        return False
    ready_at = eng.ready[0].line.lineno
    if any(es.origin.startswith(eng.file) and es.last_lineno() > ready_at for es in run.engines.values()):
        return True
    return _generated_offline(run, eng.file, ready_at)


def _generated_offline(run: Run, file: str, after: int) -> bool:
    """An offline engine (vLLM `LLM.generate`) logs no stats rows: its `Processed prompts` bar counting finished
    prompts after the ready line, in the same file, is the served work (vLLM 0.6.6 offline, real-extra 915)."""
    for ev, _, _ in run.canon("step_time"):
        f = ev.fields
        if (ev.line.file == file and ev.line.lineno > after and f.get("framework") == "tqdm"
                and str(f.get("tag", "")).startswith("Processed prompts") and f["values"].get("n", 0) > 0):
            return True
    return False


def served_files(run: Run) -> set[str]:
    """The files of the engines that said they were ready and then served (`_served_after_ready`)."""
    return {eng.file for eng in engines(run) if _served_after_ready(run, eng)}


def _phase_taken(engs: list[Engine]) -> tuple[str, str, Line | None]:
    """The phase the engines were in (begun, never ended) or spent longest on: (phase, its description, its line);
    ("unknown", ..., None) when the logs time no phase. Profiling counts as engine init."""
    stuck = [ev for e in engs if (ev := e.unfinished()) is not None]
    spans = [s for e in engs for s in e.spans.values()]
    if stuck:
        ev = stuck[-1]
        phase, what = ev.fields["phase"], ev.fields.get("what") or ""
        part = f"engine still in {LABELS.get(phase, phase)}{' (' + what + ')' if what else ''} (begun and never ended)"
        line: Line | None = ev.line
    elif spans:
        worst = max(spans, key=lambda s: s.seconds)
        phase, part, line = worst.phase, f"longest startup phase: {worst.label} {worst.seconds:g} s", worst.line
    else:
        phase, part, line = "unknown", "no engine startup phase in these logs", None
    return ("engine_init" if phase == "profile" else phase), part, line


# TRL's vLLM client (trl/extras/vllm_client.py, 0.16 -> 2026) polling a `trl vllm-serve` server it reaches over HTTP:
# `Server is not up yet. Retrying in 2.0 seconds...` and, at its deadline, `The vLLM server can't be reached at
# HOST:PORT after N seconds. Make sure the server is running by running `trl vllm-serve`.`
def _trl_client(ev: Event) -> bool:
    return "server can't be reached at" in ev.line.text or "Server is not up yet" in ev.line.text


def _client_waits_only(run: Run) -> list[Event]:
    """The TRL client's waits and deadline when they are all the startup the run shows: no engine line (a phase,
    a loading bar, a ready line, a stalled queue) in any file and no engine stats. The server the client polls was
    then never launched in this run, or the client points elsewhere (open-r1 issues 543/568, Unsloth 2173,
    mini-R1 notebook: TRL 0.16 moved `use_vllm` to server mode and nobody started `trl vllm-serve`); a server that
    is slowly starting writes its own log, and with that log in the run the wait stays a cold start."""
    engs = engines(run)
    evs = [ev for e in engs for ev in e.waits + e.timeouts]
    if not evs or not all(_trl_client(ev) for ev in evs) or run.engines:
        return []
    if any(e.spans or e.begun or e.ready or e.progress or e.stalls or e.cache_hit for e in engs):
        return []
    return sorted(evs, key=lambda ev: (ev.line.file, ev.line.lineno))


def _timeouts(run: Run) -> list[Event]:
    return [ev for e in engines(run) for ev in e.timeouts]


def trl_server_absent(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """TRL's vLLM client polled for (or gave up on) a generation server that no log in the run shows starting."""
    evs = _client_waits_only(run)
    if not evs:
        return []
    gave_up = [ev for ev in evs if ev.kind == "startup" and ev in _timeouts(run)]
    polls = sum(ev.line.repeat for ev in evs if ev not in gave_up)
    reach = next((ev.fields.get("deadline") for ev in gave_up), None)
    parts = [f"{polls} poll(s) of the server" if polls else "no poll line"]
    numbers: dict[str, Any] = {"polls": polls}
    if reach is not None:
        numbers["gave_up_seconds"] = reach
        parts.append(f"client gave up after {reach:g} s")
    parts.append("no server startup line in the run")
    numbers["arithmetic"] = "; ".join(parts)
    evidence = [gave_up[-1].line] if gave_up else [evs[0].line]
    if evs[0].line is not evidence[0]:
        evidence.append(evs[0].line)
    return [CheckResult(evidence=evidence, count=max(polls, 1), numbers=numbers)]


def startup_not_ready(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """A readiness deadline fired. The phase that took the time: the one begun and never ended (the engine was in
    it), else the longest timed phase; each named as a 0/1 number (`phase_compile`...) the rule's knobs_when reads.
    TRL's client giving up on a server that nothing in the run shows starting is `trl_server_absent`'s."""
    engs = engines(run)
    timeouts = [ev for e in engs for ev in e.timeouts]
    if not timeouts or _client_waits_only(run):
        return []
    numbers: dict[str, Any] = {"timeouts": len(timeouts)}
    deadline = next((ev.fields["deadline"] for ev in timeouts if "deadline" in ev.fields), None)
    parts = [f"deadline {deadline:g} s" if deadline else "readiness deadline fired"]
    evidence = [timeouts[0].line]
    phase, part, line = _phase_taken(engs)
    parts.append(part)
    evidence += [line] if line is not None else []
    numbers["phase"] = phase
    numbers[f"phase_{phase}"] = 1
    if deadline:
        numbers["deadline"] = deadline
    waits = [ev for e in engs for ev in e.waits]
    if waits:
        numbers["waits"] = len(waits)
    numbers["arithmetic"] = "; ".join(parts)
    if timeouts[-1] is not timeouts[0]:
        evidence.append(timeouts[-1].line)
    return [CheckResult(evidence=evidence, count=len(timeouts), numbers=numbers)]


def startup_wait_unanswered(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """A launcher, or an engine's own front end, kept waiting for the engine to start and nothing answered: the wait
    lines of one file (vLLM V1's `Waiting for 1 local, 0 remote core engine proc(s) to start.`, TGI's `Waiting for
    shard to be ready...`, a router's pending health checks) span at least `min_seconds` of wall clock, counted from
    the earliest start the file shows (a wait or begin line, or the start of a timed phase: its end time minus its
    duration), and no ready line follows the last wait, in that file or any other. A readiness deadline
    (`startup_not_ready`), a crash or shutdown (they explain the wait) or a served request (engine stats) makes it
    someone else's finding. Names the phase the engine was in, as `startup_not_ready` does."""
    engs = engines(run)
    if any(e.timeouts for e in engs) or run.engines or _client_waits_only(run):
        return []
    if any(ev.kind in ("fatal", "shutdown") for ev in run.events):
        return []
    low = float(params.get("min_seconds", 60))
    best: tuple[float, Engine, list[Event]] | None = None
    for eng in engs:
        waits = sorted((ev for ev in eng.waits + eng.stalls_before_ready() if "ts" in ev.fields),
                       key=lambda ev: ev.line.lineno)
        if not waits:
            continue
        last = waits[-1]
        answered = any(e.ready for e in engs if e is not eng) or any(
            ev.line.lineno > last.line.lineno for ev in eng.ready)
        # a stalled message queue is answered by the engine's own next step (warm-up finished, a phase ended)
        moved_on = eng.last_end is not None and eng.last_end.line.lineno > last.line.lineno
        if answered or (last.fields["phase"] == "stall" and moved_on):
            continue
        starts = [ev.fields["ts"] for ev in waits + eng.begun if "ts" in ev.fields]
        starts += [sp.line_ts - sp.seconds for sp in eng.spans.values() if sp.line_ts is not None]
        waited = round(last.fields["ts"] - min(starts), 3)
        if waited >= low and (best is None or waited > best[0]):
            best = (waited, eng, waits)
    if best is None:
        return []
    waited, eng, waits = best
    count = sum(ev.line.repeat for ev in waits)
    parts = [f"waited {waited:g} s ≥ {low:g} s ({count} wait lines), no ready line after the last"]
    numbers: dict[str, Any] = {"waited_seconds": waited, "threshold": low, "waits": count,
                               "startup_phases": eng.phases()}
    evidence = [waits[0].line, waits[-1].line]
    phase, part, line = _phase_taken([eng])
    if line is not None:
        parts.append(part)
        evidence.append(line)
    numbers[f"phase_{phase}"] = 1
    numbers["arithmetic"] = "; ".join(parts)
    return [CheckResult(evidence=evidence, count=count, numbers=numbers)]


# Facts an engine logs while it starts (server arguments, the KV pools it allocates): not a sign it got further.
STARTUP_FACTS = {"startup", "settings", "config", "capacity", "kv_pool", "mamba_pool", "swa_pool", "input_limit"}


def startup_abandoned(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """An engine whose file stops inside its startup after a phase of at least `min_seconds`, in a run that never
    got past startup: no engine said it was ready, no readiness deadline fired (`startup_not_ready`), no engine
    stats row, trainer record, crash or shutdown anywhere, and nothing after the engine's last startup line in its
    file, which holds the engine's launch arguments too (the whole log from the launch, not a pasted excerpt).
    The start was abandoned or killed while slow (an operator giving up on a long capture, the kernel's OOM killer
    taking a JIT compiler: no line says so), so the run did not start: error. A log that merely stops early, with
    no slow phase, says nothing (an operator's session ending); a start that went on (a ready line, stats rows) is
    not this."""
    engs = engines(run)
    if not engs or run.engines or any(e.ready or e.timeouts for e in engs):
        return []
    if any(ev.kind in ("fatal", "shutdown") for ev in run.events) or run.metrics():
        return []
    low = float(params.get("min_seconds", 120))
    later: dict[str, int] = {}  # file -> the last line of an event that is not a startup fact
    launched: set[str] = set()  # files holding the engine's launch arguments (server_args, vLLM args/config)
    for ev in run.events:
        if ev.kind not in STARTUP_FACTS:
            later[ev.line.file] = max(later.get(ev.line.file, 0), ev.line.lineno)
        elif ev.kind in ("settings", "config"):
            launched.add(ev.line.file)
    hits = []
    for eng in engs:
        spans = list(eng.spans.values()) + _in_progress(eng)
        if not spans or eng.file not in launched:  # an excerpt of a startup says nothing of how the file ends
            continue
        worst = max(spans, key=lambda s: s.seconds)
        lines = [s.line for s in spans] + [ev.line for ev in eng.begun]
        last = max(lines, key=lambda ln: ln.lineno)
        if worst.seconds >= low and later.get(eng.file, 0) <= last.lineno:
            hits.append((eng, worst, last))
    if not hits:
        return []
    eng, worst, last = max(hits, key=lambda h: h[1].seconds)
    stuck = eng.unfinished()
    numbers: dict[str, Any] = {"seconds": worst.seconds, "threshold": low, "startup_phases": eng.phases(),
                               f"phase_{worst.phase}": 1}
    parts = [f"{worst.label} {worst.seconds:g} s ≥ {low:g} s"]
    if stuck is not None:
        phase, what = stuck.fields["phase"], stuck.fields.get("what") or ""
        numbers[f"phase_{phase}"] = 1
        parts.append(f"the log stops in {LABELS.get(phase, phase)}{' (' + what + ')' if what else ''} "
                     "(begun, never ended)")
    else:
        after = next((s for s in list(eng.spans.values()) + _in_progress(eng) if s.line is last), None)
        parts.append(f"the log stops after {after.label if after else 'a startup line'}")
    numbers["arithmetic"] = "; ".join(parts)
    evidence = [worst.line] if last is worst.line else [worst.line, last]
    return [CheckResult(evidence=evidence, count=len(hits), numbers=numbers)]


def _in_progress(eng: Engine) -> list[Span]:
    """A phase whose loading bar shows how long it had run when the log stopped and which never ended (no end line
    for it, no timed span): SGLang's `Load weight begin` then `Multi-thread loading shards: 96% Completed | 47/49
    [09:32<...` as the last line (real-extra 1890, an NVFP4 start stopped in its ten-minute weight load)."""
    out = []
    for phase, ev in eng.progress.items():
        if phase in eng.ended or any(s.phase == phase for s in eng.spans.values()):
            continue
        out.append(Span(phase, "", ev.fields["elapsed"], ev.line, line_ts=ev.fields.get("ts")))
    return out


def startup_summary(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """Startup durations per phase (info), for the engine whose startup took longest; `min_seconds` of startup or a
    launcher waiting on health checks makes it worth a line. `dominant_<phase>` (0/1) names the largest part."""
    low = float(params.get("min_seconds", 10))
    best: tuple[float, Engine] | None = None
    waits = [ev for e in engines(run) for ev in e.waits]
    for eng in engines(run):
        total = max(total_seconds(eng.phases()), eng.to_ready() or 0.0)
        if (eng.spans or eng.ready) and total > 0 and (best is None or total > best[0]):
            best = (total, eng)
    if not waits and (best is None or best[0] < low):
        return []
    numbers: dict[str, Any] = {}
    evidence: list[Line] = []
    parts = []
    if best is not None:
        _, eng = best
        numbers["startup_phases"] = eng.phases()
        if eng.spans:
            total = total_seconds(eng.phases())
            parts.append(f"{total:g} s of timed startup: {_describe(eng.spans)}")
            parts_only = {k: s for k, s in eng.spans.items() if k != "engine_init"} or eng.spans
            top = max(parts_only.values(), key=lambda s: s.seconds)
            numbers.update({"startup_seconds": total, f"dominant_{top.phase}": 1})
            evidence += [top.line] + [s.line for s in eng.spans.values() if s is not top][:2]
        ready = eng.to_ready()
        if ready is not None:
            evidence.append(eng.ready[0].line)
        if ready is not None:
            numbers["to_ready_seconds"] = ready
            parts.append(f"{ready:g} s from the first startup line to ready")
    if waits:
        numbers["waits"] = sum(ev.line.repeat for ev in waits)
        waited = max((w for e in engines(run) if (w := e.span_ts(e.waits)) is not None), default=None)
        if waited is not None:
            numbers["waited_seconds"] = waited
        parts.append(f"launcher polled the engine's health {numbers['waits']}×"
                     + (f" over {waited:g} s" if waited is not None else ""))
        evidence.append(waits[0].line)
    numbers["arithmetic"] = "; ".join(parts)
    return [CheckResult(evidence=evidence, count=1, numbers=numbers)]


# -- first step against warm steps ------------------------------------------------------------------------------

def _line(ev: Event, key: str) -> Line:
    lines: dict[str, Line] = ev.fields.get("lines") or {}
    return lines.get(key, ev.line)


def startup_phases(run: Run) -> dict[str, float]:
    """Seconds of each startup phase the logs time (the longest engine's of each), and the trainer's compile/JIT
    timers: weight_load, graph_capture[_draft...], compile, engine_init, ..."""
    phases: dict[str, float] = {}
    for eng in engines(run):
        for k, v in eng.phases().items():
            phases[k] = max(phases.get(k, 0.0), v)
    for ev, _ in run.timers():
        name = ev.fields.get("name", "")
        if "seconds" in ev.fields and any(w in name for w in ("compile", "jit", "warmup", "capture")):
            phases[name] = max(phases.get(name, 0.0), ev.fields["seconds"])
    return phases


LENGTH_KEYS = ("response_length/mean", "rollout/response_length/mean", "rollout/response_len/mean",
               "response_len/mean", "completions/mean_length", "completion_length", "perf/response_length",
               "rollout/response_length", "response_length")


def _collapsed(params: dict[str, Any], run: Run) -> tuple[str, float, float] | None:
    """(key, first, warm median) when the response length of the warm steps fell to a fraction of the first's:
    those steps are fast because the policy stopped generating, not because the first one was cold."""
    ratio = float(params.get("collapse_length_ratio", 2.0))
    for key in params.get("length_keys") or LENGTH_KEYS:
        series = [v for _, v in run.series(key) if math.isfinite(v)]
        if len(series) < 3:
            continue
        first, warm = series[0], median(series[1:])
        if first > 0 and (warm <= 0 or first / warm >= ratio):
            return key, first, warm
        return None
    return None


def first_step_slow(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """The first step's time is `min_ratio` x the warm median (and at least `min_seconds`), with the startup
    phases the logs time (weight load, graph capture, compile/JIT) set apart from it."""
    min_ratio = float(params.get("min_ratio", 3.0))
    min_seconds = float(params.get("min_seconds", 120))
    min_steps = int(params.get("min_steps", 3))
    for key in params.get("keys") or []:
        series = [(ev, v) for ev, v in run.series(key) if math.isfinite(v)]
        if len(series) < min_steps:
            continue
        first_ev, first = series[0]
        warm = median(v for _, v in series[1:])
        if first >= min_seconds and warm > 0 and first >= min_ratio * warm:
            if _collapsed(params, run) is not None:
                return []  # fast warm steps of a collapsed policy: not a cold start
            phases = startup_phases(run)
            startup = total_seconds(phases)
            excess = first - warm
            numbers = {"metric": key, "first": first, "warm_median": warm, "ratio": round(first / warm, 2),
                       "startup_seconds": startup, "startup_phases": phases,
                       "arithmetic": f"first {first:g} s = {first / warm:.1f} × warm median {warm:g} s"}
            title = ""
            run_share = excess / sum(v for _, v in series)
            numbers["excess_share_of_run"] = round(run_share, 3)
            if run_share < float(params.get("minor_share", 0.0)):
                # a cold first step of a run that then stepped on for far longer: a caveat for throughput figures
                # (keep it apart from warm steps), not a cost worth a warning
                numbers["arithmetic"] += f"; {run_share:.1%} of the run's {len(series)} steps' time"
                return [CheckResult(evidence=[_line(first_ev, key)], count=1, numbers=numbers, severity="info",
                                    title=f"First step slower than the warm steps, a small share of the run "
                                          f"({numbers['arithmetic']})")]
            if phases:
                share = min(startup / excess, 1.0) if excess > 0 else 0.0
                numbers["startup_share_of_excess"] = round(share, 2)
                numbers["arithmetic"] += f"; startup phases {startup:g} s of the {excess:g} s excess"
                if share >= float(params.get("dominated_share", 0.5)):
                    title = f"First step dominated by startup phases ({numbers['arithmetic']})"
            return [CheckResult(evidence=[_line(first_ev, key)], count=1, numbers=numbers, title=title)]
    return []


def engine_stall_after_ready(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """An engine that had said it was ready (an API server up, an offline `Processed prompts` bar) and whose message
    queue to its workers then stayed blocked: at least `min_waits` of vLLM's minute-long `No available shared memory
    broadcast block` lines after the ready line, and nothing of the engine's after the last of them in that file (no
    phase line, no engine stats row): its workers stopped taking work (a hang in a kernel or collective, a dead
    peer) and the file ends inside it. Before the ready line the same lines are warm-up, the startup checks' matter;
    followed by progress, they were one long step."""
    low = int(params.get("min_waits", 2))
    if any(ev.kind in ("fatal", "shutdown") for ev in run.events):  # a crash or a stop explains the wait
        return []
    out = []
    for eng in engines(run):
        stalls = eng.stalls_after_ready()
        if len(stalls) < low:
            continue
        last = stalls[-1].line.lineno
        if eng.last_end is not None and eng.last_end.line.lineno > last:
            continue
        if any(es.origin.startswith(eng.file) and es.last_lineno() > last for es in run.engines.values()):
            continue
        count = sum(ev.line.repeat for ev in stalls)
        waited = sum(float(ev.fields.get("waited") or 60.0) * ev.line.repeat for ev in stalls)
        numbers: dict[str, Any] = {"waits": count, "blocked_seconds": waited,
                                   "arithmetic": f"{count} one-minute stalls after the ready line, nothing after"}
        out.append(CheckResult(evidence=[stalls[0].line, stalls[-1].line, eng.ready[0].line], count=count,
                               numbers=numbers))
    return out
