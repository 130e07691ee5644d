"""The nouns every stage shares: files, lines, hits, events, knobs, findings, the report."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SEVERITIES = ("error", "warning", "info")
SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}

# Categories (the domain's six, `other`, `unclassified`) and sides (which process wrote a line) are the rule
# library's: patterns/categories.yaml and patterns/sides.yaml, read through `Library`.


@dataclass(slots=True)
class LogFile:
    """One input file and what happened to it. Slots: a run of 200 k small files keeps one each to the end (~100 bytes
    less a file than an instance dict)."""

    path: str  # as opened
    rel: str  # relative to the root the user gave; what reports print
    kind: str = "text"  # sglang, vllm, trainer, driver, rollout, verifier, results, config, metrics, text, binary,
    # wandb-internal, ...
    status: str = "read"  # read | partial | skipped | unreadable (STATUSES)
    reason: str = ""  # why skipped or unreadable; for partial, why and how far (notes of the reading joined by "; ")
    size: int = 0
    lines: int = 0
    compression: str = ""
    node: str = ""  # the machine the file was read on, in a merged report (`triage merge`)
    # a file found walking a directory keeps no path of its own: it is `_dir + rel`, `_dir` the directory given (with
    # its separator, one string all its files share), path None (see `found`): ~100 bytes less a file, 26 MB for
    # 257 k small files, pages a forked worker would otherwise have shared and then copied
    _dir: str = field(default="", init=False, repr=False, compare=False)

    @classmethod
    def found(cls, root: str, rel: str) -> LogFile:
        """The file rel under root (`root` ending with its separator: every file of the walk shares that string)."""
        lf = cls(path=None, rel=rel)  # type: ignore[arg-type]  # the path is root + rel, made when asked
        lf._dir = root
        return lf

    @property
    def side(self) -> str:
        return KIND_SIDE.get(self.kind, "unknown")

    @property
    def covered(self) -> bool:
        """Everything the file holds was read, or it was left out on purpose (a checkpoint, a FIFO, the wandb
        client's own log): nothing in it can be missing from the findings without the report saying so."""
        return self.status in ("read", "skipped")

    def stopped(self, why: str) -> None:
        """Reading ended before the end of the file (cut or damaged stream, killed reader, MemoryError): what was
        read counts, and the file is partial with why and how far."""
        if self.status == "read":
            self.status = "partial"
        self.reason = (self.reason + "; " if self.reason else "") + why


_COUNTS: dict[int, int] = {}  # a file size or line count -> the one int object that holds it (see counted)
COUNTS_HELD = 1 << 16  # distinct values held at most


def counted(n: int) -> int:
    """n as one shared int object: the sizes and line counts of a run of many small files repeat (257 k files of the
    bench's `small` profile have 787 sizes), and an int past 256 is an object of 32 bytes per file otherwise (~8 MB
    each for sizes and line counts, for the whole analysis)."""
    got = _COUNTS.get(n)
    if got is not None:
        return got
    if len(_COUNTS) < COUNTS_HELD:
        _COUNTS[n] = n
    return n


_PATH = LogFile.__dict__["path"]  # the slot that holds a path given (None: `_dir + rel`)


def own_path(lf: LogFile) -> str | None:
    """The path lf was given, None for a file of a walk (its path is `_dir + rel`)."""
    p: str | None = _PATH.__get__(lf, LogFile)
    return p


def _path(self: LogFile) -> str:
    p: str | None = _PATH.__get__(self, LogFile)
    return p if p is not None else self._dir + self.rel


def _set_path(self: LogFile, path: str | None) -> None:
    _PATH.__set__(self, path)


LogFile.path = property(_path, _set_path)  # type: ignore[assignment,misc]  # a slot read through `_path`


# What became of a file: read whole; partial (reading stopped before its end: LogFile.reason says why and how far);
# skipped on purpose (binary, special file, link out of the run dir, wandb's own log); unreadable (nothing of it read).
STATUSES = ("read", "partial", "skipped", "unreadable")


# File kinds (discover.py decides them). Engine logs are the big ones (workers take them); the scanned kinds are read
# line by line; results and configs are read as data; the rest (binary, wandb-internal, …) is skipped.
ENGINE_KINDS = ("sglang", "vllm")
SCANNED_KINDS = frozenset({*ENGINE_KINDS, "trainer", "driver", "rollout", "verifier", "metrics", "text"})

KIND_SIDE = {
    "sglang": "engine",
    "vllm": "engine",
    "trainer": "trainer",
    "driver": "driver",
    "rollout": "rollout",
    "verifier": "verifier",
    "results": "verifier",  # per-sample verifier/judge output read as a table (triage/parsers/results.py)
}


class Line:
    """A normalised physical line (or one `\\r` fragment of it) that passed the prefilter.

    `msg` is `text` without the prefixes in front of the message (Ray actor, timestamp, logger); when it is the
    end of `text`, as it is for nearly every line, only where it starts is kept, not a second copy of the text
    (a large trainer log keeps tens of thousands of these lines)."""

    __slots__ = ("file", "lineno", "text", "_msg", "_cut", "actor", "pid", "repeat", "until")

    def __init__(self, file: str, lineno: int, text: str, msg: str, actor: str = "", pid: str = "",
                 repeat: int = 1, until: int = 0) -> None:
        self.file = file  # LogFile.rel
        self.lineno = lineno
        self.text = text  # ANSI stripped, full line as printed (evidence)
        if msg and text.endswith(msg):
            self._msg: str | None = None
            self._cut = len(text) - len(msg)
        else:
            self._msg, self._cut = msg, 0
        self.actor = actor  # Ray actor name from `(Name pid=N, ip=...)`, if any
        self.pid = pid
        self.repeat = repeat  # `[repeated Nx across cluster]` folds N copies into this line
        self.until = until  # last line number of a run of identical lines folded into this one (0: none)

    @property
    def msg(self) -> str:
        """The message: text without the Ray actor prefix and the launcher/logger prefixes."""
        return self.text[self._cut:] if self._msg is None else self._msg

    def _key(self) -> tuple[object, ...]:
        return (self.file, self.lineno, self.text, self.msg, self.actor, self.pid, self.repeat, self.until)

    def __eq__(self, other: object) -> bool:
        return self._key() == other._key() if isinstance(other, Line) else NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable (repeat, until), as the dataclass it replaces

    def __repr__(self) -> str:
        return (f"Line(file={self.file!r}, lineno={self.lineno!r}, text={self.text!r}, msg={self.msg!r}, "
                f"actor={self.actor!r}, pid={self.pid!r}, repeat={self.repeat!r}, until={self.until!r})")


@dataclass(slots=True)
class Event:
    """A typed fact parsed from one line: a decode-stats row, a server-args dump, a metric dict..."""

    kind: str
    line: Line
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Hit:
    """One line claimed by one rule, with the numbers its named groups extracted."""

    rule: str
    line: Line
    numbers: dict[str, Any] = field(default_factory=dict)
    side: str = "unknown"
    extra: list[Line] = field(default_factory=list)  # e.g. the final exception line of a crash header


@dataclass
class Evidence:
    file: str
    line: int
    text: str
    node: str = ""  # the machine the file was read on, in a merged report (`triage merge`)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"file": self.file, "line": self.line, "text": self.text}
        if self.node:
            d["node"] = self.node
        return d


@dataclass
class Knob:
    name: str  # canonical, e.g. inference.sglang_max_running_requests
    aliases: list[str] = field(default_factory=list)
    current: Any = None  # value the logs or config reveal, if any
    source: str = ""  # where the current value came from (file:line or config)
    meaning: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "aliases": self.aliases, "current": self.current, "source": self.source}


@dataclass
class Finding:
    """One distinct problem: what, how bad, where it shows, what to inspect, what will not help."""

    rule: str
    category: str
    severity: str
    title: str
    count: int = 1
    evidence: list[Evidence] = field(default_factory=list)
    knobs: list[Knob] = field(default_factory=list)
    not_knobs: list[str] = field(default_factory=list)
    explain: str = ""
    numbers: dict[str, Any] = field(default_factory=dict)
    first: Evidence | None = None
    last: Evidence | None = None
    priority: int = 50
    symptom: bool = False
    fingerprint: str = ""
    known: bool = False  # hidden by a baseline entry
    baseline: dict[str, Any] = field(default_factory=dict)  # the entry that hides it: reason, ticket, expires

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "category": self.category,
            "severity": self.severity,
            "title": self.title,
            "count": self.count,
            "evidence": [e.to_dict() for e in self.evidence],
            "first": self.first.to_dict() if self.first else None,
            "last": self.last.to_dict() if self.last else None,
            "numbers": self.numbers,
            "knobs": [k.to_dict() for k in self.knobs],
            "not_knobs": self.not_knobs,
            "explain": self.explain,
            "fingerprint": self.fingerprint,
        }


@dataclass
class Timeline:
    """One source's series over its log, downsampled: an engine's batch stats or a trainer's step times.

    `x` holds line numbers in `file` (so a finding's evidence line can be marked on it); each series has one
    value per x (None where the row had none). `marks` are single lines worth a tick, e.g. retractions.
    """

    source: str  # engine origin ("engine.log pid=4100") or the metrics file
    file: str
    kind: str  # engine | trainer
    x: list[int] = field(default_factory=list)
    series: dict[str, list[float | None]] = field(default_factory=dict)
    marks: list[dict[str, Any]] = field(default_factory=list)  # {"line": n, "label": "retracted 3"}
    rows: int = 0  # rows before downsampling

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "file": self.file, "kind": self.kind, "rows": self.rows, "x": self.x,
                "series": self.series, "marks": self.marks}


@dataclass
class Report:
    version: str
    root: str
    findings: list[Finding] = field(default_factory=list)
    files: list[LogFile] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)  # effective knob values: name -> (value, source)
    errors: list[str] = field(default_factory=list)  # rule errors and other non-fatal problems
    figures: dict[str, float | None] = field(default_factory=dict)  # run figures `triage diff` compares
    timelines: list[Timeline] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)  # the library's categories, in order (JUnit's testcases)

    @property
    def not_covered(self) -> list[LogFile]:
        """Files of which some or all was not read though they were meant to be (partial or unreadable)."""
        return [f for f in self.files if not f.covered]

    @property
    def coverage_complete(self) -> bool:
        """Every file meant to be read was read to its end: only then may "no problems found" stand alone."""
        return all(f.covered for f in self.files)

    def live(self) -> list[Finding]:
        """The findings no baseline entry hides: the ones that gate and lead the verdict."""
        return [f for f in self.findings if not f.known]

    def worst(self) -> str | None:
        sev = [f.severity for f in self.live()]
        return min(sev, key=SEVERITY_RANK.__getitem__) if sev else None
