"""Step and metric lines of RL frameworks, as one shape: {framework, tag, step, values}.

- slime/MILES: `step 12: {'train/loss': ...}`, `rollout 3: {...}`, `perf 3: {...}`, `eval 3: {...}`
  (dict reprs, `log_utils.py`/`metrics.py`; MILES since 2026-01-12 prints each train step twice).
- verl: `step:5 - key:value - key:value ...` (`verl/utils/tracking.py` console logger), often one very
  long line that copy-paste or excerpting splits; a fragment without `step:` continues the previous one.
- TRL/transformers Trainer: `{'loss': 0.0, 'grad_norm': ..., 'reward': ..., 'epoch': 0.1}`.
- TRL/transformers dicts with any keys (GRPO `{'loss': ..., 'rewards/<fn>/mean': ...}`, PPO `{'eps': 1,
  'objective/kl': ..., 'val/num_eos_tokens': 0}`); values may be written `np.float64(x)` or `tensor(x)`.
- A TRL dict that a user or `pprint` broke over several lines (`{'loss': 0.0,` / ` 'reward': 0.0,` / ...
  / ` 'epoch': 0.09}`): the opening line starts a record, each following `'key': value` line continues it until
  the closing brace (merge_records joins them).
- JSON lines (`{"reward": ...}`) from metrics or verifier files (ms-swift prints its logs this way too).
- wandb's closing `Run summary:` block (`wandb:   critic/score/mean 0`, one key per line): one record.
- MLX-LM `Iter N: Train loss 0.1, Total rewards mean 0.0, <fn> mean 0.0, It/sec 1.7, ...` (GRPO and SFT).
- tqdm bars slower than one iteration a second (`698/125000 [103:28:02<47135:04:52, 1365.11s/it]`), with their
  postfix (OpenRLHF `policy_loss=..., reward=...`; vLLM `est. speed input: 0.69 toks/s, output: ...`).
- NeMo-RL result bullets (`  • Avg Reward: 0.3486`, `  • Total step time: 66.55s`): one record per block.
- `key: value   key: value` summaries a user pastes (TRL metric names, two or more spaces between pairs:
  `completions/mean_length: 256   completions/clipped_ratio: 1   mean_terminated_length: 0`).
- dataset length filters: ms-swift `[INFO:swift] Dataset filtered, origin length: 6486, filtered dataset length:
  4531` (one line); verl RLHFDataset `dataset len: 7809` then `filter dataset len: 7808` (two prints, joined by
  merge_records into one record with `dataset/dropped_share`).
- `Key:value, Key:value` step lines (minimind `Epoch:[1/1](1/19994), Reward:-1.87, KL:..., AvgLen:230.12`) and
  `key: value | key: value` ones (LMOps MiniLLM `train | epoch 4 | ... | reward: -1.2725 | ... | step time: 0.366`).
The canonical names of these series are in vocabulary.py.
"""

from __future__ import annotations

import itertools
import math
import re
from bisect import bisect_left, bisect_right
from collections import Counter, deque
from sys import intern
from typing import Any

from triage.lazyre import lazy
from triage.model import Event, Line
from triage.parsers.series_store import STEP_LIMIT, Joiner, MetricStore, RowPart, Rows
from triage.safe_load import json_loads

SLIME = lazy(r"\b(?P<tag>(?:critic-)?step|rollout|perf|eval|multi_turn) (?P<step>\d+): \{")
# a value may be quoted: transformers' ProgressCallback (2025 ->) prints each float as f"{v:.4g}", a string
# (`{'loss': '1.677', 'grad_norm': '0.3342', 'learning_rate': '1.324e-05', 'epoch': '0.08889'}`, LLaMA-Factory and
# TRL console logs of 2026, real-extra 1711)
DICT_PAIR = lazy(r"'(?P<k>[^']+)':\s*(?:np\.float\d*\(|tensor\(|')?(?P<v>-?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+|nan|inf)|True|False)")
LOOSE_PAIR = lazy(r"'([^']+)':\s*([^,}]+)")
SLIME_REACH = 40  # characters a SLIME match spans before its ": {" (tag, space, step number)
VERL_STEP = lazy(r"\bstep:(?P<step>\d+) - ")
VERL_PAIR = lazy(r"(?:^| - )(?P<k>[A-Za-z_][\w/@.\-]*):(?:np\.float\d*\(|tensor\()?"
                       r"(?P<v>-?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf))\)?(?= - |$|\s)")
TRL = lazy(r"\{'[^']{1,80}': ")
WANDB = lazy(r"^wandb:\s+(?P<k>[A-Za-z_][\w/@.\-]*)\s+(?P<v>-?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf|NaN))\s*$")
MLX = lazy(r"\bIter (?P<step>\d+): (?=Train loss |Val loss )")
MLX_REACH = 4096  # an `Iter N:` line's pairs are read from its first characters only (bounded regex work)
MLX_PAIR = lazy(r"(?P<k>[A-Za-z][\w /.-]{0,60}?) (?P<v>-?\d+\.?\d*(?:[eE][-+]?\d+)?|nan)(?: ?(?:GB|s))?(?:, |\s*$)")
# A bar whose description and percentage a terminal redraw or a copy cut off still counts (`| 5971/9263 [...]`);
# so does one whose postfix is cut before its closing bracket.
TQDM = lazy(r"(?:(?P<desc>[^|\r]*?)\s*\d{1,3}%\|[^|\r]*)?\|\s*(?P<n>\d+)/(?P<total>\d+)\s*"
                  r"\[(?P<elapsed>[\d:]+)<[\d:?]+,\s*(?P<rate>\d+\.?\d*)s/it(?P<post>[^\]\r|]*)")
TQDM_REACH = 480  # characters a bar spans before its rate (description, percentage, bar, counts, times)
TQDM_POST = lazy(r"(?P<k>[A-Za-z_][\w/.]*)=(?P<v>-?\d+\.?\d*(?:[eE][-+]?\d+)?|nan)")
VLLM_SPEED = lazy(r"input: (?P<i>[\d.]+) toks/s, output: (?P<o>[\d.]+) toks/s")
BULLET = lazy(r"^\s*• (?P<k>[A-Za-z][\w /()-]*?): (?P<v>-?\d+\.?\d*(?:[eE][-+]?\d+)?)s?(?: \(|\s*$)")
KV_PAIR = lazy(r"(?:^|[,|]\s*)(?P<k>[A-Za-z][A-Za-z_ ]{0,40}?):\s*(?P<v>-?\d+\.?\d*(?:[eE][-+]?\d+)?|nan)(?=\s*[,|]|\s*$)")
KV_STEP = lazy(r"^\s*(?:Epoch|Step|Iter)\s*:?\s*\[?\d+/\d+\]?\s*\((?P<step>\d+)/\d+\)")
# a pasted summary: `key: number` pairs separated by two or more spaces (or a tab); the whole line is pairs
SPACED_PAIR = lazy(r"(?:^|\s{2,}|\t)(?P<k>[A-Za-z_][\w/@.\-]{0,80}):\s+"
                         r"(?P<v>-?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf))(?=\s{2,}|\t|\s*$)")
SPACED_ANCHORS = ("clipped_ratio: ", "clip_ratio: ", "reward_std: ", "frac_reward_zero_std: ")
SWIFT_FILTERED = lazy(r"Dataset filtered, origin length: (?P<n>\d+), filtered dataset length: (?P<kept>\d+)")
VERL_DATASET = lazy(r"(?:^|\) )(?P<filter>filter )?dataset len: (?P<n>\d+)\s*$")
DATASET_GAP = 200  # lines between verl's `dataset len:` and its `filter dataset len:` (the filter map's bars)
BLOCKS = ("wandb", "nemo-rl")  # frameworks that print one value a line
BLOCK_GAP = 8  # lines a wandb summary or NeMo-RL block may skip (headings, unanchored bullets) and stay one record

# The dict anchors name the key families slime/MILES log (train/, rollout/, perf/, eval/, ...), not a bare
# ": {'", which would also pick up every per-rank `Memory-Usage ...: {'gpu': ...}` line of a trainer log.
DICT_ANCHORS = tuple(f": {{'{family}" for family in ("train/", "rollout/", "perf/", "eval/", "multi_turn/", "critic",
                                                      "passrate/", "timing/", "reward", "loss"))
# TRL/transformers dict lines hold one of these keys (the Trainer adds 'epoch' to every log).
TRL_ANCHORS = ("'epoch': ", "'objective/", "'rewards/", "'reward': ", "'completions/", "'grad_norm': ",
               "'learning_rate': ", "'train_runtime'", "{'eval_",
               # keys that start the continuation lines of a dict broken over several lines (pprint, one key
               # a line; or a user's wrap), so those lines reach the parser
               "'reward_std': ", "'frac_reward_zero_std': ", "'zero_var_ratio': ", "'completion_length': ",
               "'kl': ")
TRL_GAP = 6  # lines a broken dict's next anchored key may lie below the last one (unanchored keys between)
# a continuation line of a broken dict: `'key': value,` (no opening brace on the line)
TRL_CONT = lazy(r"^\s*'[^'{}]{1,80}':\s")
ANCHORS = DICT_ANCHORS + TRL_ANCHORS + (
    "step:", " - timing_s/", " - actor/", " - critic/", " - response_length/", "{'loss'", '"reward"', '"score"',
    '"loss": ', "wandb: ", ": Train loss ", ": Val loss ", "s/it]", "s/it,", "• Avg Reward:", "• Total step time:",
    "• Mean Generation Length:", ", Reward:", ", reward:", "| reward: ") + SPACED_ANCHORS + (
    "Dataset filtered, origin length: ", "dataset len: ",
    # PrimeIntellect verifiers/prime-rl truncation shares (`train/agg/all/is_truncated/mean`, `is_truncated/mean`)
    'is_truncated/mean"', "is_truncated/mean': ")


def _float(v: str) -> float:
    if v == "True":
        return 1.0
    if v == "False":
        return 0.0
    return float(v)


def _values(pairs: list[tuple[str, str]]) -> dict[str, float]:
    try:
        return {intern(k): float(v) for k, v in pairs}
    except ValueError:  # a True/False among them
        return {intern(k): _float(v) for k, v in pairs}


def _dict_values(msg: str, at: int) -> dict[str, float]:
    """The numeric values of a dict repr from `at`. Most dicts hold plain numbers only: a loose split into
    `'key': value` pairs, each value read by float(), is the common case; any value float() refuses (a string,
    a list, np.float64(...), True) sends the whole dict through the exact DICT_PAIR reading. A quoted number (the
    newer transformers console's `'loss': '1.677'`) is read as the number."""
    try:
        return {intern(k): float(v.strip(" '")) for k, v in LOOSE_PAIR.findall(msg, at)}
    except ValueError:
        return _values(DICT_PAIR.findall(msg, at))


# bars that are not steps: startup (weights, graphs, kernels) and data or file chores
STARTUP_BARS = ("Loading", "loading", "checkpoint shards", "Capturing", "Compiling", "Downloading", "Fetching",
                "Autotun", "Map", "Tokeniz", "Filter", "Saving", "Upload", "Writing")


def _num(v: str) -> float:
    return float(v) if v != "NaN" else math.nan


def _clock(text: str) -> float:
    seconds = 0.0
    for part in text.split(":"):
        seconds = seconds * 60 + int(part)
    return seconds


def _tqdm(line: Line, msg: str) -> Event | None:
    """The last redraw on the line of a tqdm bar slower than one iteration a second. Searched in a window
    around the line's last `s/it` only: a long line holding no bar must not cost a scan per position."""
    at = msg.rfind("s/it")
    start = max(0, at - TQDM_REACH)
    m = None
    for m in TQDM.finditer(msg[start:at + TQDM_REACH]):  # noqa: B007 - the last match is wanted
        pass
    if m is None:
        return None
    msg = msg[start:]
    desc = (m["desc"] or "").strip().rstrip(":").strip()
    if any(w in msg[:m.start("n")] for w in STARTUP_BARS):
        return None  # startup progress (weights, graph capture): the startup parsers' lines, not steps
    values = {"s_per_it": float(m["rate"]), "n": float(m["n"]), "total": float(m["total"]),
              "elapsed_s": _clock(m["elapsed"])}
    post = m["post"]
    if post:
        speed = VLLM_SPEED.search(post)
        if speed:
            values["input_toks_s"], values["output_toks_s"] = float(speed["i"]), float(speed["o"])
        values.update((intern(p["k"]), float(p["v"])) for p in TQDM_POST.finditer(post))
    return Event("metrics", line, {"framework": "tqdm", "tag": intern(desc[-60:] or "tqdm"), "step": int(m["n"]),
                                   "values": values})


def _mlx(line: Line, msg: str, m: re.Match[str]) -> Event | None:
    values = {intern(p["k"].strip()): float(p["v"]) for p in MLX_PAIR.finditer(msg[:MLX_REACH], m.end())}
    if not values:
        return None
    tag = "val" if msg.startswith("Val ", m.end()) else "iter"
    if "It/sec" in values and values["It/sec"] > 0:
        values["sec_per_iter"] = round(1.0 / values["It/sec"], 6)
    return Event("metrics", line, {"framework": "mlx", "tag": tag, "step": int(m["step"]), "values": values})


def _spaced(line: Line, msg: str) -> Event | None:
    """A `key: value   key: value` summary line: two or more pairs and nothing else on the line."""
    pairs = list(SPACED_PAIR.finditer(msg))
    if len(pairs) < 2 or SPACED_PAIR.sub("", msg).strip():
        return None
    return Event("metrics", line, {"framework": "kv", "tag": "summary", "step": None,
                                   "values": {intern(p["k"]): float(p["v"]) for p in pairs}})


def _dataset_values(n: float, kept: float) -> dict[str, float]:
    values = {"dataset/size": n, "dataset/kept": kept}
    if n > 0:
        values["dataset/dropped_share"] = round(max(0.0, n - kept) / n, 6)
    return values


def _dataset(line: Line, msg: str) -> Event | None:
    """Dataset length filters: ms-swift's one line, or verl's `dataset len:` / `filter dataset len:` pair."""
    m = SWIFT_FILTERED.search(msg)
    if m:
        return Event("metrics", line, {"framework": "dataset", "tag": "filter", "step": None,
                                       "values": _dataset_values(float(m["n"]), float(m["kept"]))})
    m = VERL_DATASET.search(msg)
    if m is None:
        return None
    if m["filter"]:  # joined to the `dataset len:` line before it (merge_records)
        return Event("metrics", line, {"framework": "dataset", "tag": "continued", "step": None,
                                       "values": {"dataset/kept": float(m["n"])}})
    return Event("metrics", line, {"framework": "dataset", "tag": "filter", "step": None, "open": True,
                                   "values": {"dataset/size": float(m["n"])}})


def parse(line: Line) -> Event | None:
    msg = line.msg
    at = msg.find(": {")
    m = SLIME.search(msg, max(0, at - SLIME_REACH)) if at >= 0 else None
    if m:
        values = _dict_values(msg, m.end())
        if values:
            return Event("metrics", line, {"framework": "slime", "tag": intern(m["tag"]), "step": int(m["step"]), "values": values})
    m = VERL_STEP.search(msg) if "step:" in msg else None
    if m:
        values = {intern(p["k"]): float(p["v"]) for p in VERL_PAIR.finditer(msg, m.end() - 3)}
        return Event("metrics", line, {"framework": "verl", "tag": "step", "step": int(m["step"]), "values": values})
    if msg.startswith("wandb:"):
        w = WANDB.match(msg)
        if w:
            return Event("metrics", line, {"framework": "wandb", "tag": "summary", "step": None,
                                           "values": {intern(w["k"]): _num(w["v"])}})
        return None
    if " - " in msg and ":" in msg and "/" in msg:
        values = {intern(p["k"]): float(p["v"]) for p in VERL_PAIR.finditer(msg)}
        if len(values) >= 3:  # a fragment of a split verl step line
            return Event("metrics", line, {"framework": "verl", "tag": "continued", "step": None, "values": values})
    if "{'" in msg:
        t = TRL.search(msg)
        if t:
            values = _dict_values(msg, t.start())
            is_open = "}" not in msg[t.start():]  # broken over lines: the next lines continue it
            if len(values) >= 2 or (values and is_open):
                tag = "eval" if t.group().startswith("{'eval_") else "log"
                fields: dict[str, Any] = {"framework": "trl", "tag": tag, "step": None, "values": values}
                if is_open:
                    fields["open"] = True
                return Event("metrics", line, fields)
    elif msg[:1] in (" ", "'") and TRL_CONT.match(msg):
        values = _dict_values(msg, 0)
        if values:
            return Event("metrics", line, {"framework": "trl", "tag": "continued", "step": None, "values": values,
                                           "closes": "}" in msg})
    if "Iter " in msg:
        m = MLX.search(msg)
        ev = _mlx(line, msg, m) if m else None
        if ev is not None:
            return ev
    if "s/it" in msg:
        ev = _tqdm(line, msg)
        if ev is not None:
            return ev
    if "• " in msg:
        b = BULLET.match(msg)
        if b:
            return Event("metrics", line, {"framework": "nemo-rl", "tag": "results", "step": None,
                                           "values": {intern(b["k"].strip()): float(b["v"])}})
    if "eward:" in msg:
        values = {intern(p["k"]): float(p["v"]) for p in KV_PAIR.finditer(msg)}
        if len(values) >= 3:
            k = KV_STEP.match(msg)
            return Event("metrics", line, {"framework": "kv", "tag": "step", "step": int(k["step"]) if k else None,
                                           "values": values})
    if "dataset len" in msg or "Dataset filtered" in msg:
        ev = _dataset(line, msg)
        if ev is not None:
            return ev
    if ": " in msg and any(a in msg for a in SPACED_ANCHORS):
        ev = _spaced(line, msg)
        if ev is not None:
            return ev
    s = msg.strip()
    if s.startswith("{") and s.endswith("}") and '"' in s:
        try:
            obj = json_loads(s)  # nesting too deep to decode is a ValueError too (triage/safe_load.py)
        except ValueError:
            return None
        if isinstance(obj, dict):
            values = {intern(k): float(v) for k, v in obj.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
            if values:
                return Event("metrics", line, {"framework": "jsonl", "tag": "record", "step": obj.get("step"), "values": values})
    return None


def _joined(kept: Event, ev: Event) -> None:
    """Add the values of `ev` that `kept` lacks; fields["lines"] names the line of each value that is not on
    kept's own line (a record's values are on its line unless they were joined from another)."""
    values = kept.fields["values"]
    new = {k: v for k, v in ev.fields["values"].items() if k not in values}
    if new:
        values.update(new)
        kept.fields.setdefault("lines", {}).update(dict.fromkeys(new, ev.line))


def _dataset_joined(out: Any, ev: Event) -> None:
    """verl's `filter dataset len: M` completes the last open `dataset len: N` record of its file (among the last 8)."""
    seen = 0
    for prev in reversed(out):
        if seen >= 8:
            return
        if type(prev) is Rows:  # rows of registered shapes: never a dataset record
            seen += prev.n
            continue
        seen += 1
        pf = prev.fields
        if pf["framework"] != "dataset" or prev.line.file != ev.line.file:
            continue
        if pf.get("open") and 0 < ev.line.lineno - prev.line.lineno <= DATASET_GAP:
            pf["open"] = False
            kept = ev.fields["values"]["dataset/kept"]
            values = _dataset_values(pf["values"]["dataset/size"], kept)
            new = {k: v for k, v in values.items() if k not in pf["values"]}
            pf["values"].update(new)
            pf.setdefault("lines", {}).update(dict.fromkeys(new, ev.line))
        return


WINDOW = 256  # records still open to joins (a verl fragment, a MILES duplicate print, a broken dict's next line)
BULK_MIN = 32  # rows below which they go to the store one record each: a store's bulk path costs a pass over every
# series per call (~0.5 ms), more than a few records' own adds (~30 us each); a Ray driver log, whose trainer lines
# come in blocks of a few between other processes' lines, makes many such small write-outs (series_store.Joiner)
SEEN = 8192  # (framework, tag, step) of records already passed on: a later duplicate print is dropped
_MISSING = object()


class Records:
    """Joins the parsed metric records of one file as they come (append each, then close) and passes each
    finished record to `sink`: one record per (framework, tag, step), verl fragments and broken dicts joined,
    MILES's duplicate prints dropped. Only the last WINDOW records are held open, so a long log costs a
    fixed amount here whatever its length.

    Records also come in bulk (append_rows): the rows of registered line shapes (scan/columns.py), which never open a
    join themselves. They are held as one item until WINDOW records follow them, then passed to `sink_rows` (or one by
    one to `sink`). A row another record joins (a duplicate print of its step, a fragment after it) turns its rows
    back into records first, so every join happens as it would have.

    A write-out's rows whose steps rise (whole numbers, each above the one before: the C side's column statistics say
    so) past every step of their (file, framework, tag) seen so far cannot repeat a step: their keys are kept as spans
    (first step, last step, the steps themselves when not consecutive), not one dict entry a row. A record whose key
    falls in a span is a duplicate of that span's row, as if the key were in `seen`."""

    def __init__(self, sink: Any, sink_rows: Any = None) -> None:
        self.sink = sink
        self.sink_rows = sink_rows
        self.joiner = Joiner(sink, sink_rows, BULK_MIN) if sink_rows is not None else None  # small write-outs joined
        self.out: deque[Event | Rows] = deque()  # the open records (or rows of them), oldest first
        self.keys: deque[Any] = deque()  # their keys (_key), when stepped; for rows, see _hold
        self.seen: dict[Any, Event | Rows | None] = {}  # key -> open record or rows (None: passed on)
        self.last_line = 0  # the line of the last value joined into a block record (wandb summary, NeMo-RL)
        self.open = 0  # records in out
        self.pushed = 0  # records pushed, all told (rows count one each)
        self.bases: dict[tuple[str, str, str], int] = {}  # (file, framework, tag) -> its keys' base (_key)
        self.hi: dict[int, int] = {}  # base -> at least its highest int key seen (a write-out above it is new)
        self.spans: dict[int, tuple[list[int], list[tuple[int, Any, list[Any]]]]] = {}  # base -> (first steps,
        # (last step, the steps when not consecutive, [the rows while held, else None])), oldest first
        self.span_order: deque[tuple[int, int]] = deque()  # (base, rows) of each span, oldest first
        self.span_rows = 0  # rows under spans

    def append(self, ev: Event) -> None:
        f = ev.fields
        out = self.out
        if f["tag"] == "continued":
            if out and type(out[-1]) is Rows:
                self._unroll(out[-1])
            prev = out[-1] if out else None
            if prev is None or prev.line.file != ev.line.file:  # type: ignore[union-attr]
                return
            assert type(prev) is Event
            if f["framework"] == "verl" and prev.fields["framework"] == "verl":
                _joined(prev, ev)
            elif f["framework"] == "dataset":
                _dataset_joined(out, ev)
            elif (f["framework"] == "trl" and prev.fields["framework"] == "trl" and prev.fields.get("open")
                    and 0 < ev.line.lineno - prev.fields.get("last", prev.line.lineno) <= TRL_GAP):
                _joined(prev, ev)  # the next line of a dict broken over lines (an unanchored one may be skipped)
                prev.fields["last"] = ev.line.lineno
                if f.get("closes"):
                    prev.fields["open"] = False
            return
        if f["framework"] in BLOCKS:
            prev = out[-1] if out else None
            if (type(prev) is Event and prev.fields["framework"] == f["framework"] and prev.line.file == ev.line.file
                    and 0 < ev.line.lineno - self.last_line <= BLOCK_GAP
                    and not any(k in prev.fields["values"] for k in f["values"])):  # a key again: the next block
                _joined(prev, ev)
            else:
                self._push(ev, None)
            self.last_line = ev.line.lineno
            return
        key = self._key(ev.line.file, f["framework"], f["tag"], f["step"]) if f["step"] is not None else None
        kept = self._find(key) if key is not None else _MISSING
        if kept is not _MISSING:
            if type(kept) is Rows:
                kept = self._unroll(kept) if self._open_rows(kept) else None
                kept = self.seen[key] if kept is not None else None
            if kept is not None:
                _joined(kept, ev)  # type: ignore[arg-type]
            return  # a duplicate of a record passed on: MILES prints the same dict again
        self._push(ev, key)

    def _key(self, file: str, framework: str, tag: str, step: Any) -> Any:
        """A record's (file, framework, tag, step) as one int when its step is a small enough whole number (its
        (file, framework, tag) numbered, times 2^53, plus the step: a row's key costs an addition), else the tuple."""
        if type(step) is int and 0 <= step < STEP_LIMIT:
            return self._base(file, framework, tag) + step
        return (file, framework, tag, step)

    def _base(self, file: str, framework: str, tag: str) -> int:
        base = self.bases.get((file, framework, tag))
        if base is None:
            base = self.bases[(file, framework, tag)] = (len(self.bases) + 1) * STEP_LIMIT
        return base

    def _find(self, key: Any) -> Any:
        """What `seen` holds for a key (the open record or rows, None when passed on), or _MISSING."""
        got = self.seen.get(key, _MISSING)
        if got is _MISSING and self.spans and type(key) is int:
            base = key - key % STEP_LIMIT
            sp = self.spans.get(base)
            if sp is not None:
                step = key - base
                i = bisect_right(sp[0], step) - 1
                if i >= 0:
                    last, steps, cell = sp[1][i]
                    if step <= last and (steps is None or steps[bisect_left(steps, step)] == step):
                        return cell[0]
        return got

    def append_rows(self, rows: Rows, file: str) -> None:
        """The records of a write-out of the C prefilter's columns (in log order, by ordinal)."""
        spans = self._rising(rows, file)
        if spans is not None:
            cell: list[Any] = [rows]
            for base, first, last, steps in spans:
                self._span(base, first, last, steps, cell)
            self._hold(rows, cell if spans else False)
            return
        stepped: list[Any] = []
        for part in rows.parts:
            sh = part.shape
            f = sh.fields
            if sh.num_col < 0:
                if f.get(sh.num) is not None:
                    stepped += [self._key(file, f["framework"], f["tag"], f[sh.num])] * part.n
                continue
            start = sh.num_col * part.n
            steps = list(map(int, part.vals[start:start + part.n]))
            if min(steps) < 0 or max(steps) >= STEP_LIMIT:
                stepped += [self._key(file, f["framework"], f["tag"], step) for step in steps]
            else:
                stepped += map(self._base(file, f["framework"], f["tag"]).__add__, steps)
        seen = self.seen
        new = dict.fromkeys(stepped, rows)
        if (len(new) < len(stepped) or not seen.keys().isdisjoint(new)
                or self.spans and any(self._find(k) is not _MISSING for k in new)):  # a duplicate print among them
            for k in range(rows.n):
                self.append(rows.event(k))
            return
        seen.update(new)
        hi = self.hi
        for k in new:
            if type(k) is int:
                base = k - k % STEP_LIMIT
                if k > hi.get(base, -1):
                    hi[base] = k
        self._hold(rows, tuple(new))

    def _rising(self, rows: Rows, file: str) -> list[tuple[int, int, int, Any]] | None:
        """(base, first step, last step, the steps when not consecutive) of each part of rows whose steps rise past
        every step of its base seen so far (and of the parts before it); None when a part's do not (or a part repeats
        one step, a shape whose step is constant)."""
        out: list[tuple[int, int, int, Any]] = []
        hi = self.hi
        tent: dict[int, int] = {}
        for part in rows.parts:
            sh = part.shape
            f = sh.fields
            if sh.num_col < 0:
                if f.get(sh.num) is not None:
                    return None
                continue
            if not part.stats[sh.num_col][7]:
                return None
            base = self._base(file, f["framework"], f["tag"])
            start, n = sh.num_col * part.n, part.n
            first, last = int(part.vals[start]), int(part.vals[start + n - 1])
            if base + first <= tent.get(base, hi.get(base, -1)):
                return None
            tent[base] = base + last
            steps = None if last - first == n - 1 else memoryview(part.vals[start:start + n].tobytes()).cast("d")
            out.append((base, first, last, steps))
        hi.update(tent)
        return out

    def _span(self, base: int, first: int, last: int, steps: Any, cell: list[Any]) -> None:
        sp = self.spans.get(base)
        if sp is None:
            sp = self.spans[base] = ([], [])
        sp[0].append(first)
        sp[1].append((last, steps, cell))
        n = len(steps) if steps is not None else last - first + 1
        self.span_order.append((base, n))
        self.span_rows += n

    def _hold(self, rows: Rows, key: Any) -> None:
        """Rows into the open records; key: their spans' cell (a list), or their keys in `seen` (a tuple)."""
        rows.first = self.pushed
        self.out.append(rows)
        self.keys.append(key)
        self.open += rows.n
        self.pushed += rows.n
        self._trim()

    def _open_rows(self, rows: Rows) -> bool:
        """Whether rows are still held (some of them among the last WINDOW records)."""
        return not rows.passed and rows.first + rows.n > self.pushed - WINDOW

    def _unroll(self, rows: Rows) -> Event:
        """Held rows back into records (something joins one of them): each row's Event takes its place. Returns the
        last one. Rows more than WINDOW records back are passed on as they would have been already."""
        i = self.out.index(rows)
        events = [rows.event(k) for k in range(rows.n)]
        keys = [self._key(ev.line.file, ev.fields["framework"], ev.fields["tag"], ev.fields["step"])
                if ev.fields["step"] is not None else None for ev in events]
        items, ks = list(self.out), list(self.keys)
        self.out = deque(items[:i] + events + items[i + 1:])
        self.keys = deque(ks[:i] + keys + ks[i + 1:])
        for ev, key in zip(events, keys):
            if key is not None:
                self._keep(key, ev)
        if type(ks[i]) is list:  # its spans: the keys are in `seen` now
            ks[i][0] = None
        rows.passed = True
        self._trim()
        return events[-1]

    def _keep(self, key: Any, ev: Event) -> None:
        self.seen[key] = ev
        if type(key) is int:
            base = key - key % STEP_LIMIT
            if key > self.hi.get(base, -1):
                self.hi[base] = key

    def _push(self, ev: Event, key: Any) -> None:
        if key is not None:
            self._keep(key, ev)
        self.out.append(ev)
        self.keys.append(key)
        self.open += 1
        self.pushed += 1
        self._trim()

    def _size(self, item: Event | Rows) -> int:
        return item.n if isinstance(item, Rows) else 1

    def _trim(self) -> None:
        while self.out and self.open - self._size(self.out[0]) >= WINDOW:
            self._pass()

    def _pass(self) -> None:
        item, key = self.out.popleft(), self.keys.popleft()
        if type(item) is Rows:
            self.open -= item.n
            item.passed = True
            if self.joiner is not None:
                self.joiner.add(item)
            else:
                for k in range(item.n):
                    self.sink(item.event(k))
            if key:  # the rows are passed on: what names them names None now, so that they can be freed
                if type(key) is list:  # its spans' cell
                    key[0] = None
                else:  # its keys in `seen`
                    seen = self.seen
                    for k in key:
                        if seen.get(k) is item:
                            seen[k] = None
                self._forget()
            return
        self.open -= 1
        if key is not None:
            self.seen[key] = None
            self._forget()
        if self.joiner is not None:
            self.joiner.flush()
        self.sink(item)

    def _forget(self) -> None:
        """Forget the oldest keys passed on (dicts keep insertion order), in bulk: all but the newest SEEN, which hold
        every record still open (the last WINDOW, or rows held with them, whose older rows count as passed)."""
        if len(self.seen) > 2 * SEEN:
            self.seen = dict(itertools.islice(self.seen.items(), len(self.seen) - SEEN, None))
        if self.span_rows > 2 * SEEN:  # likewise the oldest spans
            order, drop = self.span_order, Counter[int]()
            while self.span_rows - order[0][1] >= SEEN:
                base, n = order.popleft()
                self.span_rows -= n
                drop[base] += 1
            for base, k in drop.items():
                firsts, items = self.spans[base]
                del firsts[:k], items[:k]

    def close(self) -> None:
        while self.out:
            self._pass()
        if self.joiner is not None:
            self.joiner.flush()


def merge_records(events: list[Event]) -> list[Event]:
    """One record per (framework, tag, step): join verl fragments, drop MILES's duplicate prints."""
    merged: list[Event] = []
    records = Records(merged.append)
    for ev in events:
        records.append(ev)
    records.close()
    return merged


class StoredRecords(Records):
    """One file's records joined as they come into a MetricStore (bounded memory); close() adds the store to
    `events` as one `metric_series` event, on the line of the file's last record."""

    def __init__(self, events: list[Event]) -> None:
        self.store = MetricStore()
        super().__init__(self.store.add, self.store.add_rows)
        self.events = events

    def close(self) -> None:
        super().close()
        ev = self.store.event()
        if ev is not None:
            self.events.append(ev)


TIMER_READINGS = 4096  # distinct timer readings kept exactly; past it, new readings' seconds to 3 significant figures


class TimerStore:
    """One file's trainer timer events (parsers/lifecycle.py: `Timer X start/end (elapsed: Ns)`, `ft ... ok=`,
    `Update weights end.`) in bounded memory. A slime log prints two a step, a few hundred thousand in a long run;
    what their readers need (checks/health.py: publications and their failures, each stage's median seconds;
    checks/startup.py: the longest compile/JIT/capture phase) is how many lines printed each reading, so the store
    keeps one event per distinct reading (name, phase, seconds, ok, actor), the first line that printed it, with its
    count. Readings repeat (seconds are printed to 0.1 s), so a run holds a few thousand at most; past
    TIMER_READINGS, a new reading's seconds are rounded to 3 significant figures (a median then within 0.5 %).
    close() adds the store to `events` as one `timer_series` event: fields["timers"] = [(event, count), ...] in the
    order each reading was first seen."""

    def __init__(self, events: list[Event]) -> None:
        self.events = events
        self.kept: dict[tuple[Any, ...], list[Any]] = {}  # reading -> [its first event, lines that printed it]
        self.last: Line | None = None

    def add(self, ev: Event) -> None:
        f = ev.fields
        seconds = f.get("seconds")
        if seconds is not None and len(self.kept) >= TIMER_READINGS:
            rounded = float(f"{seconds:.3g}")
            if rounded != seconds:
                seconds = rounded
                ev = Event(ev.kind, ev.line, {**f, "seconds": seconds})
        key = (f.get("name"), f.get("phase"), seconds, f.get("ok", True), f.get("actor"))
        got = self.kept.get(key)
        if got is None:
            self.kept[key] = [ev, 1]
        else:
            got[1] += 1
        self.last = ev.line

    def add_rows(self, parts: list[RowPart]) -> None:
        """The timer events of rows of registered shapes (one write-out), as add() of each in line order would."""
        firsts: list[tuple[int, Any, RowPart, int]] = []  # (line, reading, part, row) of readings not kept yet
        counts: list[tuple[Any, int]] = []
        for part in parts:
            sh = part.shape
            f = sh.fields
            name, phase, ok, actor = f.get("name"), f.get("phase"), f.get("ok", True), f.get("actor")
            values: list[Any]
            if sh.num_col >= 0 and len(part.stats) > sh.nout:  # counted by the C side (_linescan.c col_tally)
                values_b, counts_b, firsts_b = part.stats[sh.nout]
                values, ns = memoryview(values_b).cast("d").tolist(), memoryview(counts_b).cast("q").tolist()
                at: Any = memoryview(firsts_b).cast("q")
            elif sh.num_col >= 0:
                start = sh.num_col * part.n
                col = part.vals[start:start + part.n].tolist()
                tally: dict[Any, int] = Counter(col)
                values, ns, at = list(tally), list(tally.values()), None
            else:
                values, ns, at = [f.get(sh.num)], [part.n], [0]
            for j, (seconds, n) in enumerate(zip(values, ns)):
                key = (name, phase, seconds, ok, actor)
                counts.append((key, n))
                if key not in self.kept:
                    i = at[j] if at is not None else col.index(seconds)
                    firsts.append((part.lineno(i), key, part, i))
        new = {key for _, key, _, _ in firsts}
        if len(self.kept) + len(new) >= TIMER_READINGS:  # near the bound, seconds get rounded: row by row
            rows = sorted((part.lineno(i), j, part, i) for j, part in enumerate(parts) for i in range(part.n))
            for _, _, part, i in rows:
                self.add(part.event(i))
            return
        firsts.sort(key=lambda t: t[0])
        for _, key, part, i in firsts:
            if key not in self.kept:
                self.kept[key] = [part.event(i), 0]
        for key, n in counts:
            self.kept[key][1] += n
        last = max(parts, key=lambda p: p.lineno(p.n - 1))
        self.last = last.line_of(last, last.n - 1)

    def close(self) -> None:
        if self.kept and self.last is not None:
            self.events.append(Event("timer_series", self.last, {"timers": [(ev, n) for ev, n in self.kept.values()]}))
            self.kept = {}
