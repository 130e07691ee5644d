"""The run's effective configuration: each canonical knob's current value and where it came from.

Values come from what the logs reveal, strongest first: the engine's resolved capacity line
(`max_total_num_tokens=… max_running_requests=… context_len=…`) and numbers inside error messages, then
the `server_args=` dump, then launch command lines and Namespace dumps, then run config files.
knobs.yaml says which field and flag names belong to which knob.
"""

from __future__ import annotations

from typing import Any

from .model import Event, Hit, Knob
from .patterns import Library

STRENGTH = {"engine": 5, "capacity": 5, "message": 4, "server_args": 3, "command line": 2, "launch args": 2, "config": 1}
EVENT_SOURCE = {"capacity": "capacity", "kv_pool": "capacity", "mamba_pool": "capacity"}
POOL_FIELDS = {"kv_pool": {"tokens": "max_total_num_tokens"}, "mamba_pool": {}}


class Config:
    """canonical knob name -> (value, source description)."""

    def __init__(self, lib: Library):
        self.lib = lib
        self.values: dict[str, tuple[Any, str, int]] = {}
        self.index: dict[str, str] = {}
        for spec in lib.knobs.values():
            self.index[spec.name] = spec.name
            for name in spec.sources.get("fields", []) + spec.sources.get("flags", []):
                self.index.setdefault(name, spec.name)

    def put(self, knob: str, value: Any, source: str, strength: int) -> None:
        if value is None or value == "":
            return
        old = self.values.get(knob)
        if old is None or strength > old[2]:
            self.values[knob] = (value, source, strength)

    def add_fields(self, fields: dict[str, Any], source: str, strength: int) -> None:
        for name, value in fields.items():
            knob = self.index.get(name)
            if knob:
                self.put(knob, value, source, strength)

    def get(self, knob: str) -> tuple[Any, str] | None:
        v = self.values.get(knob)
        return (v[0], v[1]) if v else None

    def as_dict(self) -> dict[str, dict[str, Any]]:
        return {k: {"value": v[0], "source": v[1]} for k, v in sorted(self.values.items())}


def build_config(lib: Library, events: list[Event], hits: list[Hit]) -> Config:
    cfg = Config(lib)
    for ev in events:
        where = f"{ev.line.file}:{ev.line.lineno}"
        if ev.kind == "settings":
            kind = ev.fields.get("_source", "command line")
            fields = {k: v for k, v in ev.fields.items() if not k.startswith("_")}
            cfg.add_fields(fields, f"{kind} {where}", STRENGTH.get(kind, 2))
        elif ev.kind == "capacity":
            cfg.add_fields(ev.fields, f"engine startup {where}", STRENGTH["capacity"])
        elif ev.kind == "kv_pool":
            cfg.add_fields({"max_total_num_tokens": ev.fields["tokens"]}, f"KV pool allocated {where}", STRENGTH["capacity"])
        elif ev.kind == "mamba_pool":
            cfg.add_fields(ev.fields, f"mamba pool allocated {where}", STRENGTH["capacity"])
        elif ev.kind == "config":
            cfg.add_fields(ev.fields, f"config {ev.line.file}", STRENGTH["config"])
    for hit in hits:
        rule = lib.rule(hit.rule)
        if rule is None:
            continue
        for knob, group in rule.reveals.items():
            if group in hit.numbers:
                cfg.put(knob, hit.numbers[group], f"message {hit.line.file}:{hit.line.lineno}", STRENGTH["message"])
    return cfg


def knob(lib: Library, name: str, cfg: Config | None) -> Knob:
    spec = lib.knobs[name]
    current = cfg.get(name) if cfg else None
    return Knob(name=name, aliases=list(spec.aliases), current=current[0] if current else None,
                source=current[1] if current else "", meaning=spec.meaning)
