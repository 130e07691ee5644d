"""What a check sees (the run's parsed facts) and what it returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..model import Event, Line
from ..stats import EngineStats

if TYPE_CHECKING:
    from ..knobs import Config


@dataclass
class Run:
    engines: dict[str, EngineStats] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)  # settings, capacity, pools, startup...
    config: Config | None = None  # the effective configuration (knob values with their provenance)

    _metrics: list[Event] | None = field(default=None, repr=False, compare=False)
    _series: dict[str, list[tuple[Event, float]]] | None = field(default=None, repr=False, compare=False)

    def series(self, key: str) -> list[tuple[Event, float]]:
        """(record, value) of every metric record holding `key`, in order (indexed once for all checks)."""
        if self._series is None:
            index: dict[str, list[tuple[Event, float]]] = {}
            for ev in self.metrics():
                for k, v in ev.fields["values"].items():
                    index.setdefault(k, []).append((ev, v))
            self._series = index
        return self._series.get(key, [])

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
