"""The rule library is the only registry of the domain's vocabulary: categories (`domain: true`), sides and knob
value types live in patterns/*.yaml, and a category added in a `--patterns` folder is reported like a built-in one.
Checks declare their params, so a misspelled `check:` or `params:` key is an error at load in every run."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from triage.analyze import Settings, analyze
from triage.checks import PARAMS, load_checked_library
from triage.effective_config import build_config, coerce
from triage.library.rules import LibraryError, load_library
from triage.model import Event, Line
from triage.report import RenderOptions, render
from triage.report.explain import explain_text

THERMAL_CATEGORIES = """\
categories:
  gpu-thermal:
    domain: true
    title: GPU throttled by heat
    knobs: [gpu.fan_curve]
    not_knobs: [batch size]
    explain: A GPU reached its thermal limit and slowed down.
"""
THERMAL_KNOBS = """\
knobs:
  - name: gpu.fan_curve
    type: whole
    meaning: Fan speed percentage the cluster's fan controller holds.
    aliases: [--fan-curve]
    sources:
      fields: [fan_curve]
"""
THERMAL_RULE = """\
rules:
  - id: thermal.throttle
    category: gpu-thermal
    severity: error
    title: GPU thermal throttle
    anchor: ["thermal throttle"]
    match: 'thermal throttle at (?P<temp>\\d+) C'
    knobs: [gpu.fan_curve]
    explain: The GPU throttled its clocks to stay under its temperature limit.
    examples:
      match: ["GPU 3: thermal throttle at 91 C"]
"""
LOG = "step 1 ok\nGPU 3: thermal throttle at 91 C\nstep 2 ok\n"


@pytest.fixture()
def thermal(tmp_path: Path) -> tuple[Path, Path]:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "categories.yaml").write_text(THERMAL_CATEGORIES)
    (rules / "knobs.yaml").write_text(THERMAL_KNOBS)
    (rules / "thermal.yaml").write_text(THERMAL_RULE)
    run = tmp_path / "run"
    run.mkdir()
    (run / "train.log").write_text(LOG)
    return rules, run


def triage(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "triage", *args], capture_output=True, text=True, timeout=120)


def test_the_six_domain_categories_and_the_sides_come_from_the_yaml(lib) -> None:  # type: ignore[no-untyped-def]
    assert lib.domain == ("prompt-budget", "serving-oom-retraction", "trainer-oom", "cold-start", "generation-tail",
                          "verifier")
    assert list(lib.categories)[-2:] == ["other", "unclassified"]
    assert lib.side_names == ("engine", "trainer", "driver", "rollout", "verifier", "unknown")
    assert {k: s.type for k, s in lib.knobs.items() if s.type != "text"}["inference.sglang_mem_fraction_static"] == \
        "fraction"
    assert lib.knobs["miles.log_probs_chunk_size"].minus_one == "no chunking"
    assert {f: s.type for f, s in lib.facts.items()} == {
        "colocate": "switch", "context_parallel_size": "text", "use_dynamic_batch_size": "switch",
        "use_rollout_routing_replay": "switch", "page_size": "whole"}
    assert not set(lib.facts) & set(lib.knobs)


def test_a_category_added_in_yaml_only_is_reported_in_every_place(thermal: tuple[Path, Path]) -> None:
    rules, run = thermal
    report = analyze(Settings(paths=[str(run)], patterns=[rules]))
    (f,) = [f for f in report.findings if f.rule == "thermal.throttle"]
    assert (f.category, f.severity, f.title, f.numbers["temp"]) == ("gpu-thermal", "error",
                                                                   "GPU thermal throttle", 91)
    assert (f.evidence[0].file, f.evidence[0].line) == ("train.log", 2)
    assert [k.name for k in f.knobs] == ["gpu.fan_curve"] and f.not_knobs == ["batch size"]
    assert report.categories[-3:] == ["other", "unclassified", "gpu-thermal"]
    suite = ET.fromstring(render("junit", report, RenderOptions(fail_on="error"))).find("testsuite")
    assert suite is not None and suite.get("failures") == "1"  # one testcase per finding, per empty category
    failed = [(c.get("classname"), c.get("name")) for c in suite.iter("testcase") if c.find("failure") is not None]
    assert failed == [("triage.gpu-thermal", "thermal.throttle in train.log")]

    out = triage(str(run), "--patterns", str(rules), "--format", "json")
    assert out.returncode == 1, out.stderr
    assert [(x["rule"], x["category"]) for x in json.loads(out.stdout)["findings"]] == [("thermal.throttle",
                                                                                         "gpu-thermal")]
    listed = triage("rules", "list", "--patterns", str(rules))
    assert [ln.split() for ln in listed.stdout.splitlines() if ln.startswith("thermal.")] == [
        ["thermal.throttle", "gpu-thermal", "error", "GPU", "thermal", "throttle"]]
    explained = triage("explain", "gpu-thermal", "--patterns", str(rules))
    assert explained.returncode == 0
    assert explained.stdout.startswith("gpu-thermal: GPU throttled by heat\n")
    assert "  inspect: gpu.fan_curve\n" in explained.stdout and "  rules: thermal.throttle\n" in explained.stdout


TRACE = ('Traceback (most recent call last):\n  File "/app/train.py", line 12, in <module>\n    main()\n'
         '  File "/app/train.py", line 9, in main\n    run()\nValueError: bad batch\n')


@pytest.mark.parametrize("domain, first", [("true", "thermal.throttle"), ("false", "other.fatal-exit")])
def test_the_domain_flag_decides_what_outranks_an_unexplained_end(thermal: tuple[Path, Path], domain: str,
                                                                 first: str) -> None:
    rules, run = thermal
    (rules / "categories.yaml").write_text(THERMAL_CATEGORIES.replace("domain: true", f"domain: {domain}"))
    (rules / "thermal.yaml").write_text(THERMAL_RULE.replace("severity: error", "severity: warning"))
    (run / "train.log").write_text(LOG + TRACE)
    report = analyze(Settings(paths=[str(run)], patterns=[rules]))
    assert {f.rule: f.severity for f in report.findings} == {"thermal.throttle": "warning", "other.fatal-exit": "error"}
    assert report.findings[0].rule == first


def test_a_knob_value_type_is_the_yaml_s(thermal: tuple[Path, Path]) -> None:
    rules, _ = thermal
    lib = load_checked_library([rules])
    assert coerce(lib.knobs["gpu.fan_curve"], "80") == (80, "")
    assert coerce(lib.knobs["gpu.fan_curve"], "eighty") == (None, "expected a whole number, got 'eighty'")
    assert coerce(lib.knobs["miles.log_probs_chunk_size"], -1) == (-1, "")
    assert coerce(lib.knobs["inference.sglang_max_running_requests"], -1) == (None, "must not be negative, got -1")
    ln = Line("run.yaml", 3, "fan_curve: 70", "fan_curve: 70")
    cfg = build_config(lib, [Event("config", ln, {"fan_curve": "70", "colocate": "yes"})], [])
    assert cfg.get("gpu.fan_curve") == (70, "config run.yaml")
    assert cfg.fact("colocate") is True


def test_every_check_rule_of_the_built_in_library_uses_declared_params_only(lib) -> None:  # type: ignore[no-untyped-def]
    assert len(load_checked_library(compile_all=True).rules) == len(lib.rules)
    for rule in (r for r in lib.rules if r.check):
        assert rule.check in PARAMS, rule.id
        assert set(rule.params) <= set(PARAMS[rule.check]), rule.id


CHECK_RULE = """\
rules:
  - id: user.kv
    category: serving-oom-retraction
    severity: warning
    title: KV pressure
    check: kv_pressure
    params: {min_usage: 0.95, min_seconds: 60}
    knobs: []
    explain: The pool stayed full.
"""


@pytest.mark.parametrize("change, problem", [
    (("check: kv_pressure", "check: kv_presure"), "unknown check 'kv_presure'"),
    (("min_seconds: 60", "min_secnds: 60"),
     "params: check kv_pressure has no parameter 'min_secnds' (it takes: min_queue, min_seconds, min_share, "
     "min_usage)"),
    (("min_usage: 0.95", "min_usage: high"), "params: min_usage must be a number, got 'high'"),
    (("min_usage: 0.95", "min_usage: true"), "params: min_usage must be a number, got True"),
])
def test_a_misspelled_check_or_param_is_exit_2_in_every_run(tmp_path: Path, change: tuple[str, str],
                                                            problem: str) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    assert change[0] in CHECK_RULE
    (rules / "mine.yaml").write_text(CHECK_RULE.replace(*change))
    (tmp_path / "run.log").write_text("all good\n")
    with pytest.raises(LibraryError) as e:
        load_checked_library([rules])
    assert str(e.value) == f"{rules}/mine.yaml:2: rule user.kv: {problem}"
    proc = triage(str(tmp_path / "run.log"), "--patterns", str(rules))
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == f"triage: error: {rules}/mine.yaml:2: rule user.kv: {problem}\n"
    listed = triage("rules", "check", str(rules))
    assert listed.returncode == 1 and listed.stdout == f"{rules}/mine.yaml:2: rule user.kv: {problem}\n"


def test_the_library_alone_loads_without_the_check_registry(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "mine.yaml").write_text(CHECK_RULE.replace("check: kv_pressure", "check: kv_presure"))
    assert load_library([rules]).rule("user.kv").check == "kv_presure"  # the registry is the checks' to give


def test_explain_shows_a_check_rule_s_params_with_the_declared_defaults(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "mine.yaml").write_text(CHECK_RULE)
    text = explain_text(load_checked_library([rules]), "user.kv")
    assert text is not None
    check = text[text.index("  check: "):text.index("  defined at ")]
    assert " ".join(check.split()) == ("check: kv_pressure (min_usage=0.95, min_queue=1 (default), min_share=0.1 "
                                       "(default), min_seconds=60)")


@pytest.mark.parametrize("name, change, problem", [
    ("sides.yaml", ("sides: [engine, trainer, driver, rollout, verifier, unknown]", "sides: [engine, trainer, unknown]"),
     "sides.yaml: sides: must include driver, rollout, verifier (the sides triage gives lines by their file's kind, "
     "and 'unknown')"),
    ("categories.yaml", ("  unclassified:\n", "  not-explained:\n"), "categories.yaml: categories: must include "
     "'unclassified'"),
    ("knobs.yaml", ("    type: fraction\n", "    type: ratio\n"),
     "knobs.yaml: knob inference.sglang_mem_fraction_static: type 'ratio' is not one of whole, fraction, switch, text"),
])
def test_the_built_in_registries_hold_what_the_code_gives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str,
                                                          change: tuple[str, str], problem: str) -> None:
    from triage.library import rules

    copy = tmp_path / "patterns"
    shutil.copytree(rules.builtin_dir(), copy)
    text = (copy / name).read_text()
    assert change[0] in text
    (copy / name).write_text(text.replace(*change))
    monkeypatch.setattr(rules, "builtin_dir", lambda: copy)
    with pytest.raises(LibraryError) as e:
        load_library()
    assert str(e.value) == f"{copy}/{problem}"


@pytest.mark.parametrize("name, text, problem", [
    ("categories.yaml", "categories: [gpu-thermal]\n", "categories.yaml: categories must be a mapping"),
    ("categories.yaml", "categories:\n  GPU Thermal: {title: t}\n",
     "categories.yaml: category id 'GPU Thermal' must be lower-case words joined by '-'"),
    ("categories.yaml", "categories:\n  gpu-thermal: {domain: maybe}\n",
     "categories.yaml: category gpu-thermal: domain must be true or false"),
    ("knobs.yaml", "knobs: {gpu.fan_curve: 1}\n", "knobs.yaml: knobs must be a list"),
    ("knobs.yaml", "knobs:\n  - {name: gpu.fan_curve, meaning: m, type: int}\n",
     "knobs.yaml: knob gpu.fan_curve: type 'int' is not one of whole, fraction, switch, text"),
    ("knobs.yaml", "- just a list\n", "knobs.yaml: expected a mapping with 'knobs:', 'facts:'"),
])
def test_a_user_registry_of_the_wrong_shape_is_one_line(tmp_path: Path, name: str, text: str, problem: str) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / name).write_text(text)
    with pytest.raises(LibraryError) as e:
        load_checked_library([rules])
    assert str(e.value) == f"{rules}/{problem}"


def test_a_checkout_reads_its_own_patterns_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run from a source checkout (rules.py at triage/library/), the library is that checkout's top-level patterns/,
    never the copy another install (an editable install of a second checkout) registered as triage.patterns_data."""
    from triage.library import rules

    checkout = tmp_path / "checkout"
    (checkout / "triage" / "library").mkdir(parents=True)
    (checkout / "patterns").mkdir()
    (checkout / "patterns" / "knobs.yaml").write_text("knobs: []\n")
    monkeypatch.setattr(rules, "__file__", str(checkout / "triage" / "library" / "rules.py"))
    assert rules.builtin_dir() == checkout / "patterns"
