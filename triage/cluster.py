"""`triage --ray [ADDRESS] [LOG_DIR_PATTERN]`: triage every node of the Ray cluster a run already has, where its
logs are, and merge the nodes' reports.

One Ray task per alive node, pinned to it (node-affinity scheduling, not soft), reads that node's log directory
and returns only its JSON report; the reports are merged here (report/merge.py) as if one triage had read every
file. No scheduler or socket of triage's own: the run's cluster does the work. A node that cannot be reached,
whose task fails, or that does not answer within the timeout is a line in the merged report's errors, never a
hang. Ray is an optional extra (`pip install 'triage[ray]'`).

The log directory on each node: LOG_DIR_PATTERN with `{node_ip}`, `{node_id}` and `{hostname}` filled in, or by
default the Ray session's own log directory on that node (where Ray keeps every worker's stdout and stderr).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from triage.errors import TriageError
from triage.library.rules import Library
from triage.model import Report
from triage.redact import redact_report
from triage.report.merge import MergeError, Part, from_json, merge

TIMEOUT = 600.0  # seconds one node may take; a node that takes longer is reported as not scanned
SESSION_LOGS = "/tmp/ray/session_latest/logs"  # Ray's default temp dir; used when the session's own is unknown


class ClusterError(TriageError):
    """Ray is missing, or the cluster cannot be joined; exit code 2."""


@dataclass
class NodeScan:
    """What one node's task does: its settings travel to the node; its JSON report travels back."""

    pattern: str
    patterns: list[str]
    redact: bool


def log_dir(pattern: str, node_ip: str, node_id: str, hostname: str, session_logs: str) -> str:
    if not pattern:
        return session_logs
    return pattern.replace("{node_ip}", node_ip).replace("{node_id}", node_id).replace("{hostname}", hostname)


def scan_here(job: NodeScan) -> str:
    """Runs on a node: triage its log directory; return the JSON report (text) and nothing else."""
    import socket

    import ray

    from triage.analyze import Settings, analyze
    from triage.report.json_format import as_dict

    ctx = ray.get_runtime_context()
    node_id = ctx.get_node_id()
    node_ip = ray.util.get_node_ip_address()
    try:  # the session directory of the Ray instance this worker belongs to
        node: Any = ray._private.worker.global_worker.node
        session_logs = str(Path(node.get_session_dir_path()) / "logs")
    except AttributeError:
        session_logs = SESSION_LOGS
    where = log_dir(job.pattern, node_ip, node_id, socket.gethostname(), session_logs)
    report = analyze(Settings(paths=[where], patterns=[Path(p) for p in job.patterns], redact=job.redact))
    data = as_dict(report)
    data["root"] = f"{node_ip}:{where}"
    return json.dumps(data)


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ClusterError("--ray needs Ray: pip install 'triage[ray]'") from None
    return ray


def triage_cluster(address: str | None, pattern: str, lib: Library, patterns: list[Path], redact: bool = True,
                   timeout: float = TIMEOUT) -> Report:
    """Scan every alive node of the cluster at `address` ("auto": the one this machine belongs to) and merge."""
    ray = _ray()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    try:
        ray.init(address=address or "auto", ignore_reinit_error=True, logging_level="ERROR", log_to_driver=False)
    except Exception as e:  # noqa: BLE001 - Ray's own errors: one line for the user
        raise ClusterError(f"--ray: cannot join the Ray cluster at {address or 'auto'}: {e}") from None
    nodes = sorted((n for n in ray.nodes() if n.get("Alive")), key=lambda n: n.get("NodeManagerAddress", ""))
    task = ray.remote(num_cpus=0, max_retries=0)(scan_here)
    job = NodeScan(pattern, [str(p) for p in patterns], redact)
    ips = [str(n.get("NodeManagerAddress", "?")) for n in nodes]
    names: dict[Any, str] = {}
    for ip, n in zip(ips, nodes):
        name = ip if ips.count(ip) == 1 else f"{ip}/{str(n['NodeID'])[:8]}"  # several nodes on one machine
        ref = task.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)).remote(job)
        names[ref] = name
    done, late = ray.wait(list(names), num_returns=len(names), timeout=timeout)
    parts: list[Part] = []
    problems: list[str] = []
    for ref in done:
        try:
            parts.append(Part(names[ref], from_json(json.loads(ray.get(ref)), names[ref])))
        except MergeError as e:
            problems.append(f"node {names[ref]}: report not usable: {e}")
        except Exception as e:  # noqa: BLE001 - a node's failure is a coverage note, not the end of the run
            problems.append(f"node {names[ref]}: not scanned: {_cause(e)}")
    for ref in late:
        ray.cancel(ref, force=True)
        problems.append(f"node {names[ref]}: not scanned: no answer within {timeout:.0f} s")
    if not parts:
        raise ClusterError("--ray: no node could be scanned: " + "; ".join(problems or ["no alive node"]))
    report = merge(parts, lib)
    report.errors = problems + report.errors
    if redact:  # nodes redacted their own reports; the node names and notes added here are masked too
        redact_report(report)
    return report


def _cause(e: BaseException) -> str:
    """The node's own error, not Ray's wrapping of it: the last line of the remote traceback."""
    cause = getattr(e, "cause", None)
    if isinstance(cause, BaseException):
        return f"{type(cause).__name__}: {cause}".splitlines()[0]
    lines = [ln for ln in str(e).splitlines() if ln.strip()]
    return lines[-1].strip() if lines else type(e).__name__
