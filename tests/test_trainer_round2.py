"""Round 2, trainer and other: fresh real cases (fixtures/real-extra/131-145) and real line excerpts
(fixtures/lines/trainer, sources in fixtures/lines/SOURCES.md): the rule, the evidence file:line, the knob, the
numbers and the gate, per mechanism changed."""

from __future__ import annotations

from conftest import FIXTURES, extra_case, top, triage_dir

from triage.scan.origins import split_ray

LINES = FIXTURES / "lines" / "trainer"


def case(prefix: str):
    return triage_dir(extra_case(prefix) / "input")


def at(f) -> tuple[str, int]:
    return f.evidence[0].file.rsplit("/", 1)[-1], f.evidence[0].line


# -- OOM at the optimizer step: the innermost frames decide, not a backward frame further up -------------------

def test_adamw_foreach_oom_is_the_optimizer_step() -> None:  # TRL GRPO, torch/optim/adamw.py
    f = top(case("134-"))
    assert (f.rule, f.category, f.severity) == ("trainer.oom-optimizer-step", "trainer-oom", "error")
    assert at(f) == ("train.log", 13)
    assert [k.name for k in f.knobs][0] == "trainer.optimizer_offload"
    assert f.numbers["tried"] == round(130 / 1024, 6)


def test_deepspeed_lazy_adam_state_oom_is_the_optimizer_step_despite_a_backward_frame() -> None:
    f = top(case("145-"))  # accelerate's backward() frame is higher up; _take_model_step is innermost
    assert (f.rule, at(f)) == ("trainer.oom-optimizer-step", ("train.log", 15))
    assert "trainer.optimizer_offload" in [k.name for k in f.knobs]


def test_an_oom_with_log_prob_frames_is_still_the_log_prob_phase() -> None:
    f = top(triage_dir(FIXTURES / "real-extra" / "001-verl-one-step-off-fsdp-entropy-oom" / "input"))
    assert f.rule == "trainer.oom-logprobs"


# -- NCCL watchdog: a terminal-wrapped message still names the collective -------------------------------------

def test_terminal_wrapped_watchdog_line_is_the_nccl_timeout() -> None:
    report = case("132-")
    f = top(report)
    # the pieces the terminal cut are read as one line, at the first piece's number (triage/input/unwrap.py)
    assert (f.rule, at(f), f.numbers["op"]) == ("other.nccl-watchdog-timeout", ("train.log", 1), "BROADCAST")
    assert report.worst() == "error"


def test_timestamped_watchdog_line_keeps_its_numbers() -> None:
    f = top(case("133-"))
    assert (f.rule, f.numbers["op"], f.numbers["timeout_ms"]) == ("other.nccl-watchdog-timeout", "_ALLGATHER_BASE",
                                                                  43200000)


# -- a colour code whose escape byte was lost, before a Ray prefix ----------------------------------------------

def test_colour_residue_before_a_ray_prefix_is_removed() -> None:
    msg, actor, pid, _ = split_ray("[36m(WorkerDict pid=3175143, ip=10.49.193.113)[0m Fatal Python error: Aborted")
    assert (msg, actor, pid) == ("Fatal Python error: Aborted", "WorkerDict", "3175143")


def test_bracketed_text_that_is_not_a_colour_code_is_kept() -> None:
    assert split_ray("[36] (not a ray prefix) x")[0] == "[36] (not a ray prefix) x"
    assert split_ray("[36m] done")[0] == "[36m] done"


# -- fatal signals other than SIGSEGV gate --------------------------------------------------------------------

def test_fatal_python_error_aborted_behind_colour_residue_gates() -> None:
    report = case("141-")
    f = top(report)
    assert (f.rule, at(f)) == ("other.fatal-signal", ("train.log", 1))
    assert report.worst() == "error"
    assert not [g for g in report.findings if g.category == "unclassified"]


def test_absl_sigabrt_line_from_another_thread() -> None:  # Agent-RL/ReCall issue 54
    f = top(triage_dir(LINES / "ray-worker-sigabrt-fatal-aborted.log"))
    assert (f.rule, at(f)) == ("other.fatal-signal", ("ray-worker-sigabrt-fatal-aborted.log", 3))


# -- torch elastic's ChildFailedError is explained by the signal in its own Root Cause table ----------------------

def test_child_failed_error_with_sigkill_is_the_kill() -> None:
    report = case("139-")
    f = top(report)
    assert (f.rule, at(f)) == ("other.killed-sigkill", ("train.log", 22))
    assert "other.fatal-exit" not in [g.rule for g in report.findings]
    assert report.worst() == "error"


def test_torchrun_root_cause_table_from_another_thread() -> None:  # apple/ml-recurrent-drafter issue 5
    f = top(triage_dir(LINES / "torchrun-root-cause-sigkill.log"))
    assert (f.rule, at(f)) == ("other.killed-sigkill", ("torchrun-root-cause-sigkill.log", 15))


def test_a_child_failed_error_with_its_own_message_still_reports_the_exception(tmp_path) -> None:
    from conftest import triage_files
    report = triage_files(tmp_path, {"train.log": (
        "Traceback (most recent call last):\n"
        '  File "/app/train.py", line 3, in <module>\n'
        "    main()\n"
        "ValueError: bad shard index 7\n"
        "Killed\n")})
    rules = [f.rule for f in report.findings]
    assert rules[0] == "other.fatal-exit"


# -- the launcher's SIGTERM to the other ranks after a SIGKILL is not an orderly stop -----------------------------

def test_sigterm_sent_by_the_launcher_after_a_kill_is_not_a_shutdown() -> None:
    report = case("143-")
    f = top(report)
    assert (f.rule, at(f)) == ("other.killed-sigkill", ("train.log", 4))
    assert "other.orderly-shutdown" not in [g.rule for g in report.findings]


def test_healthy_openrlhf_episode_raises_nothing_above_info() -> None:
    report = case("142-")
    assert report.worst() in (None, "info", "note")
