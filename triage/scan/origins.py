"""Who printed a line: the Ray actor prefix, SGLang's rank tag, and the side (engine, trainer, ...).

Ray's driver prefixes every forwarded line with `(ActorName pid=N)` or `(ActorName pid=N, ip=A.B.C.D)`
(Ray `print_worker_logs`; colour codes are stripped by read.py), and folds copies into
`... [repeated 4x across cluster]`. SGLang prefixes its own lines with `[time rank-tags]`, e.g.
`[16:43:29 TP0]` (<= v0.3.3), `[2025-07-02 07:41:59 DP0 TP0]`, `[2025-12-26 08:51:31 DP0 TP0 EP0]`,
later `[… DP0 PP1 ATTN_CP0 MOE_DP0 TP2 EP2]`, or no tag at all on single-GPU engines.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Mapping
from typing import Any

from triage.lazyre import lazy
from triage.model import Line
from triage.parsers.sglang import RETRACTED
from triage.parsers.signals import CALL_ERROR, ENGINE_URL, EXC_LINE, FRAME, TRACEBACK, VERIFIER_URL, callee_of, unboxed
from triage.prefixes import LINE_PREFIX, RAY_ACTOR, json_message
from triage.scan.digitkey import key, linecache_enabled, runs_alike

RAY_PREFIX = lazy("^" + RAY_ACTOR + " ?")
RAY_AT = lazy(RAY_ACTOR)  # the same, matched where a line's other prefixes put it
RAY_REPEAT = lazy(r"\s*\[repeated (?P<n>\d+)x across cluster\]\s*$")
LINE_PREFIXES = lazy(f"(?:{LINE_PREFIX}){{0,4}}")  # up to four of them, in one match
# A colour code whose escape byte was lost on the way (pasted from a web page or a viewer that drops control
# bytes): `[36m(WorkerDict pid=N, ip=A)[0m message`. Only before a Ray prefix and right after it, so a bracketed
# word of a message is never touched.
COLOUR_RESIDUE = lazy(r"^\[\d{1,3}(?:;\d{1,3})*m(?=\()")
COLOUR_RESET = lazy(r"^\[\d{0,3}(?:;\d{1,3})*m ?")  # `[0m`, `[m`, `[0;0m` (vllm-ascend issue 7015)


def split_ray(text: str) -> tuple[str, str, str, int]:
    """(message without its Ray, container, rank, timestamp and logger prefixes; actor; pid; repeat count).
    A JSON log record's message is read from the record (prefixes.json_message); its actor stays unknown, as the
    native path reads a line's origin from the raw line."""
    if text.startswith('{"'):
        inner = json_message(text)
        if inner is not None:
            return split_ray(inner)[0], "", "", 1
    actor = pid = ""
    repeat = 1
    msg = text
    if text.startswith("[") and "m(" in text[2:14]:  # cheap test first: most lines start with a time stamp
        c = COLOUR_RESIDUE.match(text)
        if c:
            text = text[c.end():]
    if text.startswith("("):
        m = RAY_PREFIX.match(text)
        if m:
            actor, pid = m.group("actor"), m.group("pid") or ""
            msg = text[m.end():]
            if msg.startswith("["):
                r0 = COLOUR_RESET.match(msg)
                if r0:
                    msg = msg[r0.end():]
            # vLLM V1 inside a Ray actor names its own process after Ray's: `(vLLMHttpServer pid=1) (Worker_TP1
            # pid=2) ERROR ...`, `(VLLMEngine pid=1) (EngineCore pid=2) ...` (sometimes twice): only prefixes with a pid
            for _ in range(3):
                if not msg.startswith("("):
                    break
                m2 = RAY_PREFIX.match(msg)
                if m2 is None or not m2.group("pid"):
                    break
                msg = msg[m2.end():]
    if msg.endswith("cluster]"):
        r = RAY_REPEAT.search(msg)
        if r:
            repeat = int(r.group("n"))
            msg = msg[: r.start()]
    if msg.endswith(("│", "┃")):  # the closing side of a box (prefixes.LINE_PREFIX opens it)
        msg = msg[:-1].rstrip()
    end = _prefix_end(msg)
    if end:
        if not actor:  # a process prefix with a pid (Ray 1.x, vLLM V1) among the container, time or rank prefixes
            at = msg.find("(", 0, end)
            r1 = RAY_AT.match(msg, at) if at >= 0 else None
            if r1:
                actor, pid = r1.group("actor"), r1.group("pid") or ""
        msg = msg[end:]
        if not actor and msg.startswith("("):  # a Ray prefix after a container or rank prefix
            r2 = RAY_PREFIX.match(msg)
            if r2:
                actor, pid = r2.group("actor"), r2.group("pid") or ""
                msg = msg[r2.end():]
                msg = msg[_prefix_end(msg):]
    if msg[:1] in BOX_STARTS or msg.startswith(("File ", "Cell In", "/", "~/", "<ipython-input-", "in ")) \
            and not msg.startswith('File "') or '.py", line ' in msg and not msg.lstrip().startswith('File "'):
        inner = unboxed(msg)  # a traceback drawn in a box (rich's panel, a boxed log pane), IPython's: as Python's
        if inner is not None:
            msg = inner
    if msg.startswith("Traceback (most recent call last)") and JOINED_TB.match(msg):
        msg = joined_final(msg) or msg
    elif 'File "' in msg and not FRAME.match(msg):
        g = GLUED_FRAME.search(msg)
        if g:  # a frame pasted on the end of prose: the frame, as Python prints it
            msg = "  " + g.group(0).rstrip()
    return msg, actor, pid, repeat


BOX_STARTS = "│┃╭┏┌"
# A traceback's frame glued to the text before it: a tracker post that runs prose into the pasted traceback with no
# newline (verl issue 1710: `...运行bash run.sh 。一直出现File "/usr/.../qwen2.py", line 405, in load_weights`). Only a
# whole frame that ends the line counts (file, line and function), right after a character that is not a quote or
# an opening bracket, or after a colon and a space (a frame quoted inside a string or a repr stays what it is); the
# source and exception lines below it continue the traceback as usual.
GLUED_FRAME = lazy(r'(?:(?<=[^\s\'"(\[{=])|(?<=[:：] ))File "[^"]+", line \d+, in [\w<>.]+\s*$')


# A whole traceback on one line, its newlines lost on the way (a JSON log field flattened by a log shipper, a
# tracker that joined a paste; open-r1 issue 152: `Traceback (most recent call last): File "...", line 263, in main
# ... torch.OutOfMemoryError: CUDA out of memory. ...`): what rules read of it is its final exception, the first
# `Name: message` (or a bare `Name` at the line's end) after its last frame that is not the source's own `raise Name`.
JOINED_TB = lazy(r'Traceback \(most recent call last\):?\s+File "')
JOINED_LAST_FRAME = lazy(r'File "[^"]*", line \d+(?:, in \S+)?')
JOINED_FINAL = lazy(
    r"(?<=\s)(?<!raise )(?<!except )(?:[a-z_]\w*\.)*[A-Z]\w*"
    r"(?:Error|Exception|Failure|Fault|Exit|Interrupt|Exhausted|Died|Iteration)(?:\([^)]*\))?(?::\s|\s*$)"
)


def joined_final(msg: str) -> str:
    """The final exception of a traceback joined onto one line (`msg` starts with its header), '' when none."""
    end = max((f.end() for f in JOINED_LAST_FRAME.finditer(msg)), default=-1)
    if end < 0:
        return ""
    m = JOINED_FINAL.search(msg, end)
    return msg[m.start():].strip() if m else ""


# The writer a line's prefix names, when several write to one stream: torchrun's `[rank3]:` / `[default3]:`, srun -l's
# `3: `, Open MPI's `[1,3]<stderr>:`, a launcher's `[host:3]:`, a process's `pid=N` (Ray, vLLM V1) or relayed `[80846] `.
STREAM = lazy(r"\[(?:rank|default|Rank)?(\d+)\]:|^(\d{1,4}): |\[\d+,(\d+)\]<std|\[([\w.-]+:\d+)\]:|pid=(\d+)"
                    r"|^\[(\d{3,7})\] ")


def stream_of(line: Line) -> str:
    """Which writer of a shared stream printed the line ('' when its prefixes do not say)."""
    if line.pid:
        return "pid=" + line.pid
    text, msg = line.text, line.msg
    if len(text) == len(msg) or not text.endswith(msg):
        return ""
    m = STREAM.search(text, 0, len(text) - len(msg))
    return next(g for g in m.groups() if g) if m else ""


def _prefix_end(msg: str) -> int:
    """Where the line prefixes in front of msg end (LINE_PREFIXES matches the empty string too)."""
    m = LINE_PREFIXES.match(msg)
    return m.end() if m else 0


# Sides whose actors re-print what their workers raised: verl's TaskRunner / main_task and MILES' RolloutManager
# log a worker's RayTaskError with the worker's traceback under their own prefix, so the frames decide, not the prefix.
RELAY_SIDES = frozenset({"driver"})

PENDING, UNPROVED = object(), object()


class KeyMemo:
    """A function of a message that only some regexes decide, remembered per message and per key (digitkey.key: the
    message but for its digit runs). A storm's messages differ in their numbers: each would miss a memo of messages.
    A key's answer is kept once a second message of it comes and digitkey.runs_alike proves every regex answers
    alike on all its messages; a log of distinct keys costs one key a message. TRIAGE_NO_LINECACHE=1: messages only."""

    MEMO = 1 << 16  # messages (and keys) remembered

    def __init__(self, fn: Callable[[str], str], sources: list[str]) -> None:
        self.fn, self.sources = fn, sources
        self.keyed = linecache_enabled()
        self._memo: dict[str, str] = {}
        self._keys: dict[str, object] = {}  # key -> its answer, PENDING (one message seen) or UNPROVED

    def __call__(self, text: str) -> str:
        found = self._memo.get(text)
        if found is not None:
            return found
        if self.keyed:
            k = key(text)
            got = self._keys.get(k)
            if isinstance(got, str):
                return got
            if got is None:
                self._keys[k] = PENDING
            elif got is PENDING:
                proved = all(runs_alike(src, text) for src in self.sources)
                self._keys[k] = self.fn(text) if proved else UNPROVED
                if proved:
                    return self._keys[k]  # type: ignore[return-value]
            if len(self._keys) >= self.MEMO:
                self._keys.clear()
        found = self.fn(text)
        if len(self._memo) >= self.MEMO:
            self._memo.clear()
        self._memo[text] = found
        return found


class SideFinder:
    """Decides which process a line came from: its Ray actor, else the nearest marker line in the
    surrounding traceback (sglang/srt frames, `ray::MegatronTrainRayActor`...), else a line just after it that says
    whose the lines before it were (sides.yaml `trailing:`, SGLang's "Received sigquit from a child process"), else
    the file's kind."""

    def __init__(self, markers: Mapping[str, Any], actors: dict[str, str], trailing: Mapping[str, Any] | None = None,
                 trailing_lines: int = 0):
        self.markers = markers
        self.trailing = dict(trailing or {})
        self.trailing_lines = trailing_lines
        # `Name*` in sides.yaml names a family of processes (vLLM's `EngineCore_DP3`, `Worker_TP1_EP1`)
        self.actors = {a: s for a, s in actors.items() if not a.endswith("*")}
        self.actor_prefixes = tuple((a[:-1], s) for a, s in actors.items() if a.endswith("*"))
        # a traceback window is re-read for every hit, and a storm's messages differ in their numbers only
        self.of_text = KeyMemo(self._of_text, [rx.pattern for rx in markers.values()])
        self.callee = KeyMemo(callee_of, [CALL_ERROR.pattern, VERIFIER_URL.pattern, ENGINE_URL.pattern])

    def of_actor(self, actor: str) -> str:
        side = self.actors.get(actor)
        if side is None:
            side = next((s for prefix, s in self.actor_prefixes if actor.startswith(prefix)), "")
            if len(self.actors) < 4096:  # remember the answer; a log names few actors
                self.actors[actor] = side
        return side

    def _of_text(self, text: str) -> str:
        return next((side for side, rx in self.markers.items() if rx.search(text)), "")

    def side(self, lineno: int, actor: str, text: str, context: Context, file_side: str,
             within: tuple[int, int] = (60, 25)) -> str:
        if self.callee(text) == "verifier":  # a failed call to a judge, reward model or sandbox is the verifier's,
            return "verifier"  # whichever process (often the driver) printed it
        own = self.of_actor(actor)
        if own and own not in RELAY_SIDES:
            return own
        side = self.of_text(text)
        if side:
            return side
        if own:  # a relaying actor: the frames it re-printed above the line (its traceback) name who raised
            near = context.nearest(lineno, (within[0], 0), ("relayed", actor),
                                   lambda ln: ln.actor == actor and self.of_text(ln.msg), by_msg=False)
            return self.of_text(near.msg) if near is not None else own
        near = context.nearest(lineno, within, ("side", self), self.of_line, by_msg=False)
        rows = context.side_rows
        if rows.linenos:  # timer rows of actors with a side (not Context lines): as near as a line of the window?
            got = rows.nearest(lineno, within)
            if got is not None and (near is None or (abs(got[0] - lineno), got[0]) < (abs(near.lineno - lineno), near.lineno)):
                return got[1]
        if near is not None:
            return self.of_line(near)
        if self.trailing:
            after = context.nearest(lineno, (0, self.trailing_lines), ("trailing", self), self.of_trailing)
            if after is not None:
                return self.of_trailing(after)
        return file_side

    def of_trailing(self, line: Line) -> str:
        """The side a line says the lines just before it were ('' for another line)."""
        return next((side for side, rx in self.trailing.items() if rx.search(line.msg)), "")

    def of_line(self, line: Line) -> str:
        return self.of_actor(line.actor) or self.of_text(line.msg)

    def of_joined(self, line: Line) -> str:
        """The side a traceback joined onto one line names by its frames, innermost first ('' for another line)."""
        if line.text is line.msg or "Traceback (most recent call last)" not in line.text \
                or not JOINED_TB.search(line.text):
            return ""
        frames = [m.group(0) for m in JOINED_LAST_FRAME.finditer(line.text)]
        return next((side for side in map(self.of_text, reversed(frames)) if side), "")


class SideRows:
    """The lines of a file's registered timer shapes whose Ray actor has a side (sides.yaml `actors:`): rows of the C
    prefilter's columns, not Context lines, but a side lookup (SideFinder.side) reads which of its window's lines
    name a side, and these do. Kept as line numbers and sides, in line order; like Context, only as far as a later
    line's window or a pending claim's (`reach` lines before and after it) can reach."""

    COMPACT = 4096  # rows held before the first look for rows to drop

    def __init__(self, reach: tuple[int, int], pending: list[Any] | None) -> None:
        self.linenos: list[int] = []
        self.sides: list[str] = []
        self.reach = reach
        self.pending = pending  # the file's pending claims, in line order (None: keep every row)
        self._limit = self.COMPACT

    def add(self, rows: list[tuple[int, str]]) -> None:
        """Rows of one write-out, each (line number, side), after every row added before."""
        rows.sort()
        self.linenos.extend(ln for ln, _ in rows)
        self.sides.extend(side for _, side in rows)
        if len(self.linenos) >= self._limit and self.pending is not None:
            self._compact()

    def _compact(self) -> None:
        """Drop the rows no window can still hold: those more than reach[0] lines before the newest row that no
        pending claim's window holds (a later line's window starts after them)."""
        assert self.pending is not None
        before, after = self.reach
        claims = [ln.lineno for ln, *_ in self.pending]
        cut = bisect_left(self.linenos, self.linenos[-1] - before)
        keep = [i for i in range(cut) if (j := bisect_left(claims, self.linenos[i] - after)) < len(claims)
                and claims[j] <= self.linenos[i] + before]
        self.linenos = [self.linenos[i] for i in keep] + self.linenos[cut:]
        self.sides = [self.sides[i] for i in keep] + self.sides[cut:]
        self._limit = max(self.COMPACT, 2 * len(self.linenos))

    def nearest(self, lineno: int, within: tuple[int, int]) -> tuple[int, str] | None:
        """(line number, side) of the row of the window nearest `lineno` (the earlier of two as near), as
        Context.nearest picks a line."""
        linenos = self.linenos
        lo, hi = bisect_left(linenos, lineno - within[0]), bisect_right(linenos, lineno + within[1])
        if lo >= hi:
            return None
        mid = bisect_left(linenos, lineno, lo, hi)
        if mid == lo:
            return linenos[mid], self.sides[mid]
        if mid == hi or lineno - linenos[mid - 1] <= linenos[mid] - lineno:
            return linenos[mid - 1], self.sides[mid - 1]
        return linenos[mid], self.sides[mid]


class Context:
    """The candidate lines of one file (not the stats lines), for `near` conditions, side lookups and tracebacks.

    A window question (`any`, `nearest`) tests each line at most once per test, however many windows hold it: the
    answers are kept per test as one byte a line (0 not asked, 1 no, 2 yes), and a window is a slice of those bytes
    searched in C. A storm of 100 k near-identical hits, each with an 85-line window, costs one regex search per
    line and test, not 85. Identical messages (a traceback printed again and again) share one answer per test.

    Memory is bounded by what the claims and tracebacks need, not by the file: once a line is more than `reach[0]`
    lines behind the newest, no later claim's window can hold it, and it is dropped unless a pending claim's window
    (`reach` lines before and after the claim: the widest `within` of the rules, and the side lookup's) holds it,
    or signals.chains needs it (a traceback header, frame or exception line, or one of the HEADER lines before a
    traceback). A slime log's Timer lines between metric dicts (a few hundred thousand) stay a window's worth."""

    MEMO = 1 << 16  # distinct messages remembered per test
    COMPACT = 4096  # lines held before the first look for lines to drop
    HEADER = 4  # lines before a traceback that signals.chains reads as its header

    def __init__(self, reach: tuple[int, int] = (60, 25), pending: list[Any] | None = None) -> None:
        self.linenos: list[int] = []
        self.lines: list[Line] = []
        self._flags: dict[Any, bytearray] = {}  # test key -> one byte per line
        self._memo: dict[Any, dict[str, bool] | None] = {}  # test key -> message -> answer (tests of messages)
        self.reach = reach
        self.pending = pending  # (line, ...) of the claims not yet resolved, in line order; None: keep every line
        self.side_rows = SideRows(reach, pending)  # timer rows of actors with a side (registered shapes)
        self._claims: list[int] = []  # the pending claims' line numbers, as far as read
        self._limit = self.COMPACT
        self._settled = 0  # lines before this index are kept for good

    def add(self, line: Line) -> None:
        self.linenos.append(line.lineno)
        self.lines.append(line)
        if len(self.lines) >= self._limit and self.pending is not None:
            self._compact()

    def _compact(self) -> None:
        """Drop the lines no claim or traceback can still need (see the class note)."""
        assert self.pending is not None
        claims = self._claims
        claims.extend(ln.lineno for ln, *_ in self.pending[len(claims):])
        before, after = self.reach
        cut = bisect_left(self.linenos, self.linenos[-1] - before - self.HEADER, self._settled)
        keep: list[int] = []
        anchor_at = 1 << 62  # the line number of the nearest traceback anchor after the line looked at
        lines = self.lines
        for i in range(len(lines) - 1, self._settled - 1, -1):  # backwards: a header is known by what follows it
            ln = lines[i]
            msg = ln.msg
            anchor = TRACEBACK in msg[:80] or ('File "' in msg and FRAME.match(msg) is not None) or "RayTaskError" in msg
            if i < cut:
                j = bisect_left(claims, ln.lineno - after)
                if (anchor or anchor_at - ln.lineno <= self.HEADER or EXC_LINE.match(msg) is not None
                        or (j < len(claims) and claims[j] <= ln.lineno + before)):
                    keep.append(i)
            if anchor:
                anchor_at = ln.lineno
        keep.reverse()
        self.lines = lines[:self._settled] + [lines[i] for i in keep] + lines[cut:]
        self.linenos = [ln.lineno for ln in self.lines]
        self._settled += len(keep)
        self._flags.clear()
        self._memo.clear()
        self._limit = max(self.COMPACT, 2 * len(self.lines))


    def _span(self, lineno: int, within: tuple[int, int]) -> tuple[int, int]:
        return bisect_left(self.linenos, lineno - within[0]), bisect_right(self.linenos, lineno + within[1])

    def after(self, lineno: int, span: int) -> list[Line]:
        lo = bisect_right(self.linenos, lineno)
        hi = bisect_right(self.linenos, lineno + span)
        return self.lines[lo:hi]

    def _answers(self, key: Any, by_msg: bool) -> bytearray:
        flags = self._flags.get(key)
        if flags is None:
            flags = self._flags[key] = bytearray(len(self.lines))
            self._memo[key] = {} if by_msg else None
        elif len(flags) < len(self.lines):  # lines added since the last question
            flags.extend(bytes(len(self.lines) - len(flags)))
        return flags

    def _ask(self, key: Any, test: Callable[[Line], Any], flags: bytearray, i: int) -> int:
        line = self.lines[i]
        memo = self._memo[key]
        known = memo.get(line.msg) if memo is not None else None
        if known is not None:
            found = known
        else:
            found = bool(test(line))
            if memo is not None:
                if len(memo) >= self.MEMO:
                    memo.clear()
                memo[line.msg] = found
        flags[i] = 2 if found else 1
        return flags[i]

    def any(self, lineno: int, within: tuple[int, int], key: Any, test: Callable[[Line], Any],
            by_msg: bool = True, stream: str = "") -> bool:
        """Whether a line of the window around `lineno` passes `test`; `key` names the test. `by_msg`: the test reads
        only the message, so lines of the same message share its answer. `stream` (stream_of the line asking): only
        lines of that stream or of none count, so ranks whose tracebacks interleave on one stream are read apart."""
        lo, hi = self._span(lineno, within)
        flags = self._answers(key, by_msg)
        lines = self.lines
        i = flags.find(2, lo, hi)
        while i >= 0:
            if not stream or stream_of(lines[i]) in ("", stream):
                return True
            i = flags.find(2, i + 1, hi)
        i = flags.find(0, lo, hi)
        while i >= 0:
            if self._ask(key, test, flags, i) == 2 and (not stream or stream_of(lines[i]) in ("", stream)):
                return True
            i = flags.find(0, i + 1, hi)
        return False

    def nearest(self, lineno: int, within: tuple[int, int], key: Any, test: Callable[[Line], Any],
                by_msg: bool = True) -> Line | None:
        """The line of the window nearest `lineno` (the earlier of two as near) that passes `test` (as for `any`)."""
        lo, hi = self._span(lineno, within)
        flags = self._answers(key, by_msg)
        i = flags.find(0, lo, hi)
        while i >= 0:
            self._ask(key, test, flags, i)
            i = flags.find(0, i + 1, hi)
        mid = bisect_left(self.linenos, lineno, lo, hi)
        before, after = flags.rfind(2, lo, mid), flags.find(2, mid, hi)
        if before < 0:
            return self.lines[after] if after >= 0 else None
        if after < 0 or lineno - self.linenos[before] <= self.linenos[after] - lineno:
            return self.lines[before]
        return self.lines[after]


class Runs:
    """A run of identical consecutive candidate lines is one line with a count: a crash loop that prints the same
    line a million times costs one line's parsing, matching and side lookup, and one line's memory. Both scan
    paths (line for line, and the C prefilter's candidates) fold the same way."""

    __slots__ = ("text", "line", "own")

    def __init__(self) -> None:
        self.text = ""
        self.line: Line | None = None
        self.own = 1  # the last line's own repeat count (a Ray `[repeated Nx across cluster]` line counts N)

    def folds(self, lineno: int, text: str) -> bool:
        """Whether this line repeats the last one (added to its count) rather than starting a new one."""
        ln = self.line
        if ln is not None and text == self.text and lineno == (ln.until or ln.lineno) + 1:
            ln.repeat += self.own
            ln.until = lineno
            return True
        return False

    def after(self, ctx: Context, lineno: int, text: str) -> None:
        """The line just handled: the one a repeat would fold into, when it was kept as context."""
        tail = ctx.lines[-1] if ctx.lines else None
        if tail is not None and tail.lineno == lineno:
            self.line, self.text, self.own = tail, text, tail.repeat
        else:
            self.line = None


DIGITS = lazy(r"\d+")
ASCII_DIGITS = lazy(r"[0-9]+")
NATIVE_LINE_MAX = 4096  # bytes: longer lines are never counted by the C prefilter (_linescan.c FAM_LINE_MAX)
FAMILY_GAP = 64  # lines: a line folds into its family's line only this close to the last one folded


class Families:
    """A storm of lines of one family is one line with a count: `KV cache pool is full. Retract requests.
    #retracted_reqs: 1, #new_token_ratio: 0.3 -> 0.5` a million times, the numbers changing and stats rows in
    between, costs one line's memory, side lookup and claim. A line folds into the line kept before it when:
    no other context line came between (stats rows may) and it is at most FAMILY_GAP lines after the last one
    folded; the same process printed both; their messages differ only in digits; the same rules matched both,
    none of them judging numbers or neighbours (`when`, `knobs_when`, `near`, `not_near`); and the line's event,
    if any, is a retraction. The kept line counts the folded ones in `repeat` (first and last line: `lineno`,
    `until`); its retraction event adds what their own counts add beyond its own (`extra`), so the number of
    retracted requests stays exact. Both scan paths call it from Scanner._line."""

    __slots__ = ("line", "key", "event", "ids")

    def __init__(self) -> None:
        self.line: Line | None = None
        self.key: tuple[Any, ...] | None = None
        self.event: Any = None
        self.ids: tuple[int, ...] | None = None  # the C prefilter's needle indices of the kept line (when it read it)

    def fold(self, line: Line, matched: list[Any], event: Any, ctx: Context) -> tuple[Any, ...] | None:
        """None when `line` was folded into the kept line; else its family key (empty when it has none)."""
        if event is not None and event.kind != "retraction":
            return ()
        if any(r.when or r.knobs_when or r.near is not None or r.not_near is not None for r, _ in matched):
            return ()
        key = (line.actor, line.pid, DIGITS.sub("", line.msg), tuple(sorted(r.id for r, _ in matched)))
        kept = self.line
        if (kept is not None and key == self.key and ctx.lines and ctx.lines[-1] is kept
                and line.lineno - (kept.until or kept.lineno) <= FAMILY_GAP):
            if (event is None) != (self.event is None):
                return ()
            kept.repeat += line.repeat
            kept.until = line.lineno
            if event is not None:
                own = int(self.event.fields.get("count", 1))
                extra = (int(event.fields.get("count", 1)) - own) * line.repeat
                self.event.fields["extra"] = self.event.fields.get("extra", 0) + extra
            return None
        return key

    def kept(self, line: Line, key: tuple[Any, ...] | None, event: Any) -> None:
        """A line went into the context: the next of its family folds into it (key None or empty: it has none)."""
        self.line, self.key, self.event = (line, key, event) if key else (None, None, None)
        self.ids = None

    def native(self, ctx: Context, base: int) -> tuple[bytes, tuple[int, ...], int, int, int] | None:
        """What the C prefilter needs to count the next lines of the kept line's family itself (_linescan.c, Family):
        its text without digit runs, its needle indices, its last line (relative to a buffer after `base` lines), the
        gap, and which digit run holds its retraction count (-1: no event). None when the C side cannot tell its
        family as fold() does: not the last context line, a Ray line (its pid is digits), a repeat count, a line
        that is not printable ASCII, an event whose count it would not find."""
        line = self.line
        if line is None or self.ids is None or not ctx.lines or ctx.lines[-1] is not line or line.actor \
                or line.text.startswith("("):
            return None
        text = line.text
        if not text.isascii() or not text.isprintable() or len(text) > NATIVE_LINE_MAX or text.endswith("cluster]"):
            return None
        run = -1
        if self.event is not None:
            m = RETRACTED.search(text) if self.event.fields.get("engine") == "sglang" else None
            if m is None or int(m.group(1)) != self.event.fields.get("count"):
                return None
            run = len(ASCII_DIGITS.findall(text, 0, m.start(1)))
        return ASCII_DIGITS.sub("", text).encode(), self.ids, (line.until or line.lineno) - base - 1, FAMILY_GAP, run

    def counted(self, lines: int, total: int, lineno: int) -> None:
        """`lines` more lines of the kept line's family, the last at `lineno`, counted by the C prefilter: as if
        fold() had taken each (`total`: the sum of their retraction counts)."""
        kept = self.line
        assert kept is not None
        kept.repeat += lines
        kept.until = lineno
        if self.event is not None:
            own = int(self.event.fields.get("count", 1))
            self.event.fields["extra"] = self.event.fields.get("extra", 0) + total - own * lines
