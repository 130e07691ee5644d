"""The run's effective configuration: each canonical knob's current value and where it came from.

Values come from what the logs reveal, strongest first: the engine's resolved capacity line
(`max_total_num_tokens=… max_running_requests=… context_len=…`) and numbers inside error messages, then
the `server_args=` dump, then launch command lines and Namespace dumps, then run config files.
knobs.yaml says which field and flag names belong to which knob.

Every value also carries its origin, because the checks must tell the two apart:
- `requested`: what a person asked for (a config file, a launch command line or argument dump, a field of
  `server_args` that SGLang leaves at the user's value);
- `resolved`: what the engine decided by itself (the capacity line, the allocated pools, the fields SGLang
  fills in automatically before it prints `server_args`). A resolved default such as
  `max_running_requests=4096` is not a choice anyone made and must not be judged like one.
"""

from __future__ import annotations

import re
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from triage.library.rules import KnobSpec, Library
from triage.model import Event, Hit, Knob, Line

STRENGTH = {"engine": 5, "capacity": 5, "message": 4, "server_args": 3, "command line": 2, "launch args": 2, "config": 1}

REQUESTED = "requested"
RESOLVED = "resolved"

# server_args fields SGLang fills in itself before the dump (ServerArgs.__post_init__; log-formats.md §A.a):
# their printed value is an automatic default unless a person set it.
AUTO_SERVER_ARGS = {"mem_fraction_static", "chunked_prefill_size", "cuda_graph_max_bs", "cuda_graph_bs",
                    "max_prefill_tokens", "page_size"}

# Config sections whose leaf names must not be read as the policy's knobs (a judge's max_context_length is
# judge.max_context_length, not inference.max_context_length).
NON_POLICY_SECTIONS = {"judge", "verifier", "reward_model", "reward", "rm", "critic", "eval", "evaluation"}

# Which facts (settings that are not knobs: colocate, context-parallel size...) and each knob's and fact's value
# type (whole number, fraction, switch) are the library's: knobs.yaml `facts:` and `type:`.
K_SUFFIX = re.compile(r"^(\d+)\s*[kK]$")  # "64K" tokens = 65,536


@dataclass
class Setting:
    """One knob (or fact) value with its provenance."""

    value: Any
    source: str  # e.g. "config run.yaml:4", "engine startup driver.log:12"
    strength: int
    origin: str = REQUESTED
    line: Line | None = None
    via: str = ""  # the field or flag name the value was printed under (a vLLM flag names a canonical knob)


def coerce(spec: KnobSpec | None, value: Any) -> tuple[Any, str]:
    """(value in the knob's type, '') or (None, what is wrong with it); a knob of no type keeps what was printed."""
    if value is None or value == "" or (isinstance(value, str) and value.lower() in ("none", "null")):
        return None, ""
    vtype = spec.type if spec is not None else "text"
    if vtype == "switch":
        if isinstance(value, bool):
            return value, ""
        if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no"):
            return value.lower() in ("true", "1", "yes"), ""
        return None, f"expected true or false, got {value!r}"
    if vtype == "whole":
        return _whole(value, bool(spec and spec.minus_one))
    if vtype == "fraction":
        try:
            if isinstance(value, bool):
                raise ValueError
            f = float(value)
        except (TypeError, ValueError):
            return None, f"expected a fraction between 0 and 1, got {value!r}"
        if not 0 < f <= 1:
            return None, f"expected a fraction between 0 and 1, got {f}"
        return f, ""
    return value, ""


def _whole(value: Any, minus_one_ok: bool) -> tuple[Any, str]:
    v = value
    if isinstance(v, str):
        m = K_SUFFIX.match(v.strip())
        v = int(m.group(1)) * 1024 if m else v.strip().replace("_", "").replace(",", "")
    try:
        if isinstance(v, bool):
            raise ValueError
        f = float(v)
        if f != int(f):
            raise ValueError
        n = int(f)
    except (TypeError, ValueError, OverflowError):
        return None, f"expected a whole number, got {value!r}"
    if n < 0 and not (n == -1 and minus_one_ok):
        return None, f"must not be negative, got {n}"
    return n, ""


class Config:
    """canonical knob name -> its strongest Setting; also the strongest requested and resolved Setting."""

    def __init__(self, lib: Library):
        self.lib = lib
        self.values: dict[str, Setting] = {}
        self.requested_values: dict[str, Setting] = {}
        self.resolved_values: dict[str, Setting] = {}
        self.facts: dict[str, Setting] = {}
        self.by_file: dict[tuple[str, str], Setting] = {}  # (knob, file) -> strongest value that file shows
        self.problems: list[tuple[str, str]] = []  # (file, one-line message) of values that could not be used
        self.framework = ""  # the trainer whose metric lines the run holds most of (verl, trl, ...), or ""
        self.index: dict[str, str] = {}
        for spec in lib.knobs.values():
            self.index[spec.name] = spec.name
            for name in spec.sources.get("fields", []) + spec.sources.get("flags", []):
                self.index.setdefault(name, spec.name)
        self.fact_index = {alias: spec.name for spec in lib.facts.values()
                           for alias in [spec.name, *spec.sources.get("fields", []), *spec.sources.get("flags", [])]}

    def put(self, knob: str, value: Any, source: str, strength: int, origin: str = REQUESTED,
            line: Line | None = None, via: str = "") -> None:
        is_fact = knob in self.lib.facts
        value, problem = coerce(self.lib.facts[knob] if is_fact else self.lib.knobs.get(knob), value)
        if problem:
            if source.startswith("config "):  # log lines quoting a flag are not configuration input
                self.problems.append((line.file if line else source, f"{source.removeprefix('config ')}: {knob}: {problem}"))
            return
        if value is None:
            return
        new = Setting(value, source, strength, origin, line, via)
        if line is not None:
            here = self.by_file.get((knob, line.file))
            if here is None or strength > here.strength:
                self.by_file[(knob, line.file)] = new
        table = self.facts if is_fact else self.values
        old = table.get(knob)
        if old is None or strength > old.strength:
            table[knob] = new
        if is_fact:
            return
        by_origin = self.requested_values if origin == REQUESTED else self.resolved_values
        old = by_origin.get(knob)
        if old is None or strength > old.strength:
            by_origin[knob] = new

    def _leaf_ok(self, parts: list[str]) -> bool:
        return len(parts) > 1 and not NON_POLICY_SECTIONS.intersection(p.lower() for p in parts[:-1])

    def lookup(self, name: str) -> str | None:
        """The knob a field, flag or dotted config key names."""
        if name in self.index:
            return self.index[name]
        parts = name.split(".")
        return self.index.get(parts[-1]) if self._leaf_ok(parts) else None

    def lookup_fact(self, name: str) -> str | None:
        """The fact (colocate, context-parallel size, ...) a field, flag or dotted config key names."""
        if name in self.fact_index:
            return self.fact_index[name]
        parts = name.split(".")
        return self.fact_index.get(parts[-1]) if self._leaf_ok(parts) else None

    def add_fields(self, fields: dict[str, Any], source: str, strength: int, origin: str = REQUESTED,
                   line: Line | None = None, lines: dict[str, Line] | None = None,
                   resolved_fields: AbstractSet[str] = frozenset()) -> None:
        for name, value in fields.items():
            if name.startswith("_"):
                continue
            for target in (self.lookup(name), self.lookup_fact(name)):
                if target:
                    ln = (lines or {}).get(name, line)
                    src = f"{source}:{ln.lineno}" if lines and ln is not None else source
                    self.put(target, value, src, strength, RESOLVED if name in resolved_fields else origin, ln,
                             via=name)

    def get(self, knob: str, file: str | None = None) -> tuple[Any, str] | None:
        """The knob's value; with `file`, the value that file itself shows when it is as strong as the best one
        (each engine logs its own resolved settings; a config file's request does not beat an engine's)."""
        v = self.current(knob, file)
        return (v.value, v.source) if v else None

    def current(self, knob: str, file: str | None = None) -> Setting | None:
        """The Setting `get` reads the value of."""
        v = self.values.get(knob)
        here = self.by_file.get((knob, file)) if file else None
        if here is not None and (v is None or here.strength >= v.strength):
            v = here
        return v

    def setting(self, knob: str) -> Setting | None:
        return self.values.get(knob) or self.facts.get(knob)

    def requested(self, knob: str) -> Setting | None:
        return self.requested_values.get(knob)

    def resolved(self, knob: str) -> Setting | None:
        return self.resolved_values.get(knob)

    def fact(self, name: str) -> Any:
        s = self.facts.get(name)
        return s.value if s else None

    def as_dict(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for k, v in sorted(self.values.items()):
            entry: dict[str, Any] = {"value": v.value, "source": v.source, "origin": v.origin}
            req = self.requested_values.get(k)
            if req is not None and req is not v:
                entry["requested"] = {"value": req.value, "source": req.source}
            out[k] = entry
        return out


CONFIG_EVENTS = frozenset(("settings", "capacity", "kv_pool", "swa_pool", "mamba_pool", "config"))
# metric shapes any program prints (parsers/metrics.py): they do not say which trainer ran
GENERIC_METRICS = frozenset(("tqdm", "kv", "dataset", "jsonl", "wandb"))
# How a trainer's own setting is written where its users set it: TRL's TrlParser/HfArgumentParser flags, verl's
# Hydra overrides (`data.max_response_length=8192`).
CLI_FORM = {"trl": "--{}", "verl": "{}="}


def build_config(lib: Library, events: list[Event], hits: list[Hit]) -> Config:
    cfg = Config(lib)
    # SGLang (since 2025-07) sizes a hybrid sliding-window model's cache as two pools, announced by `Use sliding window
    # memory pool. full_layer_tokens=F, swa_layer_tokens=S` and then one `KV Cache is allocated. #tokens: N` line per
    # pool. A whole sequence must fit the full-attention layers' pool (F); the window layers only hold the window.
    # So in a file that announced the split, the pool size is F, and the per-pool lines do not set it.
    split = {ev.line.file for ev in events if ev.kind == "swa_pool"}
    cfg.framework = _trainer(events)
    for ev in events:
        if ev.kind not in CONFIG_EVENTS:  # most events are metric records and timers
            continue
        where = f"{ev.line.file}:{ev.line.lineno}"
        if ev.kind == "settings":
            kind = ev.fields.get("_source", "command line")
            origin = RESOLVED if kind == "engine" else REQUESTED
            auto = AUTO_SERVER_ARGS if kind == "server_args" else frozenset()
            cfg.add_fields(ev.fields, f"{kind} {where}", STRENGTH.get(kind, 2), origin, ev.line, resolved_fields=auto)
        elif ev.kind == "capacity":
            cfg.add_fields(ev.fields, f"engine startup {where}", STRENGTH["capacity"], RESOLVED, ev.line)
        elif ev.kind == "swa_pool":
            cfg.add_fields({"max_total_num_tokens": ev.fields["full_layer_tokens"]}, f"full-layer KV pool {where}",
                           STRENGTH["capacity"], RESOLVED, ev.line)
        elif ev.kind == "kv_pool" and ev.line.file not in split:
            cfg.add_fields({"max_total_num_tokens": ev.fields["tokens"]}, f"KV pool allocated {where}",
                           STRENGTH["capacity"], RESOLVED, ev.line)
        elif ev.kind == "mamba_pool":
            cfg.add_fields(ev.fields, f"mamba pool allocated {where}", STRENGTH["capacity"], RESOLVED, ev.line)
        elif ev.kind == "config":
            cfg.add_fields(ev.fields, f"config {ev.line.file}", STRENGTH["config"], REQUESTED, ev.line,
                           lines=ev.fields.get("_lines") or {})
    for hit in hits:
        rule = lib.rule(hit.rule)
        if rule is None:
            continue
        for knob, group in rule.reveals.items():
            if group in hit.numbers:
                cfg.put(knob, hit.numbers[group], f"message {hit.line.file}:{hit.line.lineno}", STRENGTH["message"],
                        RESOLVED, hit.line)
    return cfg


def knob(lib: Library, name: str, cfg: Config | None, file: str | None = None) -> Knob:
    spec = lib.knobs[name]
    current = cfg.current(name, file) if cfg else None
    aliases = list(spec.aliases)
    if current is not None and _engine_flag(current):
        # the run's engine printed the value under its own name (vLLM's max_num_seqs, gpu_memory_utilization…):
        # name that first, as a flag, so the finding reads in the engine's terms
        flag = current.via if current.via.startswith("--") else "--" + current.via.replace("_", "-")
        aliases = [flag] + [a for a in aliases if a not in (flag, current.via)] + [current.via]
    elif cfg is not None and cfg.framework:
        aliases = in_terms_of(aliases, cfg.framework)
    return Knob(name=name, aliases=aliases, current=current.value if current else None,
                source=current.source if current else "", meaning=spec.meaning)


def _trainer(events: list[Event]) -> str:
    """The trainer most of the run's metric records came from (each file's store counts its records by framework
    and tag), or "" when only generic shapes (tqdm bars, `key: value` lines) were seen."""
    counts: dict[str, int] = {}
    for ev in events:
        if ev.kind == "metric_series":
            for (fw, _tag), t in ev.fields["store"].tags.items():
                if fw and fw not in GENERIC_METRICS:
                    counts[fw] = counts.get(fw, 0) + t[0]
    return max(counts, key=counts.__getitem__) if counts else ""


def in_terms_of(aliases: list[str], framework: str) -> list[str]:
    """The aliases with the trainer's own names first, written as its users set them: knobs.yaml marks them
    `name (verl)`, `name (TRL)`, and the run's metric lines came from that trainer."""
    own = [a.split(" (", 1)[0] for a in aliases
           if a.endswith(")") and " (" in a and a.rsplit(" (", 1)[1][:-1].split(",")[0].strip().lower() == framework]
    if not own:
        return aliases
    form = CLI_FORM.get(framework, "{}")
    return [form.format(a) for a in own] + [a for a in aliases if a.split(" (", 1)[0] not in own]


# vLLM's own names for canonical knobs (EngineArgs fields; the flags are the same with dashes).
VLLM_NAMES = {"max_num_seqs", "gpu_memory_utilization", "max_model_len", "max_num_batched_tokens",
              "num_gpu_blocks_override", "max_seq_len_to_capture", "kv_cache_memory_bytes"}


def _engine_flag(s: Setting) -> bool:
    """A value printed under vLLM's name for the knob (its args dump, command line, engine config)."""
    return s.via.lstrip("-").replace("-", "_") in VLLM_NAMES
