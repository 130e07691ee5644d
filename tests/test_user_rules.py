"""User rule files (`--patterns DIR`): broken ones are refused with `file:line: rule <id>: problem` and exit 2;
a runaway regex is stopped, reported as a rule error, and the rest of the analysis completes."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from triage.analyze import Settings, analyze
from triage.library.rules import LibraryError, load_library

DISK = "OSError: [Errno 28] No space left on device"
GOOD = """\
  - id: user.widget-broke
    category: other
    severity: error
    title: The widget broke
    anchor: ["widget broke"]
    match: 'widget broke: (?P<code>\\d+)'
    knobs: []
    explain: The widget broke.
    examples:
      match: ["widget broke: 7"]
"""


def _rules(tmp_path: Path, body: str) -> Path:
    folder = tmp_path / "rules"
    folder.mkdir(exist_ok=True)
    (folder / "mine.yaml").write_text("rules:\n" + body)
    return folder


def _error(tmp_path: Path, body: str) -> str:
    folder = _rules(tmp_path, body)
    with pytest.raises(LibraryError) as e:
        load_library([folder])
    return str(e.value).replace(str(folder) + "/", "")


@pytest.mark.parametrize("change, message", [
    (("title: The widget broke\n", "title: The widget broke\n    colour: red\n"),
     "mine.yaml:2: rule user.widget-broke: unknown key(s): colour"),
    (("    severity: error\n", ""), "mine.yaml:2: rule user.widget-broke: missing required key 'severity'"),
    (("severity: error", "severity: fatal"),
     "mine.yaml:2: rule user.widget-broke: severity 'fatal' is not one of error, warning, info"),
    (("category: other", "category: gpu"),
     "mine.yaml:2: rule user.widget-broke: category 'gpu' is not one of prompt-budget, serving-oom-retraction, "
     "trainer-oom, cold-start, generation-tail, verifier, other, unclassified"),
    (("(?P<code>\\d+)", "(?P<code>\\d+"),
     "mine.yaml:2: rule user.widget-broke: match: bad regex (missing ) at position 26)"),
    (("knobs: []", "knobs: [gpu.speed]"), "mine.yaml:2: rule user.widget-broke: knob 'gpu.speed' is not in knobs.yaml"),
    (("id: user.widget-broke", "id: Widget"),
     "mine.yaml:2: rule Widget: id must be dotted lower-case words, e.g. serving.kv-retraction"),
])
def test_a_broken_rule_is_refused_with_file_line_rule_and_problem(tmp_path: Path, change: tuple[str, str],
                                                                   message: str) -> None:
    assert change[0] in GOOD
    assert _error(tmp_path, GOOD.replace(*change)) == message


def test_a_duplicate_id_names_both_places(tmp_path: Path) -> None:
    folder = _rules(tmp_path, GOOD + GOOD)
    with pytest.raises(LibraryError) as e:
        load_library([folder])
    assert str(e.value) == (f"{folder}/mine.yaml:12: rule user.widget-broke: duplicate id "
                            f"(first at {folder}/mine.yaml:2)")


def test_a_duplicate_id_across_two_files_of_one_folder_is_refused(tmp_path: Path) -> None:
    folder = _rules(tmp_path, GOOD)
    (folder / "more.yaml").write_text("rules:\n" + GOOD)
    with pytest.raises(LibraryError) as e:
        load_library([folder])
    assert str(e.value) == f"{folder}/more.yaml:2: rule user.widget-broke: duplicate id (first at {folder}/mine.yaml:2)"


def test_invalid_yaml_names_the_line(tmp_path: Path) -> None:
    message = _error(tmp_path, GOOD + "  - id: [unclosed\n")  # PyYAML and libyaml word the problem differently
    assert message.startswith("mine.yaml:13: invalid YAML: ") and "expected ',' or ']'" in message


def test_cli_exits_2_with_one_line_and_no_traceback(tmp_path: Path) -> None:
    folder = _rules(tmp_path, GOOD.replace("severity: error", "severity: fatal"))
    (tmp_path / "run.log").write_text(DISK + "\n")
    proc = subprocess.run([sys.executable, "-m", "triage", str(tmp_path / "run.log"), "--patterns", str(folder)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr == (f"triage: error: {folder}/mine.yaml:2: rule user.widget-broke: severity 'fatal' is not "
                           "one of error, warning, info\n")


SLOW_MATCH = """\
  - id: user.slow-match
    category: other
    severity: error
    title: Catastrophic match
    anchor: ["aaaa"]
    match: '(a|aa)+$'
    knobs: []
    explain: Backtracks exponentially on a run of a's that does not end the line.
    examples:
      match: ["aaaa"]
"""
SLOW_NEAR = """\
  - id: user.slow-near
    category: other
    severity: error
    title: Catastrophic near
    anchor: ["widget broke"]
    match: 'widget broke'
    near: '(b|bb)+$'
    knobs: []
    explain: Its near condition backtracks exponentially.
    examples:
      match: ["widget broke"]
"""


def _hostile_log(path: Path, n: int = 200) -> None:
    lines = [DISK]
    for i in range(n):  # distinct lines, so no two fold into one; the ERROR line is context for `near`
        lines += [f"{'a' * 40}! {i}", f"ERROR {'b' * 40}! {i}", f"widget broke {i}"]
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("rule, what", [(SLOW_MATCH, "match"), (SLOW_NEAR, "near/not_near")])
def test_a_runaway_rule_regex_is_stopped_reported_and_the_rest_completes(tmp_path: Path, rule: str,
                                                                         what: str) -> None:
    folder = _rules(tmp_path, rule)
    _hostile_log(tmp_path / "run.log")
    start = time.perf_counter()
    report = analyze(Settings(paths=[str(tmp_path / "run.log")], patterns=[folder]))
    elapsed = time.perf_counter() - start
    assert elapsed < 10  # 200 hostile lines at a 0.25 s timeout each would take 50 s: the rule is switched off
    rid = "user.slow-match" if what == "match" else "user.slow-near"
    errors = [e for e in report.errors if rid in e]
    assert len(errors) == 1
    assert errors[0].startswith(f"{folder}/mine.yaml:2: rule {rid}: {what} regex timed out (0.25s) on run.log:")
    assert errors[0].endswith("rule disabled for the rest of the run (catastrophic backtracking?)")
    assert "other.disk-full" in [f.rule for f in report.findings]


def test_rules_check_reports_a_regex_that_runs_away_on_its_own_example(tmp_path: Path) -> None:
    folder = _rules(tmp_path, SLOW_MATCH.replace('match: ["aaaa"]', f'match: ["aaaa"]\n      no_match: ["{"a" * 40}!"]'))
    proc = subprocess.run([sys.executable, "-m", "triage", "rules", "check", str(folder)], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 1
    assert f"{folder}/mine.yaml:2: rule user.slow-match: match regex timed out on its own example" in proc.stdout


@pytest.mark.parametrize("change, message", [
    (("explain: The widget broke.\n", "explain: The widget broke.\n    priority: high\n"),
     "priority must be a whole number >= 0, got 'high'"),
    (("explain: The widget broke.\n", "explain: The widget broke.\n    min_count: 2.5\n"),
     "min_count must be a whole number >= 1, got 2.5"),
    (("explain: The widget broke.\n", "explain: The widget broke.\n    info_below: true\n"),
     "info_below must be a whole number >= 0, got True"),
    (("knobs: []", "knobs: {verifier.timeout: 30}"), "knobs: each entry must be a string, got {'verifier.timeout': 30}"
     " (quote a text that holds ': ')"),
    (("explain: The widget broke.\n", "explain: The widget broke.\n    when: [{field: code, min: abc}]\n"),
     "when: min must be a number, got 'abc'"),
    (("explain: The widget broke.\n", "explain: The widget broke.\n    when: [{field: code, at_least: 3}]\n"),
     "when: unknown key(s): at_least"),
    (("explain: The widget broke.\n", "explain: The widget broke.\n    not_knobs: [memory: not this]\n"),
     "not_knobs: each entry must be a string, got {'memory': 'not this'} (quote a text that holds ': ')"),
    (("explain: The widget broke.\n", "explain: The widget broke.\n    side: [engine, gpu]\n"),
     "side 'gpu' is not one of engine, trainer, driver, rollout, verifier, unknown"),
    (("title: The widget broke", "title: [The, widget]"), "title must be non-empty text, got ['The', 'widget']"),
    (("explain: The widget broke.\n", "explain: The widget broke.\n    reveals: [verifier.timeout]\n"),
     "reveals must be a mapping, got ['verifier.timeout']"),
    (('match: ["widget broke: 7"]', 'match: ["widget broke: 7"]\n      must_match: ["x"]'),
     "examples: unknown key(s): must_match"),
    (('anchor: ["widget broke"]', 'anchor: [""]'),
     "anchor '' is shorter than 3 characters: the prefilter would pass every line (give a longer literal that every "
     "matching line holds)"),
    (('anchor: ["widget broke"]', 'anchor: ["wi"]'),
     "anchor 'wi' is shorter than 3 characters: the prefilter would pass every line (give a longer literal that every "
     "matching line holds)"),
    (('anchor: ["widget broke"]', 'anchor: ["   "]'),
     "anchor '   ' is only blanks: the prefilter would pass every line (give a longer literal that every matching "
     "line holds)"),
    (('anchor: ["widget broke"]', 'anchor: [12]'), "anchor: each entry must be a string, got 12"),
])
def test_a_wrong_typed_field_is_refused_at_load_with_file_line_rule(tmp_path: Path, change: tuple[str, str],
                                                                    message: str) -> None:
    assert change[0] in GOOD
    assert _error(tmp_path, GOOD.replace(*change)) == f"mine.yaml:2: rule user.widget-broke: {message}"


@pytest.mark.parametrize("anchor", ["", "wi"])
def test_a_short_anchor_is_exit_2_in_a_run_and_a_failure_in_rules_check(tmp_path: Path, anchor: str) -> None:
    folder = _rules(tmp_path, GOOD.replace('anchor: ["widget broke"]', f'anchor: ["{anchor}"]'))
    (tmp_path / "run.log").write_text(DISK + "\nwidget broke: 7\n")
    expected = (f"{folder}/mine.yaml:2: rule user.widget-broke: anchor {anchor!r} is shorter than 3 characters: the "
                "prefilter would pass every line (give a longer literal that every matching line holds)")
    run = subprocess.run([sys.executable, "-m", "triage", str(tmp_path / "run.log"), "--patterns", str(folder)],
                         capture_output=True, text=True, timeout=60)
    assert (run.returncode, run.stdout, run.stderr) == (2, "", f"triage: error: {expected}\n")
    check = subprocess.run([sys.executable, "-m", "triage", "rules", "check", str(folder)], capture_output=True,
                           text=True, timeout=60)
    assert (check.returncode, check.stdout) == (1, expected + "\n")


def test_a_user_category_file_is_validated_like_the_built_in_one(tmp_path: Path) -> None:
    folder = _rules(tmp_path, GOOD)
    (folder / "categories.yaml").write_text("categories:\n  gpu-thermal:\n    knobs: [gpu.fans]\n")
    with pytest.raises(LibraryError) as e:
        load_library([folder])
    assert str(e.value) == f"{folder}/categories.yaml: category gpu-thermal: knob 'gpu.fans' is not in knobs.yaml"


def test_more_anchors_than_the_c_prefilter_holds_are_read_by_the_python_scanner(tmp_path: Path) -> None:
    """A user library of 1,200 rules, each with its own anchor, takes the built-in library past what the C matcher
    files (MAX_NEEDLES): every file is still read, by the Python scanner, and the report says why; before, every
    file was marked partial ("at most 1024 needles") and nothing was found."""
    native = pytest.importorskip("triage.scan._linescan")
    many = "".join(GOOD.replace("user.widget-broke", f"user.widget-{i}-broke")
                   .replace("widget broke", f"widget {i} broke") for i in range(1200))
    folder = _rules(tmp_path, many)
    run = tmp_path / "run"
    run.mkdir()
    (run / "train.log").write_text("step 1\n" + DISK + "\nwidget 1199 broke: 42\n")
    rep = analyze(Settings(paths=[str(run)], patterns=[folder]))
    assert [f.status for f in rep.files] == ["read"]
    ids = {f.rule for f in rep.findings}
    assert {"user.widget-1199-broke", "other.disk-full"} <= ids
    hit = next(f for f in rep.findings if f.rule == "user.widget-1199-broke")
    assert (hit.evidence[0].file, hit.evidence[0].line) == ("train.log", 3)
    notes = [e for e in rep.errors if "C prefilter" in e]
    assert len(notes) == 1 and notes[0].startswith("rules: ")
    assert notes[0].endswith(f"anchors are more than the C prefilter holds ({native.MAX_NEEDLES} needles): "
                             "every file is read by the Python scanner")


def test_the_built_in_library_fits_the_c_prefilter_with_room_for_user_rules() -> None:
    native = pytest.importorskip("triage.scan._linescan")
    from triage.checks import load_checked_library
    from triage.scan.scanner import Scanner

    scanner = Scanner(load_checked_library(None))
    assert scanner.needles is not None and scanner.notes == []
    assert len(scanner.needles.items) <= native.MAX_NEEDLES - 500
