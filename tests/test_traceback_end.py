"""A traceback whose final line holds no anchor (`StopIteration`, `_queue.Empty`, a module's own class): the first
unindented line after its last frame is a candidate line on both scan paths (Scanner.candidates, _linescan.c
tb_end), so the process's end is named, not missed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from triage.analyze import Settings, analyze
from triage.library.rules import load_library
from triage.parsers import signals
from triage.report import RenderOptions, render
from triage.report.gate import scan_exit
from triage.scan import native

LIB = load_library()

# uzh-rpg/rl_vo issue 3 (2024-08, a PPO trainer on stable-baselines3): the environment's data iterator ran dry,
# as pasted (the first line's blank included).
RL_VO = """\
 Traceback (most recent call last):
  File "/workspace/vo_rl/env/svo_wrapper.py", line 85, in get_images_pose
    batch = next(self.dataloader_iter)
StopIteration

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "train.py", line 104, in main
    model.learn(
  File "/workspace/vo_rl/rl_algorithms/ppo.py", line 347, in learn
    return super().learn(
  File "/workspace/vo_rl/rl_algorithms/on_policy_algorithm.py", line 274, in learn
    total_timesteps, callback = self._setup_learn(
  File "/venv/lib/python3.8/site-packages/stable_baselines3/common/base_class.py", line 423, in _setup_learn
    self._last_obs = self.env.reset()  # type: ignore[assignment]
  File "/workspace/vo_rl/env/svo_wrapper.py", line 213, in reset
    images, gt_poses, new_seq = self.get_images_pose()
  File "/workspace/vo_rl/env/svo_wrapper.py", line 89, in get_images_pose
    batch = next(self.dataloader_iter)
StopIteration
"""

# open-mmlab/mmsegmentation issue 2775 (2023-03): torch's DataLoader raising StopIteration under an iter-based
# runner, the first traceback of the paste (the thread's excerpt stops in the second).
MMSEG = """\
Traceback (most recent call last):
  File "/home/wentaochen/anaconda3/envs/MRM/lib/python3.8/site-packages/mmcv/runner/iter_based_runner.py", line 34, in __next__
    data = next(self.iter_loader)
  File "/home/wentaochen/anaconda3/envs/MRM/lib/python3.8/site-packages/torch/utils/data/dataloader.py", line 517, in __next__
    data = self._next_data()
  File "/home/wentaochen/anaconda3/envs/MRM/lib/python3.8/site-packages/torch/utils/data/dataloader.py", line 1172, in _next_data
    raise StopIteration
StopIteration
"""

# PaddlePaddle/PaddleOCR issue 10557 (2023-08): a DataLoader thread's queue timed out; `_queue.Empty` ends the first
# part of the chain, the RuntimeError the second (lines as pasted, up to that RuntimeError).
PADDLE = """\
Exception in thread Thread-1:
Traceback (most recent call last):
  File "/opt/conda/envs/py38/lib/python3.8/site-packages/paddle/fluid/dataloader/dataloader_iter.py", line 616, in _get_data
    data = self._data_queue.get(timeout=self._timeout)
  File "/opt/conda/envs/py38/lib/python3.8/multiprocessing/queues.py", line 108, in get
    raise Empty
_queue.Empty

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/opt/conda/envs/py38/lib/python3.8/threading.py", line 932, in _bootstrap_inner
    self.run()
  File "/opt/conda/envs/py38/lib/python3.8/threading.py", line 870, in run
    self._target(*self._args, **self._kwargs)
  File "/opt/conda/envs/py38/lib/python3.8/site-packages/paddle/fluid/dataloader/dataloader_iter.py", line 530, in _thread_loop
    batch = self._get_data()
  File "/opt/conda/envs/py38/lib/python3.8/site-packages/paddle/fluid/dataloader/dataloader_iter.py", line 631, in _get_data
    raise RuntimeError("DataLoader {} workers exit unexpectedly, " \\
RuntimeError: DataLoader 1 workers exit unexpectedly, pids: 4706
"""


def report(run: Path, monkeypatch: pytest.MonkeyPatch, on_native: bool):  # type: ignore[no-untyped-def]
    if on_native:
        monkeypatch.delenv("TRIAGE_NO_NATIVE", raising=False)
    else:
        monkeypatch.setenv("TRIAGE_NO_NATIVE", "1")
    return analyze(Settings(paths=[str(run)]), LIB)


def paths() -> list[bool]:
    return [True, False] if native.available() else [False]


@pytest.mark.parametrize("on_native", paths())
@pytest.mark.parametrize(("text", "last"), [(RL_VO, 21), (MMSEG, 8)])
def test_a_process_ending_in_an_anchorless_exception_is_named_at_that_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, on_native: bool, text: str, last: int) -> None:
    (tmp_path / "train.log").write_text(text)
    rep = report(tmp_path, monkeypatch, on_native)
    top = rep.findings[0]
    assert top.rule == "other.fatal-exit"
    assert "StopIteration" in top.title
    assert any(e.line == last and e.text == "StopIteration" for e in top.evidence)
    assert scan_exit(rep.findings, "error", complete=rep.coverage_complete) == 1


@pytest.mark.skipif(not native.available(), reason="the C prefilter is not built")
@pytest.mark.parametrize("text", [RL_VO, MMSEG, PADDLE])
def test_both_scan_paths_give_the_same_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    # between stats-free progress lines, so the anchorless line sits among other candidates and plain lines
    body = "step 1 loss 0.5\nINFO: Started epoch 3\n" + text + "INFO: worker exiting\n"
    (tmp_path / "trainer.log").write_text(body)
    fast, slow = (json.loads(render("json", report(tmp_path, monkeypatch, n), RenderOptions())) for n in (True, False))
    assert fast == slow


def test_a_thread_that_died_alone_stays_a_thread_death_whatever_its_chain_holds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "train.log").write_text(PADDLE)
    findings = report(tmp_path, monkeypatch, native.available()).findings
    assert findings[0].category == "unclassified"
    assert findings[0].evidence[0].line == 20
    assert not [f for f in findings if f.rule == "other.fatal-exit"]


@pytest.mark.parametrize(("text", "want"), [
    ('  File "a.py", line 3, in f\n    raise Empty\n           ^^^^^\n_queue.Empty\n', 61),
    ('  File "a.py", line 3, in f\n    g()\n\nnot the end\n', -1),  # a blank line: no end found
    ('  File "a.py", line 3, in f\n' + "    x\n" * signals.TB_LOOK + "Late\n", -1),  # too far
    # behind a Ray actor's prefix and torch elastic's rank prefix: indented less than the frame, after the prefix
    ('(TaskRunner pid=12)   File "a.py", line 3, in f\n(TaskRunner pid=12)     g()\n(TaskRunner pid=12) StopIteration\n',
     76),
    ('[rank0]:   File "a.py", line 3, in f\n[rank0]:     g()\n[rank1]: StopIteration\n', -1),  # another rank's line
    ('ERROR: File "a.py", line 3 not found\nnext\n', -1),  # a frame-shaped message: the next line lacks its prefix
    ('File "a.py", line 3, in f\nStopIteration\n', -1),  # a frame not indented: no end is told from it
])
def test_the_end_of_a_traceback_is_the_first_line_indented_less_than_its_frame(text: str, want: int) -> None:
    eol = text.index("\n")
    assert signals.traceback_end(text, 0, eol) == want
    if want >= 0:
        assert text[want - 1] == "\n"


# the first part of PaddleOCR issue 10557's chain, as a process's own end (no thread header): the class keeps its
# module in the title, since `Empty` alone does not say which queue's
QUEUE_EMPTY = "\n".join(PADDLE.splitlines()[1:7]) + "\n"


@pytest.mark.parametrize("on_native", paths())
def test_a_module_qualified_class_keeps_its_module_in_the_title(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, on_native: bool) -> None:
    (tmp_path / "train.log").write_text(QUEUE_EMPTY)
    top = report(tmp_path, monkeypatch, on_native).findings[0]
    assert top.rule == "other.fatal-exit"
    assert top.title == "A process ended with _queue.Empty"
    assert top.numbers["exception"] == "_queue.Empty"
    assert any(e.line == 6 and e.text == "_queue.Empty" for e in top.evidence)
