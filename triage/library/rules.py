"""Load and validate the rule library: patterns/*.yaml (rules), categories.yaml, knobs.yaml, sides.yaml.

A broken library is a `LibraryError` whose message names the file, the line, the rule id and the
problem, e.g. `patterns/trainer-oom.yaml:12: rule trainer.cuda-oom: match: bad regex (...)`.

Every regex of the library is a `Pattern`, compiled on its first use: a run sees few of the ~240 patterns,
and compiling them all was most of the startup time. Everything else (keys, fragments, anchors) is checked
on load. A library the user gives (`--patterns DIR`) is compiled on load, so its bad regex is still a
load error; the built-in one is compiled whole by `load_library(compile_all=True)` (`triage rules check`,
and the test suite).
"""

from __future__ import annotations

import functools
import importlib.resources
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import regex

from triage.errors import TriageError
from triage.library.cache import YamlCache
from triage.model import CATEGORIES, SEVERITIES, SIDES
from triage.safe_load import StructureError, load_yaml, read_regular

RULE_KEYS = {
    "id", "category", "severity", "title", "anchor", "match", "side", "not_side", "near", "not_near",
    "within", "when", "knobs", "knobs_when", "not_knobs", "explain", "examples", "priority",
    "symptom_of", "reveals", "min_count", "info_below", "check", "params", "follow", "source", "errors_only",
}
REQUIRED = ("id", "category", "severity", "title", "knobs", "explain")
MATCH_TIMEOUT = 0.25  # seconds a rule regex may spend on one line (guards against catastrophic backtracking)


class LibraryError(TriageError):
    """A rule file that cannot be used; the message is one line for the user."""


class Pattern:
    """A regex compiled on its first use, with the file:line and key that name it if it does not compile.

    It answers as the compiled pattern does: `search` (the hot path), `match`, `fullmatch`, `finditer`, ...;
    `pattern` is the source, `compiled` says whether it has been compiled. A bad regex raises `LibraryError`
    with the same message as on load, e.g. `x.yaml:12: rule a.b: match: bad regex (...)`."""

    __slots__ = ("pattern", "where", "what", "_rx")
    DELEGATED = frozenset({"match", "fullmatch", "finditer", "findall", "split", "sub", "subn", "scanner",
                           "groupindex", "groups", "flags"})

    def __init__(self, pattern: str, where: str, what: str):
        self.pattern, self.where, self.what = pattern, where, what
        self._rx: Any = None

    @property
    def compiled(self) -> bool:
        return self._rx is not None

    def compile(self) -> Any:
        """The compiled regex (compiling it now if it is not yet)."""
        if self._rx is None:
            try:
                self._rx = regex.compile(self.pattern)
            except regex.error as e:
                raise LibraryError(f"{self.where}: {self.what}: bad regex ({e})") from None
        return self._rx

    def search(self, text: str, *args: Any, **kwargs: Any) -> Any:
        return (self._rx or self.compile()).search(text, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name in Pattern.DELEGATED:
            return getattr(self.compile(), name)
        raise AttributeError(name)

    def __repr__(self) -> str:
        return f"Pattern({self.pattern!r})"


@dataclass
class Rule:
    id: str
    category: str
    severity: str
    title: str
    knobs: list[str]
    explain: str
    anchors: list[str] = field(default_factory=list)
    match: list[Pattern] = field(default_factory=list)  # any may match
    side: tuple[str, ...] = ()
    not_side: tuple[str, ...] = ()
    near: Pattern | None = None
    not_near: Pattern | None = None
    within: tuple[int, int] = (60, 25)
    when: list[dict[str, Any]] = field(default_factory=list)
    knobs_when: list[dict[str, Any]] = field(default_factory=list)
    not_knobs: list[str] | None = None
    examples: dict[str, list[str]] = field(default_factory=dict)
    priority: int = 50
    symptom_of: list[str] = field(default_factory=list)
    reveals: dict[str, str] = field(default_factory=dict)
    min_count: int = 1  # fewer occurrences than this: no finding
    info_below: int = 0  # fewer occurrences than this: the finding is only info (e.g. one stray retraction)
    check: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    follow: str = ""
    errors_only: bool = False  # claims only error lines: a traceback's final line, an ERROR-level or error-worded line
    origin: str = ""  # file:line where the rule is defined

    @property
    def plain_title(self) -> str:
        """The title without the `{number}` placeholders that check results fill in."""
        return regex.sub(r"\s*\(\{\w+\}\)|\{\w+\}", "", self.title).rstrip(": ")

    def search(self, text: str) -> Any:
        """The first `match` regex's match on text, or None; TimeoutError when a regex runs away."""
        for rx in self.match:
            m = rx.search(text, timeout=MATCH_TIMEOUT)
            if m:
                return m
        return None

    def context_holds(self, window: list[Any]) -> bool:
        """The `near` / `not_near` conditions on the lines around a hit (TimeoutError as for `search`)."""
        if self.near is not None and not any(self.near.search(o.msg, timeout=MATCH_TIMEOUT) for o in window):
            return False
        if self.not_near is not None and any(self.not_near.search(o.msg, timeout=MATCH_TIMEOUT) for o in window):
            return False
        return True

    def patterns(self) -> list[Pattern]:
        return self.match + [p for p in (self.near, self.not_near) if p is not None]


@dataclass
class Category:
    id: str
    title: str
    knobs: list[str]
    not_knobs: list[str]
    explain: str


@dataclass
class KnobSpec:
    name: str
    meaning: str
    aliases: list[str]
    grows: str = ""
    sources: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class Library:
    rules: list[Rule]
    categories: dict[str, Category]
    knobs: dict[str, KnobSpec]
    sides: dict[str, Pattern]  # side -> regex of its markers
    actors: dict[str, str]  # Ray actor name -> side
    fragments: dict[str, Pattern] = field(default_factory=dict)  # fragments.yaml, each checked as a regex alone

    def patterns(self) -> list[Pattern]:
        """Every regex of the library: fragments, side markers, the rules' match / near / not_near."""
        return [*self.fragments.values(), *self.sides.values(), *(p for r in self.rules for p in r.patterns())]

    def compile_all(self) -> None:
        """Compile every regex now: a bad one is a `LibraryError` (fragments first, then in file order)."""
        for p in self.patterns():
            p.compile()

    def rule(self, rule_id: str) -> Rule | None:
        return next((r for r in self.rules if r.id == rule_id), None)

    def knob(self, name: str) -> KnobSpec | None:
        """Find a knob by canonical name or any alias (case and leading dashes ignored)."""
        if name in self.knobs:
            return self.knobs[name]
        key = _norm(name)
        for spec in self.knobs.values():
            if key == _norm(spec.name) or any(key == _norm(a) for a in spec.aliases):
                return spec
        return None


def _norm(s: str) -> str:
    return s.strip().lower().lstrip("-").replace("-", "_")


@functools.cache
def _line_loader() -> Any:
    """A SafeLoader (libyaml's when PyYAML has it: ten times faster) that remembers the line of every mapping as
    `__line__`. PyYAML is imported here, when a file must be parsed (see library_cache)."""
    import yaml

    class LineLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
        pass

    def mapping(loader: Any, node: Any) -> dict[str, Any]:
        out = loader.construct_mapping(node, deep=True)
        out["__line__"] = node.start_mark.line + 1
        return out

    LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    return LineLoader


def builtin_dir() -> Path:
    """The library shipped with triage: the top-level patterns/ folder of a checkout, or its copy in the wheel."""
    source_tree = Path(__file__).resolve().parent.parent / "patterns"
    if (source_tree / "knobs.yaml").is_file():
        return source_tree
    return Path(str(importlib.resources.files("triage.patterns_data")))


Reader = Callable[[Path], Any]  # a file's parsed YAML


def _read_yaml(path: Path) -> Any:
    try:
        text = read_regular(path).decode("utf-8")  # a FIFO or a device is refused, never waited on
    except StructureError as e:
        raise LibraryError(f"{path}: {e}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise LibraryError(f"{path}: cannot read: {e}") from None
    import yaml

    try:
        return load_yaml(text, _line_loader())  # aliases and nesting measured before anything is built
    except StructureError as e:
        raise LibraryError(f"{path}: {e}") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise LibraryError(f"{where}: invalid YAML: {getattr(e, 'problem', e)}") from None


FRAGMENT_REF = regex.compile(r"\$\{(\w+)\}")
def _expand(pattern: str, where: str, what: str, fragments: dict[str, str]) -> str:
    def sub(m: Any) -> str:
        name = m.group(1)
        if name not in fragments:
            raise LibraryError(f"{where}: {what}: unknown fragment ${{{name}}} (see fragments.yaml)")
        return f"(?:{fragments[name]})"

    return FRAGMENT_REF.sub(sub, pattern)


def _pattern(pattern: Any, where: str, what: str, fragments: dict[str, str] | None = None) -> Pattern:
    """A rule regex with its fragments expanded (an unknown fragment is an error now); compiled on first use."""
    if not isinstance(pattern, str) or not pattern:
        raise LibraryError(f"{where}: {what}: must be a non-empty string")
    return Pattern(_expand(pattern, where, what, fragments or {}), where, what)


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _rule(raw: dict[str, Any], path: Path, categories: dict[str, Category], knobs: dict[str, KnobSpec],
          fragments: dict[str, str]) -> Rule:
    line = raw.pop("__line__", 0)
    rid = raw.get("id", "?")
    where = f"{path}:{line}: rule {rid}"
    unknown = set(raw) - RULE_KEYS
    if unknown:
        raise LibraryError(f"{where}: unknown key(s): {', '.join(sorted(unknown))}")
    for key in REQUIRED:
        if key not in raw:
            raise LibraryError(f"{where}: missing required key '{key}'")
    if not isinstance(rid, str) or not regex.fullmatch(r"[a-z0-9-]+(\.[a-z0-9-]+)+", rid):
        raise LibraryError(f"{where}: id must be dotted lower-case words, e.g. serving.kv-retraction")
    if raw["category"] not in CATEGORIES:
        raise LibraryError(f"{where}: category '{raw['category']}' is not one of {', '.join(CATEGORIES)}")
    if raw["severity"] not in SEVERITIES:
        raise LibraryError(f"{where}: severity '{raw['severity']}' is not one of {', '.join(SEVERITIES)}")
    if not raw.get("match") and not raw.get("check"):
        raise LibraryError(f"{where}: needs 'match' (a line rule) or 'check' (an aggregate check)")
    for k in _as_list(raw["knobs"]) + [c.get("knob") for c in _as_list(raw.get("knobs_when"))]:
        if k not in knobs:
            raise LibraryError(f"{where}: knob '{k}' is not in knobs.yaml")
    for s in _as_list(raw.get("side")) + _as_list(raw.get("not_side")):
        if s not in SIDES:
            raise LibraryError(f"{where}: side '{s}' is not one of {', '.join(SIDES)}")
    for c in _as_list(raw.get("symptom_of")):
        if c != "any" and c not in CATEGORIES:
            raise LibraryError(f"{where}: symptom_of '{c}' is not a category or 'any'")
    for k in [k for k in (raw.get("reveals") or {}) if k != "__line__"]:
        if k not in knobs:
            raise LibraryError(f"{where}: reveals knob '{k}' is not in knobs.yaml")
    patterns = [_pattern(p, where, "match", fragments) for p in _as_list(raw.get("match"))]
    anchors = [str(a) for a in _as_list(raw.get("anchor"))]
    if patterns and not anchors:
        raise LibraryError(f"{where}: a line rule needs 'anchor': literal text every matching line contains")
    examples = raw.get("examples") or {}
    if not isinstance(examples, dict):
        raise LibraryError(f"{where}: examples must be a mapping with 'match' and 'no_match' lists")
    examples = {k: [str(x) for x in _as_list(v)] for k, v in examples.items() if k != "__line__"}
    if patterns and not examples.get("match"):
        raise LibraryError(f"{where}: a line rule needs at least one 'examples: match:' line")
    within = _as_list(raw.get("within")) or [60, 25]
    if len(within) != 2 or not all(isinstance(x, int) and x >= 0 for x in within):
        raise LibraryError(f"{where}: within must be [lines_before, lines_after]")
    for cond in _as_list(raw.get("when")) + _as_list(raw.get("knobs_when")):
        if not isinstance(cond, dict) or "field" not in cond:
            raise LibraryError(f"{where}: each when/knobs_when entry needs 'field' and 'min' or 'max'")
        cond.pop("__line__", None)
    if not isinstance(raw.get("errors_only", False), bool):
        raise LibraryError(f"{where}: errors_only must be true or false")
    category = categories.get(raw["category"])
    return Rule(
        id=rid,
        category=raw["category"],
        severity=raw["severity"],
        title=str(raw["title"]).strip(),
        knobs=[str(k) for k in _as_list(raw["knobs"])],
        explain=" ".join(str(raw["explain"]).split()),
        anchors=anchors,
        match=patterns,
        side=tuple(_as_list(raw.get("side"))),
        not_side=tuple(_as_list(raw.get("not_side"))),
        near=_pattern(raw["near"], where, "near", fragments) if raw.get("near") else None,
        not_near=_pattern(raw["not_near"], where, "not_near", fragments) if raw.get("not_near") else None,
        within=(within[0], within[1]),
        when=_as_list(raw.get("when")),
        knobs_when=_as_list(raw.get("knobs_when")),
        not_knobs=[str(x) for x in _as_list(raw["not_knobs"])] if "not_knobs" in raw else
        (list(category.not_knobs) if category else []),
        examples=examples,
        priority=int(raw.get("priority", 50)),
        symptom_of=[str(x) for x in _as_list(raw.get("symptom_of"))],
        reveals={str(k): str(v) for k, v in (raw.get("reveals") or {}).items() if k != "__line__"},
        min_count=int(raw.get("min_count", 1)),
        info_below=int(raw.get("info_below", 0)),
        check=str(raw.get("check") or ""),
        params={k: v for k, v in (raw.get("params") or {}).items() if k != "__line__"},
        follow=str(raw.get("follow") or ""),
        errors_only=bool(raw.get("errors_only", False)),
        origin=f"{path}:{line}",
    )


def _strip_lines(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_lines(v) for k, v in value.items() if k != "__line__"}
    if isinstance(value, list):
        return [_strip_lines(v) for v in value]
    return value


def _load_knobs(read: Reader, path: Path) -> dict[str, KnobSpec]:
    data = _strip_lines(read(path)) or {}
    out: dict[str, KnobSpec] = {}
    for raw in _as_list(data.get("knobs")):
        name = raw.get("name")
        if not name or "meaning" not in raw:
            raise LibraryError(f"{path}: knob {name or '?'}: needs 'name' and 'meaning'")
        sources = {k: [str(x) for x in _as_list(v)] for k, v in (raw.get("sources") or {}).items()}
        out[name] = KnobSpec(
            name=name,
            meaning=" ".join(str(raw["meaning"]).split()),
            aliases=[str(a) for a in _as_list(raw.get("aliases"))],
            grows=" ".join(str(raw.get("grows") or "").split()),
            sources=sources,
        )
    return out


def _load_categories(read: Reader, path: Path, knobs: dict[str, KnobSpec]) -> dict[str, Category]:
    data = _strip_lines(read(path)) or {}
    out: dict[str, Category] = {}
    for cid, raw in (data.get("categories") or {}).items():
        if cid not in CATEGORIES:
            raise LibraryError(f"{path}: category '{cid}' is not one of {', '.join(CATEGORIES)}")
        for k in _as_list(raw.get("knobs")):
            if k not in knobs:
                raise LibraryError(f"{path}: category {cid}: knob '{k}' is not in knobs.yaml")
        out[cid] = Category(
            id=cid,
            title=str(raw.get("title", cid)),
            knobs=[str(k) for k in _as_list(raw.get("knobs"))],
            not_knobs=[str(k) for k in _as_list(raw.get("not_knobs"))],
            explain=" ".join(str(raw.get("explain", "")).split()),
        )
    return out


def _load_sides(read: Reader, path: Path) -> tuple[dict[str, Any], dict[str, str]]:
    data = _strip_lines(read(path)) or {}
    markers = {}
    for side, pats in (data.get("markers") or {}).items():
        if side not in SIDES:
            raise LibraryError(f"{path}: side '{side}' is not one of {', '.join(SIDES)}")
        markers[side] = _pattern("|".join(f"(?:{p})" for p in _as_list(pats)), str(path), f"markers.{side}")
    actors = {}
    for side, names in (data.get("actors") or {}).items():
        for n in _as_list(names):
            actors[str(n)] = side
    return markers, actors


def _load_fragments(read: Reader, path: Path) -> dict[str, str]:
    data = _strip_lines(read(path)) or {}
    out = {}
    for name, value in (data.get("fragments") or {}).items():
        out[name] = "".join(str(v) for v in value) if isinstance(value, list) else str(value)
    return out


def _rule_files(folder: Path) -> list[Path]:
    special = {"knobs.yaml", "categories.yaml", "sides.yaml", "fragments.yaml"}
    return sorted(p for p in folder.glob("*.yaml") if p.name not in special)


def load_library(extra_dirs: list[Path] | None = None, compile_all: bool = False) -> Library:
    """The built-in library, with rules from each extra dir added or overriding by id.

    The regexes of the extra dirs (and the fragments they may use) are compiled now, so that a bad one is
    an error on load; the built-in ones when first used, or all now with `compile_all`."""
    base = builtin_dir()
    cache = YamlCache()

    def read(path: Path) -> Any:
        return cache.read(path, _read_yaml)

    knobs = _load_knobs(read, base / "knobs.yaml")
    fragments = _load_fragments(read, base / "fragments.yaml")
    fragment_patterns = {name: Pattern(p, str(base / "fragments.yaml"), f"fragment {name}")
                         for name, p in fragments.items()}
    if compile_all or extra_dirs:
        for p in fragment_patterns.values():
            p.compile()
    categories = _load_categories(read, base / "categories.yaml", knobs)
    markers, actors = _load_sides(read, base / "sides.yaml")
    rules: dict[str, Rule] = {}
    folders = [base] + [Path(d) for d in extra_dirs or []]
    for folder in folders:
        if not folder.is_dir():
            raise LibraryError(f"{folder}: not a directory of rule files")
        seen_here: dict[str, str] = {}
        for path in _rule_files(folder):
            data = read(path)
            if not isinstance(data, dict) or not isinstance(data.get("rules"), list):
                raise LibraryError(f"{path}: expected a mapping with a 'rules:' list")
            for raw in data["rules"]:
                if not isinstance(raw, dict):
                    raise LibraryError(f"{path}: each entry under 'rules:' must be a mapping")
                rule = _rule(raw, path, categories, knobs, fragments)
                if folder is not base:
                    for p in rule.patterns():
                        p.compile()
                if rule.id in seen_here:
                    raise LibraryError(f"{rule.origin}: rule {rule.id}: duplicate id (first at {seen_here[rule.id]})")
                seen_here[rule.id] = rule.origin
                rules[rule.id] = rule  # a later folder overrides the built-in rule with the same id
    cache.save()  # only a library that loaded without error
    lib = Library(rules=list(rules.values()), categories=categories, knobs=knobs, sides=markers, actors=actors,
                  fragments=fragment_patterns)
    if compile_all:
        lib.compile_all()
    return lib
