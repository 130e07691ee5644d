"""Recognition round 15 (r15f): slime / MILES threads (real-extra 1320-1328) and the two line forms they arrived in.

- Ray writes an IPv6 node address in brackets in its worker prefix, `(pid=35379, ip=[fdbd:dccd:cdc2:12c8:0:1c3::])`
  (slime issue 1656): the prefix comes off like `ip=10.0.0.1`'s, so the exception behind it is an exception line, and
  the writer of the line is that address.
- A paste that starts inside a frame line keeps `glm4.py", line 11, in get_glm_spec` of Python's
  `  File "/root/slime/slime_plugins/models/glm4.py", line 11, in get_glm_spec` (the same thread): read as that frame,
  so the exception under it ends a traceback (a process end; a reward function's frame makes it the verifier's).
- The other threads' lines, as the library reads them: the retool example's reward_func TypeError (verifier), slime's
  HTTP retries of a 422 /abort_request, NCCL's unhandled CUDA error 999 and SM120's missing symbol, the colocated
  engine's custom all-reduce capture failure and illegal memory access, the router's 503 'No available workers' after
  its endpoints changed (other, each by its rule).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import extra_input, triage_dir, triage_files
from domain import SIX
from test_line_forms import TRACEBACK, _report

from triage.model import Report
from triage.parsers.signals import unboxed
from triage.prefixes import writer_of
from triage.report.gate import scan_exit
from triage.scan.origins import split_ray

IPV6 = "(pid=35379, ip=[fdbd:dccd:cdc2:12c8:0:1c3::]) "


def _top(report: Report) -> tuple[str, str, str, int]:
    f = report.findings[0]
    e = f.evidence[0]
    return f.category, f.rule, e.file, e.line


@pytest.mark.parametrize("case, category, rule, file, line", [
    # slime#1829: the retool example's reward_func concatenates a list prompt and a str response
    ("1320", "verifier", "verifier.reward-exception", "job.log", 8),
    # slime PR 63: /abort_request without a rid, answered 422 and retried
    ("1321", "other", "other.engine-request-errors", "ray.log", 2),
    # slime#1305: NCCL unhandled cuda error, Cuda failure 999, in a reloadable process group's collective
    ("1322", "other", "other.nccl-error", "train.log", 4),
    # slime#1656: a GLM4 spec reading a Megatron argument the installed Megatron-LM lacks
    ("1323", "other", "other.fatal-exit", "ray.log", 4),
    # slime#1106: NCCL 2.27 on SM120, Cuda failure 'named symbol not found'
    ("1324", "other", "other.nccl-error", "ray.log", 7),
    # slime#1998: custom all-reduce v2's capture under torch_memory_saver, CUDA error: invalid argument
    ("1326", "other", "other.cuda-error", "rollout.log", 1),
    # slime PR 683: the router serves no worker after its endpoints changed, 503 until attempt 60/60
    ("1327", "other", "other.router-no-healthy-engine", "rollout.log", 3),
    # slime#953: the engine's NCCL watchdog dies with an illegal memory access on the first prefill after update
    ("1328", "other", "other.cuda-error", "ray.log", 10),
])
def test_slime_threads_by_rule_and_line(case: str, category: str, rule: str, file: str, line: int) -> None:
    assert _top(triage_dir(extra_input(case))) == (category, rule, file, line)


def test_the_ipv6_prefixed_exception_ends_the_process_and_gates() -> None:
    report = triage_dir(extra_input("1323"))
    f = report.findings[0]
    assert f.numbers["exception"] == "AttributeError"
    assert f.numbers["message"] == "'Namespace' object has no attribute 'post_self_attn_layernorm'"
    assert f.numbers["frames"] and "get_glm_spec" in f.numbers["frames"]
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 1


def test_an_ipv6_ray_prefix_comes_off_the_message_and_names_its_writer() -> None:
    line = IPV6 + "AttributeError: 'Namespace' object has no attribute 'x'"
    assert split_ray(line)[0] == "AttributeError: 'Namespace' object has no attribute 'x'"
    actor = "(MegatronTrainRayActor pid=2025282, ip=[fe80::7a2b:1]) torch.OutOfMemoryError: CUDA out of memory."
    msg, name, pid, _ = split_ray(actor)
    assert (msg, name, pid) == ("torch.OutOfMemoryError: CUDA out of memory.", "MegatronTrainRayActor", "2025282")
    assert writer_of(line) == "ip [fdbd:dccd:cdc2:12c8:0:1c3::]"
    assert writer_of("(raylet, ip=10.0.0.128) x") == "ip 10.0.0.128"  # a name without a pid still names its node
    # an unclosed bracket is no address: the line keeps its text
    assert split_ray("(pid=1, ip=[fe80::1 x) y")[0] == "(pid=1, ip=[fe80::1 x) y"


@pytest.mark.parametrize("native", [True, False])
def test_a_traceback_behind_an_ipv6_prefix_gives_the_bare_finding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  native: bool) -> None:
    report = _report(tmp_path, monkeypatch, native, [IPV6 + s for s in TRACEBACK])
    assert [(f.rule, f.evidence[0].line) for f in report.findings] == [("trainer.oom-backward", 6)]


@pytest.mark.parametrize("native", [True, False])
def test_the_engine_actor_behind_an_ipv6_prefix_is_the_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              native: bool) -> None:
    report = _report(tmp_path, monkeypatch, native, [
        "(SGLangEngine pid=952, ip=[fdbd:dccd::2]) [2025-11-06 01:16:21 TP0] Scheduler hit an exception: "
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB."])
    assert report.findings[0].category == "serving-oom-retraction"


def test_a_frame_cut_before_its_path_is_read_as_the_frame() -> None:
    assert unboxed('slime/slime_plugins/models/glm4.py", line 11, in get_glm_spec') == \
        '  File "slime/slime_plugins/models/glm4.py", line 11, in get_glm_spec'
    assert unboxed('ool/generate_with_retool.py", line 360') == '  File "ool/generate_with_retool.py", line 360'
    # prose that quotes a frame's tail, or a path with blanks before it, stays what it is
    assert unboxed('see models/glm4.py", line 11, in get_glm_spec') is None
    assert unboxed('glm4.py", line 11, in get_glm_spec and more') is None
    assert split_ray('  File "/a/b.py", line 3, in f')[0] == '  File "/a/b.py", line 3, in f'


# slime#1829's traceback as a paste that starts inside the reward function's frame line (written here; the stored
# paste of 1320 starts with Ray's job status and whole frames)
CUT_REWARD = [
    'examples/retool/generate_with_retool.py", line 360, in reward_func',
    "    solution_str = sample.prompt + sample.response",
    "                   ~~~~~~~~~~~~~~^~~~~~~~~~~~~~~~~",
    'TypeError: can only concatenate list (not "str") to list',
]


@pytest.mark.parametrize("native", [True, False])
def test_a_reward_traceback_cut_inside_its_first_frame_is_the_verifiers(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch,
                                                                       native: bool) -> None:
    report = _report(tmp_path, monkeypatch, native, CUT_REWARD)
    f = report.findings[0]
    assert (f.category, f.rule, f.evidence[0].line) == ("verifier", "verifier.reward-exception", 4)


def test_without_the_frame_the_same_exception_line_stays_unexplained(tmp_path: Path) -> None:
    # the lone exception line of a one-line input is unclassified by design (test_unclassified): the frame decides
    report = triage_files(tmp_path, {"train.log": CUT_REWARD[3] + "\n"})
    assert all(f.category not in SIX for f in report.findings)
    assert report.findings[0].category == "unclassified"


@pytest.mark.parametrize("case, file, line, what", [
    # slime#396: train_async.py asks Ray for the next rollout after the last one (a None future)
    ("1329", "job.log", 2, "ValueError"),
    # slime#1780: GLM-4.7 conversion, slime's GLM4-MoE bridge has no HF name for post_self_attn_layernorm
    ("1330", "convert.log", 2, "NotImplementedError"),
])
def test_driver_and_conversion_bugs_end_their_process(case: str, file: str, line: int, what: str) -> None:
    report = triage_dir(extra_input(case))
    assert _top(report) == ("other", "other.fatal-exit", file, line)
    assert report.findings[0].numbers["exception"] == what
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 1


def test_an_engine_without_the_model_class_is_the_unsupported_model(tmp_path: Path) -> None:
    # SGLang's startup in MILES' ROCm CI, as quoted in radixark/miles PR 2407: the image's SGLang has no Inkling model
    report = triage_files(tmp_path, {"sglang.log": (
        "ValueError: Cannot find model module. 'InklingForConditionalGeneration' is not a registered model\n")})
    f = report.findings[0]
    assert (f.category, f.rule, f.evidence[0].line) == ("other", "other.model-unsupported-by-version", 1)
    assert f.numbers["what"] == "InklingForConditionalGeneration"


# slime#1022's paste: a job platform's log view, `[ISO time] <job name> >> ` before Ray's prefix
VIEW = "[2025-12-18T16:24:02+08:00] leihaodi-qwen3-8b-rl-eagle3-20251218-162008s-3da56-cfcd2 >> "


@pytest.mark.parametrize("native", [True, False])
def test_a_traceback_behind_a_platform_log_view_gives_the_bare_finding(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch,
                                                                        native: bool) -> None:
    report = _report(tmp_path, monkeypatch, native, [VIEW + s for s in TRACEBACK])
    assert [(f.rule, f.evidence[0].line) for f in report.findings] == [("trainer.oom-backward", 6)]
    (tmp_path / "engine").mkdir()
    engine = _report(tmp_path / "engine", monkeypatch, native,
                     [VIEW + "(SGLangEngine pid=3111) " + s for s in TRACEBACK])
    assert engine.findings[0].category == "serving-oom-retraction"


def test_the_platform_view_prefix_leaves_the_ray_prefix_and_a_shell_redirect() -> None:
    assert split_ray(VIEW + "(SGLangEngine pid=3111)   File \"/s/scheduler.py\", line 2683, in run")[:3] == (
        '  File "/s/scheduler.py", line 2683, in run', "SGLangEngine", "3111")
    assert split_ray("cat >> file.txt")[0] == "cat >> file.txt"
    assert split_ray("echo x >> out.log")[0] == "echo x >> out.log"
