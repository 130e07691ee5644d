"""Find the files under the given paths and decide each one's kind from its name and its content.

Nothing is dropped silently: every path ends up as a LogFile with status read, skipped (why) or
unreadable (why). Directories are walked without following directory symlinks (so `loop -> ..`
cannot recurse); FIFOs, sockets and devices are never opened; binaries are recognised from their
first bytes and skipped without being read further.
"""

from __future__ import annotations

import functools
import os
import re
import stat
from collections.abc import Callable
from typing import Any

from triage import fastbytes
from triage.input.decompress import compression_of, safe_fd, safe_open
from triage.input.read import open_stream
from triage.lazyre import lazy
from triage.model import ENGINE_KINDS, LogFile, counted
from triage.parsers import results as results_file
from triage.parsers.config_file import looks_like_config
from triage.prefixes import RAY_ACTOR
from triage.safe_load import special_kind

SNIFF = 64 << 10  # bytes of (decompressed) content used to decide a file's kind

BINARY_MAGIC = {
    b"\x7fELF": "ELF executable or core dump",
    b"PK\x03\x04": "zip archive (a torch .pt checkpoint or similar)",
    b"\x80\x02": "pickle data",
    b"\x80\x04": "pickle data",
    b"\x93NUMPY": "numpy array",
    b"\x89HDF": "HDF5 data",
    b"\x89PNG": "PNG image",
    b"\xff\xd8\xff": "JPEG image",
    b"%PDF": "PDF document",
    b"SQLite format 3": "SQLite database",
    b"PAR1": "parquet data",
    b"ARROW1": "arrow data",
}
BINARY_SUFFIXES = {".safetensors", ".pt", ".pth", ".bin", ".ckpt", ".npy", ".npz", ".so", ".pkl", ".parquet", ".arrow",
                   ".wandb"}
CONFIG_SUFFIXES = {".yaml", ".yml", ".toml"}

# Name hints: (regex on the lower-cased file name, kind).
NAME_HINTS = [
    (lazy(r"judge|verif|reward|(^|[^a-z])rm([^a-z]|$)|sandbox|grader|scor"), "verifier"),
    (lazy(r"sglang|sgl[-_]"), "sglang"),
    (lazy(r"vllm"), "vllm"),
    (lazy(r"engine|server|infer"), "sglang"),
    (lazy(r"train|megatron|fsdp|actor|deepspeed|worker"), "trainer"),
    (lazy(r"driver|ray|main|job|run|slime|miles|verl"), "driver"),
    (lazy(r"rollout|launch|client|generat"), "rollout"),
]

STRONG_TRAINER_NAME = lazy(r"train|megatron|fsdp|deepspeed")

# Content markers: kind -> regex; the kind with the most marker lines in the head wins. They are matched
# against "\n" + head, so `\n` marks a line start: every alternative then starts with a literal character,
# which lets `re` skip ahead to those characters (a `^` or `\b` first would make it try every position).
CONTENT_MARKERS = {
    "sglang": lazy(
        r"server_args=ServerArgs|Decode batch[.,]|Prefill batch[.,]|sglang[./]|KV Cache is allocated|"
        r"max_total_num_tokens=|\n\[(?:\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d(?:\.\d+)?(?: [A-Z_]+\d+)+\] "
    ),
    "vllm": lazy(r"vllm|\n(?:INFO|WARNING|ERROR|DEBUG) \d\d-\d\d \d\d:\d\d:\d\d "),
}
# Case-blind markers, matched against the lower-cased head (much faster than re.I on 64 KiB).
LOWER_MARKERS = {
    "trainer": lazy(r"megatron|deepspeed|fsdp|trainrayactor|step:\d+ - |step(?<!\wstep) \d+: \{|grad_norm"
                          r"|timer train"),
    "verifier": lazy(r"reward|judge|verif|sandbox|compute_score|remote_rm"),
}
# A trainer's metric record printed as a dict (transformers/TRL `{'loss': ..., 'reward': ..., 'rewards/acc/mean': ...,
# 'grad_norm': ..., 'epoch': ...}`): its reward keys name metrics, not a verifier, so its lines are left out of the
# verifier's count (a TRL GRPO console saved as output.log or console.log holds five reward words a line and one
# trainer marker, and was taken for a verifier's log).
TRAINER_DICT_LINE = lazy(r"\n[^\n]*\{'[^\n]*'(?:epoch|learning_rate|grad_norm)': [^\n]*")
TRAINER_DICT_KEYS = ("'epoch': ", "'learning_rate': ", "'grad_norm': ")
TRAINER_DICT_BYTES = tuple(k.encode() for k in TRAINER_DICT_KEYS)
RAY_ACTORS = lazy("\n" + RAY_ACTOR)
# vLLM (V1, 0.10+) prefixes its own processes as Ray prefixes its actors: `(APIServer pid=1) INFO 08-01 ...`,
# `(EngineCore_DP0 pid=2)`, `(VllmWorker rank=0 pid=3)`, `(Worker_TP1 pid=4)`. Several of them in one file make
# a vLLM server log, not a Ray driver's combined log.
VLLM_PROCESS = lazy(r"(?:APIServer|EngineCore(?:_DP)?\d*|VllmWorker\w*|Worker(?:_TP\d+|_PP\d+)*|"
                          r"ApiServer_\d+|EngineCoreProc\w*)$")
# verl's driver log: the TaskRunner and WorkerDict actors, `main_ppo`/`ray_trainer` frames, the trainer's
# `step:N - key:value` console lines (verl/trainer/main_ppo.py, verl/utils/tracking.py). `step` not after a word
# character is tested behind the literal: a `\b` in front would make `re` try every position of the head.
VERL_MARKERS = lazy(r"\((?:TaskRunner|WorkerDict|AgentLoopWorker|RewardLoopWorker) pid=|verl\.trainer|"
                          r"verl/trainer/|main_ppo|ray_trainer\.py|step(?<!\wstep):\d+ - ")
# A wandb run directory (`wandb/run-<date>-<id>/` or `offline-run-...`): output.log is the script's console,
# wandb-summary.json the last value of every metric, config.yaml the run's config; debug.log and
# debug-internal.log are the wandb client's own logs (uploads, retries), not the run's.
WANDB_RUN = lazy(r"(?:^|/)(?:wandb/)?(?:offline-)?run-[\w.-]+/(?:files|logs)/(?P<name>[^/]+)$")
WANDB_OWN = {"debug.log", "debug-internal.log", "debug-core.log", "debug-cli.log"}
# Names only the wandb client writes: its own log wherever the run directory was copied or pointed at.
WANDB_ONLY = {"debug-internal.log", "debug-core.log"}

# Bytes a text log may hold besides printable text: tab, newline, CR (progress redraws), form feed, vertical
# tab, backspace, ESC (colour codes). Anything else below 0x20, or DEL, marks binary data.
_CONTROL = bytes(c for c in range(256) if (c < 0x20 and c not in b"\t\n\r\f\v\b\x1b") or c == 0x7F)
_NOT_CONTROL = bytes(c for c in range(256) if c not in _CONTROL)
CONTROL_SHARE = 20  # binary when more than 1 in 20 non-NUL bytes of the head are control bytes


def _base(name: str) -> str:
    return name.rstrip("/").rpartition("/")[2]


def _suffix(name: str) -> str:
    """Path(name).suffix, without building a Path (discovery asks it of every file)."""
    base = _base(name)
    i = base.rfind(".")
    return base[i:] if 0 < i < len(base) - 1 else ""


def _last_suffix(name: str) -> str:
    """Path(name).suffixes[-1], or "" when there is none (a name's leading dots start no suffix)."""
    base = _base(name)
    if base.endswith("."):
        return ""
    base = base.lstrip(".")
    i = base.rfind(".")
    return base[i:] if i > 0 else ""


_MAGICS = tuple(BINARY_MAGIC)


def _binary_reason(head: bytes, name: str) -> str:
    if head.startswith(_MAGICS):  # one test for all (most heads are text), then which one
        for magic, what in BINARY_MAGIC.items():
            if head.startswith(magic):
                return what
    if len(head) >= 9 and head[8:9] == b"{" and name.endswith(".safetensors"):
        return "safetensors checkpoint"
    suffix = _suffix(name)
    if suffix.lower() in BINARY_SUFFIXES:
        return f"binary file ({suffix})"
    # NUL bytes alone do not make a file binary: a log cut by a crash often ends in a zero-filled block, and
    # UTF-16 text is half NULs. read.py drops them; only the other bytes decide.
    sample = head[:8192]
    body = sample.replace(b"\x00", b"")
    if sample and not body:
        return "binary data (NUL bytes only)"
    controls = len(body.translate(None, _NOT_CONTROL))
    if controls * CONTROL_SHARE > len(body):
        return f"binary data ({controls} control bytes in the first {len(sample)})"
    return ""


# Literals every match of a marker regex holds (one of them): a head holding none of them has no match, and the
# regex is not run (a regex pass costs ~8 ns a character, a literal test ~0.1: most of discovery's time for a run
# of many small files). SGLang's rank-tag alternative has no such literal: its regex always runs.
GUARDS: dict[re.Pattern[str], tuple[str, ...]] = {
    CONTENT_MARKERS["vllm"]: ("vllm", "\nINFO ", "\nWARNING ", "\nERROR ", "\nDEBUG "),
    LOWER_MARKERS["trainer"]: ("megatron", "deepspeed", "fsdp", "trainrayactor", "step", "grad_norm", "timer train"),
    LOWER_MARKERS["verifier"]: ("reward", "judge", "verif", "sandbox", "compute_score", "remote_rm"),
    VERL_MARKERS: (" pid=", "verl", "main_ppo", "ray_trainer.py", "step:"),
}


GUARD_BYTES = {rx: tuple(g.encode() for g in guards) for rx, guards in GUARDS.items()}


def _count(rx: re.Pattern[str], text: str, raw: bytes) -> int:
    """Matches of a marker regex in the head (findall: non-overlapping); `raw`: the text as UTF-8, where the guards'
    literals are looked for in C (fastbytes.contains_any: Python's search cost ~15 us a guard of a 8 KB head, most of a
    small file's discovery). An ASCII literal is in the text exactly when its bytes are in the text's UTF-8."""
    guards = GUARD_BYTES.get(rx)
    if guards is not None and not fastbytes.contains_any(raw, guards):
        return 0
    return len(rx.findall(text))


class Scores:
    """A head's marker counts by kind, each counted when first asked for: a file whose name settles most of the
    decision (`train-rank-3.log` is a trainer log unless its content makes it a driver's) costs only the counts
    that can still change it. Most of a run of many small files' discovery time was counting markers nobody read."""

    def __init__(self, text: str) -> None:
        self.text = "\n" + text  # a line start is a newline (see CONTENT_MARKERS)
        self._raw = self.text.encode("utf-8", "surrogatepass")
        self._low: str | None = None
        self._low_raw = b""
        self._got: dict[str, int] = {}
        self._vllm_procs = -1

    def _actors(self) -> tuple[set[str], int]:
        """(Ray actor names with a pid that are not vLLM's own processes, vLLM process names seen)."""
        text = self.text
        actors = ({m["actor"] for m in RAY_ACTORS.finditer(text) if m["pid"]}
                  if fastbytes.contains_any(self._raw, (b"\n(",)) else set())
        vllm_procs = {a for a in actors if VLLM_PROCESS.match(a)}
        return actors - vllm_procs, len(vllm_procs)

    def __getitem__(self, kind: str) -> int:
        got = self._got.get(kind)
        if got is not None:
            return got
        if kind == "driver":
            others, procs = self._actors()
            self._vllm_procs = procs
            if len(others) >= 2:
                got = 1_000  # several Ray actors in one file: the driver's combined log
            elif _count(VERL_MARKERS, self.text, self._raw) >= 3:
                got = 500  # verl's driver log (TaskRunner, step lines), even with one actor name in it
            else:
                got = 0
        elif kind in CONTENT_MARKERS:
            got = _count(CONTENT_MARKERS[kind], self.text, self._raw)
            if kind == "vllm":
                if self._vllm_procs < 0:
                    self._vllm_procs = self._actors()[1]
                got += 3 * self._vllm_procs
        else:
            if self._low is None:
                self._low = self.text.lower()
                self._low_raw = self._low.encode("utf-8", "surrogatepass")
            low, low_raw = self._low, self._low_raw
            if kind == "verifier" and fastbytes.contains_any(low_raw, TRAINER_DICT_BYTES):
                low = TRAINER_DICT_LINE.sub("\n", low)
                low_raw = low.encode("utf-8", "surrogatepass")
            got = _count(LOWER_MARKERS[kind], low, low_raw)
        self._got[kind] = got
        return got

    def best(self) -> str:
        """The kind with the highest score (the first of equals, in content_scores' order), or "text"."""
        kinds = (*CONTENT_MARKERS, *LOWER_MARKERS, "driver")
        best = max(kinds, key=lambda k: self[k])
        return best if self[best] else "text"


def wandb_kind(name: str) -> str:
    """The kind of a file in a wandb run directory by its name alone, or "" (output.log: from its content)."""
    m = WANDB_RUN.search(name.replace("\\", "/"))
    if not m:
        base = os.path.basename(name)
        return "wandb-internal" if base in WANDB_ONLY else "metrics" if base == "wandb-summary.json" else ""
    base = m["name"]
    if base in WANDB_OWN:
        return "wandb-internal"
    if base == "wandb-summary.json":
        return "metrics"
    if base in ("config.yaml", "wandb-metadata.json"):
        return "config"
    if base in ("requirements.txt", "conda-environment.yaml", "diff.patch") or base.endswith(".patch"):
        return "text"
    return ""


def results_kind(name: str, text: str) -> bool:
    """A per-sample verifier or judge results table (JSON lines, JSON, CSV/TSV), recognised by its columns."""
    return results_file.is_results(results_file.head_columns(name, text))


def kind_from_name(name: str) -> str:
    low = name.lower()
    for rx, kind in NAME_HINTS:
        if rx.search(low):
            return kind
    return ""


# The words a run configuration's top-level key starts with (config_file.NAMESPACE_KEY: `^(?:inference|...)` under
# re.M, where `^` is the text's start or a "\n"): a head holding none of them at a line start is no configuration,
# and looks_like_config (which splits the head into lines first: ~40 us a file) is not asked. One regex that starts
# with a literal "\n" (re skips ahead to each newline) costs a quarter of seven substring tests.
CONFIG_WORDS = ("inference", "miles", "trainer", "rollout", "verifier", "judge", "engine")
_CONFIG_LINE = lazy("\n(?:" + "|".join(CONFIG_WORDS) + ")")


def _may_be_config(text: str) -> bool:
    return text.startswith(CONFIG_WORDS) or _CONFIG_LINE.search(text) is not None


# A .json that is a server's reply saved as is (an OpenAI-compatible error body {"error": ...} or {"object": "error",
# ...}, a TGI/Inference API {"error": "Input validation error: ..."}, a chat/text completion with its usage) is the
# evidence itself, not a configuration: it is scanned line by line like any log.
_API_BODY = lazy(
    r'\s*\{\s*(?:"error"\s*:|"object"\s*:\s*"(?:error|chat\.completion|text_completion)"'
    r'|"id"\s*:\s*"[^"]{0,80}"\s*,\s*"object"\s*:\s*"(?:error|chat\.completion|text_completion)")'
)


def decide_kind(name: str, text: str) -> str:
    """Name and content together. Engine markers are distinctive, so clear engine content wins over
    a generic name (a Ray `worker-*.err` holding SGLang lines); otherwise the name decides."""
    last = _last_suffix(name).lower()
    suffixes = [last] if last else []  # (only the last is asked for)
    wandb = wandb_kind(name)
    if wandb and wandb != "text":
        return wandb
    if suffixes and suffixes[-1] in (".jsonl", ".ndjson", ".json", ".csv", ".tsv") and results_kind(name, text):
        return "results"
    if wandb:
        return wandb
    if suffixes and suffixes[-1] in CONFIG_SUFFIXES:
        return "config"
    if suffixes and suffixes[-1] in (".jsonl", ".ndjson"):
        if results_file.roles_of(results_file.jsonl_head_columns(text)).metric:
            return "metrics"  # per-step records ({"step": 3, "loss": ..., "reward": ...}), whatever words they hold
        return "verifier" if LOWER_MARKERS["verifier"].search(text[:4096].lower()) else "metrics"
    if suffixes and suffixes[-1] == ".json":
        return "text" if _API_BODY.match(text) else "config"
    if _may_be_config(text) and looks_like_config(text):  # a run configuration whatever its name (run.cfg, args)
        return "config"
    scores = Scores(text)
    if suffixes and suffixes[-1] in (".md", ".rst", ".txt") and not kind_from_name(name):
        # notes left beside the logs: scanned, but never taken for a verifier or trainer log; a console log tee'd
        # to a .txt (a verl driver's `... | tee log.txt`, a vLLM server's) is still known by its content
        if scores["driver"]:
            return "driver"
        if scores["vllm"] >= 3 and scores["vllm"] > scores["sglang"]:
            return "vllm"
        return "text"
    by_name = "driver" if WANDB_RUN.search(name.replace("\\", "/")) else kind_from_name(name)
    if scores["driver"]:
        return "driver"
    if by_name == "verifier":
        return "verifier"
    named_trainer = by_name == "trainer" and STRONG_TRAINER_NAME.search(name.lower())
    if by_name not in ENGINE_KINDS and not named_trainer:  # clear engine content wins over a weaker name
        engine = max(ENGINE_KINDS, key=lambda k: scores[k])
        if scores[engine] >= 3:
            return engine
    if by_name:
        return by_name
    return scores.best()


FILLER = b"\x00 \t\r\n\f\v"  # what a hole or a run of blank lines is made of
LOOK_FURTHER = 64 << 20  # bytes of filler read past before deciding from the name alone (and reading it all)
_HOLES = hasattr(os, "SEEK_DATA")


def _past_filler(stream: Any, plain_fd: int | None) -> tuple[bytes, int, bool]:
    """(up to SNIFF bytes from the first byte that is not filler, the offset where they start, whether the stream
    ended), reading at most LOOK_FURTHER bytes of filler. The head of NULs that `cmd > log` plus copytruncate
    leaves (the writer goes on at its old offset) is often a sparse hole: a plain file jumps over holes with
    SEEK_DATA (lseek(2)) instead of reading their zeros."""
    pos = 0
    while pos < LOOK_FURTHER:
        if plain_fd is not None and _HOLES:
            try:
                nxt = os.lseek(plain_fd, pos, os.SEEK_DATA)
            except OSError:  # ENXIO: no data after pos; EINVAL: not supported here
                nxt = pos
            if nxt != pos:
                stream.seek(nxt)
                pos = nxt
        piece = stream.read(1 << 20)
        if not piece:
            return b"", pos, True
        body = piece.lstrip(FILLER)
        if body:
            start = pos + len(piece) - len(body)
            more = stream.read(SNIFF - len(body)) if len(body) < SNIFF else b""
            return (body + more)[:SNIFF], start, False
        pos += len(piece)
    return b"", pos, False


def _look_further(logfile: LogFile, head: bytes) -> tuple[bytes, str]:
    """The head to decide from when the first SNIFF bytes are only NULs or blank lines: the text after them, and
    a note saying where it starts (or that the file is filler as far as was looked, and is read whole)."""
    try:
        opened = open_stream(logfile.path, logfile.compression) if logfile.compression else safe_open(logfile.path)
        with opened as stream:
            found, start, ended = _past_filler(stream, None if logfile.compression else stream.fileno())
    except (OSError, ValueError):
        return head, ""
    what = "NUL bytes" if head.strip(b" \t\r\n\f\v") else "blank lines"
    if found:
        return found, f"text starts at byte {start} after {what}"
    if ended:
        return head, ""
    return b"", f"only {what} in the first {start >> 20} MiB: read whole"


def _read_head(path: str, want: int) -> bytes:
    """The first `want` bytes of a file (fewer at its end), read with the descriptor alone: a file object around it
    cost as much as the read (19 us a small file against 8)."""
    fd = safe_fd(path)
    try:
        parts = []
        while want > 0 and (got := os.read(fd, want)):
            parts.append(got)
            if len(got) < want:  # a regular file (safe_fd) reads short only at its end: no read to be told so
                break
            want -= len(got)
        return b"".join(parts) if len(parts) != 1 else parts[0]
    finally:
        os.close(fd)


def sniff(logfile: LogFile) -> None:
    """Fill in compression, kind and status from the first bytes of the file."""
    # a file stat() found smaller than SNIFF is read for its size and one byte more (a read of SNIFF bytes would
    # make a 64 KiB buffer for a 4 KB file, a third of a small file's discovery); one that grew since is sniffed
    # from its first size + 1 bytes, a head all the same (a size of 0 may be a file whose size is not known)
    want = logfile.size + 1 if 0 < logfile.size < SNIFF else SNIFF
    try:
        head = _read_head(logfile.path, want)
    except OSError as e:
        logfile.status, logfile.reason = "unreadable", e.strerror or str(e)
        return
    logfile.compression = compression_of(head)
    if logfile.compression:
        notes: list[str] = []
        try:
            with open_stream(logfile.path, logfile.compression, notes.append) as stream:
                head = stream.read(SNIFF)
        except OSError as e:
            logfile.status, logfile.reason = "unreadable", f"{logfile.compression}: {e}"
            return
        if not head and notes:  # nothing decompressed at all: the scan would add nothing either
            logfile.status, logfile.reason = "unreadable", notes[0]
            return
    if len(head) == SNIFF and not head.lstrip(FILLER):
        # a hole or blank lines first is no reason to skip a file: decide from the text after them
        head, note = _look_further(logfile, head)
        if note:
            logfile.reason = note
        if not head:  # filler as far as was looked: the name decides, and the scan reads it all
            logfile.kind = _kind_by_name(logfile.rel)
            return
    why = _binary_reason(head, logfile.rel)
    if head.startswith(b"PAR1") and results_file.is_results(results_file.parquet_columns(logfile.path)):
        logfile.kind = "results"  # a Parquet table of per-sample verifier results (lighteval details, verl dumps)
        return
    if why:
        logfile.kind, logfile.status, logfile.reason = "binary", "skipped", why
        return
    if not head.strip():
        logfile.kind, logfile.status, logfile.reason = "empty", "read", "empty file" if not head else "blank lines only"
    if logfile.kind != "empty":
        logfile.kind = decide_kind(_plain_name(logfile.rel), head.decode("utf-8", "replace"))
    if logfile.kind == "wandb-internal":
        logfile.status, logfile.reason = "skipped", "wandb client's own log (sync, uploads): not the run's output"


def _plain_name(rel: str) -> str:
    """The name without a compression suffix or a rotation number (train.log.1.gz: train.log)."""
    for ext in (".gz", ".bz2", ".xz", ".zst"):
        if rel.endswith(ext):
            rel = rel[: -len(ext)]
    return re.sub(r"\.\d+$", "", rel)


def _kind_by_name(rel: str) -> str:
    name = _plain_name(rel)
    return wandb_kind(name) or kind_from_name(name) or "text"


_UNPRINTABLE = lazy(r"[\x00-\x1f\x7f-\x9f]")


def printable(name: str) -> str:
    """A path as reports print it: bytes that are not UTF-8 as \\xNN, control characters escaped, so an odd
    file name can neither break a report line nor fail to encode (the path itself is kept for opening)."""
    if name.isascii() and name.isprintable():  # nearly every name: nothing to escape
        return name
    text = os.fsencode(name).decode("utf-8", "backslashreplace")
    return _UNPRINTABLE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def _entry(path: str, rel: str, root: str = "") -> LogFile:
    """The file at path, rel to the root given; `root` (ending with its separator, path == root + rel): a file of a
    walk, whose path is made from root and rel when asked (LogFile.found), unless its name is printed escaped."""
    shown = printable(rel)
    lf = LogFile.found(root, rel) if root and shown is rel else LogFile(path=path, rel=shown)
    try:
        st = os.stat(path)  # follows a file symlink
    except FileNotFoundError:
        lf.status, lf.reason = "unreadable", "dangling symlink" if os.path.islink(path) else "no such file"
        return lf
    except OSError as e:
        lf.status, lf.reason = "unreadable", e.strerror or str(e)
        return lf
    if not stat.S_ISREG(st.st_mode):
        lf.kind, lf.status, lf.reason = "special", "skipped", f"{special_kind(st.st_mode)}: not opened"
        return lf
    lf.size = counted(st.st_size)
    if not os.access(path, os.R_OK):
        lf.status, lf.reason = "unreadable", "permission denied"
        return lf
    sniff(lf)
    return lf


Mapper = Callable[[Callable[[Any], Any], list[Any]], list[Any]]  # map(fn, items) -> [fn(item), ...] in order


def _serially(fn: Callable[[Any], Any], items: list[Any]) -> list[Any]:
    return [fn(x) for x in items]


def _sniff_rel(prefix: str, rel: str) -> LogFile:
    return _entry(prefix + rel, rel, prefix)


def _sniffer(root: str) -> Callable[[str], LogFile]:
    """The sniffing of a file under root by its relative path (its full path is os.path.join(root, rel), as the walk
    made it: the walk keeps only the relative one, ~35 MB less for 200 k files). A partial of a module's function,
    not a closure: it pickles, so a worker forked before the walk ended can be sent it (parallel.soon)."""
    return functools.partial(_sniff_rel, os.path.join(root, ""))


def _nothing(found: int) -> None:
    return None


def discover(paths: list[str], follow_links: bool = False, mapper: Mapper = _serially,
             soon: Callable[[int], None] = _nothing) -> tuple[list[LogFile], list[str]]:
    """All files under the paths, sorted per root. Returns (files, problems with the paths themselves).

    A file symlink whose target lies outside the directory given is not followed unless `follow_links` (a
    `shadow.log -> /etc/shadow` planted in a run dir would be read and quoted); it is listed as skipped.
    `mapper` sniffs the files of a directory walked (their stat, kind, coverage): scan/parallel.py's map_shared
    shares a run of many small files among processes; by default this process sniffs them one by one. `soon(n)` is
    told a walk has found n files so far, n = 1, 2, 4, 8, ... (scan/parallel.py's soon forks the workers once they are
    many, while this process holds the objects of a few hundred files, not of all of them)."""
    files: list[LogFile] = []
    problems: list[str] = []
    several = len(paths) > 1
    for root in paths:
        if root == "-":
            files.append(LogFile(path="-", rel="<stdin>", kind="text"))
            continue
        if not os.path.lexists(root):
            problems.append(f"{root}: no such file or directory")
            continue
        if os.path.isdir(root):
            found = _walk(root, follow_links, mapper, soon)
            if several:  # names relative to each root would collide (a/train.log, b/train.log): keep the root
                for lf in found:
                    lf.path = lf.path  # its own string: the path is no longer root + rel
                    lf.rel = printable(os.path.normpath(os.path.join(root, lf.rel)))
            files.extend(found)
        else:
            files.append(_entry(root, os.path.normpath(root) if several else os.path.basename(root)))
    return files, problems


def _outside(full: str, real_root: str) -> str:
    """The target of a symlink (`full`) that leads out of the run directory, or ""."""
    target = os.path.realpath(full)
    return "" if target == real_root or target.startswith(real_root.rstrip(os.sep) + os.sep) else target


def _walk(root: str, follow_links: bool = False, mapper: Mapper = _serially,
          soon: Callable[[int], None] = _nothing) -> list[LogFile]:
    """Every file under root, each directory's files (sorted) before its subdirectories (sorted), without
    recursion: a tree thousands of levels deep is walked like a flat one. Directory symlinks are not followed
    (`loop -> ..` cannot recurse). The files found are sniffed (their kind and coverage) once the walk is done,
    all through `mapper`."""
    out: list[LogFile | None] = []  # None: the next file of `todo`, once sniffed
    todo: list[str] = []  # their paths relative to root
    real_root = os.path.realpath(root)
    stack = [(root, "")]  # (a directory, its path relative to root with a trailing separator: "" for root)
    while stack:
        dirpath, reldir = stack.pop()
        subdirs: list[os.DirEntry[str]] = []
        names: list[str] = []  # the files' names: not their DirEntry objects (~3x the memory: a directory of 130 k
        links: set[str] = set()  # files held ~30 MB of them at once), and which of them are symlinks
        try:
            with os.scandir(dirpath) as it:
                for e in it:
                    try:
                        is_dir = e.is_dir(follow_symlinks=True)
                    except OSError:
                        is_dir = False
                    if is_dir:
                        subdirs.append(e)
                        continue
                    names.append(e.name)
                    if not follow_links and e.is_symlink():
                        links.add(e.name)
        except OSError as err:
            rel = os.path.relpath(dirpath, root) if dirpath != root else root
            out.append(LogFile(path=dirpath, rel=printable(rel), kind="directory", status="unreadable",
                               reason=err.strerror or str(err)))
            continue
        subdirs.sort(key=lambda e: e.name)
        names.sort()
        for d in subdirs:
            if d.is_symlink():
                out.append(LogFile(path=d.path, rel=printable(os.path.relpath(d.path, root)), kind="directory",
                                   status="skipped",
                                   reason=f"symlink to a directory ({printable(os.readlink(d.path))}): not followed"))
        for name in names:
            rel = reldir + name  # os.path.relpath(full, root), without its two abspath() calls a file
            full = os.path.join(dirpath, name) if name in links else ""
            target = _outside(full, real_root) if full else ""
            if target:
                out.append(LogFile(path=full, rel=printable(rel), kind="link", status="skipped",
                                   reason=f"symlink out of the run directory (to {printable(target)}): not followed "
                                          "(--follow-links reads it)"))
                continue
            out.append(None)
            todo.append(rel)
            if not len(todo) & (len(todo) - 1):  # 1, 2, 4, ... files found: soon decides when they are many
                soon(len(todo))
        stack.extend(reversed([(d.path, reldir + d.name + os.sep) for d in subdirs if not d.is_symlink()]))
    found = mapper(_sniffer(root), todo)
    prefix = os.path.join(root, "")
    for lf, rel in zip(found, todo):
        if lf.rel == rel:  # one string, not a copy from the process that sniffed it; its path made of root and rel
            lf.rel, lf.path, lf._dir = rel, None, prefix  # (a worker's came back whole)
    sniffed = iter(found)
    return [lf if lf is not None else next(sniffed) for lf in out]
