"""parsers/series_store.py: metric records in bounded memory, exact summaries, and the same check answers as the
full series (issue 16)."""

from __future__ import annotations

import math
import pickle
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from triage.checks import health
from triage.checks import series as ts
from triage.checks.base import Run
from triage.model import Event, Line
from triage.parsers.metrics import Records, StoredRecords, merge_records, parse
from triage.parsers.series_store import TAIL, TOP, MetricStore


def _record(i: int, values: dict[str, float], file: str = "train.log") -> Event:
    return Event("metrics", Line(file, i + 1, f"step {i}: {values}", f"step {i}: {values}"),
                 {"framework": "slime", "tag": "step", "step": i, "values": values})


def _store(records: list[Event], cap: int, tail: int = TAIL) -> Run:
    store = MetricStore(cap=cap, tail=tail)
    for ev in records:
        store.add(ev)
    ev = store.event()
    return Run(events=[ev] if ev is not None else [])


def test_two_hundred_thousand_records_keep_a_fixed_number_of_objects() -> None:
    """200 k records of three keys: the store holds at most cap + TAIL + the pinned records, per key a fixed
    number of points, whatever the count; the summaries still count every record."""
    store = MetricStore(cap=1024)
    n = 200_000
    for i in range(n):
        store.add(_record(i, {"train/grad_norm": (i * 7919) % 1000 / 1000, "rollout/raw_reward": 0.5,
                              "perf/step_time": 100.0 + i % 13}))
    assert store.total == n and store.thinned
    pins_bound = 3 * (6 + TOP) + 2  # per key: first, last, lo, hi, first/last non-finite, TOP highest; per tag 2
    assert store.retained() <= 1024 + TAIL + pins_bound
    assert len(store._sample) <= 1024
    s = store.sums["train/grad_norm"]
    assert s.n == n and s.bad == 0 and s.hi is not None and s.hi[1] == 0.999 and s.lo is not None and s.lo[1] == 0.0
    assert store.count_holding(["rollout/raw_reward"]) == n
    assert store.canon["reward"].n == n and store.canon["reward"].nonzero == n


def test_streamed_joins_hold_a_window_not_the_file() -> None:
    """Records are passed on as they leave the join window: the joiner never holds more than its window."""
    held: list[int] = []
    out: list[Event] = []
    records = Records(out.append)
    for i in range(20000):
        records.append(_record(i, {"train/loss": 0.1}))
        held.append(len(records.out))
    records.close()
    assert max(held) <= 257 and len(out) == 20000 and len(records.seen) <= 2 * 8192


def test_miles_duplicate_after_the_window_is_dropped_not_counted_twice() -> None:
    lines = [f"log_utils.py:542 - step {i}: {{'train/loss': 0.1}}" for i in range(400)]
    lines.append("model.py:854 - step 3: {'train/loss': 0.1}")  # MILES's second print, far below the first
    evs = [parse(Line("t.log", i + 1, t, t)) for i, t in enumerate(lines)]
    merged = merge_records([e for e in evs if e is not None])
    assert len(merged) == 400


def test_nan_deep_in_a_long_log_cites_its_exact_line() -> None:
    """A NaN grad norm at record 150 000 of 200 000: the error cites that record's line, and counts every record."""
    evs = [_record(i, {"train/grad_norm": math.nan if i == 150_000 else 0.3}) for i in range(200_000)]
    run = _store(evs, cap=512)
    (r,) = health.metric_non_finite({"keys": ["train/grad_norm"]}, run)
    assert [(e.file, e.lineno) for e in r.evidence] == [("train.log", 150_001)]
    assert r.count == 1 and r.numbers["records"] == 200_000


def test_stored_records_put_one_store_event_in_the_file_events() -> None:
    events: list[Event] = []
    records = StoredRecords(events)
    for i in range(10):
        records.append(_record(i, {"reward": 0.0}))
    records.close()
    (ev,) = events
    assert ev.kind == "metric_series" and ev.line.lineno == 10 and ev.fields["store"].total == 10


def test_files_joined_in_order_keep_first_last_and_extremes() -> None:
    a = MetricStore(cap=8)
    b = MetricStore(cap=8)
    for i in range(100):
        a.add(_record(i, {"x": float(i)}, "a.log"))
        b.add(_record(i, {"x": float(-i)}, "b.log"))
    joined = MetricStore.join([a, b])
    s = joined.sums["x"]
    assert s.n == 200
    assert s.first is not None and s.last is not None and s.lo is not None and s.hi is not None
    assert joined.record(s.first[0]).line.file == "a.log" and joined.record(s.last[0]).line.file == "b.log"
    assert s.hi[1] == 99.0 and s.lo[1] == -99.0 and joined.record(s.lo[0]).line.lineno == 100
    assert sorted(v for v, _, _ in s.top)[0] == 84.0  # the 16 highest: 84..99, all from a.log


VALUES = st.one_of(st.sampled_from([0.0, 1.0, 0.5, math.nan, math.inf]), st.floats(-1e3, 1e3))


def _answers(run: Run) -> list[tuple[object, ...]]:
    out = []
    for check, params in ((health.metric_non_finite, {"keys": ["train/grad_norm", "rollout/raw_reward"]}),
                          (ts.rewards_all_zero, {"min_steps": 3}), (ts.no_eos, {}),
                          (health.publication_missing, {}),
                          (health.no_policy_gradient, {"zero_keys": ["rollout/advantages"]})):
        for r in check(params, run):
            out.append((check.__name__, r.count, r.severity, r.title, sorted(r.numbers.items(), key=str),
                        [(e.file, e.lineno) for e in r.evidence]))
    return out


@settings(max_examples=60, deadline=None)
@given(st.lists(st.fixed_dictionaries({}, optional={"train/grad_norm": VALUES, "rollout/raw_reward": VALUES,
                                                    "val/num_eos_tokens": st.sampled_from([0.0, 2.0]),
                                                    "rollout/advantages": st.sampled_from([0.0, 0.1])}),
                min_size=1, max_size=400))
def test_thinned_store_answers_as_the_full_series(rows: list[dict[str, float]]) -> None:
    """The exact answers (non-finite, all-zero rewards, no EOS, no publication, degenerate advantages) of a
    store thinned to 8 sampled records and the last 4 equal those of a store that keeps every record."""
    evs = [_record(i, dict(v)) for i, v in enumerate(rows) if v]
    if not evs:
        return
    full = _store(evs, cap=10**6)
    thin = _store([_record(i, dict(v)) for i, v in enumerate(rows) if v], cap=8, tail=4)
    answers = _answers(full)
    if any(name == "no_policy_gradient" for name, *_ in answers):  # read from the view: equal when nothing was dropped
        return
    assert _answers(thin) == answers


def test_long_verl_log_end_to_end(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """fixtures/real/040's verl step line printed for 6 000 steps (more than the store samples), the clip ratio
    healthy except at steps 4 000 and 4 001 and grad_norm NaN at step 5 000: the cap-hit finding counts those two
    steps and cites the first and the last, the NaN error cites its line, and the run summary counts every record."""
    from triage.analyze import Settings, analyze

    real = Path(__file__).parent.parent / "fixtures/real/040-verl-step-response-clip-ratio-0p52/input/train.log"
    template = real.read_text(encoding="utf-8").splitlines()[0]
    lines = []
    for step in range(1, 6001):
        text = template.replace("step:5 - ", f"step:{step} - ")
        if step not in (4000, 4001):
            text = text.replace("response_length/clip_ratio:0.521", "response_length/clip_ratio:0.010")
        if step == 5000:
            text = text.replace("actor/grad_norm:0.180", "actor/grad_norm:nan")
        lines.append(text)
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = analyze(Settings(paths=[str(tmp_path)]))
    by_rule = {f.rule: f for f in report.findings}
    nan = by_rule["health.grads-non-finite"]
    assert [(e.file, e.line) for e in nan.evidence] == [("train.log", 5000)] and nan.numbers["records"] == 6000
    cap = by_rule["gen.cap-hit-rate"]
    # the worst (first of two equal) = the first, then the last step over the threshold
    assert cap.count == 2 and [e.line for e in cap.evidence] == [4000, 4001]
    assert (cap.first.line, cap.last.line) == (4000, 4001)
    assert cap.numbers["max"] == 0.521
    assert by_rule["health.summary"].numbers["records"] == 6000


def test_a_store_crosses_process_boundaries() -> None:
    """A worker's file result (with its store) is pickled back to the parent."""
    store = MetricStore(cap=4)
    for i in range(50):
        store.add(_record(i, {"reward": float(i)}))
    back = pickle.loads(pickle.dumps(store))
    assert back.total == 50 and back.sums["reward"].hi == store.sums["reward"].hi
    assert [p for p, _ in back.view()] == [p for p, _ in store.view()]


def _references(store: MetricStore) -> dict[int, int]:
    """Position -> how many slots refer to it: every summary's points and highest values, every tag's first and last."""
    refs: dict[int, int] = {}
    for d in (store.sums, store.canon, store.fns):
        for s in d.values():
            points = [s.first, s.last, s.lo, s.hi, s.bad_first, s.bad_last] + [(p, v, k) for v, p, k in s.top]
            for point in points:
                if point is not None:
                    refs[point[0]] = refs.get(point[0], 0) + 1
    for _, first, last in store.tags.values():
        refs[first] = refs.get(first, 0) + 1
        refs[last] = refs.get(last, 0) + 1
    return refs


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["step", "perf"]),
                          st.dictionaries(st.sampled_from(["train/loss", "rollout/raw_reward", "rewards/acc/mean",
                                                           "rewards/acc", "rollout/response_lengths",
                                                           "rollout/response_lengths/max", "perf/step_time"]),
                                          st.sampled_from([0.0, 1.0, -2.0, 3.5, 0.25, math.nan, math.inf, -math.inf]),
                                          min_size=1)), min_size=1, max_size=120))
def test_pins_are_exactly_the_references_of_summaries_heaps_and_tags(recs: list[tuple[str, dict[str, float]]]) -> None:
    """add() counts a record's references to its own position and pins them once: the pinned positions, their counts
    and their order are those of the slots that refer to them (ties, non-finite values, two keys of one reward
    function in one record, whose heap may let go of a value the same record gave it)."""
    store = MetricStore(cap=16, tail=4)
    for i, (tag, values) in enumerate(recs):
        ev = _record(i, values)
        ev.fields["tag"] = tag
        store.add(ev)
        want = _references(store)
        assert {p: pin[1] for p, pin in store._pins.items()} == want
        assert list(store._pins) == sorted(store._pins)
        assert all(pin[0].line.lineno == p + 1 for p, pin in store._pins.items())


def test_a_heap_letting_go_of_a_value_of_the_same_record_unpins_it() -> None:
    """Two keys of one reward function (`rewards/acc/mean`, `rewards/acc`) update one summary: with its heap of
    highest values full, the record's first value enters it and its second pushes that one out again."""
    store = MetricStore(cap=64)
    for i in range(TOP // 2):
        store.add(_record(i, {"rewards/acc/mean": 10.0 + 2 * i, "rewards/acc": 11.0 + 2 * i}))
    n = TOP // 2
    store.add(_record(n, {"rewards/acc/mean": 10.5, "rewards/acc": 30.0}))
    acc = store.fns["acc"]
    assert sorted(v for v, _, _ in acc.top)[:2] == [11.0, 12.0] and max(v for v, _, _ in acc.top) == 30.0
    assert {p: pin[1] for p, pin in store._pins.items()} == _references(store)
    assert store._pins[n][1] == _references(store)[n]
