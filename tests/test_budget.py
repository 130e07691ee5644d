"""`triage budget`: the seed's arithmetic for a planned run, through the same config rules as a real run."""

from __future__ import annotations

import subprocess
import sys

from triage.budget import Budget, budget_findings, render_budget


def rules(findings):
    return [(f.rule, f.severity) for f in findings]


def test_64k_context_short_answer_with_a_131072_pool(lib):
    b = Budget(context=65536, response=512, pool=131072, concurrency=16)
    findings = budget_findings(lib, b)
    assert rules(findings) == [("config.pool-fits-few-sequences", "warning"), ("config.long-context-training", "warning"),
                               ("config.prompt-limit-derived", "info")]
    assert findings[0].numbers["arithmetic"] == "131072 ÷ 65536 = 2 full sequences < 16 admitted"
    text = render_budget(b, findings)
    assert "  prompt budget   65,024 tokens (not set: context − response)\n" in text
    assert "  KV pool         131,072 ÷ 65,536 = 2 full sequences" in text
    assert "  concurrency     16 exceeds it: requests queue or retract; at most 2 fit\n" in text


def test_seed_examples_that_fit_raise_no_warning(lib):
    for context, prompt, response in ((16384, 15872, 512), (32768, 2048, 30720)):
        b = Budget(context=context, response=response, prompt=prompt, pool=131072, concurrency=2, pack=context)
        assert [f for f in budget_findings(lib, b) if f.severity != "info"] == []


def test_serving_only_skips_the_trainer_checks(lib):
    b = Budget(context=65536, response=512, prompt=65024, training=False)
    assert rules(budget_findings(lib, b)) == []


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "triage", "budget", *args], capture_output=True, text=True)


def test_cli_exit_codes():
    ok = _cli("--context", "32768", "--response", "512", "--prompt", "32256", "--pool", "131072", "--concurrency", "4")
    assert ok.returncode == 0 and "4 fits" in ok.stdout and ok.stdout.rstrip().endswith("no warnings")
    over = _cli("--context", "16384", "--response", "512", "--prompt", "16384")
    assert over.returncode == 1
    assert "16384 + 512 = 16896 > 16384" in over.stdout
    bad = _cli("--context", "0", "--response", "512")
    assert (bad.returncode, bad.stderr) == (2, "triage: error: --context must be a positive number of tokens, got 0\n")
