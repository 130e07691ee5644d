"""What a check sees (the run's parsed facts) and what it returns."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from triage.model import Event, Line
from triage.parsers.engine_stats import EngineStats
from triage.parsers.series_store import MetricStore, Point, Summary
from triage.parsers.vocabulary import canonical, reward_function

if TYPE_CHECKING:
    from triage.effective_config import Config


@dataclass
class Run:
    """The run's parsed facts. Trainer metric records live in a MetricStore (parsers/series_store.py): exact
    summaries of every series (counts, non-finite and zero values, extremes, first and last points) and a bounded
    view of the records (every record while the run has at most the store's cap of them; else an evenly spread
    sample, the last records and every record a summary points at). Checks read the series from the view and
    their counts, first/last evidence and all-zero / non-finite answers from the summaries."""

    engines: dict[str, EngineStats] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)  # settings, capacity, pools, startup, metric_series...
    config: Config | None = None  # the effective configuration (knob values with their provenance)

    _store: MetricStore | None = field(default=None, repr=False, compare=False)
    _metrics: list[Event] | None = field(default=None, repr=False, compare=False)
    _by_key: dict[str, list[Event]] | None = field(default=None, repr=False, compare=False)
    _series: dict[str, list[tuple[Event, float]]] = field(default_factory=dict, repr=False, compare=False)
    _order: dict[int, int] = field(default_factory=dict, repr=False, compare=False)  # id(record) -> position
    _timers: list[tuple[Event, int]] | None = field(default=None, repr=False, compare=False)
    _memo: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def once(self, name: str, compute: Callable[[Run], Any]) -> Any:
        """compute(run), computed once for all checks that need it."""
        if name not in self._memo:
            self._memo[name] = compute(self)
        return self._memo[name]

    def store(self) -> MetricStore:
        """The run's metric records: each scanned file's store (a `metric_series` event), joined in file order;
        records given one by one as `metrics` events (rule examples, tests) go into a store of their own."""
        if self._store is None:
            stores = [e.fields["store"] for e in self.events if e.kind == "metric_series"]
            loose = [e for e in self.events if e.kind == "metrics"]
            if loose:
                one = MetricStore()
                for ev in loose:
                    one.add(ev)
                stores.append(one)
            self._store = MetricStore.join(stores) if stores else MetricStore()
        return self._store

    def _index(self) -> dict[str, list[Event]]:
        """The viewed records holding each key, in log order, gathered in one pass (checks ask for a few dozen
        keys of thousands of records)."""
        if self._by_key is None:
            by_key: defaultdict[str, list[Event]] = defaultdict(list)
            for pos, ev in self.store().view():
                self._order[id(ev)] = pos
                for key in ev.fields["values"]:
                    by_key[key].append(ev)
            self._by_key = dict(by_key)
        return self._by_key

    def series(self, key: str) -> list[tuple[Event, float]]:
        """(record, value) of every viewed metric record holding `key`, in log order."""
        found = self._series.get(key)
        if found is None:
            found = self._series[key] = [(ev, ev.fields["values"][key]) for ev in self._index().get(key, ())]
        return found

    def summary(self, key: str) -> Summary | None:
        """The exact summary of raw key `key` over every record (None: no record holds it)."""
        return self.store().sums.get(key)

    def canon_summary(self, name: str) -> Summary | None:
        """The exact summary of canonical series `name`: each record's preferred alias (None: never printed)."""
        return self.store().canon.get(name)

    def fn_summaries(self) -> dict[str, Summary]:
        """Per reward function, the exact summary of its keys' values."""
        return self.store().fns

    def point(self, p: Point) -> tuple[Event, float, str]:
        """(record, value, raw key) of a summary's point."""
        return self.store().record(p[0]), p[1], p[2]

    def count_holding(self, keys: Any) -> int:
        """Metric records holding any of `keys`, over the whole run."""
        return self.store().count_holding(keys)

    def tag_records(self, tags: Any, frameworks: Any = None) -> tuple[int, Event | None, Event | None]:
        """(records, first, last) of the metric records whose tag is one of `tags` (and, given `frameworks`, whose
        framework is one of them), over the whole run."""
        store = self.store()
        found = [t for (fw, tag), t in store.tags.items() if tag in tags and (not frameworks or fw in frameworks)]
        if not found:
            return 0, None, None
        first, last = min(t[1] for t in found), max(t[2] for t in found)
        return sum(t[0] for t in found), store.record(first), store.record(last)

    def scaled(self, hits: list[Event], seen: list[Event], total: int) -> int:
        """How many of the run's `total` records are like `hits` (viewed records, among the viewed `seen`): their
        number when nothing was thinned, else estimated from the evenly spread sample alone (the view's pinned
        records are the extremes, which would inflate the share), never below the hits seen."""
        store = self.store()
        if not store.thinned:
            return len(hits)
        self._index()
        sampled = store.sampled_positions()
        n_hits = sum(1 for ev in hits if self._order[id(ev)] in sampled)
        n_seen = sum(1 for ev in seen if self._order[id(ev)] in sampled)
        return max(len(hits), round(n_hits * total / n_seen) if n_seen else 0)

    def aliases(self, name: str) -> list[str]:
        """The raw keys of this run that hold canonical series `name` (parsers/vocabulary.py), preferred first."""
        found = self._memo.get(f"aliases:{name}")
        if found is None:
            ranked = sorted((c[1], k) for k in self.store().sums if (c := canonical(k)) is not None and c[0] == name)
            found = self._memo[f"aliases:{name}"] = [k for _, k in ranked]
        return found

    def canon(self, name: str) -> list[tuple[Event, float, str]]:
        """(record, value, raw key) of canonical series `name` over the viewed records, in log order: in each
        record that holds one of its aliases, the preferred one (a verl record's critic/score/mean before its
        critic/rewards/mean)."""
        found = self._memo.get(f"canon:{name}")
        if found is None:
            keys = self.aliases(name)
            found = []
            for ev in self.holding(keys):
                values = ev.fields["values"]
                key = next(k for k in keys if k in values)
                found.append((ev, values[key], key))
            self._memo[f"canon:{name}"] = found
        return found

    def reward_keys(self) -> list[str]:
        """The raw keys of every reward series: the step total's aliases and each reward function's keys."""
        return self.aliases("reward") + sorted(k for k in self.store().sums if reward_function(k) is not None)

    def reward_functions(self) -> dict[str, list[tuple[Event, float, str]]]:
        """Per reward function (TRL rewards/<fn>/mean, MLX-LM `<fn> mean`): (record, value, raw key) over the
        viewed records, in log order."""
        found = self._memo.get("reward_functions")
        if found is None:
            found = {}
            self._index()
            for k in sorted(self.store().sums):
                fn = reward_function(k)
                if fn is not None:
                    found.setdefault(fn, []).extend((ev, v, k) for ev, v in self.series(k))
            for s in found.values():
                s.sort(key=lambda t: self._order[id(t[0])])
            self._memo["reward_functions"] = found
        return found

    def metric_keys(self) -> set[str]:
        """Every key some metric record holds."""
        return set(self.store().sums)

    def holding(self, keys: Any) -> list[Event]:
        """The viewed metric records holding any of `keys`, in log order."""
        index = self._index()
        found = {id(ev): ev for key in keys for ev in index.get(key, ())}
        return sorted(found.values(), key=lambda ev: self._order[id(ev)])

    def timers(self) -> list[tuple[Event, int]]:
        """The trainer's timer readings (stage start/end, weight publication), each with how many lines printed it:
        each scanned file's `timer_series` (parsers/metrics.py TimerStore), and `timer` events given one by one."""
        if self._timers is None:
            self._timers = [pair for e in self.events if e.kind == "timer_series" for pair in e.fields["timers"]]
            self._timers += [(e, 1) for e in self.events if e.kind == "timer"]
        return self._timers

    def metrics(self) -> list[Event]:
        """The viewed metric records, in log order (every record unless the run is long enough to be thinned)."""
        if self._metrics is None:
            self._metrics = [ev for _, ev in self.store().view()]
        return self._metrics


@dataclass
class CheckResult:
    evidence: list[Line]
    count: int = 1
    numbers: dict[str, Any] = field(default_factory=dict)
    severity: str = ""  # overrides the rule's severity when set
    title: str = ""  # overrides the rule's title when set (a check that tells two cases apart)
    priority: int = 0  # overrides the rule's priority when set (a symptom ranked below the cause that fed it)
