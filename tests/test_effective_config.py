"""The effective configuration: config files by content or --config, launch args and server args from logs,
merged with provenance; healthy configurations raise nothing at warning or above; bad config input."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import REAL, by_rule, run, write_run
from engine_lines import capacity, engine_log, kv_pool, server_args

HEALTHY = {
    "inference.max_context_length": 32768,
    "inference.max_response_length": 8192,
    "miles.rollout_max_prompt_len": 24576,
    "inference.sglang_max_total_tokens": 262144,
    "inference.sglang_server_concurrency": 8,
    "inference.sglang_max_running_requests": 8,
    "inference.sglang_cuda_graph_max_bs_decode": 8,
    "inference.sglang_mem_fraction_static": 0.7,
    "trainer.micro_batch_size": 1,
    "trainer.packing_max_tokens": 32768,
    "miles.log_probs_chunk_size": 1024,
}


def config_findings(report):
    return [(f.rule, f.severity) for f in report.findings if f.rule.startswith("config.")]


@pytest.mark.parametrize("layout", ["nested", "flat"])
def test_healthy_config_alone_raises_no_config_finding(tmp_path, lib, layout):
    report = run(write_run(tmp_path / "run", HEALTHY, layout), lib)
    assert config_findings(report) == []
    assert report.worst() is None


@pytest.mark.parametrize("layout", ["nested", "flat"])
def test_healthy_config_with_a_healthy_engine_log_raises_nothing_at_warning(tmp_path, lib, layout):
    # the real healthy slime engine startup (max_running_requests=4096 auto-resolved) next to the config
    logs = {"rollout.log": (REAL / "016-slime-rollout-actor-healthy-startup-ray-prefix/input/rollout.log").read_text()}
    report = run(write_run(tmp_path / "run", HEALTHY, layout, logs), lib)
    assert config_findings(report) == []
    assert report.worst() is None


def test_healthy_engine_log_alone_raises_no_config_finding(lib):
    report = run(REAL / "016-slime-rollout-actor-healthy-startup-ray-prefix/input", lib)
    assert config_findings(report) == []
    running = report.config["inference.sglang_max_running_requests"]
    assert running == {"value": 4096, "source": "engine startup rollout.log:5", "origin": "resolved"}


def test_provenance_of_each_source(tmp_path, lib):
    logs = {
        "driver.log": "python3 train.py --rollout-max-response-len 8192 --sglang-server-concurrency 32\n",
        "engine.log": engine_log(server_args(mem_fraction_static=0.871, max_total_tokens=None, context_length=32768),
                                 kv_pool(500000), capacity(500000, 4096, 32768)),
    }
    report = run(write_run(tmp_path / "run", {"trainer.packing_max_tokens": 32768}, "nested", logs), lib)
    cfg = report.config
    assert cfg["trainer.packing_max_tokens"] == {"value": 32768, "source": "config run.yaml:2", "origin": "requested"}
    assert cfg["inference.max_response_length"]["source"] == "command line driver.log:1"
    assert cfg["inference.sglang_server_concurrency"]["value"] == 32
    assert cfg["inference.sglang_mem_fraction_static"] == {"value": 0.871, "source": "server_args engine.log:1",
                                                          "origin": "resolved"}
    # the capacity line outranks the server_args value; the request is kept beside it
    assert cfg["inference.max_context_length"] == {
        "value": 32768, "source": "engine startup engine.log:3", "origin": "resolved",
        "requested": {"value": 32768, "source": "server_args engine.log:1"}}
    assert cfg["inference.sglang_max_total_tokens"]["source"] == "KV pool allocated engine.log:2"


def test_knob_source_is_shown_in_the_finding(tmp_path, lib):
    report = run(write_run(tmp_path / "run", {"inference.max_context_length": 16384,
                                              "trainer.packing_max_tokens": 8192}, "flat"), lib)
    f = by_rule(report)["config.pack-budget-below-context"]
    pack = f.knobs[0]
    assert (pack.name, pack.current, pack.source) == ("trainer.packing_max_tokens", 8192, "config run.yaml:2")


def test_config_is_found_by_content_whatever_its_name(tmp_path, lib):
    root = write_run(tmp_path / "run", {"inference.max_context_length": 16384, "trainer.packing_max_tokens": 8192},
                     "nested", config_name="experiment-params.txt")
    report = run(root, lib)
    assert [(f.rel, f.kind) for f in report.files] == [("experiment-params.txt", "config")]
    assert "config.pack-budget-below-context" in by_rule(report)


def test_a_log_that_mentions_inference_is_not_a_config(tmp_path, lib):
    root = tmp_path / "run"
    root.mkdir()
    (root / "notes.txt").write_text("inference: started\n[2025-01-01 10:00:00] Decode batch. #running-req: 1\n")
    assert run(root, lib).files[0].kind != "config"


def test_judge_section_is_not_the_policy_context(tmp_path, lib):
    report = run(write_run(tmp_path / "run", {"judge.max_context_length": 8192, "judge.model.max_context_length": 4096,
                                              "inference.max_response_length": 512}, "nested"), lib)
    assert "inference.max_context_length" not in report.config
    assert report.config["judge.max_context_length"]["value"] == 8192


def test_verl_style_nested_names_map_to_knobs(tmp_path, lib):
    settings = {"data.max_prompt_length": 2048, "data.max_response_length": 14336,
                "actor_rollout_ref.actor.ppo_max_token_len_per_gpu": 16384}
    report = run(write_run(tmp_path / "run", settings, "nested"), lib)
    assert report.config["miles.rollout_max_prompt_len"]["value"] == 2048
    assert report.config["inference.max_response_length"]["value"] == 14336
    assert report.config["trainer.packing_max_tokens"]["value"] == 16384


def test_config_given_with_option_is_checked(tmp_path, lib):
    logs_dir = write_run(tmp_path / "logs", None, logs={"train.log": "Timer train start\n"})
    cfg = write_run(tmp_path / "cfg", {"inference.max_context_length": 16384, "miles.rollout_max_prompt_len": 16384,
                                       "inference.max_response_length": 512}, "flat") / "run.yaml"
    report = run(logs_dir, lib, config=cfg)
    assert by_rule(report)["config.prompt-plus-response-over-context"].numbers["over_by"] == 512


def test_json_config(tmp_path, lib):
    root = tmp_path / "run"
    root.mkdir()
    (root / "config.json").write_text('{"inference": {"max_context_length": 16384}, "trainer.packing_max_tokens": 4096}')
    f = by_rule(run(root, lib))["config.pack-budget-below-context"]
    assert f.numbers["arithmetic"] == "4096 < 16384"


def test_token_counts_written_with_k(tmp_path, lib):
    report = run(write_run(tmp_path / "run", {"inference.max_context_length": "64K"}, "nested"), lib)
    assert report.config["inference.max_context_length"]["value"] == 65536


def _cli(*args: str):
    return subprocess.run([sys.executable, "-m", "triage", *args], capture_output=True, text=True)


@pytest.mark.parametrize("content,message", [
    ("inference:\n  max_context_length: [1\n", "bad.yaml:3: invalid YAML/JSON: expected ',' or ']'"),
    ("inference:\n  max_context_length: lots\n", "bad.yaml:2: inference.max_context_length: expected a whole number, got 'lots'"),
    ("inference:\n  sglang_mem_fraction_static: 1.5\n", "bad.yaml:2: inference.sglang_mem_fraction_static: expected a fraction between 0 and 1, got 1.5"),
    ("- a\n- b\n", "bad.yaml: not a mapping of settings (top level is a sequence)"),
])
def test_bad_config_option_is_one_line_exit_2(tmp_path, content, message):
    bad = tmp_path / "bad.yaml"
    bad.write_text(content)
    (tmp_path / "logs").mkdir()
    res = _cli(str(tmp_path / "logs"), "--config", str(bad))
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr
    assert res.stderr.startswith("triage: error: ") and message in res.stderr


def test_missing_config_option(tmp_path):
    res = _cli(str(tmp_path), "--config", str(tmp_path / "nope.yaml"))
    assert (res.returncode, res.stderr.strip()) == (2, f"triage: error: {tmp_path / 'nope.yaml'}: config file not found")


def test_bad_discovered_config_is_a_note_not_a_crash(tmp_path, lib):
    root = tmp_path / "run"
    root.mkdir()
    (root / "run.yaml").write_text("inference:\n  max_context_length: lots\n  max_response_length: 512\n")
    report = run(root, lib)
    assert report.errors == ["run.yaml:2: inference.max_context_length: expected a whole number, got 'lots'"]
    assert report.config["inference.max_response_length"]["value"] == 512


def test_run_dir_with_only_a_config_is_valid_input(tmp_path):
    write_run(tmp_path / "run", {"inference.max_context_length": 16384, "miles.rollout_max_prompt_len": 16384,
                                 "inference.max_response_length": 512}, "nested")
    res = _cli(str(tmp_path / "run"), "-v")
    out = " ".join(res.stdout.split())  # the terminal report wraps long lines
    assert res.returncode == 1
    assert "16384 + 512 = 16896 > 16384" in out
    assert "miles.rollout_max_prompt_len = 16384 [config run.yaml:5]" in out
    assert "inference.max_context_length = 16384 config run.yaml:2" in out  # the configuration section
