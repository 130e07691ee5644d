"""The fixed cost of a run, asserted as behaviour: the built-in library compiles a regex only when a line needs
it, while every load-time guarantee holds (a user's library, `rules check`, the built-in one in this suite);
the command line parses without pydantic and imports no report machinery it does not use."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT, USER_RULE

import triage.library.rules as patterns
from triage.input.read import read_text
from triage.library.rules import LibraryError, Pattern, load_library
from triage.model import LogFile
from triage.scan.scanner import Scanner


def _compiled(lib) -> set[int]:
    return {id(p) for p in lib.patterns() if p.compiled}


def test_builtin_library_compiles_no_regex_until_a_line_needs_it() -> None:
    lib = load_library()
    assert len(lib.patterns()) > 100
    assert not _compiled(lib)
    rule = next(r for r in lib.rules if r.match and r.near is None)
    line = rule.examples["match"][0]
    scanner = Scanner(lib)
    assert not _compiled(lib)  # building the scanner compiles no rule regex either
    res = scanner.scan(LogFile(path="<t>", rel="<t>", kind="text"), read_text((line + "\n").encode()))
    assert rule.id in {h.rule for h in res.hits}
    compiled = _compiled(lib)
    assert id(rule.match[0]) in compiled
    tried = [r for r in lib.rules if r.match and any(a in line for a in r.anchors)]  # the line holds their anchor
    assert compiled <= {id(p) for r in tried for p in r.patterns()} | {id(p) for p in lib.sides.values()}
    assert len(compiled) < len(lib.patterns()) / 4


def test_compile_all_compiles_every_builtin_regex() -> None:
    """The guarantee that a broken built-in regex fails this suite (as `triage rules check` would)."""
    lib = load_library(compile_all=True)
    assert all(p.compiled for p in lib.patterns())
    assert len({r.id for r in lib.rules}) == len(lib.rules)


def _builtin_copy(tmp_path: Path, monkeypatch, old: str, new: str, file: str) -> Path:
    copy = tmp_path / "builtin"
    shutil.copytree(patterns.builtin_dir(), copy)
    text = (copy / file).read_text(encoding="utf-8")
    assert old in text
    (copy / file).write_text(text.replace(old, new, 1), encoding="utf-8")
    monkeypatch.setattr(patterns, "builtin_dir", lambda: copy)
    return copy


def test_a_broken_builtin_regex_fails_compile_all_with_file_line_and_rule(tmp_path, monkeypatch) -> None:
    line = "    match: 'No space left on device|"
    copy = _builtin_copy(tmp_path, monkeypatch, line, line.replace("'", "'(", 1), "other.yaml")
    lib = load_library()  # lazy: loading alone does not compile it
    rule = next(r for r in lib.rules if r.match and r.match[0].pattern.startswith("(No space left"))
    assert rule.origin.startswith(f"{copy / 'other.yaml'}:")
    with pytest.raises(LibraryError) as e:
        load_library(compile_all=True)
    assert str(e.value).startswith(f"{rule.origin}: rule {rule.id}: match: bad regex (")
    with pytest.raises(LibraryError) as e:  # and if a run meets it first, the same message
        rule.search("No space left on device")
    assert str(e.value).startswith(f"{rule.origin}: rule {rule.id}: match: bad regex (")


def test_rules_check_compiles_the_whole_builtin_library(tmp_path, monkeypatch) -> None:
    from typer.testing import CliRunner

    from triage.cli import app

    copy = _builtin_copy(tmp_path, monkeypatch, "fragments:\n", "fragments:\n  zz_broken: '(unclosed'\n",
                         "fragments.yaml")
    assert load_library().rules  # nothing uses the fragment: loading is fine, lazily
    result = CliRunner().invoke(app, ["rules", "check"])
    assert result.exit_code == 1
    assert result.output.startswith(f"{copy / 'fragments.yaml'}: fragment zz_broken: bad regex (")


def test_a_broken_fragment_fails_the_load_of_a_user_library(tmp_path, monkeypatch) -> None:
    copy = _builtin_copy(tmp_path, monkeypatch, "fragments:\n", "fragments:\n  zz_broken: '(unclosed'\n",
                         "fragments.yaml")
    user = tmp_path / "rules"
    user.mkdir()
    (user / "mine.yaml").write_text(USER_RULE)
    with pytest.raises(LibraryError, match=rf"^{copy / 'fragments.yaml'}: fragment zz_broken: bad regex \("):
        load_library([user])


def test_an_unknown_fragment_in_the_builtin_library_fails_at_load(tmp_path, monkeypatch) -> None:
    lib = load_library()
    rule = next(r for r in lib.rules if r.match)
    file = Path(rule.origin.rsplit(":", 1)[0]).name
    _builtin_copy(tmp_path, monkeypatch, f"id: {rule.id}\n", f"id: {rule.id}\n    near: '${{no_such_fragment}}'\n",
                  file)
    with pytest.raises(LibraryError, match=rf"rule {rule.id}: near: unknown fragment \$\{{no_such_fragment\}}"):
        load_library()


@pytest.mark.parametrize("key, value", [("match", "'MyFailure: (?P<code>\\d+'"), ("near", "'(unclosed'"),
                                        ("not_near", "'[z-a]'")])
def test_a_user_library_with_a_bad_regex_fails_at_load_with_file_and_line(tmp_path, key, value) -> None:
    d = tmp_path / "rules"
    d.mkdir()
    body = USER_RULE.replace("    match: 'MyFailure: (?P<code>\\d+)'\n", f"    match: 'MyFailure'\n    {key}: {value}\n")
    if key == "match":
        body = USER_RULE.replace("'MyFailure: (?P<code>\\d+)'", value)
    (d / "mine.yaml").write_text(body)
    with pytest.raises(LibraryError) as e:
        load_library([d])  # no line is scanned: the error is the load's
    assert str(e.value).startswith(f"{d / 'mine.yaml'}:2: rule user.my-rule: {key}: bad regex (")


def test_a_user_library_is_compiled_on_load(tmp_path) -> None:
    d = tmp_path / "rules"
    d.mkdir()
    (d / "mine.yaml").write_text(USER_RULE)
    lib = load_library([d])
    assert all(p.compiled for p in lib.rule("user.my-rule").patterns())
    assert all(p.compiled for p in lib.fragments.values())  # the fragments a user's rules may use
    assert not any(p.compiled for r in lib.rules if r.id != "user.my-rule" for p in r.patterns())


def test_pattern_answers_as_the_compiled_regex_and_keeps_the_timeout() -> None:
    p = Pattern(r"(?P<n>\d+) tokens", "f.yaml:3: rule a.b", "match")
    assert p.pattern == r"(?P<n>\d+) tokens" and not p.compiled
    assert p.search("x 12 tokens", timeout=0.25).group("n") == "12"
    assert p.compiled
    assert p.match("12 tokens") and p.fullmatch("12 tokens") and not p.fullmatch("12 tokens!")
    assert p.groupindex == {"n": 1}
    slow = Pattern(r"(a|aa)+$", "f.yaml:4: rule a.c", "match")
    with pytest.raises(TimeoutError):
        slow.search("a" * 40 + "!", timeout=0.01)
    with pytest.raises(LibraryError, match=r"^f\.yaml:5: rule a\.d: near: bad regex \("):
        Pattern("(x", "f.yaml:5: rule a.d", "near").search("x")
    with pytest.raises(AttributeError):
        p.no_such_attribute  # noqa: B018


# -- the command line ---------------------------------------------------------------------------------------

HEAVY = ("pydantic", "polars", "rich", "markdown_it", "jsonschema", "hypothesis", "xml.etree.ElementTree", "html")


def _modules_after(*args: str) -> list[str]:
    code = ("import sys, json\n"
            f"sys.argv = ['triage', *{list(args)!r}]\n"
            "from triage.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            f"sys.stderr.write(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    return json.loads(p.stderr.strip().splitlines()[-1])


def test_a_json_run_imports_neither_pydantic_nor_unused_report_machinery() -> None:
    assert _modules_after(str(FIXTURES / "demo-run"), "--format", "json", "--fail-on", "never") == []


def test_budget_and_bad_arguments_parse_without_pydantic_until_an_error_needs_wording() -> None:
    assert _modules_after("budget", "--context", "8192", "--response", "1024") == []
    assert _modules_after("rules", "list") == []


def _plain_params():
    import typer

    from triage.cli import _PlainCoercion, app

    root = typer.main.get_command(app)
    out = []

    def walk(cmd, ctx):
        for param in [*cmd.params, cmd.get_help_option(ctx)]:
            if isinstance(getattr(param, "_runtime_param", None), _PlainCoercion):
                out.append((cmd, ctx, param))
        for sub in getattr(cmd, "commands", {}).values():
            walk(sub, sub.context_class(sub, parent=ctx, info_name=sub.name))

    walk(root, root.context_class(root, info_name="triage"))
    return out


SAMPLES = ["", "x", "run dir", "-", "--", "12", "-3", "0012", "+5", " 7", "1_000", "12.0", "١٢", "json", "JSON",
           "never", "bogus", "fixtures", "fixtures/demo-run", "fixtures/demo-run/train.log", "/no/such/path", True,
           False, 0, ("a", "b"), ["12"], []]


def test_every_parameter_coerces_as_typer_itself_does() -> None:
    """The pydantic-free coercion of cli.py against typer's own, value by value: same result or same error."""
    from typer._coercion import build_runtime_param

    params = _plain_params()
    names = {p.name for _, _, p in params}
    assert {"paths", "fmt", "output", "patterns", "fail_on", "context", "name", "help", "verbose"} <= names
    for _cmd, ctx, param in params:
        ours, theirs = param._runtime_param, build_runtime_param(param.type_descriptor)
        for value in [None, param.default, *SAMPLES]:
            got, want = _outcome(ours, value, param, ctx), _outcome(theirs, value, param, ctx)
            assert got == want, (param.name, value)


def _outcome(runtime, value, param, ctx):
    try:
        result = runtime.coerce(value, param=param, ctx=ctx)
        return "ok", type(result), result
    except Exception as e:  # noqa: BLE001
        return "error", type(e), str(getattr(e, "message", e))
