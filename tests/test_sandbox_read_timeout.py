"""The verifiers SWE rubric's sandbox timing out (verifiers PR 1245, real-extra 482): the sandbox killed at its TTL
("(TIMEOUT): Sandbox exceeded maximum runtime") and the rubric's poll of the test job's exit file through the
prime-sandboxes client ("Read file timed out after 30s: /tmp/job_<id>.exit") are one verifier timeout family."""

from __future__ import annotations

from pathlib import Path

from conftest import FIXTURES, knob_names, top, triage_dir, triage_files


def test_both_sandbox_timeouts_of_the_swe_rubric_are_the_verifier_timeout() -> None:
    (case,) = [p for p in (FIXTURES / "real-extra").iterdir() if p.name.startswith("482-")]
    report = triage_dir(case / "input")
    f = top(report)
    assert (f.category, f.rule, f.count) == ("verifier", "verifier.timeout", 2)
    assert [(e.file, e.line) for e in f.evidence] == [("env-worker.log", 1), ("env-worker.log", 2)]
    assert "verifier.timeout" in knob_names(f)
    assert f.severity == "info"  # two timeouts: noted, under the rule's info_below of 3
    assert not [g for g in report.findings if g.rule == "unclassified"]


def test_the_prime_sandboxes_wording_with_its_exception_class_reveals_the_seconds(tmp_path: Path) -> None:
    line = "prime_sandboxes.core.client.APIError: Read file timed out after 12s (ReadTimeout): /tmp/job_3f2a.exit\n"
    report = triage_files(tmp_path, {"env-worker.log": line * 3})
    f = top(report)
    assert (f.rule, f.severity, f.count) == ("verifier.timeout", "warning", 3)
    assert f.numbers["seconds"] in (12, 12.0, "12")


def test_an_agent_tools_own_read_timeout_is_not_the_verifier(tmp_path: Path) -> None:
    report = triage_files(tmp_path, {"agent.log": "tool memory_read failed: read file timed out after 5s\n" * 3})
    assert all(f.rule != "verifier.timeout" for f in report.findings)
