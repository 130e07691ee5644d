"""Recognition round 22, second pass (r22f): verifier and cold-start (real-extra 2240-2247).

- TRL's vLLM client (trl/extras/vllm_client.py, 0.16 -> 2026) polls a separate `trl vllm-serve` server: "Server is
  not up yet. Retrying in 2.0 seconds..." and, at its deadline, "The vLLM server can't be reached at HOST:PORT after
  N seconds". When no log in the run shows any server starting, nothing was launched (TRL 0.16 made server mode the
  default: open-r1 543/568, Unsloth 2173, the mini-R1 notebook): other.trl-vllm-server-absent, not a cold start, and
  the startup timeout is named as a knob that will not help (2240, 2241, 2246, 2247). With a server's loading lines
  in the run the same client lines stay a cold start.
- A readiness deadline that names the process and its model ("Handler process for 'M' did not become ready within
  300 s", mlx-openai-server) is the launcher's deadline, with the deadline read (2242).
- vLLM's engine-ready timeout on Ascend and ollama's runner-start timeout stay cold starts (2243, 2244).
"""

from __future__ import annotations

import pytest
from conftest import extra_input, knob_names, top, triage_dir, triage_files


@pytest.mark.parametrize("case, file, line, polls", [
    ("2240", "train.log", 1, 4),
    ("2246", "grpo.log", 2, 3),
    ("2247", "run_r1_grpo.log", 1, 2),
])
def test_trl_client_polling_with_no_server_in_the_run_is_a_missing_server(case: str, file: str, line: int,
                                                                           polls: int):
    report = triage_dir(extra_input(case))
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("other", "other.trl-vllm-server-absent", "warning")
    assert (f.evidence[0].file, f.evidence[0].line) == (file, line)
    assert f.numbers["polls"] == polls
    assert knob_names(f) == []
    assert any("engine.startup_timeout" in k for k in f.not_knobs)
    assert not [g for g in report.findings if g.severity in ("error", "warning") and g.category == "cold-start"]


def test_trl_client_deadline_with_no_server_is_a_missing_server_not_a_deadline():
    f = top(triage_dir(extra_input("2241")))
    assert (f.category, f.rule) == ("other", "other.trl-vllm-server-absent")
    assert f.numbers["gave_up_seconds"] == 120.0
    assert (f.evidence[0].file, f.evidence[0].line) == ("colab.log", 1)


def test_trl_client_waits_beside_a_loading_server_stay_a_cold_start(tmp_path):
    report = triage_files(tmp_path, {
        "trainer.log":
            "2025-03-26 05:53:13 - INFO - trl.extras.vllm_client - Server is not up yet. Retrying in 2.0 seconds...\n"
            "ConnectionError: The vLLM server can't be reached at 0.0.0.0:8000 after 240 seconds. Make sure the "
            "server is running by running `trl vllm-serve`.\n",
        "vllm-serve.log":
            "Loading safetensors checkpoint shards:  50% Completed | 48/96 [04:10<04:10,  5.20s/it]\n",
    })
    rules = {f.rule for f in report.findings}
    assert "other.trl-vllm-server-absent" not in rules
    assert top(report).category == "cold-start"


def test_named_handler_not_ready_within_deadline_is_the_launchers_deadline():
    f = top(triage_dir(extra_input("2242")))
    assert (f.category, f.rule) == ("cold-start", "cold.startup-not-ready")
    assert f.numbers["deadline"] == 300.0
    assert (f.evidence[0].file, f.evidence[0].line) == ("llamas.log", 11)
    assert "engine.startup_timeout" in knob_names(f)


@pytest.mark.parametrize("case, file", [("2243", "serve.log"), ("2244", "ollama.log")])
def test_engine_and_runner_start_timeouts_stay_cold_starts(case: str, file: str):
    f = top(triage_dir(extra_input(case)))
    assert (f.category, f.rule) == ("cold-start", "cold.startup-not-ready")
    assert f.evidence[0].file == file
    assert "engine.startup_timeout" in knob_names(f)
