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
