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
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from triage.errors import TriageError
from triage.library.cache import YamlCache
from triage.model import KIND_SIDE, SEVERITIES
from triage.safe_load import StructureError, load_yaml, read_regular

RULE_KEYS = {
    "id", "category", "severity", "title", "anchor", "match", "side", "not_side", "near", "not_near",
    "within", "when", "knobs", "knobs_when", "not_knobs", "explain", "examples", "priority",
    "symptom_of", "reveals", "min_count", "info_below", "check", "params", "follow", "source", "errors_only",
    "if_warned", "if_served", "if_went_on",
}
REQUIRED = ("id", "category", "severity", "title", "knobs", "explain")
MIN_ANCHOR = 3  # an anchor is a literal the C prefilter files under byte pairs; shorter ones match everything
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
            import regex  # not imported at start: a run compiles only the patterns its lines need (~15 ms)

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
    # the severity when every line it claimed was printed as a warning by its own program (which caught what the
    # line reports and went on: a logger WARNING level, a Python warnings record); "" keeps `severity`
    if_warned: str = ""
    # the severity when every line it claimed is in the file of an engine that said it was ready and then served
    # (checks/startup.served_files): what the line reports did not stop that engine; "" keeps `severity`
    if_served: str = ""
    # the severity when the file went on recording steps or metrics after every line it claimed (a later step line,
    # metric record or engine stats row): what the line reports did not stop the run; "" keeps `severity`
    if_went_on: str = ""
    origin: str = ""  # file:line where the rule is defined

    @property
    def plain_title(self) -> str:
        """The title without the `{number}` placeholders that check results fill in."""
        return re.sub(r"\s*\(\{\w+\}\)|\{\w+\}", "", self.title).rstrip(": ")

    def search(self, text: str) -> Any:
        """The first `match` regex's match on text, or None; TimeoutError when a regex runs away."""
        for rx in self.match:
            m = rx.search(text, timeout=MATCH_TIMEOUT)
            if m:
                return m
        return None

    def patterns(self) -> list[Pattern]:
        return self.match + [p for p in (self.near, self.not_near) if p is not None]


@dataclass
class Category:
    id: str
    title: str
    knobs: list[str]
    not_knobs: list[str]
    explain: str
    domain: bool = False  # one of the domain's own categories (the six), not `other` or `unclassified`


VALUE_TYPES = ("whole", "fraction", "switch", "text")


@dataclass
class KnobSpec:
    """A knob (or a fact that decides whether a check applies: colocated, dynamic batching...) of knobs.yaml."""

    name: str
    meaning: str
    aliases: list[str]
    grows: str = ""
    sources: dict[str, list[str]] = field(default_factory=dict)
    type: str = "text"  # how its value must look: one of VALUE_TYPES (text: as the source printed it)
    minus_one: str = ""  # for a whole number: what -1 means when it is allowed (e.g. "no chunking")


@dataclass(frozen=True)
class Param:
    """One parameter a check takes (declared with the check, triage/checks/__init__.py): its type and default.
    Types: number (int or float), whole (int), text (str), words (list of str), pairs (list of [str, str])."""

    type: str
    default: Any = None

    WORDING = {"number": "a number", "whole": "a whole number", "text": "text", "words": "a list of text",
               "pairs": "a list of [text, text] pairs"}

    @property
    def wording(self) -> str:
        return Param.WORDING.get(self.type, self.type)

    def accepts(self, value: Any) -> bool:
        if isinstance(value, bool):
            return False
        if self.type == "number":
            return isinstance(value, (int, float))
        if self.type == "whole":
            return isinstance(value, int)
        if self.type == "text":
            return isinstance(value, str)
        if self.type == "words":
            return isinstance(value, list) and all(isinstance(v, str) for v in value)
        if self.type == "pairs":
            return isinstance(value, list) and all(
                isinstance(v, list) and len(v) == 2 and all(isinstance(x, str) for x in v) for v in value)
        raise ValueError(f"unknown parameter type {self.type!r}")


CheckParams = Mapping[str, Mapping[str, Param]]  # check name -> its parameters


@dataclass
class Library:
    rules: list[Rule]
    categories: dict[str, Category]
    knobs: dict[str, KnobSpec]
    sides: dict[str, Pattern]  # side -> regex of its markers
    actors: dict[str, str]  # Ray actor name -> side
    fragments: dict[str, Pattern] = field(default_factory=dict)  # fragments.yaml, each checked as a regex alone
    side_names: tuple[str, ...] = ()  # every side a rule may name (sides.yaml `sides:`), in order
    facts: dict[str, KnobSpec] = field(default_factory=dict)  # knobs.yaml `facts:`: settings that are not knobs
    start_failures: tuple[str, ...] = ()  # sides.yaml `start_failures:`: rules whose line says an engine did not start
    trailing: dict[str, Pattern] = field(default_factory=dict)  # sides.yaml `trailing:`: lines that place the line before
    trailing_lines: int = 0  # sides.yaml `trailing_lines:`: how far after an unplaced line such a line may be

    @property
    def domain(self) -> tuple[str, ...]:
        """The domain's own categories (`domain: true` in categories.yaml), in the library's order."""
        return tuple(c.id for c in self.categories.values() if c.domain)

    def patterns(self) -> list[Pattern]:
        """Every regex of the library: fragments, side markers, the rules' match / near / not_near."""
        return [*self.fragments.values(), *self.sides.values(), *(p for r in self.rules for p in r.patterns())]

    def compile_all(self) -> None:
        """Compile every regex now: a bad one is a `LibraryError` (fragments first, then in file order)."""
        for p in self.patterns():
            p.compile()

    def rule(self, rule_id: str) -> Rule | None:
        """The first rule of this id, from an index of the rule list (made again when the list is replaced or grows):
        every scanned file asks twice, and a walk of 146 rules took 12 us."""
        index = self.__dict__.get("_index")
        if index is None or index[0] is not self.rules or index[1] != len(self.rules):
            index = self.__dict__["_index"] = (self.rules, len(self.rules), {r.id: r for r in reversed(self.rules)})
        return index[2].get(rule_id)

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
    source_tree = Path(__file__).resolve().parents[2] / "patterns"  # triage/library/rules.py -> the checkout
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


FRAGMENT_REF = re.compile(r"\$\{(\w+)\}")
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


def _strings(value: Any, where: str, key: str) -> list[str]:
    """A string or a list of strings (an unquoted `a: b` inside a YAML list is a mapping: refused here)."""
    items = _as_list(value)
    for x in items:
        if not isinstance(x, str):
            raise LibraryError(f"{where}: {key}: each entry must be a string, got {_shown(x)}"
                               + (" (quote a text that holds ': ')" if isinstance(x, dict) else ""))
    return items


def _shown(x: Any) -> str:
    if isinstance(x, dict):
        x = {k: v for k, v in x.items() if k != "__line__"}
    text = repr(x)
    return text if len(text) <= 60 else text[:57] + "..."


def _whole(raw: dict[str, Any], key: str, default: int, low: int, where: str) -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise LibraryError(f"{where}: {key} must be a whole number >= {low}, got {_shown(value)}")
    return value


def _text(raw: dict[str, Any], key: str, where: str, required: bool = False) -> str:
    value = raw.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise LibraryError(f"{where}: {key} must be {'non-empty ' if required else ''}text, got {_shown(value)}")
    return value


def _mapping(raw: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = raw.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise LibraryError(f"{where}: {key} must be a mapping, got {_shown(value)}")
    return {k: v for k, v in value.items() if k != "__line__"}


def _conditions(raw: dict[str, Any], key: str, where: str, knobs: dict[str, KnobSpec]) -> list[dict[str, Any]]:
    """`when` / `knobs_when`: each entry a mapping with a text `field` and a number `min` and/or `max`."""
    out = []
    for cond in _as_list(raw.get(key)):
        if not isinstance(cond, dict) or not isinstance(cond.get("field"), str):
            raise LibraryError(f"{where}: each {key} entry needs 'field' and 'min' or 'max'")
        cond = {k: v for k, v in cond.items() if k != "__line__"}
        allowed = {"field", "min", "max"} | ({"knob"} if key == "knobs_when" else set())
        if set(cond) - allowed:
            raise LibraryError(f"{where}: {key}: unknown key(s): {', '.join(sorted(set(cond) - allowed))}")
        for bound in ("min", "max"):
            v = cond.get(bound)
            if bound in cond and (isinstance(v, bool) or not isinstance(v, (int, float))):
                raise LibraryError(f"{where}: {key}: {bound} must be a number, got {_shown(v)}")
        if key == "knobs_when" and (not isinstance(cond.get("knob"), str) or cond["knob"] not in knobs):
            raise LibraryError(f"{where}: knob '{cond.get('knob')}' is not in knobs.yaml")
        out.append(cond)
    return out


def _params(check: str, params: dict[str, Any], where: str, checks: CheckParams | None) -> None:
    """The rule's check exists and takes these params, each of its declared type."""
    if checks is None:
        return
    if check not in checks:
        raise LibraryError(f"{where}: unknown check '{check}'")
    declared = checks[check]
    for key, value in params.items():
        spec = declared.get(key)
        if spec is None:
            takes = ", ".join(sorted(declared)) or "none"
            raise LibraryError(f"{where}: params: check {check} has no parameter '{key}' (it takes: {takes})")
        if not spec.accepts(value):
            raise LibraryError(f"{where}: params: {key} must be {spec.wording}, got {_shown(value)}")


def _rule(raw: dict[str, Any], path: Path, lib: Library, fragments: dict[str, str],
          checks: CheckParams | None = None) -> Rule:
    line = raw.pop("__line__", 0)
    rid = raw.get("id", "?")
    where = f"{path}:{line}: rule {rid}"
    unknown = set(raw) - RULE_KEYS
    if unknown:
        raise LibraryError(f"{where}: unknown key(s): {', '.join(sorted(map(str, unknown)))}")
    for key in REQUIRED:
        if key not in raw:
            raise LibraryError(f"{where}: missing required key '{key}'")
    if not isinstance(rid, str) or not re.fullmatch(r"[a-z0-9-]+(\.[a-z0-9-]+)+", rid):
        raise LibraryError(f"{where}: id must be dotted lower-case words, e.g. serving.kv-retraction")
    categories, knobs = lib.categories, lib.knobs
    if not isinstance(raw["category"], str) or raw["category"] not in categories:
        raise LibraryError(f"{where}: category {_quoted(raw['category'])} is not one of {', '.join(categories)}")
    if not isinstance(raw["severity"], str) or raw["severity"] not in SEVERITIES:
        raise LibraryError(f"{where}: severity {_quoted(raw['severity'])} is not one of {', '.join(SEVERITIES)}")
    title, explain = _text(raw, "title", where, required=True), _text(raw, "explain", where, required=True)
    check, follow = _text(raw, "check", where), _text(raw, "follow", where)
    _text(raw, "source", where)
    if not raw.get("match") and not check:
        raise LibraryError(f"{where}: needs 'match' (a line rule) or 'check' (an aggregate check)")
    rule_knobs = _strings(raw["knobs"], where, "knobs")
    knobs_when = _conditions(raw, "knobs_when", where, knobs)
    for k in rule_knobs:
        if k not in knobs:
            raise LibraryError(f"{where}: knob '{k}' is not in knobs.yaml")
    sides = lib.side_names
    for key in ("side", "not_side"):
        for s in _strings(raw.get(key), where, key):
            if s not in sides:
                raise LibraryError(f"{where}: side '{s}' is not one of {', '.join(sides)}")
    for c in _strings(raw.get("symptom_of"), where, "symptom_of"):
        if c != "any" and c not in categories:
            raise LibraryError(f"{where}: symptom_of '{c}' is not a category or 'any'")
    reveals = _mapping(raw, "reveals", where)
    for k, group in reveals.items():
        if k not in knobs:
            raise LibraryError(f"{where}: reveals knob '{k}' is not in knobs.yaml")
        if not isinstance(group, str):
            raise LibraryError(f"{where}: reveals: {k} must name a group of the match regex, got {_shown(group)}")
    patterns = [_pattern(p, where, "match", fragments) for p in _as_list(raw.get("match"))]
    anchors = _strings(raw.get("anchor"), where, "anchor")
    if patterns and not anchors:
        raise LibraryError(f"{where}: a line rule needs 'anchor': literal text every matching line contains")
    for a in anchors:
        if len(a) < MIN_ANCHOR or not a.strip():
            short = f"is shorter than {MIN_ANCHOR} characters" if len(a) < MIN_ANCHOR else "is only blanks"
            raise LibraryError(f"{where}: anchor {a!r} {short}: the prefilter would pass every line (give a longer "
                               f"literal that every matching line holds)")
    examples = raw.get("examples") or {}
    if not isinstance(examples, dict):
        raise LibraryError(f"{where}: examples must be a mapping with 'match' and 'no_match' lists")
    examples = {k: v for k, v in examples.items() if k != "__line__"}
    if set(examples) - {"match", "no_match"}:
        raise LibraryError(f"{where}: examples: unknown key(s): "
                           f"{', '.join(sorted(map(str, set(examples) - {'match', 'no_match'})))}")
    examples = {k: [str(x) for x in _strings(v, where, f"examples: {k}")] for k, v in examples.items()}
    if patterns and not examples.get("match"):
        raise LibraryError(f"{where}: a line rule needs at least one 'examples: match:' line")
    within = _as_list(raw.get("within")) or [60, 25]
    if len(within) != 2 or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in within):
        raise LibraryError(f"{where}: within must be [lines_before, lines_after]")
    when = _conditions(raw, "when", where, knobs)
    if not isinstance(raw.get("errors_only", False), bool):
        raise LibraryError(f"{where}: errors_only must be true or false")
    if_warned, if_served = raw.get("if_warned", ""), raw.get("if_served", "")
    if_went_on = raw.get("if_went_on", "")
    for key, value in (("if_warned", if_warned), ("if_served", if_served), ("if_went_on", if_went_on)):
        if value and (not isinstance(value, str) or value not in SEVERITIES):
            raise LibraryError(f"{where}: {key} {_quoted(value)} is not one of {', '.join(SEVERITIES)}")
    params = _mapping(raw, "params", where)
    if params and not check:
        raise LibraryError(f"{where}: params without a check")
    if check:
        _params(check, params, where, checks)
    category = categories[raw["category"]]
    return Rule(
        id=rid,
        category=raw["category"],
        severity=raw["severity"],
        title=title.strip(),
        knobs=rule_knobs,
        explain=" ".join(explain.split()),
        anchors=anchors,
        match=patterns,
        side=tuple(_as_list(raw.get("side"))),
        not_side=tuple(_as_list(raw.get("not_side"))),
        near=_pattern(raw["near"], where, "near", fragments) if raw.get("near") else None,
        not_near=_pattern(raw["not_near"], where, "not_near", fragments) if raw.get("not_near") else None,
        within=(within[0], within[1]),
        when=when,
        knobs_when=knobs_when,
        not_knobs=_strings(raw["not_knobs"], where, "not_knobs") if "not_knobs" in raw else list(category.not_knobs),
        examples=examples,
        priority=_whole(raw, "priority", 50, 0, where),
        symptom_of=_as_list(raw.get("symptom_of")),
        reveals=reveals,
        min_count=_whole(raw, "min_count", 1, 1, where),
        info_below=_whole(raw, "info_below", 0, 0, where),
        check=check,
        params=params,
        follow=follow,
        errors_only=bool(raw.get("errors_only", False)),
        if_warned=if_warned,
        if_served=if_served,
        if_went_on=if_went_on,
        origin=f"{path}:{line}",
    )


def _quoted(value: Any) -> str:
    return f"'{value}'" if isinstance(value, str) else _shown(value)


def _strip_lines(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_lines(v) for k, v in value.items() if k != "__line__"}
    if isinstance(value, list):
        return [_strip_lines(v) for v in value]
    return value


def _top(read: Reader, path: Path, lists: tuple[str, ...] = (), maps: tuple[str, ...] = ()) -> dict[str, Any]:
    """A registry file's parsed data: a mapping (or nothing) whose keys `lists` hold lists and `maps` mappings."""
    data = _strip_lines(read(path)) or {}
    if not isinstance(data, dict):
        raise LibraryError(f"{path}: expected a mapping with {', '.join(repr(k + ':') for k in lists + maps)}")
    for key, kind in [(k, list) for k in lists] + [(k, dict) for k in maps]:
        if data.get(key) is not None and not isinstance(data[key], kind):
            raise LibraryError(f"{path}: {key} must be a {'list' if kind is list else 'mapping'}")
    return data


def _knob_specs(entries: Any, path: Path, what: str) -> dict[str, KnobSpec]:
    out: dict[str, KnobSpec] = {}
    for raw in _as_list(entries):
        name = raw.get("name") if isinstance(raw, dict) else None
        where = f"{path}: {what} {name if isinstance(name, str) else '?'}"
        if not isinstance(name, str) or not name or "meaning" not in raw:
            raise LibraryError(f"{where}: needs 'name' and 'meaning'")
        sources = raw.get("sources") or {}
        if not isinstance(sources, dict):
            raise LibraryError(f"{where}: sources must be a mapping of 'fields' and 'flags'")
        vtype = raw.get("type", "text")
        if vtype not in VALUE_TYPES:
            raise LibraryError(f"{where}: type {_quoted(vtype)} is not one of {', '.join(VALUE_TYPES)}")
        minus_one = raw.get("minus_one", "")
        if minus_one and vtype != "whole":
            raise LibraryError(f"{where}: minus_one is for a whole number")
        out[name] = KnobSpec(
            name=name,
            meaning=" ".join(str(raw["meaning"]).split()),
            aliases=_strings(raw.get("aliases"), where, "aliases"),
            grows=" ".join(str(raw.get("grows") or "").split()),
            sources={str(k): _strings(v, where, f"sources: {k}") for k, v in sources.items()},
            type=vtype,
            minus_one=str(minus_one or ""),
        )
    return out


def _load_knobs(read: Reader, path: Path) -> tuple[dict[str, KnobSpec], dict[str, KnobSpec]]:
    """knobs.yaml: the knobs, and the facts (settings that decide whether a check applies)."""
    data = _top(read, path, lists=("knobs", "facts"))
    return _knob_specs(data.get("knobs"), path, "knob"), _knob_specs(data.get("facts"), path, "fact")


def _load_categories(read: Reader, path: Path, knobs: dict[str, KnobSpec]) -> dict[str, Category]:
    data = _top(read, path, maps=("categories",))
    out: dict[str, Category] = {}
    for cid, raw in (data.get("categories") or {}).items():
        where = f"{path}: category {cid}"
        if not isinstance(cid, str) or not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", cid):
            raise LibraryError(f"{path}: category id {_quoted(cid)} must be lower-case words joined by '-'")
        if not isinstance(raw, dict):
            raise LibraryError(f"{where}: expected a mapping with title, knobs, not_knobs, explain")
        for k in _strings(raw.get("knobs"), where, "knobs"):
            if k not in knobs:
                raise LibraryError(f"{where}: knob '{k}' is not in knobs.yaml")
        if not isinstance(raw.get("domain", False), bool):
            raise LibraryError(f"{where}: domain must be true or false")
        out[cid] = Category(
            id=cid,
            title=str(raw.get("title", cid)),
            knobs=_strings(raw.get("knobs"), where, "knobs"),
            not_knobs=_strings(raw.get("not_knobs"), where, "not_knobs"),
            explain=" ".join(str(raw.get("explain", "")).split()),
            domain=bool(raw.get("domain", False)),
        )
    return out


@dataclass(frozen=True)
class SideData:
    """What sides.yaml says: every side's name, the markers of the processes' tracebacks, the Ray actor names, the
    rules whose line says an engine failed to start (checked against the rules once they are loaded), the lines that
    place the unplaced lines just before them and how far."""

    names: tuple[str, ...]
    markers: dict[str, Pattern]
    actors: dict[str, str]
    start_failures: tuple[str, ...]
    trailing: dict[str, Pattern]
    trailing_lines: int


def _load_sides(read: Reader, path: Path) -> SideData:
    """sides.yaml, checked: each side a marker, actor or trailing line names is one of `sides:`."""
    data = _top(read, path, lists=("sides", "start_failures"), maps=("markers", "actors", "trailing"))
    names = tuple(_strings(data.get("sides"), str(path), "sides"))
    needed = ["unknown", *KIND_SIDE.values()]  # what the scanner gives a line no marker places, and files' sides
    missing = [s for s in dict.fromkeys(needed) if s not in names]
    if missing:
        raise LibraryError(f"{path}: sides: must include {', '.join(missing)} (the sides triage gives lines by "
                           f"their file's kind, and 'unknown')")
    markers, trailing = _side_patterns(data, "markers", names, path), _side_patterns(data, "trailing", names, path)
    lines = data.get("trailing_lines", 0)
    if not isinstance(lines, int) or isinstance(lines, bool) or lines < 0 or (trailing and not lines):
        raise LibraryError(f"{path}: trailing_lines: a whole number of lines (at least 1 with `trailing:`), got {lines!r}")
    actors = {}
    for side, actor_names in (data.get("actors") or {}).items():
        if side not in names:
            raise LibraryError(f"{path}: side '{side}' is not one of {', '.join(names)}")
        for n in _as_list(actor_names):
            actors[str(n)] = side
    return SideData(names, markers, actors, tuple(_strings(data.get("start_failures"), str(path), "start_failures")),
                    trailing, lines)


def _side_patterns(data: dict[str, Any], key: str, names: tuple[str, ...], path: Path) -> dict[str, Pattern]:
    """One regex a side from a `side: [patterns]` map of sides.yaml (`markers:`, `trailing:`)."""
    out = {}
    for side, pats in (data.get(key) or {}).items():
        if side not in names:
            raise LibraryError(f"{path}: side '{side}' is not one of {', '.join(names)}")
        out[side] = _pattern("|".join(f"(?:{p})" for p in _as_list(pats)), str(path), f"{key}.{side}")
    return out


def _load_fragments(read: Reader, path: Path) -> dict[str, str]:
    data = _top(read, path, maps=("fragments",))
    out = {}
    for name, value in (data.get("fragments") or {}).items():
        out[name] = "".join(str(v) for v in value) if isinstance(value, list) else str(value)
    return out


REGISTRIES = ("knobs.yaml", "categories.yaml", "sides.yaml", "fragments.yaml")


def _rule_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.yaml") if p.name not in REGISTRIES)


def load_library(extra_dirs: list[Path] | None = None, compile_all: bool = False,
                 checks: CheckParams | None = None) -> Library:
    """The built-in library, with each extra dir's knobs, categories and rules added (or overriding by id).

    The regexes of the extra dirs (and the fragments they may use) are compiled now, so that a bad one is
    an error on load; the built-in ones when first used, or all now with `compile_all`. With `checks` (the
    check registry's declared parameters), every check rule's `check:` and `params:` are validated too.
    The parsed YAML may come from the cache (triage/library/cache.py); a library that fails to load from
    cached data is loaded again from the files, so a cache can never be what breaks it."""
    cache = YamlCache()
    try:
        return _load(extra_dirs or [], compile_all, checks, cache)
    except (LibraryError, TypeError, ValueError, AttributeError, KeyError):
        if not cache.hits:  # the files' own problem: a LibraryError for the user (any other error is a bug)
            raise
    return _load(extra_dirs or [], compile_all, checks, YamlCache(trust=False))


def _load(extra_dirs: list[Path], compile_all: bool, checks: CheckParams | None, cache: YamlCache) -> Library:
    base = builtin_dir()
    folders = [base] + [Path(d) for d in extra_dirs]
    for folder in folders[1:]:
        if not folder.is_dir():
            raise LibraryError(f"{folder}: not a directory of rule files")

    def read(path: Path) -> Any:
        return cache.read(path, _read_yaml)

    knobs, facts = _load_knobs(read, base / "knobs.yaml")
    fragments = _load_fragments(read, base / "fragments.yaml")
    fragment_patterns = {name: Pattern(p, str(base / "fragments.yaml"), f"fragment {name}")
                         for name, p in fragments.items()}
    if compile_all or extra_dirs:
        for p in fragment_patterns.values():
            p.compile()
    sides = _load_sides(read, base / "sides.yaml")
    start_failures = sides.start_failures
    categories = _load_categories(read, base / "categories.yaml", knobs)
    for made in ("other", "unclassified"):  # categories triage's own code gives findings (checks, unclassified)
        if made not in categories:
            raise LibraryError(f"{base / 'categories.yaml'}: categories: must include '{made}'")
    for folder in folders[1:]:  # a user's registries: new knobs and categories (adding a category is YAML only)
        if (folder / "knobs.yaml").is_file():
            more_knobs, more_facts = _load_knobs(read, folder / "knobs.yaml")
            knobs.update(more_knobs)
            facts.update(more_facts)
        if (folder / "categories.yaml").is_file():
            categories.update(_load_categories(read, folder / "categories.yaml", knobs))
    lib = Library(rules=[], categories=categories, knobs=knobs, sides=sides.markers, actors=sides.actors,
                  fragments=fragment_patterns, side_names=sides.names, facts=facts, start_failures=start_failures,
                  trailing=sides.trailing, trailing_lines=sides.trailing_lines)
    rules: dict[str, Rule] = {}
    for folder in folders:
        seen_here: dict[str, str] = {}
        for path in _rule_files(folder):
            data = read(path)
            if not isinstance(data, dict) or not isinstance(data.get("rules"), list):
                raise LibraryError(f"{path}: expected a mapping with a 'rules:' list")
            for raw in data["rules"]:
                if not isinstance(raw, dict):
                    raise LibraryError(f"{path}: each entry under 'rules:' must be a mapping")
                rule = _rule(raw, path, lib, fragments, checks)
                if folder is not base:
                    for p in rule.patterns():
                        p.compile()
                if rule.id in seen_here:
                    raise LibraryError(f"{rule.origin}: rule {rule.id}: duplicate id (first at {seen_here[rule.id]})")
                seen_here[rule.id] = rule.origin
                rules[rule.id] = rule  # a later folder overrides the built-in rule with the same id
    unknown = [r for r in start_failures if r not in rules]
    if unknown:
        raise LibraryError(f"{base / 'sides.yaml'}: start_failures: no rule {', '.join(unknown)}")
    cache.save()  # only a library that loaded without error
    lib.rules = list(rules.values())
    if compile_all:
        lib.compile_all()
    return lib
