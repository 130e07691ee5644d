"""Normalized error signals: a line's level, how a process ended, and who a failed call was made to.

Rules match one wording each; these signals hold across wordings, so a failure no rule knows still counts:

- **Level.** The level field of the usual logger formats (vLLM `ERROR 12-13 10:31:16 file.py:12]`, Python
  logging `ERROR:name:` / `- ERROR -`, loguru `| ERROR |`, `[time ERROR]`, glog `E1203 12:34:56.789`, Ray's
  `[time E pid tid]`, logfmt `level=error`, JSON `"level": "error"`). Launchers and loggers strip into the
  line's prefix what the message no longer says, so the level is read from the prefix and the message's head.
- **Process end.** The last exception a process printed before its log stops (the final line of the last
  traceback chain, a `RayTaskError(...)` chain, a harness `AssertionError`) ended it, when nothing the process
  printed afterwards shows it still working (stats rows, metric records) and the log ends soon after. An
  exception the asyncio loop or the garbage collector logged (`Task exception was never retrieved`, `Exception
  ignored in`) did not end anything.
- **Orderly shutdown.** SIGTERM/SIGINT received (SGLang `SIGTERM received. signum=15 ...`, vLLM `[shutdown]
  EngineCore: trigger received signal=SIGINT`, torch elastic `SignalException: Process N got signal: 15` and
  `Received Signals.SIGTERM death signal`), Ctrl-C (`KeyboardInterrupt`), children that exit by signal 15 or 2
  (`exit code -15`, `exitcode: -2`, 143, 130). What a process prints while it is being shut down on purpose
  (actor deaths, broken pipes, aborted requests, a KeyboardInterrupt traceback) is not a crash. A SIGTERM that
  follows a crash (torchrun's `Sending process N closing signal SIGTERM` after a worker failed) is cleanup, not
  an orderly shutdown, and is not a marker.
- **Callee.** Which endpoint a failed request went to, from the URL or the words around it: a judge, reward
  model or sandbox (the verifier) or the policy engine.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field

from triage.lazyre import lazy
from triage.model import Event, Hit, Line

# -- levels -------------------------------------------------------------------------------------------------
LEVELS = ("fatal", "critical", "error", "warning", "info", "debug")
_LEVEL_WORD = {"FATAL": "fatal", "CRITICAL": "critical", "ERROR": "error", "F": "fatal", "E": "error",
               "fatal": "fatal", "critical": "critical", "error": "error", "Fatal": "fatal", "Critical": "critical",
               "Error": "error"}
# In the prefix a launcher or logger put in front of the message (split off by origins.LINE_PREFIX).
PREFIX_LEVEL = lazy(
    r"(?:^|[\s\[(|:,])(?P<w>ERROR|CRITICAL|FATAL)(?=[\s\]):|,]|$)(?! \| stderr \|)"  # FastChat's stderr: no level
    r"|[\d,.] (?P<ray>[EF]) \d+ \d+\]"  # Ray C++ components: `[2022-04-25 18:24:10,728 E 4497 4497]`
    # glog, gRPC, abseil, torch elastic `E0801 13:23:20.000000 32974 api.py:874]` (glog >= 0.7: `E20240801 ...`);
    # torch c10 `[rank0]:[E1206 10:00:00.123 ...]`, `[E114 ...]`, before torch 2.2 `[E ProcessGroupNCCL.cpp:563]`
    r"|(?:^|[\s\[:\]])(?P<glog>[EF])\d{3,8} \d\d:\d\d:\d|\[(?P<c10>[EF]) [\w./-]+:\d+\]"
    r"|\d: (?P<tsl>[EF]) [\w./-]+:\d+\]"  # TensorFlow/XLA C++ logging: `2025-07-18 19:09:55.245872: E file.cc:42]`
)
# In the message's head, for formats whose prefix is not split off.
HEAD_LEVEL = lazy(
    r"^(?:\([^)]{1,80}\) )?(?:\[[^\]]{0,60}\]:?)?\s?(?P<w>ERROR|CRITICAL|FATAL)(?=[\s\]):|])"  # `(Worker rank=0 pid=1) ERROR ...`
    r"|^\s?(?:[-|]\s*)?(?:[\w.]+\s*[-|]\s*)?(?P<w2>ERROR|CRITICAL|FATAL)\s*[-|](?! stderr \|)"  # `- root - ERROR -`, `| ERROR |`
    r"|(?:^|[\[\s:])(?P<glog>[EF])\d{3,4} \d\d:\d\d:\d\d\.\d+\s+\d*"  # glog / torch c10: `E1206 10:00:00.123 ...`
    r"|^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ (?P<ray>[EF]) \d+ \d+\]"  # Ray C++ components: `[time E pid tid]`
    r"|\blevel=\"?(?P<kv>error|fatal|critical|ERROR|FATAL|CRITICAL)\b"  # logfmt
    r"|\"level(?:name)?\":\s*\"(?P<js>error|fatal|critical|ERROR|FATAL|CRITICAL)\""  # JSON logs
)
# Literals that must reach the scanner for the level to be read (the prefilter's anchors; "ERROR" is one already).
LEVEL_ANCHORS = ("level=error", "level=fatal", "level=ERROR", "\"level\": \"error\"", "\"level\":\"error\"")


def level_of(line: Line) -> str:
    """The line's level when its logger says so ("error", "fatal", "critical"; "" when unknown or lower)."""
    text, msg = line.text, line.msg
    # where the message starts (a Ray `[repeated Nx across cluster]` suffix was cut off its end)
    cut = len(text) - len(msg) if text.endswith(msg) else max(text.find(msg[:60]), 0) if msg else 0
    if cut:
        m = PREFIX_LEVEL.search(text, 0, cut)
        if m:
            return _LEVEL_WORD[next(g for g in m.groups() if g)]
    m = HEAD_LEVEL.search(msg[:160])
    if m:
        word = next(g for g in m.groups() if g)
        return _LEVEL_WORD[word]
    return ""


def is_error_level(line: Line) -> bool:
    return level_of(line) in ("error", "critical", "fatal")


# A line its program printed as a warning: the level word of a logger prefix split off the message (vLLM
# `WARNING 06-25 16:32:09 [import_utils.py:408]`, logging `WARNING:root:`, `[WARNING]`), a glog/torch c10 `W1206`
# level (glog pads the month, `W0114`; torch c10 does not: `[W114 12:02:28.872705088 compiler_depend.ts:83]`,
# `[W929 ...]`, so January to September have three digits), or a Python `warnings` record (`/.../torchvision/io/image.py:13: UserWarning: ...`).
PREFIX_WARNING = lazy(r"(?:^|[\s\[(|:,])WARN(?:ING)?(?=[\s\]):|,]|$)|(?:^|[\s\[:\]])W\d{3,8} \d\d:\d\d:\d"
                            r"|\[W [\w./-]+:\d+\]|[\d,.] W \d+ \d+\]"  # glog, torch c10 (both forms), Ray C++
                            r"|\d: W [\w./-]+:\d+\]")  # TensorFlow/XLA C++ logging
# The same in the message's head, for formats whose prefix is not split off: pip's `WARNING: Retrying (...)`,
# `[rank7]:[W1217 01:28:11.167 compiler_depend.ts:83] Warning: ...` (torch_npu / c10), `W1206 10:00:00.123 ...`.
HEAD_WARNING = lazy(
    r"^(?:\([^)]{1,80}\) )?(?:\[[^\]]{0,60}\]:?)?\s?WARN(?:ING)?(?=[\s\]):|])"
    r"|^(?:\[[^\]]{0,60}\]:?)?\[?W\d{3,4} \d\d:\d\d:\d\d"
)
# A Python `warnings` record (`/.../torchvision/io/image.py:13: UserWarning: ...`) and the source line Python echoes
# under it (`  warnings.warn(f"Failed to create processor: {e}...`).
WARNINGS_RECORD = lazy(r"^\s?\S+\.py:\d+: (?:[A-Z]\w*)?Warning: |^\s*warnings\.warn\(")


# A tqdm bar at the head of a line ("Capturing batches (bs=36 avail_mem=17.38 GB):   0%|          | 0/6 [00:00<?,
# ?it/s]"): tqdm redraws without a newline, so the next writer's line starts after it (SGLang on Ascend, real-extra
# 608: a torch_npu `[W1217 ...] Warning:` glued to a CUDA-graph capture bar).
TQDM_HEAD = lazy(r"^[^|\n]{0,160}?\d{1,3}%\|[^|]{0,80}\| *\d+/\d+ \[[^\]]{0,80}\]")


# A line its program printed below warning: Python logging's default `%(asctime)s - %(levelname)s - %(message)s`
# (`2026-02-28 16:15:25,731 - INFO - Failed to auto-detect TPU type.`, Ray 2.5x's TPU probe on every job start),
# `INFO:name:`, `[INFO]`, loguru `| INFO |`, vLLM/SGLang `INFO 03-08 08:22:22 [file.py:12]`, glog `I0801 13:23:20`.
PREFIX_INFO = lazy(r"(?:^|[\s\[(|:,])(?:INFO|DEBUG)(?=[\s\]):|,]|$)|(?:^|[\s\[:\]])I\d{3,8} \d\d:\d\d:\d")
HEAD_INFO = lazy(
    r"^(?:\([^)]{1,80}\) )?(?:\[[^\]]{0,60}\]:?)?\s?\[?(?:INFO|DEBUG)(?=[\s\]):|])"  # `INFO:root:`, `[INFO]`
    r"|^\s?(?:[-|]\s*)?(?:[\w.]+\s*[-|]\s*)?(?:INFO|DEBUG)\s*[-|]"  # `- root - INFO -`, `| INFO |`
    r"|^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[,.]\d+)? - (?:[\w.]+ - )?(?:INFO|DEBUG) - "  # logging's default format
    r"|^\[?I\d{3,4} \d\d:\d\d:\d\d"
)


def is_info_level(line: Line) -> bool:
    """Whether the line's own program printed it as information (INFO/DEBUG): what it reports did not stop it."""
    text, msg = line.text, line.msg
    cut = len(text) - len(msg) if text.endswith(msg) else max(text.find(msg[:60]), 0) if msg else 0
    if cut and (PREFIX_LEVEL.search(text, 0, cut) or PREFIX_WARNING.search(text, 0, cut)):
        return False  # the prefix's level is higher: a message that starts with the word INFO is not the level
    if cut and PREFIX_INFO.search(text, 0, cut):
        return True
    return HEAD_INFO.match(msg) is not None


def is_warning_level(line: Line) -> bool:
    """Whether the line's own program printed it as a warning (and so caught whatever it reports and went on)."""
    text, msg = line.text, line.msg
    cut = len(text) - len(msg) if text.endswith(msg) else max(text.find(msg[:60]), 0) if msg else 0
    if cut and PREFIX_WARNING.search(text, 0, cut):
        return True
    bar = TQDM_HEAD.match(msg)
    if bar:  # a progress bar tqdm left without a newline, the warning printed after it
        msg = msg[bar.end():]
    return WARNINGS_RECORD.match(msg) is not None or HEAD_WARNING.match(msg) is not None


# -- process ends and shutdowns -----------------------------------------------------------------------------
TRACEBACK = "Traceback (most recent call last)"
FRAME = lazy(r'^\s*File "[^"]*", line \d+')
# A traceback's final line: `[pkg.]Name[(Inner)]: message` or a bare `[pkg.]Name` (StopIteration: a DataLoader or
# data iterator that ran dry, printed unqualified as a builtin); Python's base `Exception: message` too (raised bare
# by libraries: tokenizers' "Exception: expected value at line 1 column 1").
EXC_LINE = lazy(
    r"^\s{0,4}(?:[a-z_]\w*\.)*(?P<name>[A-Z]\w*(?:Error|Exception|Failure|Fault|Exit|Interrupt|Exhausted|Died|Iteration)"
    r"|Exception(?=:))"
    r"(?:\((?P<inner>[^)]*)\))?(?::\s?(?P<message>.*)|\s*)$"
)
# Inside a traceback (right after its frames) the final line may name a class without those endings, qualified by
# its module: `subprocess.TimeoutExpired: Command '[...]' timed out after 10 seconds` (CPython's subprocess),
# `requests.exceptions.ConnectTimeout: ...`. The module prefix and the unindented start keep echoed source lines
# out. Such a line reaches Python as a candidate: it holds an anchor (`Timeout` here, a rule's literal such as
# Triton's "out of resource: shared memory"), or it is the first line after a traceback's frames (traceback_end:
# `_queue.Empty`).
DOTTED_EXC_LINE = lazy(
    r"^\s?(?:[a-z_]\w*\.)+(?P<name>[A-Z][a-z]\w*?)(?:\((?P<inner>[^)]*)\))?(?::\s?(?P<message>.*)|\s*)$"
)

# -- tracebacks in other renderings ---------------------------------------------------------------------------
# rich's traceback (Textualize/rich rich/traceback.py, `Traceback._render_stack`, rich 10-14; printed by
# rich.traceback.install(), typer's pretty exceptions, RichHandler(rich_tracebacks=True)) draws the stack in a panel:
# a `╭──── Traceback (most recent call last) ────╮` top, one `│ /path/file.py:123 in func │` line a frame
# (`│ in func:123 │` when the file is not on disk), the frame's source lines and locals under it, `╰────╯`, then
# the plain `ExceptionType: message` line. A log shown in a boxed pane (k9s, a TUI log viewer) puts `│ ` and ` │`
# around every line of a plain traceback. The box's side goes as a line prefix (prefixes.LINE_PREFIX's `│ `/`┃ `, the
# closing side with the trailing blanks), one mechanism for both; RICH_FRAME / RICH_FRAME_NOFILE read the frame's place
# left, which `unboxed` writes as Python's own frame line so every reader of frames sees one. A path too
# long for the panel wraps: the function's name goes to the next line (the frame keeps its file and line), a path
# cut in the middle is no frame.
BOX_TOP = lazy(r"^[╭┏┌][─━ ]+(?P<title>[^─━╮┓┐]*?)\s*[─━]+[╮┓┐]\s*$")
RICH_FRAME = lazy(r"^(?P<path>(?=[^\s:]*[/\\])[^\s:]+|[A-Za-z]:\\\S+?):(?P<line>\d+)(?: in(?: (?P<func>\S+))?)?$")
RICH_FRAME_NOFILE = lazy(r"^in (?P<func>\S+):(?P<line>\d+)$")
# IPython >= 8 (IPython/core/ultratb.py, VerboseTB) heads a frame `File /path/x.py:67, in func(args)` (`~` for the home
# directory, a relative path), a notebook cell's `Cell In[12], line 3`, the frame's source lines under it with `---->`
# at the line that ran: Jupyter output pasted from a notebook (unsloth's and TRL's GRPO notebooks).
IPYTHON_FRAME = lazy(r"^\s*(?:File (?P<path>[^\s\"]\S*?):(?P<line>\d+), in (?P<func>[\w<>.]+)|Cell (?P<cell>In\s?\[\d*\]), line (?P<cline>\d+))")
# IPython < 8 (Colab until 2024) heads a frame `/path/x.py in func(args)` or `<ipython-input-3-9b2e> in <module>()`,
# with the line that ran on the `--> 67` row below (no candidate line): the frame reads line 0.
IPYTHON7_FRAME = lazy(
    r"^(?P<path>(?:/|~/|\.{1,2}/|[A-Za-z]:\\)\S*\.py|<ipython-input-[\w-]+>) in (?P<func>[^\s(][^(]*?)\(.*\)\s*$")
# What makes a boxed line a candidate line (scanner anchors): a rich frame's absolute path or file-less form. The
# annotation lines under loguru's `diagnose` frames (`│    └ <value>`, loguru/_better_exceptions.py, as in the
# better_exceptions package) hold a `└ `; they continue the traceback (chains()). pytest's summary line of a failed test
# (`FAILED `, PYTEST_SUMMARY) may hold no error word (`- assert None is not None`).
RENDER_ANCHORS = ("│ /", "│ in ", "└ ", "File /", "File ~", "File .", "Cell In", ".py in ", "<ipython-input-",
                  "panicked at", '.py", line ', "FAILED ")
# A frame line whose head a paste or a viewer's column cut off: `slime/slime_plugins/models/glm4.py", line 11, in
# get_glm_spec` (a paste that starts inside Python's `  File "/root/slime/...` line, slime issue 1656). The path's end,
# `.py"` and `, line N` stay, which nothing but a frame prints: read as the frame it was.
CUT_FRAME = lazy(r'^(?P<path>[^\s"]*\.py)", line (?P<line>\d+)(?:, in (?P<func>\S+))?\s*$')
# A Rust panic (std's default panic hook, library/std/src/panicking.rs): `thread 'main' panicked at 'msg',
# src/x.rs:12:5` (Rust < 1.73), `thread 'main' panicked at src/x.rs:12:5:` with the message on the next line (1.73+),
# `thread 'main' (73) panicked at ...` (1.89+ adds the thread id); `stack backtrace:` and numbered frames follow with
# RUST_BACKTRACE. A Python extension built with pyo3 (HF tokenizers, sglang's router, vLLM's Rust parts) raises
# pyo3_runtime.PanicException after it, a Rust program (sgl-model-gateway, vllm.rs, mistral.rs) stops there or
# loses the thread. It is the final line of a chain of its own, named `panic`.
RUST_PANIC = lazy(
    r"^\s*thread '(?P<thread>[^']*)'(?: \(\d+\))? panicked at (?:'(?P<message>.*)', \S+:\d+(?::\d+)?|\S+:\d+(?::\d+)?:?)\s*$"
)
# pytest's short test summary (_pytest/terminal.py, `-r` report, pytest >= 6): `FAILED tests/x.py::test_y[p] - Exc: msg`
# (`ERROR` for a failure outside the test's call: setup, teardown, collection), the first line of the test's
# exception after ` - `; a bare `assert ...` for an assert rewritten by pytest, `Failed: msg` for pytest.fail. It is
# the last thing a CI job's test step prints about a failed test: a chain of its own, ended by that exception.
PYTEST_SUMMARY = lazy(r"^(?:FAILED|ERROR) (?P<node>\S+\.py(?:::\S.*?)?) - (?P<crash>\S.*)$")
PYTEST_OUTCOME = lazy(r"^(?P<name>Failed|assert)(?::\s?|\s)(?P<message>.*)$")
ANNOTATION = lazy(r"^\s*(?:[│┃]\s*)*└ ")
# The end of a traceback pasted without its frames: the statement that raised, echoed as Python prints it under the
# innermost frame, then the exception line. Python 3.11+ marks the failing expression with a caret line (`^^^^`,
# `~~~~^^^^`), which nothing else in a Python log prints; an `assert` echo ends in AssertionError and a `raise X(...)`
# echo in X (R1-V PR 44: `if self.state.global_step != self._last_loaded_step:` / carets / AttributeError; rllm
# issue 158: the `assert len(actor_names) == ...` line, a blank line, AssertionError). Those lines are candidates
# (ECHO_ANCHORS) so the exception line after them ends a chain of its own.
ECHO_ANCHORS = ("^^^", "assert ", "raise ")
CARETS = lazy(r"^\s*[~^]*\^[~^]*\s*$")
ECHO_STATEMENT = lazy(r"^\s*(?:assert\s|raise\s+(?:[a-z_]\w*\.)*(?P<raised>[A-Z]\w*))")
ECHO_GAP = 2  # lines from the echo (caret line or statement) to its exception line: a blank line a paste put between
WIDE_CHAIN = 120  # lines a rendered traceback's source, locals and annotation lines may put between its frame lines


def unboxed(msg: str) -> str | None:
    """A rendered traceback's part as the plain traceback prints it: a rich panel's top (its title, the header) or
    frame (its box's side already taken off as a line prefix), an IPython frame line, a frame line cut before its
    path's end (CUT_FRAME); None for any other line."""
    if msg[:1] not in "╭┏┌":
        if '", line ' in msg and (c := CUT_FRAME.match(msg)) is not None:
            return _frame(c)
        i = IPYTHON_FRAME.match(msg)
        # a rich frame, its box's side taken off as a line prefix (prefixes.LINE_PREFIX's `│ `)
        if i is None and (r := RICH_FRAME.match(msg) or RICH_FRAME_NOFILE.match(msg)) is not None:
            return _frame(r)
        if i is None:
            i = IPYTHON7_FRAME.match(msg) if " in " in msg else None
            return None if i is None else f'  File "{i.group("path")}", line 0, in {i.group("func")}'
        if i.group("cell"):
            return f'  File "<{i.group("cell")}>", line {i.group("cline")}'
        return f'  File "{i.group("path")}", line {i.group("line")}, in {i.group("func")}'
    top = BOX_TOP.match(msg)
    return top.group("title") + ":" if top and top.group("title").startswith(TRACEBACK) else None


def _frame(f: re.Match[str]) -> str:
    """A rich frame (RICH_FRAME, RICH_FRAME_NOFILE) or a cut one (CUT_FRAME) as Python's traceback prints it."""
    path, func = f.groupdict().get("path") or "<unknown>", f.group("func")
    return f'  File "{path}", line {f.group("line")}' + (f", in {func}" if func else "")


# A final exception whose message sends the reader to a traceback printed before it: vLLM V1's EngineDeadError
# ("EngineCore encountered an issue. See stack trace (above) for the root cause.", vllm/v1/engine/exceptions.py),
# vLLM V0's API server ("Engine process failed to start. See stack trace for the root cause.", 0.6-0.8) and
# transformers' lazy-import wrapper ("... because of the following error (look up to see its traceback)") and vLLM
# V1's API server when an engine core died while starting ("Engine core initialization failed. See root cause above.
# Failed core proc(s): {...}", wait_for_engine_startup in vllm/v1/engine/utils.py, 0.8 to 0.27; real-extra 1268,
# where the engine core's TypeError from a flashinfer import is the cause).
POINTS_ABOVE = lazy(r"See stack trace (?:\(above\) )?for the root cause|look up to see its traceback"
                          r"|See root cause above")
# An exception that only says a retry loop gave up (SGLang's utils retry(): "Exception: retry() exceed maximum number
# of retries.", 0.5.x; tenacity's RetryError): the error it was retrying, chained above it, is the cause.
RETRIES_WRAPPER = lazy(r"(?i)exceed(?:ed)? (?:the )?maximum number of retries|^(?:[\w.]+\.)?RetryError\b")
# A launcher's exception that only reports that a child process failed (torch elastic's ChildFailedError, torchrun
# and accelerate launch, torch 1.9-2.x: "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:" then the
# Root Cause table): the child's own exception printed before it is the cause.
LAUNCHER_WRAPPER = lazy(r"\bChildFailedError\b")
LAUNCHER_GENERIC = frozenset({"other.job-failed"})  # the launcher's own "a child failed" rows, no cause in them
# Headers of exceptions logged by the asyncio loop, the garbage collector or a thread that dies alone: they do
# not end the process that printed them.
NOT_FATAL_HEAD = lazy(
    r"Task exception was never retrieved|Future exception was never retrieved|Exception in callback"
    r"|Exception ignored in|Error in atexit|Exception in thread|Exception on /|Error in sys\.excepthook"
)
SHUTDOWN = lazy(
    r"(?P<sig>SIGTERM|SIGINT) received\b"  # SGLang SignalHandler (2024-2026)
    r"|Received (?:signal )?(?P<sig2>SIGTERM|SIGINT|SIGHUP)\b"
    r"|received signal[= ](?:SIG)?(?P<sig3>TERM|INT|15|2)\b"  # vLLM 2026 `[shutdown] ... received signal=SIGINT`
    r"|got signal: (?P<num>15|2|1)\b"  # torch elastic SignalException (1 = SIGHUP: the launching session hung up)
    r"|Received (?:Signals\.)?(?P<sig4>SIGTERM|SIGINT|SIGHUP|15|2|1) death signal"  # torch elastic agent, name or number
    r"|\[shutdown\] \w+(?: \w+)?: (?:terminated by shutdown signal|shutdown triggered)"  # vLLM 2026 ("API server: ")
    r"|Caught (?:signal )?(?P<sig5>SIGTERM|SIGINT|15|2)\b"
    r"|^(?:[a-z_]\w*\.)*KeyboardInterrupt\b"  # Ctrl-C
    r"|^Terminated\s*$|line \d+: +\d+ Terminated +\S"  # the shell's report of a child ended by SIGTERM
    # Slurm's slurmstepd cancelling the job or a step: scancel ("*** STEP 22051979.1 ON lrdn1786 CANCELLED AT
    # 2025-10-23T14:31:08 ***"), its time limit, preemption or a requeue (src/slurmd/slurmstepd/req.c "*** %s ON %s
    # CANCELLED AT %s DUE TO TIME LIMIT ***", Slurm 2.x-24; older Slurm and some sites print it without " ON node" or
    # " AT time": "*** JOB 9999 ON hpc CANCELLED DUE TO TIME LIMIT ***", "*** JOB <ID> CANCELLED DUE TO TIME LIMIT
    # ***"). A node failure ("DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS") is not a stop on purpose.
    r"|\*\*\* (?:JOB|STEP) \S+ (?:ON \S+ )?CANCELLED(?: AT \S+)?(?!.*DUE TO NODE FAILURE)"
    r"(?: DUE TO (?P<slurm>TIME LIMIT|PREEMPTION|JOB REQUEUE))?(?= |$)"
)
SLURM_WHY = lazy(r"CANCELLED (?:AT \S+ )?DUE TO (TIME LIMIT|PREEMPTION|JOB REQUEUE)")
# A child that ended by SIGTERM/SIGINT: its parent prints the exit code; never a crash of its own.
SIGNAL_EXIT = lazy(
    r"exit(?:ed with)? (?:code|status) (?:-(?:15|2)|143|130)\b|exitcode\s*:\s*-(?:15|2)\b"
    r"|<Signals\.SIG(?:TERM|INT): (?:15|2)>|Signal (?:15|2) \(SIG(?:TERM|INT)\) received"
)
BENIGN_ANCHORS = ("exception was never retrieved",)  # NOT_FATAL_HEAD lines without another anchor
# Exit-code literals begin with "exit code"/"with code": a bare "code -2" or "code 143" holds only byte pairs that
# every SGLang stats row has ("code" of "Decode", "-2" of its dates), which slowed the C prefilter by half.
SIGNAL_ANCHORS = ("SIGTERM", "SIGINT", "SIGHUP", "got signal", "death signal", "[shutdown]", "received signal",
                  "KeyboardInterrupt", "Caught signal", "exit code -", "exit code 1", "with code -", "with code 1", "exitcode: -",
                  "status 143", "status 130", "Signals.SIG", "Terminated", "CANCELLED AT",
                  "CANCELLED DUE TO")
# Rules whose lines a shutdown on purpose prints too: after the marker they are teardown, not failures.
SHUTDOWN_NOISE = ("gen.client-disconnect-abort", "gen.vllm-aborted-requests", "gen.rollout-timeout")
TAIL = 80  # lines after a process's last exception within which its log must end for the exception to end it
CHAIN = 8  # a traceback that starts within this many lines of the previous final line continues its chain
# A traceback's final line may hold no anchor (`_queue.Empty`, `StopIteration`): it is the first line after a frame
# line that is indented less than the frame (the frame's source line and Python 3.11+'s caret lines, indented more,
# come between), within TB_LOOK lines and behind the frame line's own prefix (a Ray actor's `(TaskRunner pid=N)`,
# torch elastic's `[rank0]:`); that line is a candidate line all the same (Scanner.candidates; _linescan.c tb_end).
TB_LOOK = 6
TB_FRAME = lazy(r'File "[^"]*", line \d')


def traceback_end(text: str, bol: int, eol: int) -> int:
    """Where that line starts, for the line text[bol:eol] (eol: its newline, or len(text)); -1 when the line is no
    frame or no such line follows (a blank line, another prefix, more indented lines, the text's end). After a Rust
    panic's location line (Rust >= 1.73, `thread 'x' panicked at f.rs:1:2:`) it is the next line behind the same
    prefix, which holds the panic's message (`called `Option::unwrap()` on a `None` value`, no anchor of its own)."""
    if "panicked at " in text[bol:eol]:
        return panic_detail(text, bol, eol)
    f = text.find('File "', bol, eol)
    if f < 0 or not TB_FRAME.match(text, f, eol):
        return -1
    k = f
    while k > bol and text[k - 1] in " \t":
        k -= 1
    indent, prefix = f - k, text[bol:k]
    if not indent:
        return -1
    p, n = eol + 1, len(text)
    for _ in range(TB_LOOK):
        if p >= n or not text.startswith(prefix, p):
            return -1
        q = p + len(prefix)
        while q < n and text[q] in " \t":
            q += 1
        if q >= n or text[q] in "\r\n":
            return -1
        if q - p - len(prefix) < indent:
            return p
        nl = text.find("\n", q)
        if nl < 0:
            return -1
        p = nl + 1
    return -1


def panic_detail(text: str, bol: int, eol: int) -> int:
    """Where the message line of the Rust panic at text[bol:eol] starts: the next line when the panic line ends in
    its location's `:` and the next line has the same prefix and some text after it; -1 otherwise."""
    k = text.find("thread '", bol, eol)
    e = eol
    while e > bol and text[e - 1] in " \t\r":
        e -= 1
    if k < 0 or e == bol or text[e - 1] != ":":
        return -1
    p = eol + 1
    prefix = text[bol:k]
    if p >= len(text) or not text.startswith(prefix, p):
        return -1
    q = p + len(prefix)
    while q < len(text) and text[q] in " \t":
        q += 1
    return -1 if q >= len(text) or text[q] in "\r\n" else p


@dataclass
class Chain:
    """One traceback chain: its first line, its final exception line, and what preceded it."""

    head: Line
    final: Line | None = None
    before: str = ""  # the messages of the candidate lines just before the chain (its logger's header)
    gap: int = CHAIN  # lines its parts may lie apart: WIDE_CHAIN for a rendered traceback (rich's panel, loguru's)
    frames: list[str] = field(default_factory=list)  # the frame lines (`File "...", line N, in f`), innermost last
    cut: bool = False  # the log ends inside this traceback: `final` is its last frame line, no exception line
    finals: list[Line] = field(default_factory=list)  # each exception line that ended a part of the chain, in order
    after_error: bool = False  # the line just before it is an error-level message (logger.exception's own line)
    last_frame: Line | None = None  # its innermost frame line (`File "...", line N, in f`) seen so far
    raise_echo: Line | None = None  # the `raise X("...")` source line echoed under that frame, if it is one
    detail: Line | None = None  # the line after a Rust panic that holds its message (Rust 1.73+: `panicked at f:l:c:`)


def chains(lines: list[Line]) -> list[Chain]:
    """The traceback chains among a file's candidate lines (in order), each with its final exception line."""
    out: list[Chain] = []
    cur: Chain | None = None
    last_frame = -1 << 30
    recent: list[Line] = []  # the last few candidate lines, for a chain's header

    def header(at: int) -> str:
        return "\n".join(r.msg for r in recent if at - r.lineno <= 4)

    def after_error(at: int) -> bool:
        return bool(recent) and recent[-1].lineno == at - 1 and is_error_level(recent[-1])

    awaiting = False  # frames seen since the last final line: the next exception line ends them
    last_line: Line | None = None
    echo: tuple[int, str] | None = None  # the last echoed statement or caret line outside a traceback (ECHO_ANCHORS)
    for ln in lines:
        msg = ln.msg
        gap = cur.gap if cur is not None else CHAIN
        if TRACEBACK in msg[:80]:
            awaiting = True
            if cur is None or cur.final is None and ln.lineno - last_frame > gap or (
                    cur.final is not None and ln.lineno - (cur.final.until or cur.final.lineno) > gap):
                cur = Chain(ln, before=header(ln.lineno), after_error=after_error(ln.lineno))
                out.append(cur)
            last_frame = ln.lineno
        elif 'File "' in msg and FRAME.match(msg):
            awaiting = True
            if cur is None or ln.lineno - last_frame > gap and (
                    cur.final is None or ln.lineno - cur.final.lineno > gap):
                cur = Chain(ln, before=header(ln.lineno))
                out.append(cur)
            last_frame = ln.lineno
            cur.last_frame, cur.raise_echo = ln, None
            if len(cur.frames) < 40:
                cur.frames.append(msg.strip()[:300])
        elif cur is not None and awaiting and 0 < ln.lineno - last_frame <= gap and (
                EXC_LINE.match(msg) or DOTTED_EXC_LINE.match(msg)):
            cur.final = ln
            cur.finals.append(ln)
            awaiting = False
        elif cur is not None and ln.lineno == last_frame + 1 and msg.lstrip().startswith("raise "):
            cur.raise_echo = ln  # the statement that raised, under the innermost frame: it names what a cut lost
        elif not awaiting and echo and 0 < ln.lineno - echo[0] <= ECHO_GAP and echoed_by(echo[1], msg):
            cur = Chain(ln, final=ln, before=header(ln.lineno), finals=[ln])  # a traceback's tail, its frames not pasted
            out.append(cur)
            echo = None
        elif "RayTaskError" in msg and EXC_LINE.match(msg):
            cur = Chain(ln, final=ln, before=header(ln.lineno), finals=[ln])
            out.append(cur)
            last_frame = ln.lineno
            awaiting = True  # the remote traceback that follows ends in the remote exception
        elif msg.startswith(("FAILED ", "ERROR ")) and PYTEST_SUMMARY.match(msg) and exception_name(ln)[0]:
            cur = Chain(ln, final=ln, before=header(ln.lineno), finals=[ln])  # pytest's summary of a failed test
            out.append(cur)
            awaiting = False
        elif "panicked at" in msg and RUST_PANIC.match(msg):
            cur = Chain(ln, final=ln, before=header(ln.lineno), finals=[ln])
            out.append(cur)
            last_frame = ln.lineno
            awaiting = True  # pyo3's PanicException traceback that may follow ends the same chain
        elif cur is not None and cur.final is cur.head and ln.lineno == cur.head.lineno + 1 \
                and "panicked at" in cur.head.msg and not exception_name(cur.head)[1] \
                and not msg.lstrip().startswith(("note:", "stack backtrace")):
            cur.detail = ln  # Rust >= 1.73 prints the panic's message on the line after its location
        elif cur is not None and awaiting and "└ " in msg and 0 < ln.lineno - last_frame <= gap and ANNOTATION.match(msg):
            last_frame = ln.lineno  # loguru's values under a frame's source line: the traceback goes on
        if not awaiting and ("^" in msg and CARETS.match(msg) or ECHO_STATEMENT.match(msg)):
            echo = (ln.lineno, msg)
        if cur is not None and last_frame == ln.lineno and msg not in ln.text:
            cur.gap = WIDE_CHAIN  # rendered (rich's panel, IPython): source lines and locals lie between its frames
        recent.append(ln)
        if len(recent) > 3:
            del recent[0]
        last_line = ln
    # A traceback its logger printed just after an error line (logger.exception: RL Swarm's trainer logs "Exception
    # during training", then the traceback) that the log ends inside, whose frames run from code outside the reward
    # code into it: the reward code raised and the exception left it, up to the caller that logged it and stopped. A
    # grader that catches its own error (Math-Verify's "Error during comparison", math_verify/grader.py) logs a
    # traceback that starts in reward code: that one stays a caught error.
    if out and out[-1].final is None and out[-1].frames and out[-1].after_error and last_line is not None \
            and escaped_reward_code(out[-1]) and 0 <= last_line.lineno - last_frame <= CHAIN:
        out[-1].final, out[-1].cut = last_line, True
    # A traceback that the log ends inside, printed by its logger at error level (logger.exception: vLLM's workers and
    # engine core, Ray-prefixed) or running through reward code (a grader's frames) with no logged message before it
    # (a caught error's message line names that failure itself): the process died while printing it or the paste was
    # cut before its exception line. It is the process's last exception, named by its innermost frame (that frame's
    # line is its evidence, or the `raise X("...")` it echoes: a trailing source or caret line, Hydra's
    # HYDRA_FULL_ERROR hint, a `...` say nothing).
    if out and out[-1].final is None and out[-1].frames and last_line is not None \
            and (is_error_level(out[-1].head)
                 or through_reward_code(out[-1]) and not out[-1].after_error and not stack_dump(out[-1])) \
            and 0 <= last_line.lineno - last_frame <= CHAIN:
        out[-1].final, out[-1].cut = out[-1].raise_echo or out[-1].last_frame or last_line, True
    # A traceback through reward code whose exception line is missing before other lines go on (a paste cut in the
    # middle, `...` for the elided rest, another process's lines after it): Python prints a traceback only for an
    # exception, so the reward code raised there; the chain ends in its innermost frame, as above. Not after a logged
    # message (that line names the failure) and not without frames.
    for c in out:
        if c.final is None and c.frames and c.last_frame is not None and not c.after_error \
                and through_reward_code(c) and not stack_dump(c):
            c.final, c.cut = c.raise_echo or c.last_frame, True
    return [c for c in out if c.final is not None]


def echoed_by(echo: str, msg: str) -> bool:
    """Whether `msg` is the exception line the echoed line (a caret line, an `assert` or `raise` statement) ends in."""
    m = EXC_LINE.match(msg) or DOTTED_EXC_LINE.match(msg)
    if m is None:
        return False
    if CARETS.match(echo):
        return True
    s = ECHO_STATEMENT.match(echo)
    if s is None:
        return False
    return m.group("name") == (s.group("raised") or "AssertionError")


def exception_name(line: Line) -> tuple[str, str]:
    """(exception class, message) of a final exception line; ("", "") when it is not one. A Rust panic is `panic`."""
    if "panicked at" in line.msg:
        p = RUST_PANIC.match(line.msg)
        if p is not None:
            return "panic", p.group("message") or ""
    msg = line.msg
    if msg.startswith(("FAILED ", "ERROR ")) and (t := PYTEST_SUMMARY.match(msg)) is not None:
        msg = t.group("crash")  # the test's exception
        o = PYTEST_OUTCOME.match(msg)
        if o is not None:
            return ("AssertionError", msg) if o.group("name") == "assert" else ("Failed", o.group("message").strip())
    m = EXC_LINE.match(msg)
    dotted = None if m else DOTTED_EXC_LINE.match(msg)
    m = m or dotted
    if not m:
        return "", ""
    # a class without the usual endings keeps its module, which says what it is (`_queue.Empty`, not `Empty`)
    name = msg[:m.end("name")].lstrip() if dotted else m.group("name")
    if m.group("inner") and name == "RayTaskError":
        name = f"RayTaskError({m.group('inner')})"
    return name, (m.group("message") or "").strip()


@dataclass
class Exits:
    """What `judge` found in one file."""

    shutdown: Line | None = None  # the orderly-shutdown marker
    quiet: int = 0  # failure-looking lines after it (or exits by signal) left out of the findings
    fatal: Line | None = None  # the exception that ended the process
    fatal_rule: str = ""  # the rule that claimed that line, if any
    chain: Chain | None = None


def judge(found: list[Chain], marks: list[Line], hits: list[Hit], unclaimed: list[Line], file_lines: int,
          progress_after: Callable[[Line], bool], severity_of: Callable[[str], tuple[str, str]],
          lines: list[Line] | None = None) -> Exits:
    """Decide, for one file, the orderly shutdown (if any) and the exception that ended its process (if any).

    `found`: the file's traceback chains (`chains`); `marks`: lines holding a shutdown or signal-exit marker; `hits`: the rule claims (pruned here of teardown
    noise); `unclaimed`: error-like lines no rule claimed (pruned likewise); `progress_after(line)`: whether the
    process that printed `line` showed progress later; `severity_of(rule_id)`: (severity, category) of a rule;
    `lines`: the file's candidate lines in order (`went_on` reads who printed what after a caught traceback)."""
    ex = Exits()
    signal_exits = {id(ln) for ln in marks if SIGNAL_EXIT.search(ln.msg)}
    first_error = min((h.line.lineno for h in hits if severity_of(h.rule)[0] == "error"), default=1 << 62)
    for ln in marks:
        if id(ln) in signal_exits or not SHUTDOWN.search(ln.msg):
            continue
        # a shutdown after a crash is the crash's cleanup; after an unknown fatal exception too
        crashed_before = first_error < ln.lineno or any(
            c.final is not None and ln.lineno - TAIL <= c.final.lineno < ln.lineno and not _benign(c)
            and not SHUTDOWN.search(c.final.msg) and _fatal_name(c) for c in found)
        if not crashed_before:
            ex.shutdown = ln
        break
    at = ex.shutdown.lineno if ex.shutdown is not None else 1 << 62
    echoes = _stop_echoes(ex.shutdown, found, unclaimed)
    if echoes:
        at = min(at, min(ln.lineno for ln in echoes))

    def teardown(line: Line, rule: str = "") -> bool:
        if id(line) in signal_exits:  # every signal-exit line holds a SIGNAL_ANCHOR, so it is among the marks
            return True
        if line.lineno < at:
            return False
        return not rule or severity_of(rule)[1] == "other" or rule in SHUTDOWN_NOISE

    kept = [h for h in hits if not teardown(h.line, h.rule)]
    ex.quiet = sum(h.line.repeat for h in hits) - sum(h.line.repeat for h in kept)
    hits[:] = kept
    kept_lines = [ln for ln in unclaimed if not teardown(ln)]
    ex.quiet += len(unclaimed) - len(kept_lines)
    unclaimed[:] = kept_lines

    if found:
        last = _last_new(found)
        final = last.final
        assert final is not None
        end = final.until or final.lineno
        if (final.lineno < at and not _benign(last) and _fatal_name(last) and file_lines - end <= TAIL
                and not SHUTDOWN.search(final.msg) and not progress_after(final)
                and not _survived_before(last, found, progress_after) and not went_on(last, lines or [])):
            if POINTS_ABOVE.search(final.msg):
                # the last exception only says its cause was printed above it (vLLM V1's EngineDeadError after the
                # worker's traceback): the cause is the latest real exception before it
                final = next((f for c in reversed(found) for f in reversed(c.finals) if f.lineno < final.lineno
                              and not POINTS_ABOVE.search(f.msg) and exception_name(f)[0]
                              and not exception_name(f)[0].endswith("Warning")), final)
                end = final.until or final.lineno  # a rule on the pointer's own line explains the pointer, not the cause
            elif RETRIES_WRAPPER.search(final.msg) and len(last.finals) > 1:
                # a retry helper giving up after the error it retried ("During handling of the above exception":
                # SGLang's test retry(), "retry() exceed maximum number of retries."): the chained error is the cause
                final = next((f for f in reversed(last.finals[:-1]) if _fatal_line(f)), final)
            elif LAUNCHER_WRAPPER.search(final.msg) and not any(
                    final.lineno < h.line.lineno <= end + TAIL and h.rule not in LAUNCHER_GENERIC
                    and severity_of(h.rule)[0] == "error" for h in hits):
                # a launcher's summary that a child failed (torch elastic's ChildFailedError) whose table names no
                # cause of its own (a signal: other.killed-sigkill, a segfault): the cause is the child's own last
                # exception printed just above it in the same output (often chained to it, the launcher's
                # traceback starting right after), however unknown its wording
                child = next((f for c in reversed(found) for f in reversed(c.finals) if f.lineno < final.lineno
                              and last.head.lineno - f.lineno <= TAIL
                              and not LAUNCHER_WRAPPER.search(f.msg) and _fatal_line(f) and not progress_after(f)
                              and not (c is not last and _benign(c))), None)
                if child is not None:
                    final, end = child, child.until or child.lineno
            ex.fatal, ex.chain = final, last
            ex.fatal_rule = next((h.rule for h in hits if h.line is final), "")
            if not ex.fatal_rule:
                # An exception whose message is the block printed below it (torch elastic's "ChildFailedError: "
                # then the Root Cause table with the child's exit code and signal) is explained by an error-level
                # rule that claimed a line of that block.
                stop = end if end > final.lineno else (final.lineno + TAIL if not exception_name(final)[1] else 0)
                ex.fatal_rule = next((h.rule for h in hits if final.lineno < h.line.lineno <= stop
                                      and severity_of(h.rule)[0] == "error"), "")
    return ex


ECHO_BEFORE = 4  # lines before a traceback within which its logger's header echoes the exception's message


def _stop_echoes(stop: Line | None, found: list[Chain], unclaimed: list[Line]) -> list[Line]:
    """The lines that announce the stop before its marker: when the marker ends a traceback (`KeyboardInterrupt:
    MQLLMEngine terminated`, Ctrl-C through vLLM 0.7's engine loop), the traceback's first line and the line its
    logger printed the same message on just before it (logger.exception: `ERROR ... MQLLMEngine terminated`) are
    the stop too. Only the part of a chain that ends in the marker: an exception chained before it ("During
    handling of the above exception ...") happened before the stop and stays. Returns those of `unclaimed` (that
    part's lines and the echo), in line order."""
    if stop is None:
        return []
    chain = next((c for c in found if any(f is stop for f in c.finals)), None)
    if chain is None:
        return []
    message = exception_name(stop)[1]
    part = next(i for i, f in enumerate(chain.finals) if f is stop)
    # an exception whose message carries, as text, the traceback that ends in the marker wraps the stop itself: JAX
    # re-raises what a host callback raised as "XlaRuntimeError: INTERNAL: CustomCall failed: CpuCallback error:
    # Traceback (most recent call last):" (jaxlib 0.4), "JaxRuntimeError: INTERNAL: CpuCallback error calling
    # callback: Traceback ..." (newer), so Ctrl-C inside the callback prints the wrapper first (real-extra 2150)
    while part and TRACEBACK in chain.finals[part - 1].msg:
        part -= 1
    start = chain.finals[part - 1].lineno + 1 if part else chain.head.lineno
    echo_from = start if part else start - ECHO_BEFORE
    return [ln for ln in unclaimed
            if start <= ln.lineno < stop.lineno
            or message and echo_from <= ln.lineno < start and ln.msg.strip() == message]


# Frames of reward code: verl utils/reward_score/ and reward managers (compute_score, default_compute_score),
# custom reward files (custom_reward_function.path, --custom-rm-path), TRL/open-r1 reward functions (reward_funcs,
# accuracy_reward; TRL's GRPOTrainer/RLOOTrainer._calculate_rewards, which calls them, trl 0.16-1.x), OpenRLHF
# remote_rm_fn, Math-Verify's grader, sandboxes and judges.
# Not a whole `verifiers/` tree: PrimeIntellect's verifiers package runs rollout environments (its generate and
# env code call the policy engine); only its rubrics/ score. Scoring helpers named score_* (reasoning-gym's
# _score_output, score_answer) are reward code whatever the trainer around them. The math graders' equality checks
# are too: Hendrycks MATH's is_equiv (verl utils/reward_score/math.py), Qwen2.5-Math's grader math_equal /
# symbolic_equal / numeric_equal (copied into verl's reward_score/prime_math/grader.py and RLinf's rstar2 grader); a
# frame of PyTorch, JAX or TensorFlow itself is never one (JAX's shape_poly has a symbolic_equal of its own).
REWARD_FRAME = lazy(
    r'File "[^"]*(?:/reward_score/|/reward_manager/|/rewards?/|/reward_func\w*|reward\w*\.py|/rubrics?/|math_verify/'
    r'|/sandbox\w*/|/judges?/|compute_score\w*\.py)'
    r'|, in (?:compute_score|default_compute_score|reward_fn|\w+_reward|reward_func\w*|_?compute_reward\w*|_?get_reward\w*'
    r'|_calculate_rewards|is_equiv\w*|math_equal\w*|symbolic_equal|numeric_equal'
    r'|remote_rm_fn|verify|grade\w*|_?score_\w+)\s*$'
)


# Frames inside an inference engine's own package: its `verify` is speculative decoding checking draft tokens
# (SGLang speculative/eagle_worker*.py, vLLM spec_decode), its `*_reward.py` a reward model it serves; an exception
# there is the engine's failure, not a reward function's. Nor is a frame of a tensor framework's own package reward
# code, whatever its function is called (JAX's shape_poly.symbolic_equal compares shape dimensions).
ENGINE_FRAME = lazy(r'File "[^"]*/(?:sglang/srt|vllm|vllm_ascend|tensorrt_llm|lmdeploy|text_generation_server'
                          r'|torch|jax|jaxlib|tensorflow)/')


def is_reward_frame(frame: str) -> bool:
    """A traceback frame in reward code (REWARD_FRAME), not in an inference engine's or tensor framework's package."""
    return REWARD_FRAME.search(frame) is not None and ENGINE_FRAME.search(frame) is None


# SymPy's own frames: in an RL run the answer checker is what calls SymPy (Math-Verify, latex2sympy, graders built on
# sympy.simplify/solve), unless PyTorch does (torch.compile's shape reasoning runs through torch/utils/_sympy and
# sympy/): a chain that holds a torch frame is not the grader's.
SYMPY_FRAME = lazy(r'File "[^"]*/(?:sympy|latex2sympy2?\w*)/')
TORCH_FRAME = lazy(r'File "[^"]*/torch/')


# faulthandler's stack dump (`Thread 0x... (most recent call first):`, Python 3.3-3.13, printed by a watchdog or a
# fatal signal while a run hangs) writes its frames as `File "x.py", line N in f`, without the comma of a traceback's
# `line N, in f`: it lists where every thread stood, and none of them raised.
DUMP_FRAME = lazy(r'File "[^"]*", line \d+ in ')


def stack_dump(c: Chain) -> bool:
    """Whether a chain's frames are a stack dump's (faulthandler), not a traceback's."""
    return bool(c.frames) and all(DUMP_FRAME.search(f) for f in c.frames)


def through_reward_code(c: Chain) -> bool:
    """Whether a chain's frames run through reward code (is_reward_frame), or through SymPy without PyTorch."""
    return any(is_reward_frame(f) or REWARD_FUNC_FRAME.search(f) for f in c.frames) or (
        any(SYMPY_FRAME.search(f) for f in c.frames) and not any(TORCH_FRAME.search(f) for f in c.frames))


# A reward function named for what it rewards: `correctness_reward_func`, `xmlcount_reward_func`, `int_reward_func`
# (willccbb's GRPO demo, copied into unsloth's notebooks and RL Swarm), `format_reward_fn`; in a notebook its frame's
# file is a cell (`<ipython-input-9-...>`, `<In[9]>`), so the name is all there is.
REWARD_FUNC_FRAME = lazy(r", in \w*reward_(?:func|fn)\w*\s*$")


def escaped_reward_code(c: Chain) -> bool:
    """Whether a chain's frames run into reward code from outside it: its outermost frame is not reward code (nor
    SymPy's, which a grader calls), an inner one is."""
    first = c.frames[0] if c.frames else ""
    return bool(first) and not is_reward_frame(first) and REWARD_FUNC_FRAME.search(first) is None \
        and SYMPY_FRAME.search(first) is None and through_reward_code(c)


def reward_chains(found: list[Chain]) -> list[Chain]:
    """The chains whose frames run through reward code: their final exception is a reward-function failure,
    whichever process printed it."""
    return [c for c in found if c.final is not None and through_reward_code(c)]


RAY_REPEAT = lazy(r"\s*\[repeated \d+x across cluster\].*$")


def _signature(c: Chain) -> tuple[str, str]:
    """(exception class, innermost frame) of a chain, without Ray's `[repeated Nx across cluster]` suffix."""
    assert c.final is not None
    frame = RAY_REPEAT.sub("", c.frames[-1]).strip() if c.frames else ""
    return exception_name(c.final)[0], frame


def _logged(c: Chain) -> bool:
    """Whether a logger printed the traceback at error level: on its first line (`ERROR:...:Traceback`) or on the
    line just before it (uvicorn's `ERROR:    Exception in ASGI application`, `logger.exception(...)`)."""
    if is_error_level(c.head):
        return True
    last = c.before.rsplit("\n", 1)[-1] if c.before else ""
    m = HEAD_LEVEL.search(last[:160])
    return m is not None and _LEVEL_WORD[next(g for g in m.groups() if g)] in ("error", "critical", "fatal")


def _survived_before(last: Chain, found: list[Chain], progress_after: Callable[[Line], bool]) -> bool:
    """A traceback a logger printed at error level (`logger.exception`: the program caught it) whose exception, raised
    at the same innermost frame, was printed earlier in the file and followed by progress: a per-item error the
    program handles and goes on from (an environment failing to parse one answer, logged each time), not the end
    of the process, even when the log stops soon after the last one (a log copied while the run went on). A plain
    traceback (an uncaught exception, a crash-restart loop) is not excused this way."""
    if not _logged(last) or last.final is None:
        return False
    sig = _signature(last)
    if not sig[0] or not sig[1]:
        return False
    return any(c is not last and c.final is not None and c.final.lineno < last.head.lineno and _signature(c) == sig
               and progress_after(c.final) for c in found)


def went_on(c: Chain, lines: list[Line]) -> bool:
    """A traceback its logger printed as one error record (`ERROR:<time>:Traceback ...`: the program formatted the
    exception it caught into a log message) by a process that Ray names (`(Actor pid=N)`), after whose end the same
    process logged another record of its own that is no traceback, exception or shutdown line: the process was alive
    after it and went on (verl GUI-agent rollout workers log a failed parse of one model answer so, then "Error
    extracting action for item N", real-extra 1470/1471). An uncaught exception (no logger level on its first line)
    and a process that only logs its way out (a shutdown or exit message) are not excused this way."""
    if c.final is None or not c.head.pid or not is_error_level(c.head):
        return False
    end = max(c.final.until or c.final.lineno, c.last_frame.lineno if c.last_frame is not None else 0)
    i = bisect_right([ln.lineno for ln in lines], end)
    for ln in lines[i:i + WENT_ON_LOOK]:
        msg = ln.msg
        if ln.pid != c.head.pid or ln.actor != c.head.actor or not msg.strip() or msg[0] in " \t^~":
            continue  # another process's line, or the traceback's own source and caret lines (a logger that
            # prefixes every line of it, vLLM's workers: real-extra 363, 364)
        if TRACEBACK in msg[:80] or FRAME.match(msg) or EXC_LINE.match(msg) or DOTTED_EXC_LINE.match(msg) \
                or SHUTDOWN.search(msg) or PROCESS_EXIT.search(msg):
            return False
        if level_of(ln):
            return True
    return False


# candidate lines after a caught traceback within which its process's next own record is looked for
WENT_ON_LOOK = 200
# a record a dying process logs after its traceback (SGLang "Received sigquit ...", vLLM "EngineCore failed to
# start", "... exiting", "Fatal ...", "... died"): the traceback was its end, not something it went on from
PROCESS_EXIT = re.compile(r"(?i)\b(?:exit(?:ing|ed)?|fatal|abort(?:ing|ed)?|terminat\w*|died|dead|kill(?:ed|ing)?"
                          r"|failed to start|sigquit|shut(?:ting)? ?down|crash\w*)\b")


def _ray_echo(c: Chain, before: list[Chain]) -> bool:
    """Whether a chain is Ray's deduplicated echo of a failure printed before it: the log monitor prints the first
    copy of a line at once and the other workers' copies later as one `... [repeated 6x across cluster]` line (an
    OpenRLHF job's four vLLM actors each panicking in tiktoken while loading a vocabulary, the summary printed after
    the driver's own traceback, real-extra 1775). The summary is a copy of what already happened, not what happened
    last."""
    final = c.final
    if final is None or final.repeat <= 1 or c.frames:
        return False
    name = exception_name(final)[0]
    return bool(name) and any(b.final is not None and exception_name(b.final)[0] == name for b in before)


def _last_new(found: list[Chain]) -> Chain:
    """The file's last chain that is not a Ray echo of an earlier one (_ray_echo)."""
    i = len(found) - 1
    while i > 0 and _ray_echo(found[i], found[:i]):
        i -= 1
    return found[i]


def _benign(c: Chain) -> bool:
    return bool(NOT_FATAL_HEAD.search(c.before) or NOT_FATAL_HEAD.search(c.head.msg))


def _fatal_line(line: Line) -> bool:
    """Whether an exception line names an exception that can end a process (not a warning, not SystemExit(0))."""
    name, message = exception_name(line)
    return bool(name) and not name.endswith("Warning") and not (name == "SystemExit" and message in ("", "0", "None"))


def _fatal_name(c: Chain) -> bool:
    """Whether the chain's final exception can end a process (SystemExit(0) and warnings cannot)."""
    assert c.final is not None
    if c.cut:
        return True
    name, message = exception_name(c.final)
    if not name or name.endswith("Warning"):
        return False
    if name == "SystemExit" and message in ("", "0", "None"):
        return False
    return True


def fatal_event(ex: Exits) -> Event | None:
    if ex.fatal is None:
        return None
    name, message = exception_name(ex.fatal)
    if name == "panic" and not message and ex.chain is not None and ex.chain.detail is not None:
        message = ex.chain.detail.msg.strip()
    frames = ex.chain.frames if ex.chain is not None else []
    if ex.chain is not None and ex.chain.cut:
        name, message = "traceback cut", "the log ends inside an error-level traceback"
    return Event("fatal", ex.fatal, {"exception": name, "message": message[:300], "rule": ex.fatal_rule,
                                     "frames": frames[-8:], "first": ex.chain.head if ex.chain else None})


def shutdown_event(ex: Exits) -> Event | None:
    if ex.shutdown is None:
        return None
    m = SHUTDOWN.search(ex.shutdown.msg)
    sig = ""
    if m:
        sig = next((g for g in m.groups() if g), "") or ("SIGINT" if "KeyboardInterrupt" in m.group(0) else "")
        sig = {"15": "SIGTERM", "2": "SIGINT", "1": "SIGHUP", "TERM": "SIGTERM", "INT": "SIGINT"}.get(sig, sig)
        if m.group("slurm") or " CANCELLED" in m.group(0):  # Slurm says why, not which signal (a step's and the
            why = SLURM_WHY.search(ex.shutdown.msg)  # job's records can share the line, the reason in the second)
            sig = "Slurm: " + (why.group(1) if why else "scancel").lower()
    return Event("shutdown", ex.shutdown, {"signal": sig or "signal", "quiet": ex.quiet})


# -- callees --------------------------------------------------------------------------------------------------
# A failed call: HTTP status errors (client exceptions, JSON error bodies, access-log lines), timeouts, refused
# connections, exhausted retries.
CALL_ERROR = lazy(
    r"HTTPConnectionPool|HTTPSConnectionPool|Max retries|[Rr]etries exhausted|ClientResponseError|HTTPStatusError"
    r"|HTTPError|ConnectError|ConnectionError|Connection refused|ConnectTimeout|ReadTimeout|[Tt]imed? ?out"
    r"|Error code: \d{3}|status(?:_code)?[=:]\s*[45]\d\d|\"code\":\s*[45]\d\d|'code': [45]\d\d|retrying"
    r"|Internal Server Error|Service Unavailable|Bad Gateway|Gateway Time-?out|Too Many Requests"
)
# Where the call went, from its URL (or urllib3's `with url: /path`): a judge, reward model or sandbox is the
# verifier; the policy engine's generate/completions endpoints are the engine.
VERIFIER_URL = lazy(
    r"(?:https?://[^\s'\",)]*?|with url: ?|url=\S*?|endpoint[=:] ?\S*?)"
    r"/(?:get_reward|rewards?|reward_model|rm|judge\w*|verify\w*|verifier\w*|grade\w*|grader|sandbox\w*|run_code"
    r"|execute|run_tests?|score\w*|evaluate)(?:[/?'\"\s,)]|$)"
    r"|\b(?:remote_rm|rm_server|reward[_ ]model|reward[_ ]server|reward[_ ]api|sandbox[_ ]?fusion|judge[_ ]model"
    r"|judge[_ ]server|llm[_ ]judge)\b",
    re.IGNORECASE,
)
ENGINE_URL = lazy(
    r"(?:https?://[^\s'\",)]*?|with url: ?|url=\S*?)/(?:generate|v1/(?:chat/)?completions|v1/responses)(?:[/?'\"\s,)]|$)"
)


def callee_of(text: str) -> str:
    """Which endpoint a failed request went to: "verifier", "engine", or "" when the line does not say (or it is
    not a failed call)."""
    if not CALL_ERROR.search(text):
        return ""
    if VERIFIER_URL.search(text):
        return "verifier"
    if ENGINE_URL.search(text):
        return "engine"
    return ""


def events_of(run_events: list[Event], kind: str) -> list[Event]:
    return [e for e in run_events if e.kind == kind]


FRAME_PARTS = lazy(r'File "(?P<path>[^"]*)", line (?P<line>\d+)(?:, in (?P<func>\S+))?')


def describe_frames(frames: list[str]) -> str:
    """The innermost frames of a chain, innermost first, as `dir/file.py:N in func`."""
    out = []
    for f in reversed(frames[-3:]):
        m = FRAME_PARTS.search(f)
        if m:
            where = "/".join(m.group("path").rsplit("/", 2)[-2:]) + ":" + m.group("line")
            out.append(where + (f" in {m.group('func')}" if m.group("func") else ""))
    return " <- ".join(out)


__all__ = ["Chain", "DUMP_FRAME", "Exits", "LEVELS", "SIGNAL_ANCHORS", "LEVEL_ANCHORS", "REWARD_FRAME", "callee_of", "chains",
           "describe_frames", "events_of", "exception_name", "fatal_event", "is_error_level", "is_warning_level",
           "is_reward_frame", "judge", "level_of", "reward_chains", "shutdown_event", "stack_dump", "through_reward_code",
           "traceback_end"]
