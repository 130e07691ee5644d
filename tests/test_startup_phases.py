"""The StartupPhase signal (parsers/startup.py) and the cold-start checks over it (checks/startup.py), on real lines:
every wording of each phase family parses to the same phase with its duration; the absolute thresholds, the
readiness deadline with the phase that took the time, the durations as information; healthy startups stay below
warning; fast warm steps of a collapsed policy are not a cold start. Sources: fixtures/lines/startup/SOURCES.md."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FIXTURES, by_rule, knob_names, run, top, triage_dir, write_run

from triage.model import Line
from triage.parsers import startup
from triage.scan.origins import split_ray

LINES = FIXTURES / "lines" / "startup"


def _line(text: str) -> Line:
    msg, actor, pid, repeat = split_ray(text)
    return Line("<t>", 1, text, msg, actor, pid, repeat)


def _parse(text: str):
    ev = startup.parse(_line(text))
    assert ev is not None and ev.kind == "startup", text
    return ev.fields


# (line as printed, phase, what, seconds); each family in several programs' and versions' words
PHASE_LINES = [
    # SGLang weight load: 2026 with elapsed, v0.5.x without (an end mark), begin
    ("[2026-05-24 00:52:54] Load weight end. elapsed=2.62 s, type=Qwen3ForCausalLM, avail mem=260.48 GB, mem usage=15.28 GB.",
     "weight_load", "", 2.62),
    ("[2025-11-12 08:14:41 TP0] Load weight end. type=Qwen3MoeForCausalLM, dtype=torch.bfloat16, avail mem=64.87 GB, mem usage=14.52 GB.",
     "weight_load", "", None),
    ("[2025-03-08 12:29:13 TP3] Load weight begin. avail mem=21.63 GB", "weight_load", "", None),
    # vLLM weight load: V0/V1 loader, V1 model runner (GiB [memory] and seconds)
    ("(VllmWorkerProcess pid=486) INFO 04-12 08:20:41 [loader.py:458] Loading weights took 1582.06 seconds",
     "weight_load", "weights", 1582.06),
    ("(Worker_TP0 pid=34322) INFO 05-06 20:59:59 [gpu_model_runner.py:4879] Model loading took 12.66 GiB memory and 31.657031 seconds",
     "weight_load", "model", 31.657031),
    ("INFO 06-19 23:05:01 [gpu_model_runner.py:1273] Model loading took 3.4213 GiB and 0.902026 seconds",
     "weight_load", "model", 0.902026),
    # compile: vLLM takes/took, parts, cache hit; inductor autotune old and new; DeepGEMM begin
    ("INFO 02-18 04:51:47 monitor.py:31] torch.compile takes 395.96 s in total", "compile", "torch.compile", 395.96),
    ("(Worker_TP0 pid=118) INFO 05-04 01:04:19 [monitor.py:53] torch.compile took 82.29 s in total",
     "compile", "torch.compile", 82.29),
    ("(Worker_TP0 pid=118) INFO 05-04 01:03:57 [backends.py:391] Compiling a graph for compile range (1, 8192) takes 44.99 s",
     "compile", "graph compile", 44.99),
    ("[2026-03-17 07:16:51 TP0] Compiling a graph for dynamic shape takes 3.38 s", "compile", "graph compile", 3.38),
    ("(Worker_TP0 pid=118) INFO 05-04 01:03:11 [backends.py:1128] Dynamo bytecode transform time: 14.14 s",
     "compile", "dynamo", 14.14),
    ("SingleProcess AUTOTUNE takes 9.04686689376831 seconds", "compile", "autotune", 9.04686689376831),
    ("SingleProcess AUTOTUNE benchmarking takes 1.3427 seconds and 8.8429 seconds precompiling",
     "compile", "autotune", 1.3427 + 8.8429),
    ("[2025-12-26 08:51:31 DP0 TP0 EP0] Entering DeepGEMM JIT Pre-Compile session. It may take a long time (typically 10-20 mins) if you have not run `sglang.compile_deep_gemm`.",
     "compile", "deepgemm", None),
    # graph capture: SGLang 2024-12 -> 2026-06, draft, piecewise, 2026-06+ target decode; vLLM V0 and V1
    ("Capture cuda graph end. Time elapsed: 7.23 s. avail mem=0.53 GB. mem usage=0.93 GB.", "graph_capture", "", 7.23),
    ("[2026-03-17 07:16:38 TP0] Capture cuda graph end. Time elapsed: 27.41 s. mem usage=0.83 GB. avail mem=10.81 GB.",
     "graph_capture", "", 27.41),
    ("Capture target decode CUDA graph end. elapsed=16.40 s, mem usage=0.60 GB, avail mem=23.56 GB.",
     "graph_capture", "target decode", 16.40),
    ("[2025-09-05 20:50:29 TP6] Capture draft cuda graph end. Time elapsed: 62.67 s. mem usage=0.21 GB. avail mem=15.31 GB.",
     "graph_capture", "draft", 62.67),
    ("[2026-03-17 07:16:38 TP0] Capture piecewise CUDA graph begin. avail mem=10.81 GB", "graph_capture", "piecewise", None),
    ("(VllmWorkerProcess pid=533) INFO 07-23 20:50:06 model_runner.py:1535] Graph capturing finished in 31 secs, took 0.36 GiB",
     "graph_capture", "", 31.0),
    ("INFO 02-11 10:17:59 [model_runner.py:1671] Graph capturing finished in 2 secs, took 0.13 GiB", "graph_capture", "", 2.0),
    # engine init and profiling: vLLM V0 llm_engine, V1 core; V0/V1 worker profiling; V1 2026 monitor
    ("INFO 07-23 20:50:06 llm_engine.py:431] init engine (profile, create kv cache, warmup model) took 165.02 seconds",
     "engine_init", "", 165.02),
    ("INFO 06-02 11:03:55 [core.py:167] init engine (profile, create kv cache, warmup model) took 90.84 seconds",
     "engine_init", "", 90.84),
    ("│ INFO 03-21 20:15:45 [worker.py:267] Memory profiling takes 34.26 seconds     │", "profile", "memory profiling", 34.26),
    ("(Worker_TP0 pid=118) INFO 05-04 01:05:36 [monitor.py:81] Initial profiling/warmup run took 76.71 s",
     "profile", "profiling/warmup", 76.71),
    # ready
    ("[2025-03-08 12:29:33] The server is fired up and ready to roll!", "ready", "", None),
    ("INFO 05-11 17:59:14 [api_server.py:1090] Starting vLLM API server on http://0.0.0.0:8080", "ready", "", None),
    # launchers waiting on health
    ("[Router (Rust)] 2025-03-08 02:33:09 - INFO - Worker http://0.0.0.0:31000 health check is pending with error: error sending request for url (http://0.0.0.0:31000/health)",
     "wait", "", None),
    ("2025-03-18 10:24:40,134 - __main__ - WARNING - Attempt 56: Please wait for sglang server to become ready...",
     "wait", "", None),
    ("INFO - trl.extras.vllm_client - Server is not up yet. Retrying in 2.0 seconds...", "wait", "", None),
    # tt-inference-server's eval harness still polling (issue 2505): a wait, not its deadline
    ("2026-03-18 17:57:23,051 - utils.prompt_client - INFO - ⏳ Service not ready after 1181.1s, waiting 10.0s before "
     "polling (timeout: 1200.0s)", "wait", "", None),
    # launcher scripts (code index: shell and Python wrappers around `vllm serve`)
    ("Waiting for vLLM server to start...", "wait", "", None),
    ("⏳ Waiting for vLLM server to be ready...", "wait", "", None),
    ("Waiting for vLLM server to be available on port 8000...", "wait", "", None),
    ("  Warning  Unhealthy  3s (x9 over 43s)  kubelet  Readiness probe failed: Get \"http://10.244.0.45:8000/\": dial tcp 10.244.0.45:8000: connect: connection refused",
     "wait", "", None),
    # prime-rl's orchestrator polling its inference pool every 10 s (prime-rl PR 1630's log)
    ("16:41:43 WARNING Inference server was not reached after 10 seconds (Error: All connection attempts failed) on "
     "http://localhost:8000", "wait", "", None),
]


@pytest.mark.parametrize("text, phase, what, seconds", PHASE_LINES)
def test_each_wording_is_one_phase_with_its_duration(text: str, phase: str, what: str, seconds: float | None) -> None:
    f = _parse(text)
    assert (f["phase"], f["what"]) == (phase, what)
    if seconds is None:
        assert "seconds" not in f
    else:
        assert f["seconds"] == pytest.approx(seconds)


@pytest.mark.parametrize("text, deadline", [
    ("TimeoutError: SGLang server not ready within 300 seconds", 300.0),  # Modal examples wait_ready
    ("Exception: sglang server did not become ready after waiting.", None),  # olmOCR
    ("TimeoutError: Timeout waiting for vLLM server healthy", None),  # slime/vime vLLM backend
    ("TimeoutError: Timed out after 240s waiting for vLLM server at http://localhost:8000. Make sure the vLLM server is running and reachable.", 240.0),
    ("ConnectionError: The vLLM server can't be reached at 0.0.0.0:8000 after 240 seconds. Make sure the server is running by running `trl vllm-serve`.", 240.0),
    ("unable to start process: health check failed after 15s", 15.0),  # llama-swap
    ("RuntimeError: vLLM server failed to start within timeout", None),
    ("Error: Timed out waiting for vLLM server to boot (600000ms)", None),
    ("  Warning  Unhealthy  kubelet  Container vllm-openai failed startup probe, will be restarted", None),
    # tt-inference-server eval harness (issue 2505); text-generation-webui's llama.cpp loader (issue 6907), also as
    # pasted wrapped, its second half alone on a line
    ("2026-03-18 17:57:43,066 - utils.prompt_client - ERROR - ⛔ Service did not become healthy within 1200.0s", 1200.0),
    ("Error loading the model with llama.cpp: Server health check timed out after 28800 seconds", 28800.0),
    ("                       check timed out after 28800 seconds", 28800.0),
    # vLLM-Omni (issue 3981) and AReaL (issue 115, the reporter's title)
    ("(APIServer pid=70993) ERROR 05-29 08:37:38 [vllm_omni/engine/async_omni_engine.py:1148] TimeoutError: Timed out "
     "waiting for READY from StageEngineCoreProc after 300s. This typically indicates model loading or initialization "
     "is taking too long. Consider increasing `stage_init_timeout` for large models.", 300.0),
    ("TimeoutError: Waiting generation servers timeout.", None),
])
def test_readiness_deadlines(text: str, deadline: float | None) -> None:
    f = _parse(text)
    assert f["phase"] == "timeout"
    assert f.get("deadline") == deadline


def test_the_line_keeps_its_wall_clock_time() -> None:
    a = _parse("[2025-03-08 12:29:13 TP3] Load weight begin. avail mem=21.63 GB")["ts"]
    b = _parse("[2025-03-08 12:29:33] The server is fired up and ready to roll!")["ts"]
    c = _parse("INFO 03-08 12:29:43 [api_server.py:1090] Starting vLLM API server on http://0.0.0.0:8080")["ts"]
    assert (b - a, c - b) == (20, 10)


@pytest.mark.parametrize("text", [
    "Capturing batches (bs=1 avail_mem=10.83 GB): 100%|██████████| 4/4 [00:24<00:00,  6.04s/it]",
    "DeepGEMM warmup: 100%|██████████| 16384/16384 [00:01<00:00, 19014.49it/s]",
    "INFO 06-02 11:03:18 [kv_cache_utils.py:637] GPU KV cache size: 1,131,008 tokens",
    "Loading weights took forever, see below",  # no number: no event, no traceback
])
def test_other_lines_are_not_phases(text: str) -> None:
    assert startup.parse(_line(text)) is None


# -- real excerpts, end to end -------------------------------------------------------------------------------------

EXPECTED = {  # file: (top rule, severity, evidence line, numbers)
    # an 82 s first compile is start-up cost (healthy first boots print 30-113 s; the warning starts at 120 s, r20a)
    "vllm-v1-compile-took.log": ("cold.startup-phases", "info", 6, {"startup_seconds": 159.0, "dominant_compile": 1}),
    "vllm-v0-k8s-compile-profiling.log": ("cold.startup-phases", "info", 2,
                                          {"startup_seconds": 63.03, "dominant_profile": 1}),
    "vllm-v1-weights-loading.log": ("cold.startup-phases", "info", 9, {"dominant_weight_load": 1}),
    "sglang-musa-capture-piecewise.log": ("cold.startup-phases", "info", 7, {"dominant_graph_capture": 1}),
    "olmocr-wait-sglang-ready.log": ("cold.startup-phases", "info", 1, {"waits": 11, "waited_seconds": 10}),
    "slime-vllm-health-timeout.log": ("cold.startup-not-ready", "error", 1, {"phase": "unknown"}),
    "llama-swap-health-check-failed.log": ("cold.startup-not-ready", "error", 1, {"deadline": 15.0}),
}
# TRL's client polling with no server line anywhere in the run: a server never launched (tests/test_r22f_*.py)
ELSEWHERE = ("trl-vllm-server-not-up.log",)
QUIET = ("vllm-v0-healthy-startup.log", "vllm-v1-compile-cache-hit.log", "inductor-autotune-old.log")


def test_every_excerpt_has_an_expectation() -> None:
    assert sorted(p.name for p in LINES.glob("*.log")) == sorted([*EXPECTED, *QUIET, *ELSEWHERE])


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_excerpt(name: str) -> None:
    rule, severity, line, numbers = EXPECTED[name]
    f = top(triage_dir(LINES / name))
    assert (f.rule, f.category, f.severity, f.evidence[0].line) == (rule, "cold-start", severity, line)
    for key, value in numbers.items():
        assert f.numbers[key] == value


@pytest.mark.parametrize("name", QUIET)
def test_healthy_or_short_startups_raise_nothing(name: str) -> None:
    assert not [f for f in triage_dir(LINES / name).findings if f.category == "cold-start"]


def test_durations_and_cache_hit_in_the_numbers() -> None:
    f = top(triage_dir(LINES / "vllm-v1-compile-took.log"))
    assert f.numbers["startup_phases"] == {"compile": 82.29, "profile": 76.71}
    assert f.title == ("Engine startup phases (159 s of timed startup: compile/JIT (torch.compile) 82.29 s, memory "
                       "profiling/warmup (profiling/warmup) 76.71 s)")
    assert knob_names(f) == ["engine.startup_timeout", "compile.cache"]


def test_capture_below_its_threshold_is_information_naming_the_capture_knob() -> None:
    f = top(triage_dir(LINES / "sglang-musa-capture-piecewise.log"))
    assert f.numbers["startup_phases"] == {"graph_capture": 27.41, "compile": 3.38}  # the slower TP rank
    assert knob_names(f) == ["engine.startup_timeout", "inference.sglang_cuda_graph_max_bs_decode"]


# -- thresholds, deadlines and the phase that took the time ----------------------------------------------------------

DRAFT = ("[2025-11-12 08:15:06 TP0] Capture cuda graph end. Time elapsed: 19.44 s. mem usage=0.92 GB. avail mem=17.01 GB.\n"
         "[2025-11-12 08:16:10 TP0] Capture draft cuda graph end. Time elapsed: 64.00 s. mem usage=0.21 GB. avail mem=15.31 GB.\n")


def test_draft_capture_over_threshold_names_it_and_its_knob(tmp_path: Path, lib) -> None:
    f = by_rule(run(write_run(tmp_path / "run", None, logs={"sglang-engine.log": DRAFT}), lib))["cold.startup-capture-slow"]
    assert (f.severity, f.evidence[0].line, f.numbers["phase"], f.numbers["seconds"]) == ("warning", 2, "graph_capture_draft", 64.0)
    assert knob_names(f)[0] == "inference.sglang_cuda_graph_max_bs_decode"
    assert f.title.endswith("(CUDA-graph capture (draft) 64 s ≥ 30 s)")


STUCK_IN_CAPTURE = (
    "[2026-03-17 07:16:11 TP0] Load weight end. elapsed=95.10 s, type=Qwen3ForCausalLM, avail mem=40.48 GB, mem usage=15.28 GB.\n"
    "[2026-03-17 07:16:11 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=11.64 GB\n"
    "[2026-03-17 07:16:11 TP0] Capture cuda graph bs [1, 2, 4, 8]\n")


def test_deadline_names_the_phase_the_engine_was_still_in(tmp_path: Path, lib) -> None:
    logs = {"sglang-engine.log": STUCK_IN_CAPTURE,
            "launcher.log": "TimeoutError: SGLang server not ready within 300 seconds\n"}
    report = run(write_run(tmp_path / "run", None, logs=logs), lib)
    f = top(report)
    assert (f.rule, f.severity, f.numbers["phase"], f.numbers["deadline"]) == ("cold.startup-not-ready", "error", "graph_capture", 300.0)
    assert knob_names(f) == ["engine.startup_timeout", "inference.sglang_cuda_graph_max_bs_decode"]
    assert [(e.file, e.line) for e in f.evidence][:2] == [("launcher.log", 1), ("sglang-engine.log", 2)]
    assert "engine still in CUDA-graph capture (begun and never ended)" in f.title
    # the launcher's own line is one finding with it, not a second error
    assert "cold.engine-not-ready" not in by_rule(report)
    assert not [x for x in report.findings if x.category == "unclassified"]


def test_deadline_after_a_long_finished_load_names_the_load(tmp_path: Path, lib) -> None:
    engine = "(VllmWorkerProcess pid=486) INFO 04-12 08:20:41 [loader.py:458] Loading weights took 1582.06 seconds\n"
    logs = {"vllm-engine.log": engine, "launcher.log": "TimeoutError: Timeout waiting for vLLM server healthy\n"}
    f = top(run(write_run(tmp_path / "run", None, logs=logs), lib))
    assert (f.rule, f.numbers["phase"]) == ("cold.startup-not-ready", "weight_load")
    assert knob_names(f) == ["engine.startup_timeout", "engine.load_format"]


def test_a_finished_startup_is_not_stuck_in_its_begun_phases(tmp_path: Path, lib) -> None:
    engine = STUCK_IN_CAPTURE + "[2026-03-17 07:16:40] The server is fired up and ready to roll!\n"
    logs = {"sglang-engine.log": engine, "launcher.log": "unable to start process: health check failed after 15s\n"}
    f = top(run(write_run(tmp_path / "run", None, logs=logs), lib))
    assert (f.rule, f.numbers["phase"]) == ("cold.startup-not-ready", "weight_load")  # longest timed phase instead


def test_healthy_sglang_startup_is_information_with_its_time_to_ready(tmp_path: Path, lib) -> None:
    engine = ("[2025-03-08 12:29:13 TP0] Load weight begin. avail mem=21.63 GB\n"
              "[2025-03-08 12:29:20 TP0] Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem=6.09 GB, mem usage=15.54 GB.\n"
              "[2025-03-08 12:29:21 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=1.45 GB\n"
              "[2025-03-08 12:29:28 TP0] Capture cuda graph end. Time elapsed: 7.25 s. avail mem=0.53 GB. mem usage=0.93 GB.\n"
              "[2025-03-08 12:29:33] The server is fired up and ready to roll!\n")
    report = run(write_run(tmp_path / "run", None, logs={"sglang-engine.log": engine}), lib)
    assert not [f for f in report.findings if f.severity != "info"]
    f = by_rule(report)["cold.startup-phases"]
    assert (f.numbers["to_ready_seconds"], f.numbers["startup_phases"]) == (20, {"graph_capture": 7.25})


# -- first step against warm steps -----------------------------------------------------------------------------------

def _steps(times: list[float], lengths: list[float] | None = None) -> str:
    rows = []
    for i, t in enumerate(times, 1):
        extra = f" - response_length/mean:{lengths[i - 1]}" if lengths else ""
        rows.append(f"step:{i} - timing_s/step:{t}{extra}\n")
    return "".join(rows)


def test_first_step_slow_with_steady_lengths_is_a_cold_start(tmp_path: Path, lib) -> None:
    text = _steps([900.0, 100.0, 110.0, 105.0], [3000.0, 2900.0, 3100.0, 3050.0])
    f = by_rule(run(write_run(tmp_path / "run", None, logs={"train.log": text}), lib))["cold.first-step-slow"]
    assert (f.numbers["first"], f.numbers["warm_median"]) == (900.0, 105.0)
    assert (f.severity, f.numbers["excess_share_of_run"]) == ("warning", 0.654)  # 795 s of 1215 s


def test_a_slow_first_step_of_a_long_run_is_info(tmp_path: Path, lib) -> None:
    """Its excess (900 - 104.5 s) is 3.6 % of 201 steps' time: a caveat for throughput figures, not a warning."""
    text = _steps([900.0] + [100.0, 110.0, 105.0, 104.0] * 50, [3000.0] * 201)
    f = by_rule(run(write_run(tmp_path / "run", None, logs={"train.log": text}), lib))["cold.first-step-slow"]
    assert (f.severity, f.numbers["warm_median"], f.numbers["excess_share_of_run"]) == ("info", 104.5, 0.036)
    assert f.title.startswith("First step slower than the warm steps, a small share of the run (first 900 s")
    assert (f.evidence[0].file, f.evidence[0].line) == ("train.log", 1)


def test_fast_steps_of_a_collapsed_policy_are_not_a_cold_start(tmp_path: Path, lib) -> None:
    text = _steps([900.0, 100.0, 110.0, 105.0], [3000.0, 400.0, 120.0, 35.0])  # responses collapsing
    report = run(write_run(tmp_path / "run", None, logs={"train.log": text}), lib)
    assert "cold.first-step-slow" not in by_rule(report)


def _scanned(lib, text: str) -> list:
    from triage.input.read import read_text
    from triage.model import LogFile
    from triage.scan.scanner import Scanner
    res = Scanner(lib).scan(LogFile(path="<t>", rel="<t>", kind="text"), read_text((text + "\n").encode()))
    return [ev for ev in res.events if ev.kind == "startup"]


@pytest.mark.parametrize("text", [t for t, *_ in PHASE_LINES] + [
    "TimeoutError: SGLang server not ready within 300 seconds", "TimeoutError: Timeout waiting for vLLM server healthy",
    "TimeoutError: Timed out after 240s waiting for vLLM server at http://localhost:8000.",
    "RuntimeError: vLLM server failed to start within timeout", "Error: Timed out waiting for vLLM server to boot (600000ms)"])
def test_the_prefilter_lets_every_wording_through(lib, text: str) -> None:
    """The parser's anchors are literal and case-sensitive: each wording must hold one, or it never reaches the parser."""
    assert len(_scanned(lib, text)) == 1


# A launcher polling a starting engine is what start-up looks like: its "connection refused" / "connection attempts
# failed" lines are the start-up checks' (a wait), never an unexplained error that outranks them (prime-rl PR 1630:
# five polls, then the pool is up; kubelet's probe of a pod still loading).
POLLS = [f"16:41:{s:02d} WARNING Inference server was not reached after {s - 33} seconds (Error: All connection "
         f"attempts failed) on http://localhost:8000" for s in (43, 53)] + [
    "  Warning  Unhealthy  3s (x9 over 43s)  kubelet  Readiness probe failed: Get \"http://10.244.0.45:8000/\": dial "
    "tcp 10.244.0.45:8000: connect: connection refused"]


@pytest.mark.parametrize("native_off", ["1", ""])
def test_a_launchers_polls_are_the_startup_checks_not_unexplained_errors(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, native_off: str) -> None:
    if native_off:
        monkeypatch.setenv("TRIAGE_NO_NATIVE", native_off)
    else:
        monkeypatch.delenv("TRIAGE_NO_NATIVE", raising=False)
    (tmp_path / "orchestrator.log").write_text("16:41:33    INFO Waiting for inference pool to be ready\n"
                                               + "\n".join(POLLS) + "\n")
    report = triage_dir(tmp_path)
    assert [f.rule for f in report.findings] == ["cold.startup-phases"]
    found = report.findings[0]
    assert found.severity == "info"
    assert [e.line for e in found.evidence][:1] == [2]
