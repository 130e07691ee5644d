"""Recognition round 16 (r16c): placing a line by the whole run, syslog-escaped colour codes, GPU and NCCL faults.

- A bare CUDA OOM (no frame, no process prefix) goes to the trainer by default; when the run's other failure is an
  engine's start that failed (vLLM V1's "Engine core initialization failed", SGLang's "Initialization failed. Please
  see the error messages above" / "Rank 0 scheduler is dead") and nothing in the run is the trainer's, the OOM is the
  engine's (scan/placement.py, sides.yaml `start_failures`; real-extra 1410, SkyRL PR 2051).
- Colour codes written out by rsyslog as `#033[36m` are stripped like ESC sequences on both scan paths, so the Ray
  prefix they wrap places the line (real-extra 1401's capture form).
- The NVIDIA driver's three-line "fallen off the bus and is not responding to commands" report with no Xid
  (real-extra 1523, NVSentinel issue 155): other.gpu-hardware-fault.
- Blind right, kept right: NCCL system errors (1520 NCCL_BUFFSIZE and ibv_reg_dmabuf_mr, 1521 and 1525 /dev/shm),
  THC's numbered ECC error (1522), Xid 45 after Xid 149/145 (1524), slime's SGLang engine on a physical GPU index
  under CUDA_VISIBLE_DEVICES, "invalid device ordinal" (1526).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import extra_input, knob_names, top, triage_dir, triage_files

from triage.input.read import line_text, normalise

OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 594.00 MiB. GPU 0 has a total capacity of "
       "22.03 GiB of which 582.00 MiB is free.\n")
VLLM_START = "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}\n"


def test_a_bare_oom_beside_an_engine_start_failure_is_the_engines():
    f = top(triage_dir(extra_input("1410")))
    assert (f.category, f.rule, f.severity) == ("serving-oom-retraction", "serving.engine-cuda-oom", "error")
    assert [(e.file, e.line) for e in f.evidence] == [("repro.log", 1), ("ci-job.log", 1)]
    assert f.numbers["side"] == "engine"
    assert f.numbers["tried"] == pytest.approx(594 / 1024, abs=1e-4)
    assert f.numbers["symptoms"] == ["other.engine-start-failed"]
    assert "inference.sglang_mem_fraction_static" in knob_names(f)


@pytest.mark.parametrize("start", [
    VLLM_START,
    "RuntimeError: Initialization failed. Please see the error messages above.\n",
    "[2025-03-02 10:11:12] Rank 0 scheduler is dead. Please check if there are relevant logs.\n",
])
def test_every_engines_start_failure_wording_places_the_oom(tmp_path: Path, start: str):
    f = top(triage_files(tmp_path, {"launch.log": start, "paste.txt": OOM}))
    assert (f.rule, f.numbers["side"]) == ("serving.engine-cuda-oom", "engine")
    assert ("paste.txt", 1) == (f.evidence[0].file, f.evidence[0].line)


def test_an_engine_start_failure_alone_is_reported_as_such(tmp_path: Path):
    f = top(triage_files(tmp_path, {"launch.log": VLLM_START}))
    assert (f.category, f.rule, f.severity) == ("other", "other.engine-start-failed", "error")
    assert [(e.file, e.line) for e in f.evidence] == [("launch.log", 1)]


def test_without_a_start_failure_the_bare_oom_stays_the_trainers(tmp_path: Path):
    f = top(triage_files(tmp_path, {"paste.txt": OOM}))
    assert (f.rule, f.numbers["side"]) == ("trainer.cuda-oom", "unknown")


def test_training_step_records_keep_the_oom_the_trainers(tmp_path: Path):
    steps = "".join(f"(main_task pid=20) step:{i} - actor/pg_loss:0.012 - actor/entropy:0.61 - critic/score/mean:0.25 - "
                    f"response_length/mean:512.0\n" for i in (1, 2))
    f = top(triage_files(tmp_path, {"launch.log": VLLM_START, "paste.txt": OOM, "driver.log": steps}))
    assert f.rule == "trainer.cuda-oom"


def test_an_oom_the_trainer_printed_is_never_moved(tmp_path: Path):
    tb = ("Traceback (most recent call last):\n"
          '  File "/opt/Megatron-LM/megatron/core/pipeline_parallel/schedules.py", line 401, in forward_step\n'
          "    output_tensor = model(tokens)\n" + OOM)
    f = top(triage_files(tmp_path, {"launch.log": VLLM_START, "train.log": tb}))
    assert (f.rule, f.numbers["side"]) == ("trainer.cuda-oom", "trainer")


ESCAPED = ("#033[36m(SGLangEngine pid=4100, ip=10.0.0.1)#033[0m torch.OutOfMemoryError: CUDA out of memory. Tried to "
           "allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 1.20 GiB is free.\n")


@pytest.mark.parametrize("native", [True, False])
def test_syslog_escaped_colour_codes_no_longer_hide_the_ray_prefix(tmp_path: Path, monkeypatch, native: bool):
    if not native:
        monkeypatch.setenv("TRIAGE_NO_NATIVE", "1")
    rows = "".join(f"#033[36m(TrainActor pid=77)#033[0m step {i} loss 0.5\n" for i in range(20000))  # a chunk's worth
    f = top(triage_files(tmp_path, {"driver.log": rows + ESCAPED}))
    assert (f.category, f.rule, f.numbers["side"]) == ("serving-oom-retraction", "serving.engine-cuda-oom", "engine")
    assert (f.evidence[0].file, f.evidence[0].line) == ("driver.log", 20001)
    assert f.evidence[0].text.startswith("(SGLangEngine pid=4100, ip=10.0.0.1) torch.OutOfMemoryError")


def test_the_readers_strip_the_escaped_form_as_they_strip_esc():
    assert normalise("#033[2m#033[33m(raylet)#033[0m node_manager.cc:3007: killed\n") == \
        "(raylet) node_manager.cc:3007: killed\n"
    assert line_text(b"#033[36m(RolloutRayActor pid=9)#033[0m OK") == "(RolloutRayActor pid=9) OK"
    assert line_text(b"ticket #0331 closed") == "ticket #0331 closed"  # no sequence: text


def test_the_drivers_three_line_fallen_off_the_bus_report_is_a_gpu_fault():
    f = top(triage_dir(extra_input("1523")))
    assert (f.category, f.rule, f.severity) == ("other", "other.gpu-hardware-fault", "error")
    assert (f.evidence[0].file, f.evidence[0].line) == ("dmesg.log", 3)
    assert f.numbers["what"] == "fallen off the bus"
    assert knob_names(f) == []


@pytest.mark.parametrize(("prefix", "rule", "where"), [
    ("1520", "other.nccl-error", ("nccl-debug.log", 1)),
    ("1521", "other.nccl-error", ("debug.txt", 1)),
    ("1522", "other.gpu-hardware-fault", ("train.log", 1)),
    ("1524", "other.gpu-hardware-fault", ("kern.log", 1)),
    ("1525", "other.nccl-error", ("vllm.log", 1)),
    ("1526", "other.cuda-error", ("engine.log", 1)),
])
def test_nccl_system_errors_and_gpu_faults_are_other(prefix: str, rule: str, where: tuple[str, int]):
    f = top(triage_dir(extra_input(prefix)))
    assert (f.category, f.rule, f.severity) == ("other", rule, "error")
    assert (f.evidence[0].file, f.evidence[0].line) == where


def test_a_start_failure_that_names_no_rule_is_a_library_error(tmp_path: Path, monkeypatch):
    import shutil

    from triage.library import rules

    copy = tmp_path / "patterns"
    shutil.copytree(rules.builtin_dir(), copy)
    sides = copy / "sides.yaml"
    text = sides.read_text()
    assert "start_failures: [other.engine-start-failed]" in text
    sides.write_text(text.replace("start_failures: [other.engine-start-failed]", "start_failures: [other.no-such-rule]"))
    monkeypatch.setattr(rules, "builtin_dir", lambda: copy)
    with pytest.raises(rules.LibraryError) as e:
        rules.load_library()
    assert str(e.value) == f"{copy}/sides.yaml: start_failures: no rule other.no-such-rule"
