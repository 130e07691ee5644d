"""A process's last exception that only points up to its cause (vLLM V1's API server: "EngineDeadError: EngineCore
encountered an issue. See stack trace (above) for the root cause.") is not the failure: the latest real exception
before it is (real-extra 924: the engine core's RuntimeError naming FlashInfer's "invalid argument" on a T4), and
the pointer is not reported again as an unexplained line. With no earlier exception in the log (366: the API
server's lines alone), the pointer stays the process's end."""

from __future__ import annotations

from conftest import by_rule, top, triage_dir
from conftest import extra_input as case


def test_the_cause_above_an_engine_dead_error_is_the_failure() -> None:
    report = triage_dir(case("924-"))
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("other", "other.engine-crash", "error")
    cause = [e for e in f.evidence if "BatchPrefillWithPagedKVCache failed with error invalid argument" in e.text]
    assert [(e.file, e.line) for e in cause] == [("vllm_server.log", 486)]
    unexplained = [e.line for g in report.findings if g.rule == "unclassified" for e in g.evidence]
    assert 494 not in unexplained


def test_an_engine_dead_error_with_nothing_above_it_stays_the_end() -> None:
    report = triage_dir(case("366-"))
    fatal = by_rule(report)["other.fatal-exit"]
    assert top(report) is fatal
    assert "EngineDeadError" in fatal.title
