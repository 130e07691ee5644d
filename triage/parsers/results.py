"""Per-sample verifier and judge result files read as data: one row per scored sample.

A results file is recognised by its columns, never its name: an outcome (reward/score, status, error, a timeout
flag) beside per-sample columns (the sample's text, latency, judge token counts). A per-step metrics file
(`{"step": 3, "loss": ..., "train/reward": ...}`, a wandb summary) is not one. Shapes this reads:
- JSON lines (verl `trainer.rollout_data_dir` dumps: input/output/gts/score/step + the reward function's extra
  columns; SandboxFusion `/run_code` responses, whose `run_result` is nested: nested objects become dotted
  columns such as `run_result.status`);
- a JSON array of row objects, an object wrapping one (`{"results": [...]}`), or an object of rows keyed by
  index (opencompass prediction/judge files: `{"0": {...}, "1": {...}}`);
- CSV/TSV with a header, and Parquet (lighteval details), read with polars.

Each row keeps the line it starts on (JSON lines and JSON: exact; CSV: header + row, exact unless a quoted field
spans lines; Parquet: the row number), so evidence points at `file:line`. Only the columns with a role are kept,
with long texts cut; the checks (triage/checks/verifier_results.py) compute rates and tails from them.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from triage.lazyre import lazy
from triage.model import Event, Line, LogFile
from triage.safe_load import json_loads, json_raw_decode

Opener = Callable[[str, str], BinaryIO]

MAX_ROWS = 2_000_000  # rows kept of one file (a bigger one is cut, and the file's note says so)
MAX_TEXT = 300  # characters kept of one status/error value
BIG_JSONL = 64 << 20  # JSON lines beyond this many bytes are read by polars (row number as line)

# -- column roles -------------------------------------------------------------------------------------------
REWARD_NAMES = {"reward", "rewards", "score", "scores", "acc", "accuracy", "correct", "is_correct", "passed",
                "pass", "final_reward", "judge_score", "verifier_score", "reward_score", "total_reward",
                "gt_reward", "verdict_score"}
STATUS_NAMES = {"status", "state", "verdict", "outcome", "result_status", "run_status", "exec_status",
                "execution_status", "error_type", "finish_state", "judge_status", "verifier_status"}
ERROR_NAMES = {"error", "errors", "exception", "error_message", "error_msg", "err", "traceback", "exception_message",
               "failure_reason", "api_error", "exc", "error_info"}
TIMEOUT_NAMES = {"timeout", "timed_out", "is_timeout", "timedout", "time_out"}
LIMIT_NAMES = {"timeout", "run_timeout", "time_limit", "timeout_s", "timeout_seconds", "compile_timeout"}
LATENCY_NAMES = {"latency", "duration", "elapsed", "elapsed_time", "execution_time", "exec_time", "runtime",
                 "run_time", "wall_time", "time_taken", "response_time", "verify_time", "judge_latency", "time",
                 "seconds", "took", "latency_s", "latency_ms", "duration_ms", "duration_s", "elapsed_ms",
                 "elapsed_s", "time_ms", "reward_time", "judge_time", "verification_time", "score_time"}
NOT_LATENCY = {"start_time", "end_time", "timestamp", "create_time", "created_time", "update_time", "created_at",
               "updated_at", "submit_time", "finish_time"}
PROMPT_TOKENS = {"prompt_tokens", "input_tokens", "prompt_token_count", "num_prompt_tokens", "n_prompt_tokens",
                 "judge_prompt_tokens", "judge_input_tokens"}
RESPONSE_TOKENS = {"completion_tokens", "output_tokens", "response_tokens", "completion_token_count",
                   "num_completion_tokens", "n_completion_tokens", "judge_response_tokens",
                   "judge_completion_tokens", "policy_response_tokens"}
RUBRIC_TOKENS = {"rubric_tokens", "rubric_token_count", "judge_rubric_tokens", "reference_tokens"}
TOTAL_TOKENS = {"total_tokens", "judge_total_tokens"}
CONTEXT_NAMES = {"max_context_length", "context_length", "max_model_len", "context_window",
                 "judge_max_context_length", "max_context"}
TEXT_NAMES = {"prompt", "input", "inputs", "question", "problem", "query", "response", "output", "outputs",
              "completion", "prediction", "predictions", "answer", "gts", "ground_truth", "gold", "target",
              "reference", "solution", "data_source", "uid", "id", "sample_id", "request_id", "idx", "index",
              "code", "stdout", "stderr", "judge_prompt", "judge_response", "rubric", "messages", "origin_prompt",
              "full_prompt", "example", "instruction", "task", "task_id", "pred", "extracted_answer"}
ANSWER_NAMES = {"pred", "extracted_answer", "gts", "ground_truth", "gold"}
METRIC_NAMES = {"loss", "grad_norm", "lr", "learning_rate", "epoch", "global_step", "iteration", "_step",
                "_runtime", "_timestamp", "train_loss", "eval_loss", "kl", "entropy", "policy_loss", "pg_loss"}
# A status value that says the verifier (not the sample) failed. A program's own failure (`Failed`, a
# candidate's runtime error in `run_result.status`) is the sample's outcome, not the verifier's.
ERROR_STATUS = lazy(r"(?i)^(?:error|errored|exception|sandbox_?error|internal_?error|api_?error|crash(?:ed)?"
                          r"|unavailable|rate_?limit(?:ed)?|server_?error|judge_?error|verifier_?error|unknown_?error)$")
PROGRAM_STATUS = lazy(r"(?i)(?:^|\.)(?:run_result|compile_result|exec_result|execution|program|tests?|driver)\.")
TIMEOUT_TEXT = r"(?i)time\s*-?\s*out|timed\s*out|time\s*limit|timelimit|deadline exceeded|TLE\b"
EMPTY = ("", "none", "null", "nan", "false", "0", "[]", "{}", "ok", "n/a")


def _leaf(name: str) -> str:
    leaf = name.rsplit(".", 1)[-1].lower()
    return re.sub(r"[^a-z0-9_]+", "_", leaf).strip("_") or leaf


@dataclass
class Roles:
    """Which columns hold what. Lists keep the file's column order."""

    reward: list[str] = field(default_factory=list)
    status: list[str] = field(default_factory=list)
    error: list[str] = field(default_factory=list)
    timeout: list[str] = field(default_factory=list)  # boolean flags
    limit: list[str] = field(default_factory=list)  # the per-row time limit the verifier was given
    latency: list[str] = field(default_factory=list)
    prompt_tokens: list[str] = field(default_factory=list)
    response_tokens: list[str] = field(default_factory=list)
    rubric_tokens: list[str] = field(default_factory=list)
    total_tokens: list[str] = field(default_factory=list)
    context: list[str] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    answer: list[str] = field(default_factory=list)  # extracted and gold answers: short, shown in evidence
    metric: list[str] = field(default_factory=list)

    def kept(self) -> list[str]:
        seen: dict[str, None] = {}
        for group in (self.reward, self.status, self.error, self.timeout, self.limit, self.latency,
                      self.prompt_tokens, self.response_tokens, self.rubric_tokens, self.total_tokens, self.context,
                      self.answer):
            seen.update(dict.fromkeys(group))
        return list(seen)

    @property
    def tokens(self) -> bool:
        return bool(self.prompt_tokens or self.response_tokens or self.rubric_tokens or self.total_tokens)


def roles_of(names: list[str]) -> Roles:
    r = Roles()
    for name in names:
        leaf = _leaf(name)
        if "/" in name or leaf in METRIC_NAMES:
            r.metric.append(name)
            continue
        if leaf in REWARD_NAMES or (leaf.endswith(("_reward", "_score")) and not leaf.startswith(("max_", "min_"))):
            r.reward.append(name)
        elif leaf in STATUS_NAMES:
            r.status.append(name)
        elif leaf in ERROR_NAMES or leaf.endswith(("_error", "_exception", "_errors")):
            r.error.append(name)
        elif leaf in TIMEOUT_NAMES:
            r.timeout.append(name)  # a flag, or (numeric) the limit: decided on the values
        elif leaf in LIMIT_NAMES:
            r.limit.append(name)
        elif leaf in PROMPT_TOKENS:
            r.prompt_tokens.append(name)
        elif leaf in RESPONSE_TOKENS:
            r.response_tokens.append(name)
        elif leaf in RUBRIC_TOKENS:
            r.rubric_tokens.append(name)
        elif leaf in TOTAL_TOKENS:
            r.total_tokens.append(name)
        elif leaf in CONTEXT_NAMES:
            r.context.append(name)
        elif leaf in NOT_LATENCY:
            continue
        elif leaf in LATENCY_NAMES or leaf.endswith(("_latency", "_duration", "_elapsed", "_time_s", "_time_ms",
                                                     "_latency_ms", "_latency_s", "_seconds")):
            r.latency.append(name)
        elif leaf in TEXT_NAMES:
            r.text.append(name)
            if leaf in ANSWER_NAMES:
                r.answer.append(name)
        elif leaf.endswith("_extracted_answer"):
            r.answer.append(name)
    return r


def is_results(names: list[str]) -> bool:
    """Columns of per-sample verifier output: an outcome beside per-sample columns, and not a metrics record."""
    if not names:
        return False
    r = roles_of(names)
    outcome = bool(r.reward or r.status or r.error or r.timeout)
    sample = bool(r.text or r.latency or r.tokens or r.status or r.error or r.timeout)
    if len(r.metric) >= 2 and not r.text:  # {"_step": .., "train/reward": ..}: per-step metrics
        return False
    return outcome and sample


# -- flattening and head sniffing ---------------------------------------------------------------------------
def flatten(obj: dict[str, Any], prefix: str = "", out: dict[str, Any] | None = None, depth: int = 0) -> dict[str, Any]:
    """Nested objects as dotted columns (`run_result.status`); lists stay values."""
    out = {} if out is None else out
    for k, v in obj.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict) and depth < 3:
            flatten(v, name + ".", out, depth + 1)
        else:
            out[name] = v
    return out


def _columns(rows: list[dict[str, Any]]) -> list[str]:
    names: dict[str, None] = {}
    for row in rows:
        names.update(dict.fromkeys(flatten(row)))
    return list(names)


def jsonl_head_columns(text: str, limit: int = 20) -> list[str]:
    rows = []
    for ln in text.splitlines()[: limit * 2]:
        s = ln.strip()
        if not s.startswith("{"):
            continue
        try:
            obj = json_loads(s)
        except ValueError:
            continue
        if isinstance(obj, dict):
            rows.append(obj)
        if len(rows) >= limit:
            break
    return _columns(rows)


WRAPPER_KEYS = ("results", "samples", "data", "details", "records", "outputs", "predictions", "rows", "items")
_KEY = lazy(r'"((?:[^"\\]|\\.){1,80})"\s*:')


def json_head_columns(text: str) -> list[str]:
    """The keys of the first row of a JSON results file, from its head (the whole file may be far bigger):
    an array of objects, an object of rows keyed by index, or an object wrapping an array of rows."""
    s = text.lstrip()
    if s.startswith("["):
        start = s.find("{")
        if start < 0 or s[1:start].strip():
            return []
        body = s[start:]
    elif s.startswith("{"):
        m = re.match(r'\{\s*"\d+"\s*:\s*\{', s)
        w = re.search(r'"(?:' + "|".join(WRAPPER_KEYS) + r')"\s*:\s*\[\s*\{', s[:4096])
        if m:
            body = s[m.end() - 1:]
        elif w:
            body = s[w.end() - 1:]
        else:
            return []
    else:
        return []
    try:
        obj, _ = json_raw_decode(json.JSONDecoder(), body)
        return list(flatten(obj)) if isinstance(obj, dict) else []
    except ValueError:  # the first row runs past the head: its keys, nested ones included, as a flat list
        return list(dict.fromkeys(k for k in _KEY.findall(body[:16384])))


def csv_head_columns(text: str, sep: str) -> list[str]:
    first = text.split("\n", 1)[0].strip("\r\ufeff")
    if sep not in first:
        return []
    return [c.strip().strip('"') for c in first.split(sep)]


def parquet_columns(path: str) -> list[str]:
    try:
        import polars as pl

        schema = pl.read_parquet_schema(path)
    except Exception:  # noqa: BLE001 - a damaged or foreign file is simply not a results file
        return []
    return _flat_names(schema)


def _flat_names(schema: Any, prefix: str = "") -> list[str]:
    import polars as pl

    out = []
    for name, dtype in schema.items():
        if isinstance(dtype, pl.Struct):
            out += _flat_names({f.name: f.dtype for f in dtype.fields}, f"{prefix}{name}.")
        else:
            out.append(f"{prefix}{name}")
    return out


def head_columns(name: str, text: str) -> list[str]:
    """The columns a results file of this name would have, from its head; [] when it is no table."""
    low = name.lower()
    if low.endswith((".jsonl", ".ndjson")):
        return jsonl_head_columns(text)
    if low.endswith(".json"):
        return json_head_columns(text)
    if low.endswith(".csv"):
        return csv_head_columns(text, ",")
    if low.endswith(".tsv"):
        return csv_head_columns(text, "\t")
    return []


# -- reading ------------------------------------------------------------------------------------------------
@dataclass
class Table:
    """The kept columns of a results file, one list per column, and each row's line."""

    file: str
    fmt: str
    names: list[str]
    roles: Roles
    lines: list[int] = field(default_factory=list)
    cols: dict[str, list[Any]] = field(default_factory=dict)
    cut: bool = False

    @property
    def rows(self) -> int:
        return len(self.lines)

    def row_text(self, i: int) -> str:
        """A row as evidence: its kept columns (the verdict, not the whole sample text)."""
        parts = {}
        for c in self.roles.kept():
            v = self.cols[c][i]
            if v is None or (isinstance(v, str) and not v.strip()):
                continue
            parts[c] = v[:80] + "…" if c in self.roles.answer and isinstance(v, str) and len(v) > 80 else v
        body = json.dumps(parts, ensure_ascii=False, default=str)
        return f"row {i + 1}: {body}" if self.fmt == "parquet" else body

    def line(self, i: int) -> Line:
        text = self.row_text(i)
        return Line(self.file, self.lines[i], text, text)


def _cell(v: Any) -> Any:
    if isinstance(v, str):
        return v[:MAX_TEXT]
    if isinstance(v, (list, tuple)):
        return json.dumps(v, ensure_ascii=False, default=str)[:MAX_TEXT] if v else None
    if isinstance(v, dict):
        return json.dumps(v, ensure_ascii=False, default=str)[:MAX_TEXT] if v else None
    return v


def _table_from_rows(file: str, fmt: str, rows: list[tuple[int, dict[str, Any]]], cut: bool) -> Table | None:
    names: dict[str, None] = {}
    flat = []
    for lineno, obj in rows:
        f = flatten(obj)
        names.update(dict.fromkeys(f))
        flat.append((lineno, f))
    cols = list(names)
    if not is_results(cols):
        return None
    roles = roles_of(cols)
    keep = roles.kept()
    t = Table(file, fmt, cols, roles, [ln for ln, _ in flat], {c: [_cell(f.get(c)) for _, f in flat] for c in keep}, cut)
    return t


def _jsonl_rows(data: bytes) -> tuple[list[tuple[int, dict[str, Any]]], bool]:
    rows = []
    for i, raw in enumerate(data.split(b"\n"), 1):
        s = raw.strip()
        if not s.startswith(b"{"):
            continue
        try:
            obj = json_loads(s)
        except ValueError:
            continue
        if isinstance(obj, dict):
            rows.append((i, obj))
            if len(rows) >= MAX_ROWS:
                return rows, True
    return rows, False


def _json_rows(text: str) -> tuple[list[tuple[int, dict[str, Any]]], bool]:
    """Rows of a JSON results file with the line each starts on (walked element by element, not loaded whole
    and then searched, so each row's line is exact)."""
    dec = json.JSONDecoder()
    ws = re.compile(r"[\s,]*")
    pos = ws.match(text, 0).end()  # type: ignore[union-attr]
    keyed = False
    if text.startswith("{", pos):
        m = re.compile(r'\{\s*"\d+"\s*:\s*(?=\{)').match(text, pos)
        w = re.compile(r'"(?:' + "|".join(WRAPPER_KEYS) + r')"\s*:\s*\[').search(text, pos)
        if m:
            keyed, pos = True, pos + 1
        elif w:
            pos = w.end()
        else:
            return [], False
    elif text.startswith("["):
        pos += 1
    rows = []
    key_rx = re.compile(r'\s*"(?:[^"\\]|\\.)*"\s*:\s*')
    while True:
        pos = ws.match(text, pos).end()  # type: ignore[union-attr]
        if pos >= len(text) or text[pos] in "]}":
            break
        if keyed:
            km = key_rx.match(text, pos)
            if not km:
                break
            pos = km.end()
        try:
            obj, end = json_raw_decode(dec, text, pos)
        except ValueError:
            break
        if isinstance(obj, dict):
            rows.append((text.count("\n", 0, pos) + 1, obj))
            if len(rows) >= MAX_ROWS:
                return rows, True
        pos = end
    return rows, False


def _table_from_frame(file: str, fmt: str, df: Any, first_line: int, cut: bool,
                      all_names: list[str] | None = None) -> Table | None:
    import polars as pl

    exprs = []

    def walk(expr: Any, dtype: Any, name: str) -> None:
        if isinstance(dtype, pl.Struct):
            for f in dtype.fields:
                walk(expr.struct.field(f.name), f.dtype, f"{name}.{f.name}")
        else:
            exprs.append((name, expr.alias(name), dtype))

    for name, dtype in df.schema.items():
        walk(pl.col(name), dtype, name)
    names = [n for n, _, _ in exprs]
    if not is_results(all_names or names):
        return None
    roles = roles_of(names)
    keep = set(roles.kept())
    flat = df.select([e for n, e, _ in exprs if n in keep])
    cols: dict[str, list[Any]] = {}
    for n, _, _dtype in exprs:
        if n not in keep:
            continue
        s = flat[n]
        if s.dtype == pl.String:
            cols[n] = s.str.slice(0, MAX_TEXT).to_list()
        elif s.dtype.is_numeric() or s.dtype == pl.Boolean or s.dtype == pl.Null:
            cols[n] = s.to_list()
        else:  # lists, dates, objects: as short text (a non-empty list of errors is an error)
            cols[n] = [_cell(v) if isinstance(v, (list, dict, str)) or v is None else str(v)[:MAX_TEXT]
                       for v in s.to_list()]
    lines = list(range(first_line, first_line + flat.height))
    return Table(file, fmt, names, roles, lines, cols, cut)


def read_table(lf: LogFile, open_stream: Opener, compression: str = "") -> Table | None:
    """The file as a results table, or None when it is not one (or cannot be read). `open_stream(path,
    compression)` is the input stage's reader (read-only, decompressing)."""
    low = re.sub(r"\.(?:gz|bz2|xz|zst)$", "", lf.rel.lower())
    try:
        if low.endswith(".parquet") or lf.kind == "results" and is_parquet(lf.path):
            import polars as pl

            names = parquet_columns(lf.path)
            keep_top = sorted({n.split(".", 1)[0] for n in roles_of(names).kept()})
            if not keep_top:
                return None
            df = pl.read_parquet(lf.path, columns=keep_top, n_rows=MAX_ROWS)
            cut = df.height >= MAX_ROWS  # only the kept columns are read; all of them decide is_results
            return _table_from_frame(lf.rel, "parquet", df, 1, cut, names)
        if low.endswith((".csv", ".tsv")):
            import polars as pl

            with open_stream(lf.path, compression or lf.compression) as fh:
                data = fh.read()
            df = pl.read_csv(io.BytesIO(data), separator="\t" if low.endswith(".tsv") else ",",
                             infer_schema_length=10000, ignore_errors=True, truncate_ragged_lines=True,
                             n_rows=MAX_ROWS)
            return _table_from_frame(lf.rel, "csv", df, 2, df.height >= MAX_ROWS)
        if low.endswith(".json"):
            with open_stream(lf.path, compression or lf.compression) as fh:
                text = fh.read().decode("utf-8", "replace")
            rows, cut = _json_rows(text)
            return _table_from_rows(lf.rel, "json", rows, cut) if rows else None
        # JSON lines (any other name: the caller decided from the columns)
        if lf.size > BIG_JSONL and not (compression or lf.compression):
            import polars as pl

            df = pl.read_ndjson(lf.path, infer_schema_length=1000, ignore_errors=True, n_rows=MAX_ROWS)
            return _table_from_frame(lf.rel, "jsonl", df, 1, df.height >= MAX_ROWS)
        with open_stream(lf.path, compression or lf.compression) as fh:
            data = fh.read()
        rows, cut = _jsonl_rows(data)
        return _table_from_rows(lf.rel, "jsonl", rows, cut) if rows else None
    except Exception:  # noqa: BLE001 - a malformed data file is reported as not read as a table, never a traceback
        return None


def is_parquet(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"PAR1"
    except OSError:
        return False


def read(lf: LogFile, open_stream: Opener) -> Event | None:
    """A `verifier_results` event for the file (its table), or None."""
    table = read_table(lf, open_stream)
    if table is None or not table.rows:
        return None
    lf.lines = max(lf.lines, table.lines[-1] if table.lines else 0)
    if table.cut:
        lf.reason = (lf.reason + "; " if lf.reason else "") + f"first {MAX_ROWS} rows read"
    head = Line(lf.rel, table.lines[0], table.row_text(0), table.row_text(0))
    return Event("verifier_results", head, {"table": table})


def example_events(lines: list[str], file: str = "<example>") -> list[Event]:
    """A rule's example log read as a results table (JSON lines, or CSV with a header), for `rules check`."""
    text = "\n".join(lines)
    rows, _ = _jsonl_rows(text.encode())
    table = _table_from_rows(file, "jsonl", rows, False) if rows else None
    if table is None and lines and "," in lines[0]:
        try:
            import polars as pl

            df = pl.read_csv(io.BytesIO(text.encode()), infer_schema_length=10000, ignore_errors=True,
                             truncate_ragged_lines=True)
            table = _table_from_frame(file, "csv", df, 2, False)
        except Exception:  # noqa: BLE001
            table = None
    if table is None or not table.rows:
        return []
    return [Event("verifier_results", table.line(0), {"table": table})]


def as_float(v: Any) -> float | None:
    if v is None:
        return None
    if isinstance(v, bool):
        return 1.0 if v else 0.0
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        s = v.strip().lower()
        if s in ("true", "yes", "correct", "pass", "passed"):
            return 1.0
        if s in ("false", "no", "incorrect", "fail", "failed", "wrong"):
            return 0.0
        try:
            return float(s)
        except ValueError:
            return None
    return None

