"""Real failures outside the six categories are named by a rule of their family, with the evidence line, never by a
generic process end or forced into one of the six (real-extra 1148-1163, s14). Healthy runs with alarming lines stay
healthy."""

from __future__ import annotations

import pytest
from conftest import by_rule, top, triage_dir
from conftest import extra_input as case
from domain import SIX

from triage.model import SEVERITY_RANK


@pytest.mark.parametrize(("prefix", "what", "where", "code"), [
    # vllm-ascend: the device's own aivec report ahead of torch_npu's EZ9999 trail
    ("1148-", "aivec error", ("vllm-serve.log", 4), None),
    # vLLM V1's worker RPC re-raising torch_npu's ACL error
    ("1149-", "ACL stream synchronize failed", ("offline_inference_npu.log", 6), 507035),
    # the AI-CPU wording (EH9999, 507018)
    ("1150-", "aicpu exception", ("vllm-serve.log", 3), None),
    # the plog's wording (fftsplus aivector)
    ("1151-", "fftsplus aivector error", ("plog.log", 5), None),
])
def test_an_ascend_device_fault_is_named_with_its_core(prefix: str, what: str, where: tuple[str, int],
                                                       code: int | None) -> None:
    f = top(triage_dir(case(prefix)))
    assert (f.rule, f.category, f.severity) == ("other.npu-device-error", "other", "error")
    assert f.numbers["what"] == what
    assert f.numbers.get("code") == code
    assert (f.evidence[0].file, f.evidence[0].line) == where


@pytest.mark.parametrize("prefix", ["1073-", "1078-"])
def test_the_ascend_runtime_trail_folds_into_the_fault(prefix: str) -> None:
    """The CANN runtime's and torch_npu's trail (EZ9999 headers, 'runtime result = 507011', 'PTA call acl api
    failed', the TBE workers' 'main process disappeared') is not reported as unexplained lines any more."""
    report = triage_dir(case(prefix))
    assert top(report).rule == "other.npu-device-error"
    left = " ".join(f.title for f in report.findings if f.rule == "unclassified")
    for trail in ("TBE Subprocess", "PTA call acl api failed", "runtime result", "vector core exception",
                  "Aicore kernel execute failed", "Model execution failed"):
        assert trail not in left


@pytest.mark.parametrize(("prefix", "rule", "where", "numbers"), [
    ("1154-", "other.hub-access-denied", ("server.log", 11), {"what": "You are trying to access a gated repo"}),
    # the vLLM registry list names Qwen2ForRewardModel: not the reward path (was vocabulary.reward-path-error)
    ("1155-", "other.model-unsupported-by-version", ("train.log", 1), {"what": "['Qwen2ForCausalLM']"}),
    ("1157-", "other.serialization-error", ("driver.log", 1), {"what": "'_thread.RLock' object"}),
    ("1158-", "other.heap-corruption", ("train.log", 3), {"what": "free(): invalid pointer"}),
    # tokenizers' bare "Exception: expected value at line 1 column 1" above torchrun's failure summary
    ("1156-", "other.tokenizer-file-unreadable", ("train.log", 4), {"what": "expected value"}),
    # a bare KeyError named by the transformers frame above it
    ("1161-", "other.model-type-unknown", ("train.log", 6), {"model_type": "qwen3_asr"}),
    # Ray's list of possible causes names SIGSEGV ("or another unexpected errors"): a guess, not a segfault
    ("1163-", "other.actor-died", ("train.log", 10), {}),
])
def test_a_failure_outside_the_six_is_named_by_its_family(prefix: str, rule: str, where: tuple[str, int],
                                                          numbers: dict[str, str]) -> None:
    report = triage_dir(case(prefix))
    f = top(report)
    assert (f.rule, f.category, f.severity) == (rule, "other", "error")
    assert (f.evidence[0].file, f.evidence[0].line) == where
    for k, v in numbers.items():
        assert f.numbers[k] == v
    assert "other.segfault" not in by_rule(report)


def test_the_launcher_summary_folds_into_the_ranks_own_failure() -> None:
    """torch elastic's "failed (exitcode: 1) local_rank: 0" is the symptom; the rank's exception above it leads."""
    report = triage_dir(case("1156-"))
    assert "other.job-failed" not in by_rule(report)
    assert ("train.log", 5) in [(e.file, e.line) for e in top(report).evidence]


def test_the_shell_abort_after_a_heap_corruption_is_reported_too() -> None:
    fatal = by_rule(triage_dir(case("1158-")))["other.fatal-signal"]
    assert [(e.file, e.line) for e in fatal.evidence] == [("train.log", 4)]
    assert fatal.numbers["signal"] == "Aborted"


def test_wandb_errors_while_training_goes_on_are_information() -> None:
    report = triage_dir(case("1159-"))
    f = top(report)
    assert (f.rule, f.severity) == ("other.tracker-client-error", "info")
    assert f.count == 3
    assert not [g for g in report.findings if SEVERITY_RANK[g.severity] <= SEVERITY_RANK["warning"]]


def test_a_teardown_warning_at_exit_is_healthy() -> None:
    report = triage_dir(case("1160-"))
    assert not [g for g in report.findings if g.category in SIX or g.severity == "error"]
