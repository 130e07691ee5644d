"""Engine startup phases as one signal: `Event("startup", line, {phase, seconds?, what, engine, ...})`.

Every engine and launcher prints its startup in its own words; this parser turns them into one vocabulary of
phases, each with its duration when the line gives one:

- `weight_load`   SGLang `Load weight end. elapsed=X s` (2026-01-26 ->; earlier ones carry no time) and
                  `Load weight begin`; vLLM `Loading weights took X seconds` (V0/V1 loader, `default_loader.py`),
                  `Model loading took X GiB [memory ]and Y seconds` (V1 `gpu_model_runner.py`).
- `download`      vLLM `Time spent downloading weights for MODEL: X seconds` (`weight_utils.py`, printed when the
                  Hub download took over 0.5 s; 0.6 -> 2026, V0 and V1): the download of a first start on an empty
                  cache. `Model loading took` (and V0's model runner total) includes it; `Loading weights took`
                  does not (real-extra 1760: 125.7 s of a 132.6 s load; 1821: 844.4 s of 854.1 s).
- `compile`       vLLM `torch.compile takes|took X s in total` (`monitor.py`), `Compiling a graph for ... takes X s`,
                  `Dynamo bytecode transform time: X s` (parts of the total), `Directly load the compiled graph ...
                  from the cache` (a cache hit); PyTorch inductor `SingleProcess AUTOTUNE [benchmarking ]takes X
                  seconds[ and Y seconds precompiling]` (one line per GEMM shape under max-autotune); SGLang
                  `Entering DeepGEMM JIT Pre-Compile session` (a begin: no time).
- `graph_capture` SGLang `Capture [draft |piecewise |target decode ]cuda|CUDA graph end. Time elapsed: X s` /
                  `... end. elapsed=X s` (2024-12 -> now; log-formats.md A.c) and their `begin` lines; vLLM
                  `Graph capturing finished in X secs[, took Y GiB]` (V0 `model_runner.py`, V1 `gpu_model_runner.py`).
- `engine_init`   vLLM `init engine (profile, create kv cache, warmup model) took X seconds` (V0 `llm_engine.py`,
                  V1 `core.py`): the whole engine init after the weights. Other engines' own total, `init done in
                  X s` / `initialization finished in X s` / `startup completed in X s` (colibri's Kimi K3 engine,
                  `[K3] init done in 2540.5s | 93 layers | ...`, JustVugg/colibri#853): the whole start, load included.
- `profile`       vLLM `Memory profiling takes X seconds` (V0 `worker.py`, V1 `gpu_worker.py`), `Initial
                  profiling/warmup run took X s` (V1 `monitor.py`, 2026).
- `ready`         SGLang `The server is fired up and ready to roll!`; vLLM `Starting vLLM API server` (V1 to
                  2026) and `Starting vLLM server on http://...` (`entrypoints/serve/entry.py`, 0.3x); uvicorn's
                  `Application startup complete.`, which both engines' HTTP servers print once they serve; vLLM's
                  offline `LLM.generate` progress bar `Processed prompts: ` (the engine is built and generating);
                  Ray Serve's `Application 'default' is ready at http://127.0.0.1:8000/.` (serve run / serve.run,
                  2.x) and `Deployed app 'default' successfully.` / `Deployed Serve app successfully.` (older
                  `scripts.py`), which end the replica-initialization waits below.
- `wait`          a launcher polling an engine that is not up yet: sgl-router `Worker ... health check is pending`,
                  olmOCR `Please wait for sglang server to become ready`, TRL `Server is not up yet. Retrying`,
                  TRL async GRPO `Still waiting for vLLM server`, kubelet `Readiness probe failed: ...`, Ray Serve
                  `Deployment 'X' ... has N replicas that have taken more than 30s to initialize|be scheduled`;
                  the engines' own front ends waiting for their workers, every 10 s: vLLM V1's API server `Waiting
                  for 1 local, 0 remote core engine proc(s) to start.` (`v1/engine/utils.py`, DEBUG, 0.8 -> 0.25;
                  0.8.x's `core_client.py` words it `Waiting for 1 core engine proc(s) to start: {0}`, vllm#18260),
                  TGI's launcher `Waiting for shard 0 to be ready...` (0.x) / `Waiting for shard to be ready...
                  rank=N` (1.x-3.x, also as the `message` of its JSON output); tt-inference-server's prompt
                  client `Service not ready after 1181.1s, waiting 10.0s before polling (timeout: 1200.0s)`;
                  prime-rl's orchestrator polling its inference pool, every 10 s: `Inference server was not reached
                  after 10 seconds (Error: All connection attempts failed) on http://localhost:8000` (prime-rl#1630).
- `shard`         TGI's launcher `Shard ready in 189.037403751s rank=0`: one shard's whole start (load and warm-up),
                  a timed `engine_init` phase of that shard; not the server's readiness (other shards may still wait).
- `timeout`       the launcher gave up: `server not ready within N seconds` (Modal examples), `did not become
                  ready` (olmOCR), `Timed out [after Ns ]waiting for [the ]server|vLLM server` (TRL, generic),
                  `Timeout waiting for vLLM server healthy` (slime/vime vLLM backend), `can't be reached at ... after
                  N seconds` (TRL/verifiers client), `failed to start within N`, SkyRL's `Server at HOST:PORT did
                  not come online within N seconds`, `health check failed after Ns`
                  (llama-swap), text-generation-webui `Server health check timed out after N seconds`, the
                  tt-inference-server eval harness `Service did not become healthy within 1200.0s`, vLLM-Omni
                  `Timed out waiting for READY from StageEngineCoreProc after 300s`, AReaL `Waiting generation
                  servers timeout`, kubelet
                  `failed startup probe`, launcher scripts `vLLM not ready after 30 minutes`
                  (vllm-dgx-spark; minutes and hours are converted), ollama `timed out waiting for llama runner`.
- `graph_capture` sizes: SGLang `Capture cuda graph bs [1, 2, 4, ...]` (mark `sizes`, how many batch sizes).
- `stall`         vLLM's message queue to its workers found no free block for a minute: `No available shared memory
                  broadcast block found in 60 second(s)` (`distributed/device_communicators/shm_broadcast.py`, DEBUG in
                  0.6-0.8, INFO in V1 0.9-2026, every 60 s while it lasts). Before the engine is ready it is warm-up
                  (compile, profiling) or a start that hangs; after it, workers that stopped taking work.

`ts` is the line's wall-clock time in seconds when its prefix has one (SGLang `[YYYY-MM-DD HH:MM:SS`, vLLM
`LEVEL MM-DD HH:MM:SS`, Python logging `YYYY-MM-DD HH:MM:SS,mmm`); the year is ignored (a startup does not span
a year). Sources and real lines: fixtures/lines/startup-*.log and fixtures/lines/SOURCES.md.
"""

from __future__ import annotations

from triage.lazyre import lazy
from triage.model import Event, Line

# SGLang model_runner: "Load weight end. [elapsed=X s, ]type=..., avail mem=X GB[, mem usage=X GB]."
LOAD_END = lazy(r"Load weight end\.(?: elapsed=(?P<elapsed>[\d.]+) s,)?.*?avail mem=(?P<avail>[\d.]+) GB"
                      r"(?:, mem usage=(?P<usage>[\d.]+) GB)?")
# SGLang cuda_graph_runner / cuda_graph_setup: end and begin of a capture, every variant of log-formats.md A.c.
CAPTURE_END = lazy(r"Capture (?P<what>[\w ]*?)(?:cuda|CUDA|cpu|npu) graph end\. "
                         r"(?:Time elapsed: |elapsed=)(?P<seconds>[\d.]+) s")
CAPTURE_BEGIN = lazy(r"Capture (?P<what>[\w ]*?)(?:cuda|CUDA|cpu|npu) graph begin\b")
# SGLang cuda_graph_runner: the batch sizes it is about to capture, `Capture cuda graph bs [1, 2, 4, ...]` (also
# `Capture draft cuda graph bs`): capture time grows with their number, so the slow-capture check allows for it.
CAPTURE_BS = lazy(r"Capture (?P<what>[\w ]*?)(?:cuda|CUDA|cpu|npu) graph bs \[(?P<sizes>[\d, ]*)\]")
VLLM = (
    ("weight_load", "weights", lazy(r"Loading weights took (?P<seconds>[\d.]+) ?s")),
    ("weight_load", "model", lazy(r"Model loading took [\d.]+ ?[GM]i?B(?: memory)? and (?P<seconds>[\d.]+) ?s")),
    ("compile", "torch.compile", lazy(r"torch\.compile t(?:akes|ook) (?P<seconds>[\d.]+) s in total")),
    ("compile", "graph compile", lazy(r"Compiling a graph for .{0,80}? takes (?P<seconds>[\d.]+) s")),
    ("compile", "dynamo", lazy(r"Dynamo bytecode transform time: (?P<seconds>[\d.]+) s")),
    ("graph_capture", "", lazy(r"Graph capturing finished in (?P<seconds>[\d.]+) secs?")),
    ("engine_init", "", lazy(r"init engine \(profile, create kv cache, warmup model\) took (?P<seconds>[\d.]+) s")),
    ("profile", "memory profiling", lazy(r"Memory profiling takes (?P<seconds>[\d.]+) s")),
    ("profile", "profiling/warmup", lazy(r"Initial profiling/warmup run took (?P<seconds>[\d.]+) s")),
)
# vLLM weight_utils: `Time spent downloading weights for Qwen/Qwen2.5-7B-Instruct: 125.718781 seconds`
DOWNLOAD = lazy(r"Time spent downloading weights for .{0,300}?: (?P<seconds>[\d.]+) seconds")
CACHE_HIT = lazy(r"Directly load the compiled graph")
AUTOTUNE = lazy(r"\bAUTOTUNE (?:benchmarking )?takes (?P<a>[\d.]+) seconds(?: and (?P<b>[\d.]+) seconds precompiling)?")
DEEPGEMM = lazy(r"Entering DeepGEMM JIT Pre-Compile session")
READY = lazy(r"fired up and ready to roll|Starting vLLM (?:API )?server|Application startup complete"
                   r"|^Processed prompts: "
                   r"|Application '[^']{1,200}' is ready at https?://|Deployed (?:Serve app|app '[^']{1,200}') "
                   r"successfully")
# vLLM's shm message queue blocked for a minute (shm_broadcast.py, 0.6 -> 2026; "second." in 0.6-0.8).
STALL = lazy(r"No available shared memory broadcast block found in (?P<seconds>\d+) seconds?\b")
WAIT = lazy(r"health check is pending|Please wait for \w+ server to become ready|Server is not up yet\. Retrying"
                  r"|Still waiting for (?:the )?\w+ server|Readiness probe failed|Startup probe failed"
                  r"|replicas? that (?:have|has) taken more than \d+ ?s to (?:initialize|be scheduled)"
                  r"|[Ww]aiting for (?:the )?(?:\w+ )?server to (?:be ready|start|become ready|come up|be available)"
                  r"|Waiting for \d+ local, \d+ remote core engine proc\(s\) to start"
                  r"|Waiting for \d+ core engine proc\(s\) to start"
                  r"|Waiting for shard(?: \d+)? to be ready"
                  r"|(?:[Ss]ervice|[Ss]erver) not ready after [\d.]+ ?s, waiting"
                  r"|[Ii]nference server was not reached after [\d.]+ ?s(?:econds)?\b")
# TGI launcher: one shard up, with its start time (`Shard ready in 189.037403751s rank=0`, 1.x-3.x).
SHARD_READY = lazy(r"Shard ready in (?P<seconds>[\d.]+) ?s")
# An engine's own total start time in plain words (colibri `[K3] init done in 2540.5s | ...`).
INIT_DONE = lazy(r"(?<![\w.])(?:[Ii]nit(?:iali[sz]ation)?|[Ss]tart-?up) (?:is )?(?:done|finished|complete[d]?) in "
                       r"(?P<seconds>\d+(?:\.\d+)?) ?(?:s\b|secs?\b|seconds?\b)")
TIMEOUT = lazy(
    r"(?i)(?:server|engine|worker)s? (?:is )?not (?:ready|healthy) (?:with)?in (?P<deadline>[\d.]+) ?s"
    r"|(?:server|engine|worker|vLLM|SGLang|model)s? (?:is |was )?(?:still )?not (?:ready|healthy|up) after "
    r"(?P<after_n>[\d.]+) ?(?P<after_unit>s\b|sec|seconds?|min|minutes?|h\b|hours?)"
    r"|(?:server|engine|worker|service|process|runner|handler)s?(?: (?:for|of) '[^']{1,200}')? (?:did not|didn't"
    r"|failed to|never) (?:become|became) (?:ready|healthy)"
    r"(?: within (?P<became>[\d.]+) ?s)?"
    r"|timed? ?out (?:after (?P<after>[\d.]+) ?s )?waiting for (?:the )?(?:\w+ )?(?:server|engine|runner)"
    r"|(?:server|engine) (?:failed to start|did not start) within (?:(?P<within>[\d.]+)|(?:the )?timeout)"
    r"|(?:server|engine|worker)s?(?: at \S+)? (?:did not|didn't|failed to) come (?:online|up) within "
    r"(?P<online>[\d.]+) ?(?:s\b|sec|seconds?)"
    r"|server can't be reached at \S+ after (?P<reach>[\d.]+) seconds"
    r"|(?:serve|server|engine|worker|service|model|backend)s?(?: at \S+)? (?:did not|didn't|never) "
    r"(?:answer(?:ed)?|respond(?:ed)?(?: to)?) (?:on |at )?(?:\S*/health\S*|\S*/ready\S*|(?:the |its )?health ?checks?"
    r"|(?:the |its )?readiness (?:probes?|checks?)) within (?P<answer>[\d.]+) ?(?:s\b|sec|seconds?)"
    r"|health check failed after (?P<hc>[\d.]+) ?s"
    r"|\bcheck timed out after (?P<hct>[\d.]+) ?(?:s\b|sec|seconds?)"
    r"|timed? ?out waiting for READY from \w+ after (?P<ready>[\d.]+) ?s"
    r"|[Ww]aiting (?:for )?(?:the )?(?:generation|inference|rollout|model) servers? timeout"
    r"|failed startup probe")
UNIT_SECONDS = {"s": 1.0, "sec": 1.0, "second": 1.0, "seconds": 1.0, "min": 60.0, "minute": 60.0, "minutes": 60.0,
                "h": 3600.0, "hour": 3600.0, "hours": 3600.0}

ANCHORS = ("Load weight end", "Load weight begin", "graph end", "graph begin", "fired up and ready",
           "Starting vLLM API server", "Starting vLLM server", "Application startup complete",
           "Loading weights took", "Model loading took", "Time spent downloading weights", "torch.compile takes",
           "torch.compile took", "Compiling a graph for", "Dynamo bytecode transform", "Directly load the compiled",
           "Graph capturing finished", "init engine (profile", "Memory profiling takes", "profiling/warmup run took",
           "AUTOTUNE benchmarking takes", "AUTOTUNE takes", "DeepGEMM JIT Pre-Compile",
           "health check is pending", "to become ready", "Server is not up yet", "Still waiting for",
           "Readiness probe failed", "Startup probe failed", "failed startup probe", "aiting for the server",
           "aiting for server", "not ready within", "not ready in", "did not become ready", "didn't become ready",
           "never became ready", "failed to become ready", "imed out waiting for", "imeout waiting for",
           "aiting for vLLM server", "failed to start within", "did not start within", "can't be reached at",
           "come online within", "come up within", "did not answer", "did not respond", "didn't answer",
           "didn't respond", "never answered", "never responded",
           "health check failed after", "check timed out after", "did not become healthy", "waiting for READY from",
           "servers timeout", "server timeout", "graph bs [",
           "not ready after", "not healthy after", "not up after", "was not reached after",
           "taken more than", "core engine proc", "Waiting for shard", "Shard ready in",
           "Processed prompts: ", "shared memory broadcast block", "' is ready at http", "Deployed Serve app",
           "Deployed app '",
           "nit done in", "nit finished in", "nit completed in", "nitialization done in", "nitialization finished in",
           "nitialization complete in", "nitialization completed in", "nitialisation done in",
           "nitialisation finished in", "nitialisation completed in", "tartup done in", "tartup finished in",
           "tartup completed in", "tartup complete in", "tart-up done in", "tart-up finished in",
           "tart-up completed in", "checkpoint shards: ", "loading shards: ")

# A checkpoint loading bar, one record per shard (vLLM `Loading safetensors checkpoint shards:  61% Completed | 59/96
# [04:27<02:55,  4.76s/it]`, 0.4 -> 2026; SGLang `Multi-thread loading shards:  96% Completed | 47/49 [09:32<00:14, ...`,
# 0.5): the weight load in progress and how long it has run, for a log that stops before the load's end line.
SHARDS = lazy(r"(?:Loading \w+ checkpoint shards|Multi-thread loading shards):\s+\d+% Completed \| (?P<done>\d+)/"
              r"(?P<total>\d+) \[(?:(?P<h>\d+):)?(?P<m>\d+):(?P<s>\d\d)<")

# Wall-clock prefixes: SGLang `[2025-09-05 20:48:29`, Python logging `2025-03-18 10:24:40,134`, vLLM `INFO 06-02 11:03:11`.
TS = lazy(r"(?:\d{4}-)?(?P<mo>\d\d)-(?P<d>\d\d)[ T](?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)")


def timestamp(text: str) -> float | None:
    """Seconds since the start of the year (31-day months: only differences within a startup matter)."""
    m = TS.search(text, 0, 80)
    if not m:
        return None
    return ((((int(m["mo"]) * 31 + int(m["d"])) * 24 + int(m["h"])) * 60 + int(m["mi"])) * 60) + int(m["s"])


def _event(line: Line, phase: str, engine: str, what: str = "", seconds: float | None = None,
           **extra: object) -> Event:
    fields: dict[str, object] = {"phase": phase, "engine": engine, "what": what}
    if seconds is not None:
        fields["seconds"] = seconds
    ts = timestamp(line.text)
    if ts is not None:
        fields["ts"] = ts
    fields.update(extra)
    return Event("startup", line, fields)


def _parse(line: Line, msg: str) -> Event | None:
    if "Load weight " in msg:
        m = LOAD_END.search(msg)
        if m:
            extra: dict[str, object] = {k: float(v) for k, v in (("avail", m["avail"]), ("usage", m["usage"])) if v}
            if not m["elapsed"]:  # before 2026-01-26 the end line carries no time: an end mark
                extra["mark"] = "end"
            return _event(line, "weight_load", "sglang", "", float(m["elapsed"]) if m["elapsed"] else None,
                          **extra)
        if "Load weight begin" in msg:
            return _event(line, "weight_load", "sglang", "", None, mark="begin")
    if "graph end" in msg:
        m = CAPTURE_END.search(msg)
        if m:
            return _event(line, "graph_capture", "sglang", m["what"].strip(), float(m["seconds"]))
    if "graph bs [" in msg:
        m = CAPTURE_BS.search(msg)
        if m:
            sizes = [x for x in m["sizes"].split(",") if x.strip()]
            return _event(line, "graph_capture", "sglang", m["what"].strip(), None, mark="sizes", sizes=len(sizes))
    if "graph begin" in msg:
        m = CAPTURE_BEGIN.search(msg)
        if m:
            return _event(line, "graph_capture", "sglang", m["what"].strip(), None, mark="begin")
    if "Time spent downloading weights" in msg:
        m = DOWNLOAD.search(msg)
        if m:
            return _event(line, "download", "vllm", "", float(m["seconds"]))
    if "took" in msg or "take" in msg or "transform time" in msg or "finished in" in msg:
        for phase, what, rx in VLLM:
            m = rx.search(msg)
            if m:
                return _event(line, phase, "vllm", what, float(m["seconds"]))
    if "Directly load the compiled" in msg and CACHE_HIT.search(msg):
        return _event(line, "compile", "vllm", "cache hit", None, cached=True)
    if "AUTOTUNE" in msg:
        m = AUTOTUNE.search(msg)
        if m:
            return _event(line, "compile", "inductor", "autotune", float(m["a"]) + float(m["b"] or 0.0))
    if "shards: " in msg:
        m = SHARDS.search(msg)
        if m:
            elapsed = int(m["h"] or 0) * 3600 + int(m["m"]) * 60 + int(m["s"])
            return _event(line, "weight_load", "engine", "", None, mark="progress", elapsed=float(elapsed),
                          done=int(m["done"]), total=int(m["total"]))
    if "Shard ready in" in msg:
        m = SHARD_READY.search(msg)
        if m:
            return _event(line, "engine_init", "tgi", "shard", float(m["seconds"]))
    if " in " in msg and ("nit" in msg or "tart" in msg):
        m = INIT_DONE.search(msg)
        if m:
            return _event(line, "engine_init", "engine", "init", float(m["seconds"]))
    if "DeepGEMM JIT Pre-Compile" in msg and DEEPGEMM.search(msg):
        return _event(line, "compile", "sglang", "deepgemm", None, mark="begin")
    m = TIMEOUT.search(msg)
    if m:
        deadline = next((float(v) for v in (m["deadline"], m["after"], m["within"], m["reach"], m["hc"], m["hct"],
                                                 m["became"], m["ready"], m["online"], m["answer"]) if v), None)
        if deadline is None and m["after_n"]:
            deadline = float(m["after_n"]) * UNIT_SECONDS.get(m["after_unit"].lower(), 1.0)
        return _event(line, "timeout", "launcher", "", None, **({"deadline": deadline} if deadline else {}))
    if WAIT.search(msg):
        return _event(line, "wait", "launcher")
    if "shared memory broadcast block" in msg:
        m = STALL.search(msg)
        if m:
            return _event(line, "stall", "vllm", "shm_broadcast", None, waited=float(m["seconds"]))
    if READY.search(msg):
        engine = "vllm" if "vLLM" in msg or "Processed" in msg else "uvicorn" if "Application" in msg else "sglang"
        return _event(line, "ready", engine)
    return None


def parse(line: Line) -> Event | None:
    try:
        return _parse(line, line.msg)
    except (ValueError, OverflowError):  # a number the regex took that float() refuses: no event, no traceback
        return None
