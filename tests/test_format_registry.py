"""One registry of formats (report/__init__.py): the CLI's --format choices and extra-output flags come from it, so
adding a format is its module and one register() line. One gate (report/gate.py) decides every exit code."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest
from realcases import case, cli  # noqa: F401  (cli is a fixture)

from triage import cli as cli_module
from triage import report as registry
from triage.model import Finding
from triage.report import gate


@pytest.fixture
def shout(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """A throwaway format: the top finding's rule, shouted. Registered, and the CLI rebuilt from the registry."""
    module = types.ModuleType("shout_format")
    module.render = lambda report, options: "\n".join(f.rule.upper() for f in report.findings) + "\n"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "shout_format", module)
    monkeypatch.setattr(registry, "REGISTRY", dict(registry.REGISTRY))
    registry.register("shout", "shout_format", "Also write the shouted rules here.")
    monkeypatch.setattr(cli_module, "app", cli_module.build_app())


def test_a_registered_format_is_a_format_choice_and_an_extra_output(shout, cli, tmp_path: Path) -> None:  # noqa: F811
    r = cli(case("004"), "--format", "shout")
    assert r.code == 1 and r.out == "TRAINER.CUDA-OOM\n"
    target = tmp_path / "rules.txt"
    r = cli(case("004"), "--shout", target)
    assert r.code == 1 and r.out.startswith("triage: error: trainer-oom")
    assert target.read_text() == "TRAINER.CUDA-OOM\n"
    r = cli("scan", "--help")
    assert "--shout" in r.out and "Also write the shouted rules here." in r.out
    assert "text|json|markdown|html|sarif|junit|github|gitlab|shout|auto" in r.out


def test_without_it_the_choice_and_the_flag_do_not_exist(cli) -> None:  # noqa: F811
    assert cli(case("004"), "--format", "shout").code == 2
    assert cli(case("004"), "--shout", "x").code == 2


def test_every_built_in_format_but_text_and_github_is_an_extra_output() -> None:
    assert [s.name for s in registry.extras()] == ["json", "markdown", "html", "sarif", "junit", "gitlab"]
    assert registry.choices()[-1] == "auto" and registry.resolve("auto", {"GITHUB_ACTIONS": "true"}) == "github"


def test_sarif_category_and_max_chars_reach_the_render_options(cli, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    seen: list[registry.RenderOptions] = []
    real, real_pieces = registry.render, registry.render_pieces
    monkeypatch.setattr("triage.report.outputs.render", lambda fmt, rep, opts: seen.append(opts) or real(fmt, rep, opts))
    monkeypatch.setattr("triage.report.outputs.render_pieces",  # json is written as it is made (render_pieces)
                        lambda fmt, rep, opts: seen.append(opts) or real_pieces(fmt, rep, opts))
    assert cli(case("004"), "--format", "json", "--sarif-category", "nightly/8xH100", "--max-chars", "jira").code == 1
    assert (seen[0].sarif_category, seen[0].max_chars) == ("nightly/8xH100", 32767)
    assert cli(case("004"), "--format", "json", "--max-chars", "5000").code == 1
    assert (seen[1].sarif_category, seen[1].max_chars) == (None, 5000)
    r = cli(case("004"), "--max-chars", "lots")
    assert r.code == 2 and r.err == "triage: error: --max-chars: a positive number of characters or a preset " \
                                    "(jira (32767)), not 'lots'\n"


def _f(severity: str, known: bool = False) -> Finding:
    return Finding(rule="r", category="other", severity=severity, title="t", known=known)


@pytest.mark.parametrize(("severities", "fail_on", "code"), [
    ([], "error", 0), (["info"], "warning", 0), (["warning"], "error", 0), (["warning"], "warning", 1),
    (["error"], "error", 1), (["error"], "never", 0), (["info", "error"], "error", 1),
])
def test_the_gate(severities: list[str], fail_on: str, code: int) -> None:
    findings = [_f(s) for s in severities]
    assert gate.scan_exit(findings, fail_on) == code
    assert gate.scan_exit(findings, fail_on, wrote_baseline=True) == 0
    assert gate.diff_exit([{"severity": s} for s in severities], fail_on) == code
    worst = min(severities, key=["error", "warning", "info"].index) if severities else None
    assert gate.exit_code(worst, fail_on) == code


def test_a_baselined_finding_never_gates() -> None:
    assert gate.scan_exit([_f("error", known=True)], "error") == 0
    assert gate.diff_exit([{"severity": "error", "known": True}], "error") == 0
    assert gate.budget_exit([_f("warning")]) == 0 and gate.budget_exit([_f("error")]) == 1


def test_every_user_error_is_one_line_and_exit_2_from_one_place(cli, tmp_path: Path) -> None:  # noqa: F811
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    for args, message in [
        ((tmp_path / "missing",), f"{tmp_path / 'missing'}: no such file or directory"),
        ((tmp_path / "a\n::error::b",), f"{tmp_path}/a\\x0a::error::b: no such file or directory"),  # one line
        (("explain", "no-such-thing"), "no-such-thing: not a rule id, category or knob (try `triage rules list`)"),
        (("budget", "--context", "0", "--response", "1"), "--context must be a positive number of tokens, got 0"),
        (("diff", bad, bad), f"{bad}: not a triage JSON report (no 'findings' list; write one with --format json)"),
        ((case("004"), "--baseline", bad), f"{bad}: not a triage baseline (expected {{\"triage_baseline\": 1, "
                                           "\"entries\": [...]}; write one with --write-baseline)"),
    ]:
        r = cli(*args)
        assert (r.code, r.err) == (2, f"triage: error: {message}\n"), args


def test_a_format_whose_flag_is_already_an_option_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "REGISTRY", dict(registry.REGISTRY))
    registry.register("export", "triage.report.json_format", "Also write it here.")
    with pytest.raises(ValueError, match="format 'export': its extra-output flag --export is already an option"):
        cli_module.build_app()
