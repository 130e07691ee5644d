"""Ray's dead-worker message names SIGKILL/OOM killer, `ray stop --force` and SIGSEGV as *potential* root causes.
That list is a hypothesis printed on every dead Ray worker (Ray 1.x-2.x), not a segfault: the finding is the
actor death (other.actor-died), and a real fault line elsewhere still wins. Real inputs from public threads."""

from __future__ import annotations

from conftest import FIXTURES, top, triage_dir, triage_files

EXTRA = FIXTURES / "real-extra"
RAY_HEDGE = ("The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit detail: "
             "Worker unexpectedly exits with a connection error code 2. End of file. There are some potential root "
             "causes. (1) The process is killed by SIGKILL by OOM killer due to high memory usage. (2) ray stop --force "
             "is called. (3) The worker is crashed unexpectedly due to SIGSEGV or other unexpected errors.")


def _rules(report) -> list[str]:
    return [f.rule for f in report.findings]


def test_openrlhf_critic_death_is_an_actor_death_not_a_segfault() -> None:
    # OpenRLHF issue 305: CriticModelRayActor dies after several steps
    report = triage_dir(next(EXTRA.glob("453-*")))
    assert top(report).rule == "other.actor-died" and top(report).category == "other"
    assert "other.segfault" not in _rules(report)
    assert top(report).evidence[0].line == 7


def test_line_broken_ray_message_is_an_actor_death_at_its_first_line() -> None:
    # rLLM issue 30: the same message pasted one cause per line, "Worker exit type:" lost
    report = triage_dir(next(EXTRA.glob("461-*")))
    assert top(report).rule == "other.actor-died"
    assert "other.segfault" not in _rules(report)
    ev = top(report).evidence[0]
    assert ev.line == 1 and "connection error code 2" in ev.text


def test_a_real_segfault_next_to_the_ray_hedge_still_wins(tmp_path) -> None:
    log = "Fatal Python error: Segmentation fault\n" + RAY_HEDGE + "\n"
    report = triage_files(tmp_path, {"driver.log": log})
    assert top(report).rule == "other.segfault"
    assert top(report).evidence[0].line == 1


def test_gpu_oom_behind_the_ray_hedge_is_the_cause(tmp_path) -> None:
    oom = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 13.91 GiB. GPU 0 has a total capacity of "
           "79.11 GiB of which 8.85 GiB is free.")
    report = triage_files(tmp_path, {"train.log": oom + "\n" + RAY_HEDGE + "\n"})
    assert top(report).category == "trainer-oom"
    assert "other.segfault" not in _rules(report)
