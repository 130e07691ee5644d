"""Recognition round 9 (r9b): complete public run logs and the verifier category.

- An optional module that fails to import and is reported as a warning is not a broken environment: vLLM's
  `_has_module` probe logs "Module vllm.third_party.deep_gemm was found but failed to import" and the caught
  traceback at WARNING level on every line (real-extra 834, vLLM 0.23, a complete evaluation run that finished);
  torchvision warns "UserWarning: Failed to load image Python extension: ...: undefined symbol: ..." and imports
  on (nixpkgs issue 162286, torchvision 0.13). `other.import-error` is info then (`if_warned`); an ImportError that
  ends a program still gates.
- verl's V1 trainer measures `response_length/clip_ratio` against the batch's longest response, not the
  configured cap (verl issues 7817/7821, 2026-09): a record whose longest response is below the configured cap has
  no response at the cap, whatever the ratio says.
- Complete runs: an operator's Ctrl-C after a stalled start (833), a remote reward server that stops answering
  (832)."""

from __future__ import annotations

import shutil

from conftest import FIXTURES, REAL, by_rule, run, triage_dir, triage_files, write_run
from domain import SIX

from triage.model import SEVERITY_RANK
from triage.report.gate import scan_exit

EXTRA = FIXTURES / "real-extra"
CASE_040 = REAL / "040-verl-step-response-clip-ratio-0p52" / "input"

# nixpkgs issue 162286 (2022-08), `import torchvision` with torch 1.12.0 / torchvision 0.13.0, as pasted.
TORCHVISION_WARNING = (
    "/home/octopus/workdir/lib/python3.10/site-packages/torchvision/io/image.py:13: UserWarning: Failed to load image "
    "Python extension: /home/octopus/workdir/lib/python3.10/site-packages/torchvision/image.so: undefined symbol: "
    "_ZN3c105ErrorC2ENS_14SourceLocationESs\n"
    '  warn(f"Failed to load image Python extension: {e}")\n'
)


def _case(prefix: str):
    return next(EXTRA.glob(f"{prefix}-*")) / "input"


def _nothing_in_six(report) -> bool:
    return not [f for f in report.findings if f.category in SIX and SEVERITY_RANK[f.severity] <= 1]


# -- caught import failures ------------------------------------------------------------------------------------

def test_vllm_deep_gemm_probe_logged_as_warning_is_info_and_the_run_exits_0():
    report = triage_dir(_case("834"))
    f = by_rule(report)["other.import-error"]
    assert (f.category, f.severity, f.count) == ("other", "info", 2)
    assert [(e.file, e.line) for e in f.evidence] == [("exp1.log", 54), ("exp1.log", 69)]
    assert f.numbers["module"] == "vllm.third_party.deep_gemm"
    assert "every line was printed as a warning" in f.numbers["warned"]
    assert "unclassified" not in by_rule(report)  # the probe's own "was found but failed to import" is claimed
    assert _nothing_in_six(report)
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 0


def test_torchvision_image_extension_user_warning_is_info(tmp_path):
    report = triage_files(tmp_path, {"train.log": TORCHVISION_WARNING})
    f = by_rule(report)["other.import-error"]
    assert f.severity == "info"
    assert f.numbers["symbol"] == "_ZN3c105ErrorC2ENS_14SourceLocationESs"
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 1)]
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 0


def test_an_import_error_that_ends_the_program_still_gates():
    report = triage_dir(EXTRA / "455-axolotl-kaggle-flash-attn-undefined-symbol-c10-error" / "input")
    f = report.findings[0]
    assert (f.rule, f.severity) == ("other.import-error", "error")
    assert "warned" not in f.numbers
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 1


# -- verl V1 clip ratio ------------------------------------------------------------------------------------------

def test_a_clip_ratio_with_the_longest_response_below_the_configured_cap_is_not_cap_hits(tmp_path, lib):
    # verl step 5 of case 040: clip_ratio 0.521, response_length/max 1024. Under a configured cap of 2048 no response
    # reached the cap (V1 counts the responses at the batch's longest, verl#7817): no generation-tail warning.
    root = tmp_path / "run"
    shutil.copytree(CASE_040, root)
    write_run(root, {"inference.max_response_length": 2048}, "nested")
    found = by_rule(run(root, lib))
    assert "gen.cap-hit-rate" not in found
    assert found["health.summary"].numbers["arithmetic"].endswith("longest response 1024 of cap 2048")


def test_the_same_ratio_at_the_configured_cap_is_still_cap_hits(tmp_path, lib):
    root = tmp_path / "run"
    shutil.copytree(CASE_040, root)
    write_run(root, {"inference.max_response_length": 1024}, "nested")
    f = by_rule(run(root, lib))["gen.cap-hit-rate"]
    assert (f.category, f.severity) == ("generation-tail", "warning")
    assert (f.numbers["max"], f.numbers["steps_over"], f.numbers["response_cap"]) == (0.521, 1, 1024)
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 1)]


# -- complete runs ---------------------------------------------------------------------------------------------

def test_operator_ctrl_c_after_a_stalled_start_is_not_a_failure():
    report = triage_dir(_case("833"))
    f = by_rule(report)["other.orderly-shutdown"]
    assert (f.severity, f.numbers["signal"]) == ("info", "SIGINT")
    assert [(e.file, e.line) for e in f.evidence] == [("grpo.log", 64)]
    assert _nothing_in_six(report)
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 0


def test_remote_reward_server_read_timeouts_end_the_job_as_verifier():
    report = triage_dir(_case("832"))
    f = report.findings[0]
    assert (f.rule, f.category, f.severity) == ("verifier.judge-api-error", "verifier", "error")
    assert f.numbers["attempts"] == 5
    assert [(e.file, e.line) for e in f.evidence][:2] == [("train.log", 8), ("train.log", 9)]
    assert "read timeout=180" in f.evidence[1].text
    assert {k.name for k in f.knobs} >= {"verifier.timeout", "verifier.reward_function"}
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 1
