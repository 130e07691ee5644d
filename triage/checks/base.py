"""What a check sees (the run's parsed facts) and what it returns."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from triage.model import Event, Line
from triage.parsers.engine_stats import EngineStats
from triage.parsers.vocabulary import canonical, reward_function

if TYPE_CHECKING:
    from triage.effective_config import Config


@dataclass
class Run:
    engines: dict[str, EngineStats] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)  # settings, capacity, pools, startup...
    config: Config | None = None  # the effective configuration (knob values with their provenance)

    _metrics: list[Event] | None = field(default=None, repr=False, compare=False)
    _by_key: dict[str, list[Event]] | None = field(default=None, repr=False, compare=False)
    _series: dict[str, list[tuple[Event, float]]] = field(default_factory=dict, repr=False, compare=False)
    _order: dict[int, int] = field(default_factory=dict, repr=False, compare=False)  # id(record) -> position
    _timers: list[Event] | None = field(default=None, repr=False, compare=False)
    _memo: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def once(self, name: str, compute: Callable[[Run], Any]) -> Any:
        """compute(run), computed once for all checks that need it."""
        if name not in self._memo:
            self._memo[name] = compute(self)
        return self._memo[name]

    def _index(self) -> dict[str, list[Event]]:
        """The metric records holding each key, in log order, gathered in one pass over the records (checks ask
        for a few dozen keys of thousands of records)."""
        if self._by_key is None:
            by_key: defaultdict[str, list[Event]] = defaultdict(list)
            for i, ev in enumerate(self.metrics()):
                self._order[id(ev)] = i
                for key in ev.fields["values"]:
                    by_key[key].append(ev)
            self._by_key = dict(by_key)
        return self._by_key

    def series(self, key: str) -> list[tuple[Event, float]]:
        """(record, value) of every metric record holding `key`, in log order."""
        found = self._series.get(key)
        if found is None:
            found = self._series[key] = [(ev, ev.fields["values"][key]) for ev in self._index().get(key, ())]
        return found

    def aliases(self, name: str) -> list[str]:
        """The raw keys of this run that hold canonical series `name` (parsers/vocabulary.py), preferred first."""
        found = self._memo.get(f"aliases:{name}")
        if found is None:
            ranked = sorted((c[1], k) for k in self._index() if (c := canonical(k)) is not None and c[0] == name)
            found = self._memo[f"aliases:{name}"] = [k for _, k in ranked]
        return found  # type: ignore[no-any-return]

    def canon(self, name: str) -> list[tuple[Event, float, str]]:
        """(record, value, raw key) of canonical series `name` in log order: in each record that holds one of
        its aliases, the preferred one (a verl record's critic/score/mean before its critic/rewards/mean)."""
        found = self._memo.get(f"canon:{name}")
        if found is None:
            keys = self.aliases(name)
            found = []
            for ev in self.holding(keys):
                values = ev.fields["values"]
                key = next(k for k in keys if k in values)
                found.append((ev, values[key], key))
            self._memo[f"canon:{name}"] = found
        return found  # type: ignore[no-any-return]

    def reward_functions(self) -> dict[str, list[tuple[Event, float, str]]]:
        """Per reward function (TRL rewards/<fn>/mean, MLX-LM `<fn> mean`): (record, value, raw key) in log order."""
        found = self._memo.get("reward_functions")
        if found is None:
            found = {}
            for k in sorted(self._index()):
                fn = reward_function(k)
                if fn is not None:
                    found.setdefault(fn, []).extend((ev, v, k) for ev, v in self.series(k))
            for s in found.values():
                s.sort(key=lambda t: self._order[id(t[0])])
            self._memo["reward_functions"] = found
        return found  # type: ignore[no-any-return]

    def metric_keys(self) -> set[str]:
        """Every key some metric record holds."""
        return set(self._index())

    def holding(self, keys: Any) -> list[Event]:
        """The metric records holding any of `keys`, in log order."""
        index = self._index()
        found = {id(ev): ev for key in keys for ev in index.get(key, ())}
        return sorted(found.values(), key=lambda ev: self._order[id(ev)])

    def timers(self) -> list[Event]:
        """The trainer's timer events (stage start/end, weight publication)."""
        if self._timers is None:
            self._timers = [e for e in self.events if e.kind == "timer"]
        return self._timers

    def metrics(self) -> list[Event]:
        """The metric records (computed once: every metric check asks for them)."""
        if self._metrics is None:
            self._metrics = [e for e in self.events if e.kind == "metrics"]
        return self._metrics


@dataclass
class CheckResult:
    evidence: list[Line]
    count: int = 1
    numbers: dict[str, Any] = field(default_factory=dict)
    severity: str = ""  # overrides the rule's severity when set
    title: str = ""  # overrides the rule's title when set (a check that tells two cases apart)
