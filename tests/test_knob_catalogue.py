"""The knob catalogue as a reader sees it: whole aliases, and the retraction knob SGLang's own guide names.

SGLang's server-arguments guide says to raise --schedule-conservativeness when requests are retracted often; real-extra
701 (an SGLang server that retracted 20 times, ServerArgs printed at startup) shows its current value beside the
admission and pool knobs."""

from __future__ import annotations

from pathlib import Path

import yaml
from conftest import FIXTURES, by_rule, knob_names, triage_dir

KNOBS = Path(__file__).resolve().parent.parent / "patterns" / "knobs.yaml"


def test_every_alias_is_whole() -> None:
    # a comma inside an alias's parenthesis splits it in YAML's flow list: "--ctx-size (llama.cpp" and "... slots)"
    split = [(k["name"], a) for k in yaml.safe_load(KNOBS.read_text())["knobs"] for a in k.get("aliases") or []
             if a.count("(") != a.count(")")]
    assert not split


def test_repeated_retractions_name_the_schedulers_conservativeness_with_its_value() -> None:
    case = next(p for p in (FIXTURES / "real-extra").iterdir() if p.name.startswith("701-"))
    found = by_rule(triage_dir(case / "input"))["serving.kv-retraction"]
    assert (found.severity, found.count) == ("warning", 20)
    assert (found.evidence[0].file, found.evidence[0].line) == ("server.log", 276)
    assert knob_names(found)[0] == "inference.sglang_max_running_requests"
    knob = next(k for k in found.knobs if k.name == "inference.sglang_schedule_conservativeness")
    assert (knob.current, knob.source) == (1.0, "server_args server.log:8")
    assert "--schedule-conservativeness" in knob.aliases
