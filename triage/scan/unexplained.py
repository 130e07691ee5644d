"""One file's error-like lines that no rule claimed (the unclassified findings' lines), folded per shape.

A log can hold millions of them (a retry loop, a driver printing every failed request), of a few hundred messages
whose numbers, ids and hex change. Each line's shape (template.shape: a cheap key that implies the line's
template) names its family: the file keeps, per shape, the first and the last line and how many lines there were
(their repeat counts summed), which is all an unclassified finding shows; memory and templating cost grow with the
number of messages, not of lines.

A line some later step may single out is kept whole instead, so those steps see what they saw before:
- an exception line (a traceback's final line, which chains, the process's fatal end and reward frames pick by
  identity, or which a rule's `follow` attaches to its header);
- a line holding a shutdown or signal-exit literal (signals.judge's marks), and every line after the file's first
  orderly-shutdown marker (judge drops them as teardown noise, counting them);
- the newest line, until the next one comes: a log that ends inside a traceback names its last line as the
  exception (signals.chains, `cut`).
Lines the C prefilter counted per key (scan/errfold.py) come as records (`natives`) and fold the same way.
"""

from __future__ import annotations

from triage.lazyre import lazy
from triage.model import Line
from triage.template import shape

# The advice torch appends to every CUDA error's message (c10/cuda/CUDAException.cpp c10_cuda_check_implementation,
# torch 1.13+; torch 2.8+ adds the "Search for `cudaErrorIllegalAddress' in ..." line first). A logger that prints the
# exception at ERROR level repeats its level on each of these lines (vLLM's workers and engine core: vllm issues 6976,
# 23921, vllm-windows issue 72): part of the error line above them, never an unexplained line of their own; nor is
# an error-level line with nothing after its prefixes (a logged traceback's blank lines, vLLM's `ERROR ...
# [multiproc_executor.py:1007]` alone).
CUDA_ADVICE = lazy(
    r"(?:CUDA kernel errors might be asynchronously reported at some other API call|For debugging consider passing "
    r"CUDA_LAUNCH_BLOCKING=1|Compile with .TORCH_USE_CUDA_DSA. to enable device-side assertions|Search for .cuda\w+. in "
    r"https://docs\.nvidia\.com/cuda/cuda-runtime-api/group__CUDART__TYPES\.html)"
)

# Python's own words between two chained tracebacks (traceback.py, 3.x: `raise ... from`, and an exception raised
# while handling another): a logger that prints the chain at ERROR level repeats its level on them (vLLM's engine
# core, real-extra 1295). They join the tracebacks around them; the exceptions are the failures.
CHAIN_JOIN = lazy(r"\s*(?:The above exception was the direct cause of the following exception"
                        r"|During handling of the above exception, another exception occurred):?\s*$")

# Python unittest's heading of each failed test in its summary (Lib/unittest/runner.py TextTestResult.printErrorList:
# "FLAVOUR: description" between its ==== and ---- rules, description "test_x (module.Class)" to 3.10, "test_x
# (module.Class.test_x)" from 3.11; xmlrunner adds the elapsed "[0.123s]"): it titles the traceback printed under it,
# whose exception line is the failure (SGLang's Ascend nightly tests, real-extra 986, 1394-1395).
TEST_RUNNER_HEADING = lazy(r"(?:ERROR|FAIL)(?: \[[\d.]+s\])?: \w+ \((?:\w+\.)+\w+\)\s*$")
# pytest's last line, the session's outcome counts between `=` rules (_pytest/terminal.py, summary_stats: `===== 1
# failed, 11 passed, 2 warnings in 98.12s (0:01:38) =====`): the failures are the tests' own exception lines and its
# short summary's `FAILED <test> - <exception>` lines above it (signals.PYTEST_SUMMARY), not this count.
PYTEST_OUTCOMES = lazy(r"=+ (?:\d+ (?:failed|passed|errors?|skipped|xfailed|xpassed|warnings?|deselected|rerun)"
                        r"(?:, |(?= in ))){1,9} in [\d.]+s(?: \([\d:]+\))? =+\s*$")


class Fold:
    """The lines of one shape: the first, the last, and how many (their repeat counts summed). `shape`: the shape
    they were folded under (findings.unclassified groups by it rather than taking it again)."""

    __slots__ = ("first", "last", "count", "shape")

    def __init__(self, line: Line, shape: bytes | None = None) -> None:
        self.first = self.last = line
        self.count = line.repeat
        self.shape = shape

    def add(self, line: Line) -> None:
        if line.lineno < self.first.lineno:
            self.first = line
        if line.lineno > self.last.lineno:
            self.last = line
        self.count += line.repeat


class Unexplained:
    """One file's unclaimed error-like lines: some kept whole, the others folded per shape (see the module note)."""

    __slots__ = ("lines", "folds", "held", "held_shape", "shut_at")

    def __init__(self) -> None:
        self.lines: list[Line] = []  # kept whole
        self.folds: dict[bytes, Fold] = {}  # shape -> its lines
        self.held: Line | None = None  # the newest foldable line, folded when the next line comes
        self.held_shape: bytes | None = None  # its shape, when known (a line of a key errfold registered)
        self.shut_at = 1 << 62  # the line of the file's first orderly-shutdown marker

    def empty(self) -> bool:
        """No line was added."""
        return not self.lines and not self.folds and self.held is None

    def shutdown(self, lineno: int) -> None:
        """An orderly-shutdown marker (signals.judge's first one): lines from here on are kept whole."""
        self.shut_at = min(self.shut_at, lineno)

    def add(self, line: Line, foldable: bool = True, newest: bool = True, shape: bytes | None = None) -> None:
        """An error-like line no rule claimed. `foldable`: no later step may single it out (the caller knows: not an
        exception line, not a mark, not the file's last line). `newest`: the scan's newest line (held until the next
        one comes); else a line met after the scan (a claim whose conditions failed), folded at once. `shape`: the
        shape it folds under, when the caller knows it (the registered shape of an errfold key, as `natives`)."""
        if not line.msg.strip() or CUDA_ADVICE.match(line.msg) or CHAIN_JOIN.match(line.msg) \
                or TEST_RUNNER_HEADING.match(line.msg) or PYTEST_OUTCOMES.match(line.msg):
            return
        if not foldable or line.lineno >= self.shut_at:
            self.lines.append(line)
        elif not newest:
            self._fold(line, shape)
        else:
            held, held_shape = self.held, self.held_shape
            self.held, self.held_shape = line, shape
            if held is not None:
                self._fold(held, held_shape)

    def natives(self, records: list[tuple[bytes, int, Line, Line | None, Line]]) -> Line | None:
        """The lines the C prefilter counted per shape (scan/errfold.py), (shape, count, first, the one before the last
        or None, last) each: folded as if each line had come in turn, so the file's newest foldable line is held as
        ever. Returns the newest of them (the context's, when newer than its lines)."""
        if not records:
            return None
        newest = max(records, key=lambda r: r[4].lineno)
        held = self.held is None or newest[4].lineno > self.held.lineno
        for rec in records:
            key, count, first, prev, last = rec
            if rec is newest and held:
                if count >= 2:
                    assert prev is not None
                    self._merge(key, count - 1, first, prev)
                self.add(last)
            else:
                self._merge(key, count, first, last)
        return newest[4]

    def _merge(self, key: bytes, count: int, first: Line, last: Line) -> None:
        f = self.folds.get(key)
        if f is None:
            f = self.folds[key] = Fold(first, key)
            f.last, f.count = last, count
            return
        if first.lineno < f.first.lineno:
            f.first = first
        if last.lineno > f.last.lineno:
            f.last = last
        f.count += count

    def _fold(self, line: Line, known: bytes | None = None) -> None:
        key = known if known is not None else shape(line.msg)
        f = self.folds.get(key)
        if f is None:
            self.folds[key] = Fold(line, key)
        else:
            f.add(line)

    def close(self) -> tuple[list[Line], list[Fold]]:
        """(the lines kept whole, and each fold of one line; the folds of more lines), in line order."""
        lines = self.lines + ([self.held] if self.held is not None else [])
        self.held = self.held_shape = None
        folds = []
        for f in self.folds.values():
            if f.first is f.last:
                lines.append(f.first)
            else:
                folds.append(f)
        lines.sort(key=lambda ln: ln.lineno)
        folds.sort(key=lambda f: f.first.lineno)
        return lines, folds
