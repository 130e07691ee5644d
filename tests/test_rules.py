"""Every rule's own examples (line rules: must / must not match; check rules: the example log must fire)."""

from triage.rulecheck import check_examples


def test_every_rule_example(lib):
    assert check_examples(lib) == []


def test_config_and_health_rules_are_in_the_library(lib):
    ids = {r.id for r in lib.rules}
    assert {"config.prompt-plus-response-over-context", "config.prompt-limit-derived", "config.pack-budget-below-context",
            "config.micro-batch-not-one", "config.pool-fits-few-sequences", "config.pool-below-requested",
            "config.mamba-slots-below-running", "config.cuda-graph-above-admission", "config.cuda-graph-below-admission",
            "config.mem-fraction-colocated", "config.long-context-training", "config.log-probs-chunk-unset",
            "health.grads-non-finite", "health.no-policy-gradient", "health.publication-missing",
            "health.weight-update-failed", "health.routing-replay-mismatch", "health.summary"} <= ids
