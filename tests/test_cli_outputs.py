"""The scan command's contract: every exit code, extra outputs from one run agreeing, nothing secret printed."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from realcases import case, cli, copy_case  # noqa: F401  (cli is a fixture)

from triage.report import FORMATS


@pytest.mark.parametrize(("name", "args", "code"), [
    ("016", [], 0),                      # healthy
    ("004", [], 1),                      # an error
    ("004", ["--fail-on", "never"], 0),
    ("036", [], 0),                      # a warning does not fail the default gate
    ("036", ["--fail-on", "warning"], 1),
    ("036", ["--fail-on", "error"], 0),
])
def test_exit_code_follows_the_gate(cli, name: str, args: list[str], code: int) -> None:  # noqa: F811
    assert cli(case(name), *args).code == code


def test_usage_and_input_errors_exit_2_with_one_line(cli, tmp_path: Path) -> None:  # noqa: F811
    for args in ([tmp_path / "missing"], [case("004"), "--output", tmp_path / "no" / "dir" / "r.txt"],
                 [case("004"), "--sarif", tmp_path / "no" / "r.sarif"], [case("004"), "--format", "yaml"]):
        r = cli(*args)
        assert r.code == 2, args
        assert "Traceback" not in r.err and r.err.strip(), args
    r = cli(case("004"), "--output", tmp_path / "no" / "dir" / "r.txt")
    assert r.err.count("\n") == 1 and "cannot write" in r.err


def test_output_onto_a_directory_is_exit_2(cli, tmp_path: Path) -> None:  # noqa: F811
    r = cli(case("004"), "--junit", tmp_path)
    assert r.code == 2 and r.err.startswith(f"triage: error: {tmp_path}: cannot write")


def test_one_run_writes_every_extra_output_and_they_agree(cli, tmp_path: Path) -> None:  # noqa: F811
    out = {f: tmp_path / f"r.{f}" for f in ("json", "markdown", "html", "sarif", "junit", "gitlab")}
    args = [a for f, p in out.items() for a in (f"--{f}", p)]
    r = cli(case("004"), *args)
    assert r.code == 1 and r.out.startswith("triage: error: trainer-oom")
    report = json.loads(out["json"].read_text())
    fps = [f["fingerprint"] for f in report["findings"]]
    sarif = json.loads(out["sarif"].read_text())
    assert [x["partialFingerprints"]["triage/v1"] for x in sarif["runs"][0]["results"]] == fps
    assert [x["fingerprint"] for x in json.loads(out["gitlab"].read_text())] == fps
    junit = ET.parse(out["junit"]).getroot()
    assert [c.get("name") for c in junit.iter("testcase") if c.find("failure") is not None] == ["trainer.cuda-oom in train.log"]
    assert "train.log:10" in out["markdown"].read_text() and "train.log:10" in out["html"].read_text()


def test_format_and_output_file(cli, tmp_path: Path) -> None:  # noqa: F811
    target = tmp_path / "r.sarif"
    r = cli(case("004"), "--format", "sarif", "--output", target)
    assert r.code == 1 and r.out == ""
    assert json.loads(target.read_text())["version"] == "2.1.0"


SECRET_LOG = ("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB while calling "
              "https://user:hunter2pass@judge.internal/v1 with HF_TOKEN=hf_abcdefghijklmnopqrstuvwx\n"
              "ERROR judge call failed: Authorization: Bearer sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX\n")
SECRETS = ("hunter2pass", "hf_abcdefghijklmnopqrstuvwx", "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX", "wandbkey0123456789")


@pytest.mark.parametrize("fmt", FORMATS)
def test_no_format_prints_a_secret(cli, tmp_path: Path, fmt: str) -> None:  # noqa: F811
    run = copy_case("004", tmp_path / "run")
    (run / "driver.log").write_text(SECRET_LOG)
    cfg = tmp_path / "run.yaml"
    cfg.write_text("verifier:\n  reward_function: 'hf_abcdefghijklmnopqrstuvwx'\n"
                   "wandb:\n  api_key: wandbkey0123456789\n")
    target = tmp_path / "out"
    r = cli(run, "--config", cfg, "--format", fmt, "--output", target)
    assert r.code in (0, 1), r.err
    text = target.read_text()
    for secret in SECRETS:
        assert secret not in text, (fmt, secret)
    cli(run, "--config", cfg, "--format", fmt, "--output", target, "--no-redact")
    assert any(secret in target.read_text() for secret in SECRETS), fmt  # the check above could fail


def test_explain_takes_a_flag_alias_and_rules_check_fails_a_bad_library(cli, tmp_path: Path) -> None:  # noqa: F811
    r = cli("explain", "--max-running-requests")
    assert r.code == 0 and r.out.startswith("inference.sglang_max_running_requests")
    r = cli("explain", "trainer.cuda-oom")
    assert r.code == 0 and "will not help: more inference GPUs" in r.out
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "mine.yaml").write_text("rules:\n  - id: mine.broken\n    category: nowhere\n")
    r = cli("rules", "check", rules)
    assert r.code == 1 and "mine.broken" in r.out
    assert cli("rules", "check", tmp_path / "none").code == 2
    assert cli("rules", "check").code == 0
