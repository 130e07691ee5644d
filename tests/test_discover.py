"""discover.py: every file accounted for, kinds from name and content, binaries and specials skipped."""

from __future__ import annotations

import os

from triage.input.discover import decide_kind, discover


def test_kind_from_name_and_content() -> None:
    assert decide_kind("judge.log", "RequestError: ContextWindowExceededError") == "verifier"
    assert decide_kind("train.log", "torch.OutOfMemoryError") == "trainer"
    assert decide_kind("sglang-engine-0.log", "") == "sglang"
    assert decide_kind("run.yaml", "inference: {}") == "config"
    # a Ray worker file named generically, full of SGLang lines, is an engine log
    sglang_text = "\n".join(["[2025-06-26 02:16:20 TP0] Decode batch. #running-req: 1, #token: 2, token usage: 0.51"] * 5)
    assert decide_kind("worker-3f2a.err", sglang_text) == "sglang"
    # one file holding several Ray actors is the driver's combined log
    driver = "(SGLangEngine pid=1) a\n(MegatronTrainRayActor pid=2) b\n"
    assert decide_kind("output.log", driver) == "driver"


def test_walk_reports_binaries_specials_and_dangling_links(tmp_path) -> None:
    run = tmp_path / "run"
    (run / "ckpt").mkdir(parents=True)
    (run / "train.log").write_text("step:1 - timing_s/step:10.0\n")
    (run / "ckpt" / "model.pt").write_bytes(b"PK\x03\x04" + b"\x00" * 100)
    (run / "ckpt" / "weights.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{\"a\":1}" + b"\x00" * 64)
    os.mkfifo(run / "pipe")
    os.symlink(run / "missing.log", run / "dangling.log")
    os.symlink("..", run / "ckpt" / "loop")
    (run / "empty.log").write_text("")
    files, problems = discover([str(run)])
    by = {f.rel: f for f in files}
    assert problems == []
    assert by["train.log"].status == "read" and by["train.log"].kind == "trainer"
    assert by[os.path.join("ckpt", "model.pt")].status == "skipped"
    assert "zip" in by[os.path.join("ckpt", "model.pt")].reason
    assert by[os.path.join("ckpt", "weights.safetensors")].status == "skipped"
    assert by["pipe"].status == "skipped" and "FIFO" in by["pipe"].reason
    assert by["dangling.log"].status == "unreadable" and by["dangling.log"].reason == "dangling symlink"
    assert by[os.path.join("ckpt", "loop")].status == "skipped" and "not followed" in by[os.path.join("ckpt", "loop")].reason
    assert by["empty.log"].kind == "empty"


def test_missing_path_is_a_problem_not_a_crash(tmp_path) -> None:
    files, problems = discover([str(tmp_path / "nope")])
    assert files == [] and problems == [f"{tmp_path / 'nope'}: no such file or directory"]


def test_several_roots_keep_their_names_apart(tmp_path) -> None:
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "train.log").write_text("x\n")
    files, _ = discover([str(tmp_path / "a"), str(tmp_path / "b")])
    assert sorted(f.rel for f in files) == [str(tmp_path / "a" / "train.log"), str(tmp_path / "b" / "train.log")]
    single, _ = discover([str(tmp_path / "a")])
    assert [f.rel for f in single] == ["train.log"]


# vLLM V1 (0.10+) prefixes its processes like Ray actors; real lines from a public thread (vLLM v0.15.1, see
# fixtures/results/SOURCES.md).
VLLM_V1 = (
    "(APIServer pid=11980) INFO 02-12 19:33:40 [utils.py:325] non-default args: {'model': 'openai/whisper-large-v3'}\n"
    "(APIServer pid=11980) WARNING 02-12 19:33:44 [interface.py:470] Using 'pin_memory=False' as WSL is detected. "
    "This may slow down the performance.\n"
    "(EngineCore_DP0 pid=12321) INFO 02-12 19:34:53 [core.py:96] Initializing a V1 LLM engine (v0.15.1) with config: "
    "model='openai/whisper-large-v3', speculative_config=None\n"
)
# verl's driver log: TaskRunner lines (verl main_ppo, public excerpts listed in fixtures/results/SOURCES.md; the step
# line is verl's tracking.py console format).
VERL_DRIVER = (
    "2025-04-02 21:02:59,766\tINFO worker.py:1843 -- Started a local Ray instance. View the dashboard at "
    "http://127.0.0.1:8265 \n"
    "(TaskRunner pid=15334) /opt/nas/s/enyu/verl_askActively/verl/trainer/main_ppo.py:258: UserWarning: Disabled critic "
    "as algorithm.adv_estimator != gae. If it is not intended, please set critic.enable=True\n"
    "(TaskRunner pid=15334)   use_critic=need_critic(config),\n"
    "(TaskRunner pid=15334) step:1 - actor/pg_loss:0.01 - critic/score/mean:0.25 - timing_s/step:61.2\n"
)


def test_vllm_v1_process_prefixes_make_a_vllm_log_not_a_ray_driver_log() -> None:
    assert decide_kind("serve.log", VLLM_V1) == "vllm"
    assert decide_kind("console.txt", VLLM_V1) == "vllm"
    # real Ray actors beside them still make a driver's combined log
    assert decide_kind("output.log", VLLM_V1 + "(TaskRunner pid=1) a\n(WorkerDict pid=2) b\n") == "driver"


def test_verl_driver_log_by_content_whatever_its_name() -> None:
    assert decide_kind("log.txt", VERL_DRIVER) == "driver"
    assert decide_kind("nohup.out", VERL_DRIVER) == "driver"


def test_wandb_run_directory_files(tmp_path) -> None:
    run = tmp_path / "wandb" / "run-20250601_101010-a1b2c3d4"
    (run / "files").mkdir(parents=True)
    (run / "logs").mkdir()
    (run / "files" / "output.log").write_text(VERL_DRIVER.split("\n", 1)[1])
    (run / "files" / "wandb-summary.json").write_text('{"_step": 40, "critic/score/mean": 0.0, "_runtime": 900}')
    (run / "files" / "config.yaml").write_text("_wandb:\n  value:\n    cli_version: 0.19.1\ntrainer:\n  value:\n    total_epochs: 1\n")
    (run / "files" / "requirements.txt").write_text("torch==2.6.0\nverl==0.4.0\n")
    (run / "logs" / "debug-internal.log").write_text("2025-06-01 10:10:10 ERROR   sender: upload failed, retrying\n")
    (run / "logs" / "debug.log").write_text("2025-06-01 10:10:10,000 INFO    MainThread:1 [wandb_init.py:init():761] starting\n")
    (run / "run-a1b2c3d4.wandb").write_bytes(b":W&B\x00\x01\x02\x03" + bytes(range(32)) * 4)
    files, _ = discover([str(tmp_path)])
    by = {f.rel.split("a1b2c3d4/", 1)[-1]: f for f in files}
    assert by["files/output.log"].kind == "driver"
    assert by["files/wandb-summary.json"].kind == "metrics"
    assert by["files/config.yaml"].kind == "config"
    assert by["files/requirements.txt"].kind == "text"
    assert by["logs/debug-internal.log"].status == "skipped" and "wandb" in by["logs/debug-internal.log"].reason
    assert by["logs/debug.log"].status == "skipped"
    assert by["run-a1b2c3d4.wandb"].status == "skipped"
