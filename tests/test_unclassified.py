"""Error-like lines no rule explains: clustered by template (numbers, hex, ips, paths, ids masked), each with a
count and an example, computed only on the scanner's candidate lines."""

from __future__ import annotations

from conftest import FIXTURES, triage_dir

from triage.findings import unclassified
from triage.input.read import read_text
from triage.library.rules import load_library
from triage.model import LogFile
from triage.scan.scanner import Scanner
from triage.template import template

LOG = """\
step 1 ok
Traceback (most recent call last):
  File "/opt/app/loader.py", line 41, in load
    raise KeyError(key)
KeyError: 'shard_17'
Traceback (most recent call last):
  File "/opt/app/loader.py", line 41, in load
    raise KeyError(key)
KeyError: 'shard_23'
/bin/sh: line 1:  4242 Killed                  python train.py --rank 3
/bin/sh: line 1:  4250 Killed                  python train.py --rank 5
FATAL: job 9f8e7d6c5b4a3f2e exited with status 137
FATAL: job 0a1b2c3d4e5f6a7b exited with status 137
subprocess.CalledProcessError: Command '['bash', 'launch.sh']' returned non-zero exit status 2.
torchrun: worker 10.0.0.12:29500 exitcode: -9 (pid: 777)
AssertionError
everything fine
"""


def _findings(text: str) -> dict[str, tuple[int, int]]:
    lib = load_library()
    res = Scanner(lib).scan(LogFile(path="<t>", rel="t.log"), read_text(text.encode()))
    return {f.title: (f.count, f.evidence[0].line) for f in unclassified(lib, res.unclaimed, True)}


def test_traceback_tails_killed_fatal_and_exit_statuses_cluster_by_template() -> None:
    # (line 14 is claimed by the other.job-failed rule, so it is not unexplained; the shell's `Killed`, exit status
    # 137 and exitcode -9 lines by other.killed-sigkill; the last traceback's KeyError is reported as the exception
    # that ended the process, other.fatal-exit)
    assert _findings(LOG) == {
        "Unexplained: KeyError: 'shard_<n>'": (1, 5),
        "Unexplained: AssertionError": (1, 16),
    }


def test_a_run_of_identical_lines_counts_every_copy() -> None:
    assert _findings("ok\n" + "FATAL: disk quota exceeded\n" * 500 + "ok\n") == {
        "Unexplained: FATAL: disk quota exceeded": (500, 2)}


def test_only_error_like_lines_are_clustered() -> None:
    assert _findings("step 1 loss 0.5\nsaving checkpoint to /ckpt/step_1\nwarmup done\n") == {}


def test_template_masks_ids_hex_ips_paths_and_numbers() -> None:
    assert template("ERROR 2025-01-01 10:00:00 req 9f8e7d6c-aaaa-bbbb-cccc-111122223333 at 0x7f3a on 10.1.2.3:80 "
                    "in /opt/x/y.py step 12") == "ERROR <time> req <id> at <hex> on <ip> in <path> step <n>"


def test_a_secret_in_an_unexplained_line_does_not_survive_templating() -> None:
    titles = _findings("RuntimeError: login failed for HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345\n")
    assert list(titles) == ["Unexplained: RuntimeError: login failed for HF_TOKEN=[REDACTED]"]


def test_messages_differing_only_in_the_text_they_quote_are_one_finding() -> None:
    # a caught per-item error quoting the model's answer (real-extra 1470, verl GUI agent loop): one family whatever
    # the answer says; a head seen with fewer than three tails keeps its messages apart
    answers = ["Thought: click the red Home button at the bottom", "Thought: 我打开了Excel软件，需要使用Data标签",
               "<think>The cursor is already on the Save button</think>", "Thought: scroll down to the next page"]
    text = "".join(f"(CursorLoopWorker pid={7 + i}) ValueError: step {i} - extract action failed from: {a}\n"
                   for i, a in enumerate(answers))
    text += "RuntimeError: config check failed: bad key a\nRuntimeError: config check failed: bad key bb\n"
    got = _findings(text)
    assert got["Unexplained: ValueError: step <n> - extract action failed from: <text>"] == (4, 1)
    assert len(got) == 3  # the two config-check messages stay apart


def test_the_quoted_tails_of_a_real_healthy_run_fold_into_their_raise_site() -> None:
    report = triage_dir(next((FIXTURES / "real-extra").glob("1470-verl-gui-cursor-*")) / "input")
    unexplained = [f for f in report.findings if f.rule == "unclassified"]
    assert [(f.title, f.count) for f in unexplained] == [
        ("Unexplained: ValueError: step <n> - extract action failed from: <text>", 219),
        ("Unexplained: Error extracting action for item <id>", 219)]
    assert (unexplained[0].evidence[0].file, unexplained[0].evidence[0].line) == ("verl_demo.log", 884)
