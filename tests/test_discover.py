"""discover.py: every file accounted for, kinds from name and content, binaries and specials skipped."""

from __future__ import annotations

import os

from triage.discover import decide_kind, discover


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
