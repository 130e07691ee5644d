"""patterns.py: a broken rule file is one clear error naming the file, the line, the rule and the problem."""

from __future__ import annotations

import pytest
from conftest import USER_RULE

from triage.library.rules import LibraryError, load_library

GOOD = USER_RULE


def _write(tmp_path, text: str):
    d = tmp_path / "rules"
    d.mkdir()
    (d / "mine.yaml").write_text(text)
    return d


def test_user_rule_is_added(tmp_path) -> None:
    lib = load_library([_write(tmp_path, GOOD)])
    assert lib.rule("user.my-rule").search("MyFailure: 3").group("code") == "3"


@pytest.mark.parametrize("change, message", [
    (("severity: error", "severity: fatal"), "mine.yaml:2: rule user.my-rule: severity 'fatal' is not one of"),
    (("match: 'MyFailure: (?P<code>\\d+)'", "match: 'MyFailure: (?P<code>\\d+'"), "rule user.my-rule: match: bad regex"),
    (("    title: My failure\n", "    title: My failure\n    colour: red\n"), "rule user.my-rule: unknown key(s): colour"),
    (("knobs: []", "knobs: [no.such_knob]"), "rule user.my-rule: knob 'no.such_knob' is not in knobs.yaml"),
    (("category: other", "category: memory"), "rule user.my-rule: category 'memory' is not one of"),
    (("    anchor: [\"MyFailure\"]\n", ""), "rule user.my-rule: a line rule needs 'anchor'"),
])
def test_invalid_rules_are_reported_with_file_line_and_rule(tmp_path, change, message) -> None:
    with pytest.raises(LibraryError) as e:
        load_library([_write(tmp_path, GOOD.replace(*change))])
    assert message in str(e.value)
    assert str(e.value).startswith(str(tmp_path / "rules" / "mine.yaml"))


def test_duplicate_ids_in_one_directory(tmp_path) -> None:
    body = GOOD + GOOD.split("rules:\n", 1)[1]
    with pytest.raises(LibraryError, match=r"mine.yaml:12: rule user.my-rule: duplicate id \(first at .*mine.yaml:2\)"):
        load_library([_write(tmp_path, body)])


def test_invalid_yaml(tmp_path) -> None:
    with pytest.raises(LibraryError, match=r"mine.yaml:\d+: invalid YAML"):
        load_library([_write(tmp_path, "rules:\n  - id: [unclosed\n")])
