"""Client-side tail and prompt-budget families from fresh real cases (round 3): pasted `key: value   key: value`
summaries, dataset length filters (ms-swift, verl), ms-swift's MaxLengthError, and verl's aborted ratio kept
apart from cap hits. Lines are as quoted in the threads named beside them."""

from __future__ import annotations

from pathlib import Path

from conftest import top, triage_files
from domain import SIX

from triage.model import SEVERITY_RANK, Line
from triage.parsers.metrics import merge_records, parse

# greyhaven-ai/autocontext#1067 (TRL GRPO on Modal, 2026-06): the metrics as the PR quotes them
TRL_SUMMARY = ("completions/mean_length: 256   completions/clipped_ratio: 1   mean_terminated_length: 0\n"
               "reward: 0   reward_std: 0   frac_reward_zero_std: 1   loss: 0   grad_norm: 0\n")


def L(lineno: int, text: str, msg: str | None = None) -> Line:  # noqa: N802
    return Line("t.log", lineno, text, text if msg is None else msg)


def _warnings(report):
    return [f for f in report.findings if f.category in SIX and SEVERITY_RANK[f.severity] <= 1]


def test_a_pasted_summary_is_a_metric_record_and_its_clip_ratio_a_cap_hit(tmp_path: Path) -> None:
    f = top(triage_files(tmp_path, {"train.log": TRL_SUMMARY}))
    assert (f.rule, f.category) == ("gen.cap-hit-rate", "generation-tail")
    assert (f.evidence[0].file, f.evidence[0].line) == ("train.log", 1)
    assert f.numbers["metric"] == "completions/clipped_ratio" and f.numbers["max"] == 1.0
    assert f.numbers["response_length_mean"] == 256
    assert "inference.max_response_length" in {k.name for k in f.knobs}


def test_a_summary_line_must_be_pairs_only() -> None:
    # prose holding one pair, or text between pairs, is not a summary record
    assert parse(L(1, "we saw clipped_ratio: 1 at every step")) is None
    assert parse(L(1, "completions/clipped_ratio: 1   then it stopped   reward: 0")) is None
    ev = parse(L(1, "reward: 0.25\treward_std: 0.1"))
    assert ev is not None and ev.fields["values"] == {"reward": 0.25, "reward_std": 0.1}


def test_ms_swift_dataset_filter_share_warns_with_both_counts(tmp_path: Path) -> None:
    # modelscope/ms-swift#6414 (Qwen3-VL video rows over max_length, truncation_strategy delete)
    report = triage_files(tmp_path, {"train.log": "[INFO:swift] Dataset filtered, origin length: 6486, "
                                                  "filtered dataset length: 4531\n"})
    f = top(report)
    assert (f.rule, f.category, f.severity) == ("prompt.dataset-length-filtered", "prompt-budget", "warning")
    assert (f.evidence[0].file, f.evidence[0].line) == ("train.log", 1)
    assert f.numbers["dataset_size"] == 6486 and f.numbers["dataset_kept"] == 4531
    assert round(f.numbers["dropped_share"], 4) == 0.3014
    assert report.worst() == "warning"  # data dropped is a warning, not a crash: the run does not gate


def test_verl_dataset_len_pair_is_joined_and_a_small_drop_stays_quiet(tmp_path: Path) -> None:
    # verl rl_dataset.py prints `dataset len:` then `filter dataset len:` (train set first, then val set)
    lines = [L(1, "(TaskRunner pid=1) dataset len: 7809", "dataset len: 7809"),
             L(4, "(TaskRunner pid=1) filter dataset len: 7808", "filter dataset len: 7808"),
             L(6, "(TaskRunner pid=1) dataset len: 1319", "dataset len: 1319"),
             L(7, "(TaskRunner pid=1) filter dataset len: 1000", "filter dataset len: 1000")]
    recs = merge_records([e for e in map(parse, lines) if e is not None])
    assert [r.fields["values"]["dataset/kept"] for r in recs] == [7808, 1000]
    assert recs[0].fields["values"]["dataset/dropped_share"] == round(1 / 7809, 6)
    healthy = triage_files(tmp_path / "a", {"train.log": "dataset len: 7809\nfilter dataset len: 7808\n"})
    assert not _warnings(healthy)
    dropped = top(triage_files(tmp_path / "b", {"train.log": "dataset len: 1319\nFilter: 100%|#| 1319/1319\n"
                                                             "filter dataset len: 1000\n"}))
    assert dropped.rule == "prompt.dataset-length-filtered"
    assert [(e.line) for e in dropped.evidence] == [1, 3]


def test_ms_swift_max_length_error_is_a_framework_length_check(tmp_path: Path) -> None:
    # modelscope/ms-swift#4754: many such rows, then the run stops
    f = top(triage_files(tmp_path, {"train.log": "swift.llm.template.base.MaxLengthError: Current length of "
                                                 "row(25000) is larger than the max_length(2048).\n"}))
    assert (f.rule, f.category, f.severity) == ("prompt.framework-length-check", "prompt-budget", "error")
    assert f.numbers["input_tokens"] == 25000 and f.numbers["max_length"] == 2048


def test_aborted_requests_are_not_cap_hits(tmp_path: Path) -> None:
    line = ("step:3 - response_length/mean:1520.0 - response_length/max:8192.0 - response_length/clip_ratio:0.01 - "
            "response/aborted_ratio:0.45\n")
    report = triage_files(tmp_path, {"train.log": line * 3})
    assert "gen.cap-hit-rate" not in {f.rule for f in report.findings}
