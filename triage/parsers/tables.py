"""Metric tables a user pasted into an issue or a notes file, read as metric records (parsers/metrics.py shape).

Two shapes, markdown (`|` between cells, a `|---|` rule under the header) or whitespace-aligned:
- column tables: a header row of metric names, then rows of bare numbers, one row a step (the reporter's summary of
  TRL GRPO metrics: `Step  loss  grad_norm  reward_mean  clipped_ratio  mean_length` / `1  0  0  0  1.0  256`):
  one record a row, its step from a Step/Iter column when the table has one;
- key/value tables: rows whose first cell names a metric and whose second is a number (`| \\`completions/clipped_ratio\\`
  | \\`1\\` | 39 / 40 |`), or rows of names and numbers alternating (AReaL/realhf's box-drawn stats tables, `│ key │
  value │ key │ value │`, under a Ray actor prefix): one record a table.
Markdown emphasis and code spans around a cell are dropped; an ellipsis row (`...`) is skipped. A header needs a
cell that names a known series (vocabulary.canonical) or a reward function's, so ordinary aligned text (`pip list`,
`nvidia-smi`) is not taken for a table.

The rows hold no literal a prefilter could anchor on, so tables are read from a file's whole text after its scan,
for files of up to MAX_BYTES (a paste, a notes file); a run's own multi-gigabyte log prints its metrics as lines the
line parsers read.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Iterator
from sys import intern

from triage.lazyre import lazy, lazy_bytes
from triage.model import Event, Line
from triage.parsers.vocabulary import canonical, reward_function
from triage.prefixes import RAY_IP

MAX_BYTES = 2 << 20  # files read for tables: a paste or a notes file, not a run's whole log
MAX_LINE = 600  # a longer line is no table row
MAX_ROWS = 5000  # rows of one table read

NAME = lazy(r"[A-Za-z_][\w/@.\-]{0,80}")
NUMBER = lazy(r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|nan|NaN|inf|-inf")
ANSI = lazy(r"\x1b\[[0-9;]*[A-Za-z]")
RAY = lazy(r"^\(\w+ pid=\d+(?:, ip=" + RAY_IP + r")?\)\s*")
BOX = set("─━═┼┤├╪╡╞╤╧╒╕╘╛┌┐└┘┬┴│|-:+ ")  # the rules and frame of a box-drawn table (AReaL's stats tables)
RULE = lazy(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*$")  # | --- | :---: | ---: |
ELLIPSIS = {"...", "…", "⋮"}
HEAD_CELL = lazy(r"[A-Za-z_][\w/@.\- ()]{0,60}")  # a delimited header cell (spaces allowed)
STEP_COLUMNS = {"step", "steps", "global_step", "iter", "iteration", "iterations"}

# What every table has and a log's lines almost never do, looked for in a file's bytes before its lines are read:
# a number alone in a delimited cell (`| 0.5 |`, a tab, `│`), or a line of three or more bare numbers (an aligned
# column table's row). Most files have neither and are not read again (a run of 200 k small logs). Each expression
# starts with a literal or a character set, so the search skips ahead in C (~25 µs for a 4 KB log).
_NUM = rb"[`*]*-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?[`*]*|nan|NaN|-?inf"
_DELIMITED = lazy_bytes(rb"(?:\||\t|\xe2\x94\x82)[ \t]*(?:%s)[ \t]*(?:\||\t|\xe2\x94\x82|\r?\n|\r?$)" % _NUM)
_ALIGNED = rb"[ \t]*(?:%s)(?:[ \t]+(?:%s)){2,}[ \t]*\r?(?:\n|$)" % (_NUM, _NUM)
_ALIGNED_ROW = lazy_bytes(rb"\n" + _ALIGNED)
_ALIGNED_FIRST = lazy_bytes(_ALIGNED)


def may_hold(data: bytes) -> bool:
    """Whether a file's bytes may hold a table (a cheap test; `read` decides). A delimited cell needs one of its
    delimiters, looked for first (a byte search, ~0.1 us; the regex's search of its first set took ~3 ns a byte)."""
    delimited = (b"|" in data or b"\t" in data or b"\xe2\x94\x82" in data) and _DELIMITED.search(data)
    return bool(delimited or _ALIGNED_ROW.search(data) or _ALIGNED_FIRST.match(data))


def _cells(line: str) -> tuple[list[str], bool] | None:
    """(the cleaned cells of a table line, whether they were delimited: `|`, `│` or tabs), or None. Without a
    delimiter, cells are what whitespace separates. Colour codes and a Ray actor prefix are dropped first."""
    s = line.strip()
    if not s or len(s) > MAX_LINE:
        return None
    if "\x1b" in s:
        s = ANSI.sub("", s)
    if s.startswith("("):
        s = RAY.sub("", s, count=1)
    if "│" in s:
        s = s.replace("│", "|")
    if "|" in s:
        parts, delimited = s.strip().strip("|").split("|"), True
    elif "\t" in s:
        parts, delimited = s.split("\t"), True
    else:
        parts, delimited = s.split(), False
    return [p.strip().strip("`*").strip() for p in parts], delimited


def _known(name: str) -> bool:
    return canonical(name) is not None or reward_function(name) is not None


def _number(cell: str) -> float | None:
    return float(cell) if NUMBER.fullmatch(cell) else None


def _header(cells: list[str], delimited: bool) -> bool:
    """Metric names, one a known series; delimited cells may hold spaces (`Training Loss`), aligned ones cannot,
    and an aligned header needs three names (two words and a known one are too common in prose)."""
    return (len(cells) >= (2 if delimited else 3)
            and all(NAME.fullmatch(c) or delimited and HEAD_CELL.fullmatch(c) for c in cells)
            and any(_known(c) for c in cells if c.lower() not in STEP_COLUMNS))


def _metric(name: str, value: str) -> tuple[str, float] | None:
    number = _number(value)
    if number is None or not NAME.fullmatch(name) or not (_known(name) or "/" in name):
        return None
    return intern(name), number


def _kv(cells: list[str], delimited: bool) -> list[tuple[str, float]] | None:
    """The (metric, value) pairs of a key/value row of a delimited table: names and numbers alternating over the
    row (AReaL's stats tables: `│ ppo_actor/seq_len/max │ 4.3120e+03 │ ppo_actor/new_logp/avg │ -2.8348e-01 │`,
    trailing cells empty), or a name and a number followed by notes (`| metric | 80 | 40 / 40 |`)."""
    if not delimited or len(cells) < 2:
        return None
    while cells and not cells[-1]:
        cells = cells[:-1]
    if len(cells) % 2 == 0:
        pairs = [_metric(n, v) for n, v in zip(cells[::2], cells[1::2])]
        if all(p is not None for p in pairs):
            return [p for p in pairs if p is not None]
    first = _metric(cells[0], cells[1]) if len(cells) >= 2 else None
    return [first] if first is not None else None


def _skip(line: str, cells: tuple[list[str], bool] | None) -> bool:
    """A line a table may hold between its rows: the header rule, a box table's rule or frame, an ellipsis row."""
    if cells is None:
        return False
    body = "|".join(cells[0])
    return (bool(RULE.match(line)) or not body.strip(" |") and "|" in line
            or bool(body) and set(body) <= BOX and any(c in body for c in "─═━")
            or all(c in ELLIPSIS for c in cells[0] if c) and any(cells[0]))


def read(lines: Iterable[str], file: str) -> Iterator[Event]:
    """The metric records of every table in a file's lines (1-based numbering)."""
    numbered = list(enumerate(lines, 1))
    i = 0
    while i < len(numbered):
        lineno, text = numbered[i]
        found = _cells(text)
        if found is None:
            i += 1
            continue
        if _header(*found):
            i = yield from _columns(numbered, i, found, file)
            continue
        if _kv(*found) is not None:
            i = yield from _pairs(numbered, i, file)
            continue
        i += 1


def _body(numbered: list[tuple[int, str]], j: int) -> Iterator[tuple[int, int, str, tuple[list[str], bool] | None]]:
    """(index, lineno, text, cells) of the lines from numbered[j] on that may be a table's rows (rules and
    ellipsis rows skipped); the caller stops at the first that is not."""
    for k in range(j, len(numbered)):
        lineno, text = numbered[k]
        cells = _cells(text)
        if not _skip(text, cells):
            yield k, lineno, text, cells


def _line(file: str, lineno: int, text: str) -> Line:
    if "\x1b" in text:
        text = ANSI.sub("", text)
    return Line(file, lineno, text, text.strip())


def _columns(numbered: list[tuple[int, str]], i: int, header: tuple[list[str], bool],
             file: str) -> Generator[Event, None, int]:
    """One record per row under a header (at numbered[i]); returns where reading goes on. An aligned table
    needs two rows."""
    names, delimited = header
    head_no, head_text = numbered[i]
    head = _line(file, head_no, head_text)
    step_at = next((k for k, n in enumerate(names) if n.lower() in STEP_COLUMNS), None)
    keys = [intern(n) for n in names]
    found: list[Event] = []
    j = i + 1
    for j, lineno, text, cells in _body(numbered, i + 1):  # noqa: B007 - where reading stops is wanted
        if len(found) >= MAX_ROWS:
            break
        values = [_number(c) for c in cells[0]] if cells is not None and len(cells[0]) == len(names) else None
        if values is None or any(v is None for v in values):
            break
        row = {k: v for k, v in zip(keys, values) if v is not None}
        step = row.pop(keys[step_at]) if step_at is not None else None
        found.append(Event("metrics", _line(file, lineno, text),
                           {"framework": "table", "tag": "row", "values": row, "lines": dict.fromkeys(row, head),
                            "step": int(step) if step is not None and step.is_integer() else None}))
    else:
        j = len(numbered)
    if len(found) < (1 if delimited else 2):
        return i + 1
    yield from found
    return j


def _pairs(numbered: list[tuple[int, str]], i: int, file: str) -> Generator[Event, None, int]:
    """One record of the key/value rows from numbered[i]; returns where reading goes on."""
    values: dict[str, float] = {}
    lines: dict[str, Line] = {}
    first = None
    j = i
    for j, lineno, text, cells in _body(numbered, i):  # noqa: B007 - where reading stops is wanted
        pairs = _kv(*cells) if cells is not None else None
        if pairs is None or len(values) >= MAX_ROWS or any(k in values for k, _ in pairs):
            break
        line = _line(file, lineno, text)
        first = first or line
        for k, v in pairs:
            values[k] = v
            lines[k] = line
    else:
        j = len(numbered)
    if first is not None:
        yield Event("metrics", first, {"framework": "table", "tag": "pairs", "step": None, "values": values,
                                       "lines": lines})
    return max(j, i + 1)
