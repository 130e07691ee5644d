"""Round 7 (complete public logs): an engine start that never got past a slow phase gates; a log that merely stops
early, an excerpt of a startup and a start that went on to serve do not; a port another process holds is named.

Real logs: real-extra 652 (SGLang 0.5.16, killed inside its first CUDA-graph capture after a 618 s load), 703 (vLLM
0.25.1 whose JIT compiler the kernel's OOM killer took after a 716 s load; only the system log said so), 706 (the
same vLLM start ended eight seconds in with the operator's shell session), 702 (vLLM 0.31's ready line), 711/712
(SGLang's metrics port, torchrun's port 29500)."""

from __future__ import annotations

from pathlib import Path

from conftest import FIXTURES, by_rule, knob_names, triage_dir, triage_files

from triage.report.gate import scan_exit

EXTRA = FIXTURES / "real-extra"
VLLM_703 = EXTRA / "703-vllm-0251-nvfp4-start-log-stops-after-compile" / "input"
SGLANG_652 = EXTRA / "652-sglang-0516-nvfp4-first-capture-step-abandoned" / "input"
SESSION_706 = EXTRA / "706-vllm-0251-nvfp4-start-ended-with-shell-session" / "input"
READY_702 = EXTRA / "702-vllm-0310-coder-15b-serve-start-then-stop" / "input" / "vllm.log"


def _exit(path: Path) -> int:
    report = triage_dir(path)
    return scan_exit(report.findings, "error", complete=report.coverage_complete)


def test_a_vllm_start_whose_log_stops_after_a_slow_load_gates() -> None:
    report = triage_dir(VLLM_703)
    top = report.findings[0]
    assert (top.rule, top.category, top.severity) == ("cold.startup-abandoned", "cold-start", "error")
    assert [(e.file, e.line) for e in top.evidence] == [("vllm.log", 117), ("vllm.log", 124)]
    assert "748.400124 seconds" in top.evidence[0].text and "torch.compile took 30.61 s" in top.evidence[1].text
    assert top.numbers["seconds"] == 748.4 and top.numbers["phase_weight_load"] == 1
    assert {"engine.startup_timeout", "engine.load_format", "compile.cache"} <= set(knob_names(top))
    assert _exit(VLLM_703) == 1


def test_an_sglang_start_killed_inside_its_capture_gates_and_names_the_phase() -> None:
    top = triage_dir(SGLANG_652).findings[0]
    assert top.rule == "cold.startup-abandoned"
    assert "618.01 s" in top.evidence[0].text and "Capture target prefill CUDA graph begin" in top.evidence[1].text
    assert "CUDA-graph capture" in top.numbers["arithmetic"] and top.numbers["phase_graph_capture"] == 1
    assert "inference.sglang_cuda_graph_max_bs_decode" in knob_names(top)
    assert _exit(SGLANG_652) == 1


def test_a_log_that_stops_early_with_nothing_slow_does_not_gate() -> None:
    assert "cold.startup-abandoned" not in by_rule(triage_dir(SESSION_706))
    assert _exit(SESSION_706) == 0


def test_an_excerpt_without_the_launch_arguments_says_nothing_of_how_the_log_ends(tmp_path: Path) -> None:
    """The same 703 lines without the engine's launch (its argument dump and engine config): a pasted excerpt of a
    slow load is a slow load, not a start that stopped."""
    lines = (VLLM_703 / "vllm.log").read_text(encoding="utf-8").split("\n")
    excerpt = [ln for ln in lines if "non-default args" not in ln and "Initializing a V1 LLM engine" not in ln]
    report = triage_files(tmp_path, {"vllm.log": "\n".join(excerpt)})
    assert "cold.startup-abandoned" not in by_rule(report)
    assert by_rule(report)["cold.startup-load-slow"].severity == "warning"


def test_a_start_that_went_on_to_serve_is_not_abandoned(tmp_path: Path) -> None:
    """703's start followed by vLLM 0.31's ready line (702: `Starting vLLM server on http://...`, the 0.3x wording)."""
    ready = next(ln for ln in READY_702.read_text(encoding="utf-8").split("\n") if "Starting vLLM server on" in ln)
    text = (VLLM_703 / "vllm.log").read_text(encoding="utf-8").rstrip("\n") + "\n" + ready + "\n"
    report = triage_files(tmp_path, {"vllm.log": text})
    assert "cold.startup-abandoned" not in by_rule(report)
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 0


def test_the_healthy_vllm_031_start_is_ready_and_quiet() -> None:
    """702 printed no `Starting vLLM API server`: its ready line is `Starting vLLM server on`; 139 s of engine init
    followed by serving is information."""
    findings = triage_dir(READY_702.parent).findings
    assert all(f.severity == "info" for f in findings if f.category == "cold-start")
    assert _exit(READY_702.parent) == 0


def test_a_port_another_process_holds_is_named_in_both_wordings() -> None:
    for case, line, text in (("711-gpustack-sglang-metrics-port-in-use", 1, "metrics_port at 40290"),
                             ("712-vlm-r1-torchrun-port-29500-in-use", 1, "name: EADDRINUSE")):
        top = triage_dir(EXTRA / case / "input").findings[0]
        assert (top.rule, top.category, top.severity) == ("other.port-in-use", "other", "error")
        assert top.evidence[0].line == line and text in top.evidence[0].text
