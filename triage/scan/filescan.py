"""What scanning one file makes and holds: its result (FileResult, kept), and its scan state (FileScan: the context
lines, the claims pending until the file is done, metric records, error-like lines, the traceback frame position),
which lives as long as the file is scanned. The scan stages (scanner.py, prefiltered.py) pass one FileScan between
them instead of its parts; LineScanner is what prefiltered.py asks of a scanner."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import InitVar, dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from triage.input.decompress import Cut
from triage.model import Event, Hit, Line, LogFile
from triage.parsers.engine_stats import EngineStats
from triage.parsers.metrics import StoredRecords, TimerStore
from triage.scan.origins import Context, Families
from triage.scan.unexplained import Fold, Unexplained

if TYPE_CHECKING:
    from triage.scan.native import Needles


@dataclass
class FileResult:
    file: LogFile
    hits: list[Hit] = field(default_factory=list)
    unclaimed: list[Line] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    engines: dict[str, EngineStats] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    marks: list[Line] = field(default_factory=list)  # lines holding a shutdown or signal-exit literal
    folded: list[Fold] = field(default_factory=list)  # unclaimed error-like lines of one shape, folded (more than one)


@dataclass
class FileScan:
    """One file's scan state, from its first line to its claims."""

    lf: LogFile
    res: FileResult
    stores: InitVar[tuple[StoredRecords, TimerStore] | None] = None  # (metrics, timers) when they are the run's
    # (series.JoinedRecords, the run's timers), else the file's own are made here
    ctx: Context = field(default_factory=Context)  # candidate lines (not stats rows): `near` windows, tracebacks
    pending: list[tuple[Line, list[tuple[Any, Any]]]] = field(default_factory=list)  # (line, [(rule, None)])
    errorish: Unexplained = field(default_factory=Unexplained)  # error-like lines, for the unclaimed report
    metrics: StoredRecords = field(init=False)  # metric records, joined as they come, kept in bounded memory
    timers: TimerStore = field(init=False)  # trainer timer events, one per distinct reading with its count
    frame_at: int = -2  # the line of the last traceback frame (`File "...", line N`)
    raise_echo: set[int] = field(default_factory=set)  # echoed `raise ...` source lines a rule matched
    family: Families = field(default_factory=Families)  # the line a storm of its family folds into
    lines_seen: int = 0  # lines the line-for-line reader counted
    shapes: list[Any] = field(default_factory=list)  # numeric line shapes registered (columns.Shape), by C's index
    near: Any = None  # the open group of near-identical claim lines (nearfold.NearFold), set by the scanner
    own_bytes: bool = False  # the chunks are the file's own bytes at their offsets (read whole: decompress.read_small)

    def __post_init__(self, stores: tuple[StoredRecords, TimerStore] | None) -> None:
        self.metrics, self.timers = stores or (StoredRecords(self.res.events), TimerStore(self.res.events))

    def note(self, note: str) -> None:
        """Something about how the file was read that the coverage section must say (cut, damaged, growing).
        A file not read to its end (a cut, or reading that raised) is partial."""
        lf = self.lf
        if isinstance(note, Cut) or note.startswith(STOPPED):
            lf.stopped(note)
        else:
            lf.reason = (lf.reason + "; " if lf.reason else "") + note
        self.res.errors.append(f"{lf.rel}: {note}")


STOPPED = "read stopped early"  # the scan's note when reading raised (OSError, MemoryError, a dead reading stage)


class LineScanner(Protocol):
    """What the prefiltered path asks of a scanner (Scanner is one)."""

    needles: Needles | None

    def plan(self, found: frozenset[str | None]) -> Any:
        """What to try on a line holding these anchors."""

    def line(self, fs: FileScan, lineno: int, text: str, plan: Any = None, known: bytes | None = None) -> None:
        """One candidate line into fs (known: its error key's shape, when the C side matched a registered key)."""

    def candidates(self, chunks: Iterable[str], fs: FileScan, first_lineno: int = 1) -> Iterator[tuple[int, str]]:
        """(lineno, text) of each candidate line of the text chunks; then fs.lines_seen is set."""
