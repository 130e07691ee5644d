"""The command line end to end: exit codes, the JSON contract, one-line errors, explain and rules."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import FIXTURES, REAL


def run(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "triage", *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def test_json_contract_on_a_real_case() -> None:
    p = run(str(REAL / "038-rlinf-fsdp-sync-model-to-rollout-oom" / "input"), "--format", "json")
    assert p.returncode == 1
    data = json.loads(p.stdout)
    assert set(data) >= {"version", "findings", "files"}
    f = data["findings"][0]
    assert set(f) >= {"rule", "category", "severity", "title", "count", "evidence", "knobs", "not_knobs", "explain"}
    assert (f["rule"], f["category"], f["severity"]) == ("trainer.oom-weight-sync", "trainer-oom", "error")
    assert f["evidence"][0] == {"file": "train.log", "line": 1, "text": f["evidence"][0]["text"]}
    knob = next(k for k in f["knobs"] if k["name"] == "PYTORCH_CUDA_ALLOC_CONF")
    assert "PYTORCH_ALLOC_CONF" in knob["aliases"] and knob["current"] is None
    assert data["files"] == [{"path": "train.log", "kind": "trainer", "status": "read", "reason": "", "lines": 10,
                              "size": 1091}]


def test_exit_codes() -> None:
    healthy = REAL / "016-slime-rollout-actor-healthy-startup-ray-prefix" / "input"
    warning_only = REAL / "036-sglang-swa-full-token-usage-1-queue-growing" / "input"
    assert run(str(healthy)).returncode == 0
    assert run(str(warning_only)).returncode == 0
    assert run(str(warning_only), "--fail-on", "warning").returncode == 1
    assert run(str(REAL / "008-sglang-engine-input-longer-than-context" / "input")).returncode == 1
    assert run(str(REAL / "008-sglang-engine-input-longer-than-context" / "input"), "--fail-on", "never").returncode == 0


def test_missing_path_is_one_line_and_exit_2(tmp_path) -> None:
    p = run(str(tmp_path / "no-such-run"))
    assert p.returncode == 2
    assert p.stderr.strip().splitlines() == [f"triage: error: {tmp_path / 'no-such-run'}: no such file or directory"]
    assert "Traceback" not in p.stderr


def test_broken_user_rules_are_exit_2_with_file_and_rule(tmp_path) -> None:
    d = tmp_path / "rules"
    d.mkdir()
    (d / "bad.yaml").write_text("rules:\n  - id: user.bad\n    category: other\n    severity: error\n    title: t\n"
                                "    anchor: [unclosed]\n    match: '(unclosed'\n    knobs: []\n    explain: e\n"
                                "    examples: {match: [x]}\n")
    p = run(str(REAL / "008-sglang-engine-input-longer-than-context" / "input"), "--patterns", str(d))
    assert p.returncode == 2
    assert "bad.yaml:2: rule user.bad: match: bad regex" in p.stderr
    assert "Traceback" not in p.stderr


def test_demo_run_shows_the_trainer_oom_first() -> None:
    p = run(str(FIXTURES / "demo-run"), "--format", "json")
    data = json.loads(p.stdout)
    top = data["findings"][0]
    assert top["category"] == "trainer-oom"
    cats = {f["category"] for f in data["findings"]}
    assert {"serving-oom-retraction", "verifier"} <= cats


def test_explain_rule_category_and_knob_alias() -> None:
    p = run("explain", "serving.kv-retraction")
    assert p.returncode == 0 and "inspect: inference.sglang_max_running_requests" in p.stdout
    p = run("explain", "trainer-oom")
    assert p.returncode == 0 and "will not help: more inference GPUs" in p.stdout
    p = run("explain", "--sglang-mem-fraction-static")
    assert p.returncode == 0 and p.stdout.startswith("inference.sglang_mem_fraction_static")
    p = run("explain", "no-such-thing")
    assert p.returncode == 2


def test_rules_list_and_check() -> None:
    p = run("rules", "list")
    assert p.returncode == 0 and "serving.kv-retraction" in p.stdout
    p = run("rules", "check")
    assert p.returncode == 0 and p.stdout.strip().endswith("0 failing example(s)")


def test_standard_input() -> None:
    p = subprocess.run([sys.executable, "-m", "triage", "-", "--format", "json"], capture_output=True, text=True,
                       input="ValueError: The input (85050 tokens) is longer than the model's context length (32768 tokens).\n")
    data = json.loads(p.stdout)
    assert data["findings"][0]["rule"] == "prompt.context-length-exceeded"
    assert data["findings"][0]["evidence"][0]["file"] == "<stdin>"
