"""Session 13, helper r13c: metric tables users paste (parsers/tables.py), OpenRLHF's remote reward client giving
up (verifier.remote-rm-retries-exhausted), and the fresh real cases 1032-1034."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import extra_case, top, triage_dir, triage_files

from triage.analyze import Settings, analyze
from triage.library.rules import load_library
from triage.parsers import tables
from triage.report import RenderOptions, render

# the reporter's whitespace table of TRL GRPO metrics (trl issue #5697, real-extra 344)
ALIGNED = """Step  loss  grad_norm  reward_mean  clipped_ratio  mean_length
1     0     0          0            1.0            256
2     0     0          0            1.0            256
...
10    0     0          0            1.0            256
"""
# an issue's markdown summary of a run: metric, observed value, occurrences (jsboige/CoursIA #13596, real-extra 962)
PAIRS = """| metrique GRPO | valeur observee | occurrences |
|---|---|---:|
| `completions/mean_length` | **80** | **40 / 40** |
| `completions/clipped_ratio` | `1` | 39 / 40 (1 fois `0.975`) |
| `completions/mean_terminated_length` | `0` | 39 / 40 (1 fois `4`) |
"""


def _records(text: str) -> list:
    return list(tables.read(text.splitlines(), "notes.md"))


def test_an_aligned_table_is_one_record_a_row_with_its_step_and_the_header_as_each_values_line() -> None:
    recs = _records(ALIGNED)
    assert [r.fields["step"] for r in recs] == [1, 2, 10]
    assert [r.line.lineno for r in recs] == [2, 3, 5]  # the ellipsis row is skipped, the table goes on
    assert recs[0].fields["values"] == {"loss": 0.0, "grad_norm": 0.0, "reward_mean": 0.0, "clipped_ratio": 1.0,
                                        "mean_length": 256.0}
    assert recs[2].fields["lines"]["clipped_ratio"].lineno == 1  # the column's name is printed in the header


def test_a_markdown_column_table_with_its_rule_and_a_tab_separated_one_with_spaced_names() -> None:
    md = "| step | reward | response_length/clip_ratio |\n|:---:|---|---|\n| 1 | 0.20 | 0.91 |\n| 2 | 0.25 | 0.97 |\n"
    recs = _records(md)
    assert [(r.fields["step"], r.fields["values"]["response_length/clip_ratio"]) for r in recs] == [(1, 0.91), (2, 0.97)]
    tabbed = "Step\tTraining Loss\treward\treward_std\n5\t0.0000\t0.125\t0.0\n10\t0.0001\t0.0\t0.0\n"
    recs = _records(tabbed)
    assert [r.fields["values"] for r in recs] == [{"Training Loss": 0.0, "reward": 0.125, "reward_std": 0.0},
                                                  {"Training Loss": 0.0001, "reward": 0.0, "reward_std": 0.0}]


def test_a_key_value_table_is_one_record_with_each_values_own_row() -> None:
    (rec,) = _records(PAIRS)
    assert rec.fields["values"] == {"completions/mean_length": 80.0, "completions/clipped_ratio": 1.0,
                                    "completions/mean_terminated_length": 0.0}
    assert rec.fields["lines"]["completions/clipped_ratio"].lineno == 4
    assert rec.fields["step"] is None


@pytest.mark.parametrize("text", [
    "Package    Version\ntorch      2.1.0\nvllm       0.8.5\n",  # pip list: a header of no metric, rows of names
    "reward   0.5\nloss   0.1\n",  # an aligned pair is no table (only a delimited key/value row is)
    "Step  reward  clip_ratio\n1     0.2     0.9\nthe run went on\n",  # one aligned row: not enough for a table
    "| name | reward |\n|---|---|\n| run-a | high |\n",  # cells that are not numbers
    "epoch 1 reward 0.5 clip_ratio 0.2 loss 0.1\n",  # one line of prose-like pairs
])
def test_text_that_is_not_a_metric_table_gives_no_record(text: str) -> None:
    assert _records(text) == []


def test_a_pasted_table_of_clipped_completions_is_the_response_cap(tmp_path: Path) -> None:
    f = top(triage_files(tmp_path, {"train.log": ALIGNED}))
    assert (f.category, f.rule) == ("generation-tail", "gen.cap-hit-rate")
    assert f.evidence[0].line == 1 and "clipped_ratio" in f.evidence[0].text
    assert "inference.max_response_length" in [k.name for k in f.knobs]


def test_both_scan_paths_read_the_same_tables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "issue-metrics.md").write_text(PAIRS, encoding="utf-8")
    lib = load_library()
    got = []
    for native in (True, False):
        if native:
            monkeypatch.delenv("TRIAGE_NO_NATIVE", raising=False)
        else:
            monkeypatch.setenv("TRIAGE_NO_NATIVE", "1")
        monkeypatch.setenv("TRIAGE_JOBS", "1")
        report = json.loads(render("json", analyze(Settings(paths=[str(run)]), lib), RenderOptions()))
        got.append([(f["rule"], f["evidence"][0]["line"]) for f in report["findings"]])
    assert got[0] == got[1] and got[0][0] == ("gen.cap-hit-rate", 4)


def test_a_large_file_is_not_read_again_for_tables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tables, "MAX_BYTES", 10)
    report = triage_files(tmp_path, {"train.log": ALIGNED})
    assert all(f.rule != "gen.cap-hit-rate" for f in report.findings)


def test_a_log_with_metric_records_of_its_own_is_not_read_again_for_tables(tmp_path: Path) -> None:
    # the table's own evidence (clipped_ratio 1.0 on every row) stays unread once a metric line (verl's step
    # record, read by the line parsers) shows the file is a run's log, not a paste
    verl = "step:1 - actor/entropy:0.52 - response_length/mean:210.0 - response_length/clip_ratio:0.0\n"
    report = triage_files(tmp_path, {"train.log": verl + ALIGNED})
    assert all(f.rule != "gen.cap-hit-rate" for f in report.findings)


@pytest.mark.parametrize("text,held", [
    (b"| clipped_ratio | 1 | 39 / 40 |\n", True),
    (b"Step  loss  clipped_ratio\n1  0.0  1.0\n2  0.0  1.0\n", True),
    (b"\xe2\x94\x82 ppo_actor/no_eos_ratios/avg \xe2\x94\x82 1.0000e+00 \xe2\x94\x82\n", True),
    (b" [2026-05-24 00:52:58] iteration        1/ 1000000 | consumed samples:        256 | lm loss: -2.41083\n", False),
    (b"INFO 05-12 08:01:39 Engine 000: Avg prompt throughput: 6335.3 tokens/s, Running: 9 reqs\n", False),
])
def test_the_byte_test_before_a_file_is_read_again(text: bytes, held: bool) -> None:
    assert tables.may_hold(text) is held


def test_openrlhf_remote_reward_client_giving_up_is_the_verifier() -> None:
    f = top(triage_dir(extra_case("1032-") / "input"))
    assert (f.category, f.rule) == ("verifier", "verifier.remote-rm-retries-exhausted")
    assert f.evidence[0].line == 20
    assert f.numbers.get("attempts") in (5, "5")
    assert "verifier.reward_function" in [k.name for k in f.knobs]


def test_a_healthy_prime_rl_orchestrator_pause_is_no_failure() -> None:
    report = triage_dir(extra_case("1034-") / "input")
    assert all(f.severity not in ("error", "warning") for f in report.findings)


# AReaL/realhf's stats table under its Ray prefix, colour codes kept (AReaL issue #110's paste, 2025-06)
BOXED = """\x1b[36m(MasterWorker pid=11559)\x1b[0m ╒══════════════════════════════╤════════════════╤════════════════════════╤════════════════╕
\x1b[36m(MasterWorker pid=11559)\x1b[0m │ ppo_actor/n_valid_tokens │ 1.6115e+05 │ ppo_actor/old_logp/avg │ -3.0953e-01 │
\x1b[36m(MasterWorker pid=11559)\x1b[0m │──────────────────────────────┼────────────────┼────────────────────────┼────────────────┤
\x1b[36m(MasterWorker pid=11559)\x1b[0m │ ppo_actor/no_eos_ratios/avg │ 1.0000e+00 │ ppo_actor/clip_ratio/min │ 0.0000e+00 │
\x1b[36m(MasterWorker pid=11559)\x1b[0m │ ppo_actor/seq_len/max │ 4.3120e+03 │ │ │
\x1b[36m(MasterWorker pid=11559)\x1b[0m ╘══════════════════════════════╧════════════════╧════════════════════════╧════════════════╛
"""


def test_a_box_drawn_stats_table_of_name_value_pairs_is_one_record() -> None:
    (rec,) = _records(BOXED)
    values = rec.fields["values"]
    assert values == {"ppo_actor/n_valid_tokens": 161150.0, "ppo_actor/old_logp/avg": -0.30953,
                      "ppo_actor/no_eos_ratios/avg": 1.0, "ppo_actor/clip_ratio/min": 0.0, "ppo_actor/seq_len/max": 4312.0}
    line = rec.fields["lines"]["ppo_actor/no_eos_ratios/avg"]
    assert line.lineno == 4 and "\x1b" not in line.text and line.text.startswith("(MasterWorker pid=11559)")


def test_sequences_without_eos_in_an_areal_table_are_the_response_cap(tmp_path: Path) -> None:
    f = top(triage_files(tmp_path, {"master.log": BOXED}))
    assert (f.category, f.rule, f.evidence[0].line) == ("generation-tail", "gen.cap-hit-rate", 4)
