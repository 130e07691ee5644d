"""Line prefixes several stages recognise, written once.

Ray puts `(ActorName pid=N, ip=A.B.C.D)` in front of every line a worker prints to the driver's log (Ray 2.x
`log_monitor`; the ip part appears when the worker runs on another node, `pid=` is absent on some driver lines).
Discovery counts the actors of a file, the scanner splits the prefix off to find a line's process, the C
prefilter's interface looks for several of them in a chunk, and templates mask it.

LINE_PREFIX: the other prefixes launchers, container runtimes and loggers write, which origins.split_ray removes
from a message. json_message: the message of a structured (JSON) log record, which split_ray reads instead of the
record. Both only shape the message rules see; the evidence line, its number and the line's origin stay the raw
line's, so the native and Python scan paths (which both call split_ray on the same candidate line) agree.
"""

from __future__ import annotations

import json
import re

# A Ray actor `(Name pid=N, ip=A)`, and vLLM V1's worker processes, which put their rank before the pid
# (`(VllmWorker rank=0 pid=233)`, vllm/v1/executor/multiproc_executor.py 0.8 -> 0.9).
# An IPv6 node address comes in brackets (`(pid=35379, ip=[fdbd:dccd:cdc2:12c8:0:1c3::])`, slime issue 1656).
RAY_IP = r"(?:[0-9a-fA-F.:]+|\[[0-9a-fA-F.:]+\])"
RAY_ACTOR = r"\((?P<actor>[A-Za-z_][\w.:-]*)(?: rank=\d+)?(?: pid=(?P<pid>\d+))?(?:, ip=(?P<ip>" + RAY_IP + r"))?\)"

# Prefixes that launchers, container runtimes and loggers put in front of a message; removed (repeatedly) so
# rules, traceback detection and templates see the message itself. Evidence keeps the full line.
LINE_PREFIX = (
    r"(?:"  # the alternatives never match at the same place, so their order only sets the speed: commonest first
    r"\[(?:\d{4}-\d\d-\d\d[ T])?\d\d:\d\d:\d\d(?:[.,]\d+)?[^\]]{0,60}\]\s?"  # [time TP0] / [time rank]
    # Ray's C++ components (raylet.out, gcs_server.out, python-core-worker-*.log, Ray 1.x-2.x) after their
    # `[time L pid tid] `: the component and source location, `(raylet) node_manager.cc:3069: `
    r"(?:(?:\([\w-]+\) )?[\w-]+\.(?:cc|cpp|h):\d+: )?"
    r"|[\w-]+\.py:\d+ - "  # slime/MILES `model.py:918 - `
    r"|[\w.-]+\s+\|\s"  # docker compose: `worker-longctx-1  | `
    r"|\[[A-Za-z_]*\d+\]:\s?"  # torchrun: `[rank24]: `, `--tee`'s role and local rank `[default0]:`
    # a writer's process id in brackets before each line its launcher relays (`[80846] Traceback ...`): three to
    # seven digits, so a message's own list mark (`[1] `) stays
    r"|\[\d{3,7}\] "
    r"|\d{1,4}: (?=\S|\s+File|\s+\S)"  # srun -l: `0: `
    # ISO timestamp (GitHub Actions, CRI, tracing): one blank, more only before a level word, so the indentation
    # of the line behind the stamp (a traceback frame, a stack dump) stays with the message
    r"|\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\s(?:\s+(?=[A-Z]{4,8}\b))?"
    # vLLM logger; a line with nothing after it (a logged traceback's blank line) ends at the bracket; since 0.10
    # (2025) the source is the module's path under vllm/ (`[v1/executor/multiproc_executor.py:824]`)
    r"|(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[?[\w./-]+:\d+\](?: |$)"
    r"|(?:INFO|WARNING|ERROR|DEBUG|CRITICAL):(?:[\w.]+:|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+:)\s?"  # logging basic
    r"|-\s(?:[\w.-]+\s-\s)?(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\s-\s"  # logging `- name - LEVEL - `
    r"|\|\s*(?:TRACE|DEBUG|INFO|SUCCESS|WARNING|ERROR|CRITICAL)\s*\|\s*[^\s|]+ - "  # loguru `| ERROR    | m:f:1 - `
    # AReaL's logger (areal and realhf, 2025-2026; AReaL issue 979): `20260304-10:31:13.128 LocalScheduler ERROR: `,
    # after its `(AReaL) ` tag
    r"|\d{8}-\d\d:\d\d:\d\d(?:\.\d+)? [\w.-]+(?: [\w.-]+){0,3} (?:DEBUG|INFO|WARNING|ERROR|CRITICAL): "
    # TensorFlow's, XLA's and torch_xla's C++ logging (tsl/platform/default/logging.cc): `2025-07-18 19:09:55.245872: W
    # torch_xla/csrc/runtime/pjrt_computation_client.cpp:682] ` (real-extra 987); its level is read from it
    r"|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IWEF] [\w./-]+:\d+\] "
    # FastChat's build_logger (and what copied it: QAnything, LLaVA): `<time> | LEVEL | logger | ` (its stderr is a
    # logger at ERROR: `| ERROR | stderr | ` is only the stream, signals.PREFIX_LEVEL reads no level from it)
    r"|\|\s(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\s\|\s[\w.-]+\s\|\s"
    # after their `[time]`: DeepSpeed `[INFO] [f.py:1:fn] `, Hydra's job logging `[name][ERROR] - ` (a message's own
    # tags, lmdeploy's `[TM][ERROR] CUDA runtime error`, stay)
    r"|\[(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\] \[[\w.-]+:\d+:\w+\] "
    r"|\[[\w.<>-]+\]\[(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\] - "
    r"|\[\d\d/\d\d/\d\d \d\d:\d\d:\d\d\] (?:DEBUG {4}|INFO {5}|WARNING {2}|ERROR {4}|CRITICAL )"  # rich's handler
    r"|(?:stdout|stderr) [FP] "  # CRI (containerd, CRI-O) file: `<time> stderr F `
    # syslog and journalctl `May 01 10:00:00 host prog[pid]: ` (`kernel: `); moreutils' ts alone `May 01 10:00:00 `
    r"|[A-Za-z]{3} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)? (?:[\w.-]+ (?:[\w./@-]+\[\d+\]|kernel): )?"
    # after such a stamp, a logger's bracketed level padded to eight and its file:line padded to a column (parallax,
    # GradientHQ/parallax issue 210: `Nov 10 09:03:46.891 [ERROR   ] launch.py:175             CUDA out of memory`)
    r"|\[(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) *\] [\w.-]+\.py:\d+ +"
    # a box's side in front of each line: a terminal log viewer's frame (k9s, lazydocker...: `│ ERROR 09-27 06:46:46
    # engine.py:157] ...`, vllm issue 6976), rich's traceback panel (`│ /path/x.py:12 in f │`, signals.unboxed reads the
    # frame left), a heavy box's `┃ `; the closing side and its padding go with the trailing blanks (origins.split_ray)
    r"|[│┃] "
    r"|\[[\w.-]+:\d+\]:"  # a launcher's host and local rank: `[gpu187:1]:`
    # glog and what copies its format (gRPC, abseil, torch elastic >= 2.4's Python logging): level, month and day
    # (glog >= 0.7: year too; abseil before its clock is set: `0000 00:00:<epoch seconds>`), time, thread id,
    # source location: `E0801 13:23:20.000000 32974 torch/distributed/elastic/multiprocessing/api.py:874] `; Ray 0.8-1.x
    # writes pid and thread: `I0807 17:00:41.812641 71814 71814 worker_pool.cc:265] `
    r"|[IWEF]\d{4}(?:\d{4})? \d\d:\d\d:\d+\.\d+(?: +\d+){1,2} [\w./<>-]+:\d+\] "
    # torch c10 (ProcessGroupNCCL): `[E1206 10:00:00.123456789 ProcessGroupNCCL.cpp:42] `, the month not padded
    # (`[W114 ...]`), a pid in some builds; torch < 2.2 without the time: `[E ProcessGroupNCCL.cpp:563] `
    r"|\[[IWEF](?:\d{3,4} \d\d:\d\d:\d\d(?:\.\d+)?(?: +\d+)?)? [\w./-]+:\d+\] ?"
    # pdsh (DeepSpeed's multi-node runner): `gpu-q-13: `; a host name with a digit and a dash or dot, so a message's
    # own `gsm8k: 0.7` stays whole
    r"|(?=[a-z0-9.-]*\d)(?=[a-z0-9]*[.-])[a-z0-9][a-z0-9.-]*: (?=\S|\s+File|\s+\S)"
    # a job platform's log view after its `[ISO time] `: the pod or job name and ` >> ` (slime issue 1022:
    # `[2025-12-18T16:24:02+08:00] leihaodi-qwen3-8b-rl-eagle3-20251218-162008s-3da56-cfcd2 >> (SGLangEngine pid=3111) `);
    # a name with a digit and a dash or dot, as pdsh's, so a message's own `cat >> file` stays whole
    r"|(?=[a-z0-9.-]*\d)(?=[a-z0-9]*[.-])[a-z0-9][a-z0-9.-]* >> "
    r"|\[pod/[\w.-]+/[\w.-]+\] "  # kubectl logs --prefix: `[pod/vllm-0/vllm] `
    r"|\(autoscaler \+[\dhms]+\) "  # Ray's autoscaler: `(autoscaler +2m5s) `
    r"|\[\d+,\d+\]<std(?:out|err)>:"  # Open MPI --tag-output: `[1,0]<stderr>:`
    # Ray 1.x `(pid=N, ip=A)` (its daemons' lines `(pid=raylet)`, `(pid=gcs_server)`), vLLM V1 `(VllmWorker rank=1 pid=N)`
    # Ray 2.x also writes `(pid=)`, no pid, for a worker's lines it relays before it knows the process (verl on TPU,
    # real-extra 987)
    r"|\((?:[A-Za-z_][\w.-]*\s)?(?:rank=\d+\s)?pid=(?:\d+|[a-z_]+)?(?:, ip=" + RAY_IP + r")?\)\s?"
    r"|>{1,2} "  # a Markdown quote (a log pasted as `> ` or `>> ` lines in an issue thread); a frame's indent stays
    r")"
)

# A structured log record, one JSON object a line, its message under the first of these keys it has: Docker's
# json-file driver (`{"log": "...\n", "stream": "stderr", "time": ...}`, what `/var/lib/docker/containers/*/*-json.log`
# and many Kubernetes log shippers hold), python-json-logger and vLLM's JSON logging config (`message`), Go's zap,
# logrus and slog (`msg`), structlog (`event`), loguru with serialize=True (`text`, the formatted line, next to its
# `record`; a `text` alone is a sample's, in a rollout dump, not a log message).
JSON_MESSAGE_KEYS = ("log", "message", "msg", "event")
# What makes the object a log record: its level, time or stream (an API's error body, `{"object": "error",
# "message": ..., "type": "NotFoundError"}`, holds a message too, and the rules read it whole).
JSON_RECORD_KEYS = ("level", "levelname", "severity", "time", "timestamp", "ts", "@timestamp", "asctime", "stream",
                    "record")
JSON_MAX = 1 << 16  # characters of a record parsed (the line reader cuts longer lines)


def json_message(line: str) -> str | None:
    """The message of a line that is one JSON log record (line breaks in it made blanks, trailing ones dropped);
    None for any other line. Callers test `line.startswith('{"')` first: this parses."""
    body = line.rstrip()
    if not body.endswith("}") or len(body) > JSON_MAX:
        return None
    try:
        record = json.loads(body)
    except ValueError:
        return None
    if not isinstance(record, dict) or not any(k in record for k in JSON_RECORD_KEYS):
        return None
    for k in JSON_MESSAGE_KEYS + (("text",) if "record" in record else ()):
        v = record.get(k)
        if isinstance(v, str):
            return " ".join(v.rstrip("\r\n").splitlines())
    return None


# Who wrote an evidence line, from its prefix, for the verdict of a run on many nodes: torchrun's `[rank13]:` (global
# rank) and `[default3]:` (local rank), srun -l's `3: ` and Open MPI's `[1,3]<stderr>:` (task and rank), a launcher's
# `[gpu187:1]:` (host and local rank), a Ray worker's `(Name pid=N, ip=A.B.C.D)` (the node's address).
WRITER = re.compile(
    r"\[[Rr]ank(?P<rank>\d+)\]:|\[default(?P<local>\d+)\]:|^(?P<task>\d{1,4}): |\[\d+,(?P<mpi>\d+)\]<std"
    r"|\[(?P<host>[\w.-]+):(?P<hlocal>\d+)\]:|^\((?:[A-Za-z_][\w.:-]*)?(?: ?pid=\d+)?, ip=(?P<ip>" + RAY_IP + r")\)"
)


def writer_of(text: str) -> str:
    """`rank 13`, `local rank 3`, `gpu187 local rank 1`, `ip 10.0.0.2`: the writer an evidence line's prefix names;
    '' when it names none."""
    m = WRITER.search(text, 0, 200)
    if m is None:
        return ""
    g = m.groupdict()
    if g["rank"] or g["mpi"] or g["task"]:
        return f"rank {g['rank'] or g['mpi'] or g['task']}"
    if g["local"]:
        return f"local rank {g['local']}"
    if g["host"]:
        return f"{g['host']} local rank {g['hlocal']}"
    return f"ip {g['ip']}"
