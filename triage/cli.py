"""The command line: parse options, call one library function, render, map to an exit code.

`triage RUN_DIR...` is shorthand for `triage scan RUN_DIR...`.
Exit codes: 0 no finding at the gate severity, 1 at least one, 2 usage or input error.
"""

from __future__ import annotations

import os
import sys
from enum import Enum
from pathlib import Path
from typing import Any, get_args, get_origin

import typer
from typer.core import TyperCommand, TyperGroup

try:  # typer >= 0.28 coerces every value through pydantic; these helpers of its own do not need it
    from typer._coercion import build_runtime_param
    from typer._param_types import coerce_cli_choice, coerce_cli_path
except ImportError:  # an older typer: plain click coercion, nothing to avoid
    build_runtime_param = None


class _Slow(Exception):
    """The value is not one the plain coercion is sure of: typer's own coercion decides (and words the error)."""


class _PlainCoercion:
    """Coerces one parameter's value as typer does, without importing pydantic (60-100 ms of every run).

    Typer 0.29 builds a pydantic TypeAdapter for each parameter it parses, defaults and --help included
    (`_TyperParameter.process_value` -> `get_runtime_param` -> typer/_coercion.py `build_runtime_param`, which
    imports typer/_adapters.py and so pydantic); no setting or annotation avoids it but file types. The
    annotations triage uses need none of it: str, int, bool, Path and str enums, alone or in a list. Their
    values are converted here as typer converts them, with its own helpers (`coerce_cli_choice`,
    `coerce_cli_path`: the same checks and results); a value those do not take at once (a bad choice, '1_000'
    for an int...) goes to typer's own coercion, so errors and their wording are typer's. Any other
    annotation keeps typer's coercion whole. tests/test_startup.py compares both, value by value."""

    LEAVES = (str, int, bool, Path)

    def __init__(self, param: Any):
        desc = param.type_descriptor
        self.info = desc.parameter_info
        self.is_list = get_origin(desc.annotation) is list
        self.leaf = get_args(desc.annotation)[0] if self.is_list else desc.annotation
        self._typer: Any = None

    @classmethod
    def fits(cls, param: Any) -> bool:
        desc = getattr(param, "type_descriptor", None)
        if build_runtime_param is None or desc is None or not hasattr(param, "_runtime_param"):
            return False
        info, ann = desc.parameter_info, desc.annotation
        if get_origin(ann) is list:
            ann = get_args(ann)[0]
        elif get_origin(ann) is not None:
            return False
        plain_enum = isinstance(ann, type) and issubclass(ann, Enum) and all(isinstance(m.value, str) for m in ann)
        return (ann in cls.LEAVES or plain_enum) and info.parser is None and info.path_type is None and \
            desc.file_annotation is None and info.min is None and info.max is None and not info.clamp

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        multi = param.multiple or param.nargs == -1
        if value is None:
            return () if multi else None
        try:
            if (multi or self.is_list) and isinstance(value, str):
                raise _Slow
            if self.is_list:
                return [self._one(v, param, ctx) for v in (value if isinstance(value, (list, tuple)) else [value])]
            return self._one(value, param, ctx)
        except _Slow:
            if self._typer is None:
                self._typer = build_runtime_param(param.type_descriptor)
            return self._typer.coerce(value, param=param, ctx=ctx)

    def _one(self, value: Any, param: Any, ctx: Any) -> Any:
        leaf = self.leaf
        if leaf in (str, bool) and type(value) is leaf:
            return value
        if leaf is int:
            if type(value) is int:
                return value
            digits = value[1:] if type(value) is str and value[:1] == "-" else value
            if type(digits) is str and digits.isascii() and digits.isdigit():  # what pydantic reads as int(value)
                return int(value)
        elif leaf is Path:
            if isinstance(value, str):
                value = Path(value)
            if isinstance(value, Path):
                try:
                    return coerce_cli_path(value, self.info, path_type=Path, param=param, ctx=ctx)
                except Exception:  # noqa: BLE001 - typer words the error
                    raise _Slow from None
        elif isinstance(leaf, type) and issubclass(leaf, Enum):
            try:
                return coerce_cli_choice(value, choices=list(leaf), case_sensitive=self.info.case_sensitive, ctx=ctx)
            except ValueError:
                raise _Slow from None
        raise _Slow


def _plain(params: list[Any]) -> None:
    for param in params:
        if _PlainCoercion.fits(param) and param._runtime_param is None:
            param._runtime_param = _PlainCoercion(param)  # what typer's get_runtime_param returns


class Command(TyperCommand):
    """Every triage command: its parameters (and --help) coerce without pydantic where `_PlainCoercion` fits."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        _plain(self.params)

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)
        _plain([option] if option is not None else [])
        return option


class Group(TyperGroup):
    """The command groups (`triage`, `triage rules`): their --help coerces as in `Command`."""

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)
        _plain([option] if option is not None else [])
        return option


app = typer.Typer(cls=Group, add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  pretty_exceptions_enable=False,
                  help="Read an LLM RL run's logs: what failed, the evidence line, the knob to inspect.")
rules_app = typer.Typer(cls=Group, add_completion=False, no_args_is_help=True, help="List or check rule libraries.")
app.add_typer(rules_app, name="rules")

COMMANDS = {"scan", "explain", "rules", "budget", "diff", "merge", "--help", "-h", "--version"}


class Format(str, Enum):
    text = "text"
    json = "json"
    markdown = "markdown"
    html = "html"
    sarif = "sarif"
    junit = "junit"
    github = "github"
    gitlab = "gitlab"
    auto = "auto"


class FailOn(str, Enum):
    error = "error"
    warning = "warning"
    never = "never"


def _fail(message: str) -> None:
    from triage.redact import redact

    typer.echo(f"triage: error: {redact(message)}", err=True)
    raise typer.Exit(2)


def exit_code(worst: str | None, fail_on: str) -> int:
    from triage.report.common import at_gate

    return 1 if worst is not None and at_gate(worst, fail_on) else 0


EXTRA = ("json", "markdown", "html", "sarif", "junit", "gitlab")


@app.command(cls=Command)
def scan(
    paths: list[str] = typer.Argument(None, help="Run directories, log files, or - for standard input. "
                                      "With --ray: [ADDRESS] [LOG_DIR_PATTERN]."),
    fmt: Format = typer.Option(Format.text, "--format", "-f", help="Output format (auto: github inside GitHub Actions, else text)."),
    output: Path | None = typer.Option(None, "--output", "-o", help="Write the report to this file."),
    json_out: Path | None = typer.Option(None, "--json", help="Also write the JSON report here."),
    markdown_out: Path | None = typer.Option(None, "--markdown", help="Also write the Markdown summary here."),
    html_out: Path | None = typer.Option(None, "--html", help="Also write the HTML page here."),
    sarif_out: Path | None = typer.Option(None, "--sarif", help="Also write SARIF 2.1.0 here."),
    junit_out: Path | None = typer.Option(None, "--junit", help="Also write JUnit XML here."),
    gitlab_out: Path | None = typer.Option(None, "--gitlab", help="Also write GitLab Code Quality JSON here."),
    patterns: list[Path] = typer.Option([], "--patterns", help="Extra rule directory (adds or overrides by id)."),
    config: Path | None = typer.Option(None, "--config", help="Run configuration YAML to cross-check."),
    fail_on: FailOn = typer.Option(FailOn.error, "--fail-on", help="Lowest severity that makes the exit code 1."),
    baseline: Path | None = typer.Option(None, "--baseline", help="Known findings: shown as known, not gating."),
    write_baseline: Path | None = typer.Option(None, "--write-baseline",
                                                  help="Write the current findings as a baseline (then exit 0)."),
    no_redact: bool = typer.Option(False, "--no-redact", help="Do not mask secrets in the output."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show every finding."),
    ray: bool = typer.Option(False, "--ray", help="Triage every node of the Ray cluster at ADDRESS (default: the one "
                             "this machine is in), each over its LOG_DIR_PATTERN ({node_ip}, {node_id}, {hostname}; "
                             "default: Ray's session logs), and merge. Needs triage[ray]."),
) -> None:
    """Triage the logs under PATHS."""
    from triage.analyze import InputError, Settings, analyze
    from triage.cluster import ClusterError
    from triage.library.rules import LibraryError
    from triage.report import RenderOptions, resolve
    from triage.report.outputs import OutputError, Target, emit

    if not paths and not ray:
        _fail("no paths given: a run directory, log files, or - for standard input (or --ray for a Ray cluster)")
    try:
        if ray:
            report = _ray_report(paths or [], patterns, not no_redact)
        else:
            report = analyze(Settings(paths=paths, patterns=patterns, config=config, redact=not no_redact,
                                      baseline=baseline, retired=_RETIRED))
    except (InputError, LibraryError, ClusterError) as e:
        _fail(str(e))
    main_fmt = resolve(fmt.value, os.environ)
    extras = zip(EXTRA, (json_out, markdown_out, html_out, sarif_out, junit_out, gitlab_out))
    targets = [Target(main_fmt, output)] + [Target(f, p) for f, p in extras if p is not None]
    color = main_fmt == "text" and output is None and sys.stdout.isatty()
    options = RenderOptions(color=color, verbose=verbose, fail_on=fail_on.value, redact=not no_redact)
    try:
        if write_baseline is not None:
            _write_baseline(report, write_baseline, baseline)
        for warning in emit(report, targets, options, os.environ):
            typer.echo(f"triage: warning: {warning}", err=True)
    except OutputError as e:
        _fail(str(e))
    raise typer.Exit(0 if write_baseline is not None else exit_code(report.worst(), fail_on.value))


def _ray_report(args: list[str], patterns: list[Path], redact: bool) -> object:
    """`--ray [ADDRESS] [LOG_DIR_PATTERN]`: an argument that reads as a path (a `/` that is not `://`, or a
    `{placeholder}`) is the pattern; the other is the address."""
    from triage.checks import load_checked_library as load_library
    from triage.cluster import ClusterError, triage_cluster

    if len(args) > 2:
        raise ClusterError("--ray takes at most two arguments: [ADDRESS] [LOG_DIR_PATTERN]")
    pattern = next((a for a in args if "{" in a or ("/" in a and "://" not in a)), "")
    address = next((a for a in args if a != pattern), None)
    return triage_cluster(address, pattern, load_library(patterns), patterns, redact)


def _write_baseline(report: object, path: Path, previous: Path | None) -> None:
    """Keep what people wrote (reason, ticket, expires) in the baseline being replaced or the one in use."""
    from triage.report import baseline as bl
    from triage.report.outputs import OutputError, write_text

    old: dict[str, dict[str, object]] = {}
    try:
        for p in (previous, path):
            if p is not None and p.is_file():
                old.update(bl.load(p))
    except bl.BaselineError as e:
        raise OutputError(f"{e} (not overwritten)") from None
    write_text(path, bl.dumps(report.findings, old))  # type: ignore[attr-defined]


@app.command(cls=Command)
def merge(
    reports: list[Path] = typer.Argument(..., help="JSON reports of parts of one run (one per node or shard)."),
    fmt: Format = typer.Option(Format.text, "--format", "-f", help="Output format (auto: github inside GitHub Actions, else text)."),
    output: Path | None = typer.Option(None, "--output", "-o", help="Write the report to this file."),
    patterns: list[Path] = typer.Option([], "--patterns", help="Extra rule directory the parts were scanned with."),
    fail_on: FailOn = typer.Option(FailOn.error, "--fail-on", help="Lowest severity that makes the exit code 1."),
    no_redact: bool = typer.Option(False, "--no-redact", help="Do not mask secrets in the output."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show every finding."),
) -> None:
    """Combine the JSON reports of a run's nodes into one report, as if one triage had read every file."""
    from triage.checks import load_checked_library as load_library
    from triage.library.rules import LibraryError
    from triage.report import RenderOptions, resolve
    from triage.report.merge import MergeError, merge_files
    from triage.report.outputs import OutputError, Target, emit

    try:
        report = merge_files(reports, load_library(patterns))
    except (MergeError, LibraryError) as e:
        _fail(str(e))
    main_fmt = resolve(fmt.value, os.environ)
    color = main_fmt == "text" and output is None and sys.stdout.isatty()
    options = RenderOptions(color=color, verbose=verbose, fail_on=fail_on.value, redact=not no_redact)
    try:
        for warning in emit(report, [Target(main_fmt, output)], options, os.environ):
            typer.echo(f"triage: warning: {warning}", err=True)
    except OutputError as e:
        _fail(str(e))
    raise typer.Exit(exit_code(report.worst(), fail_on.value))


class DiffFormat(str, Enum):
    text = "text"
    json = "json"


def _side(path: str, patterns: list[Path]) -> dict[str, object]:
    """A run directory (analysed now) or a JSON report written by `--format json`."""
    from triage.analyze import Settings, analyze
    from triage.report.diff import read_report
    from triage.report.json_format import as_dict

    p = Path(path)
    if p.is_file() and p.suffix == ".json":
        return read_report(p)
    return as_dict(analyze(Settings(paths=[path], patterns=patterns)))


@app.command(cls=Command)
def diff(
    old: str = typer.Argument(..., help="The earlier run: a run directory or a JSON report."),
    new: str = typer.Argument(..., help="The later run: a run directory or a JSON report."),
    fmt: DiffFormat = typer.Option(DiffFormat.text, "--format", "-f", help="Output format."),
    output: Path | None = typer.Option(None, "--output", "-o", help="Write the comparison to this file."),
    patterns: list[Path] = typer.Option([], "--patterns", help="Extra rule directory for run directories."),
    fail_on: FailOn = typer.Option(FailOn.error, "--fail-on", help="Lowest severity of a NEW finding that exits 1."),
) -> None:
    """Compare two runs: new, resolved and persisting findings, and regressions in run figures."""
    import json

    from triage.analyze import InputError
    from triage.library.rules import LibraryError
    from triage.report.common import at_gate
    from triage.report.diff import DiffError, compare, text
    from triage.report.outputs import OutputError, write_text

    try:
        result = compare(_side(old, patterns), _side(new, patterns), old, new)
    except (InputError, LibraryError, DiffError) as e:
        _fail(str(e))
    body = json.dumps(result.as_dict(), indent=2, default=str) + "\n" if fmt == DiffFormat.json else text(result)
    try:
        if output is not None:
            write_text(output, body)
        else:
            sys.stdout.write(body)
    except OutputError as e:
        _fail(str(e))
    failing = [f for f in result.new_findings if not f.get("known") and at_gate(str(f.get("severity")), fail_on.value)]
    raise typer.Exit(1 if failing else 0)


@app.command(cls=Command)
def explain(name: str = typer.Argument(..., help="A rule id, a category, or a knob (any alias)."),
            patterns: list[Path] = typer.Option([], "--patterns", help="Extra rule directory.")) -> None:
    """Explain a rule, a category or a knob: what it means, what to check, what will not help."""
    from triage.checks import load_checked_library as load_library
    from triage.library.rules import LibraryError
    from triage.report.explain import explain_text

    try:
        lib = load_library(patterns)
    except LibraryError as e:
        _fail(str(e))
    text = explain_text(lib, name)
    if text is None:
        _fail(f"{name}: not a rule id, category or knob (try `triage rules list`)")
    sys.stdout.write(text)


@rules_app.command("list", cls=Command)
def rules_list(patterns: list[Path] = typer.Option([], "--patterns", help="Extra rule directory.")) -> None:
    """Every rule: id, category, severity, title."""
    from triage.checks import load_checked_library as load_library
    from triage.library.rules import LibraryError

    try:
        lib = load_library(patterns)
    except LibraryError as e:
        _fail(str(e))
    for r in sorted(lib.rules, key=lambda r: (r.category, r.id)):
        typer.echo(f"{r.id:40} {r.category:24} {r.severity:8} {r.plain_title}")


@rules_app.command("check", cls=Command)
def rules_check(directory: Path | None = typer.Argument(None, help="A rule directory (default: built-in).")) -> None:
    """Validate a rule library and run every rule's examples; exit 1 if an example fails."""
    from triage.checks import load_checked_library as load_library
    from triage.library.rules import LibraryError
    from triage.rulecheck import check_examples

    if directory is not None and not directory.is_dir():
        _fail(f"{directory}: not a directory")
    try:
        lib = load_library([directory] if directory else [], compile_all=True)
    except LibraryError as e:  # an invalid library is what this command checks for: a failure, not a usage error
        typer.echo(str(e))
        raise typer.Exit(1) from None
    problems = check_examples(lib, only_dir=directory)
    for p in problems:
        typer.echo(p)
    typer.echo(f"{len(lib.rules)} rules, {len(problems)} failing example(s)")
    raise typer.Exit(1 if problems else 0)


@app.command(cls=Command)
def budget(
    context: int = typer.Option(..., "--context", help="Total sequence limit (inference.max_context_length)."),
    response: int = typer.Option(..., "--response", help="Response cap (inference.max_response_length)."),
    prompt: int | None = typer.Option(None, "--prompt", help="Prompt limit (default: context - response)."),
    pool: int | None = typer.Option(None, "--pool", help="KV pool tokens (inference.sglang_max_total_tokens)."),
    concurrency: int | None = typer.Option(None, "--concurrency", help="Client concurrency per engine."),
    running: int | None = typer.Option(None, "--running", help="Engine max running requests."),
    pack: int | None = typer.Option(None, "--pack", help="Pack budget per GPU (trainer.packing_max_tokens)."),
    serving_only: bool = typer.Option(False, "--serving-only", help="No training: skip the trainer checks."),
) -> None:
    """The budget arithmetic of a planned run: prompt budget, pool capacity, which concurrency fits."""
    from triage.budget import Budget, budget_findings, render_budget
    from triage.checks import load_checked_library as load_library
    from triage.library.rules import LibraryError

    numbers = {"--context": context, "--response": response, "--prompt": prompt, "--pool": pool,
               "--concurrency": concurrency, "--running": running, "--pack": pack}
    for flag, value in numbers.items():
        if value is not None and value <= 0:
            _fail(f"{flag} must be a positive number of tokens, got {value}")
    try:
        lib = load_library()
    except LibraryError as e:
        _fail(str(e))
    b = Budget(context, response, prompt, pool, concurrency, running, pack, training=not serving_only)
    findings = budget_findings(lib, b)
    sys.stdout.write(render_budget(b, findings))
    raise typer.Exit(1 if any(f.severity == "error" for f in findings) else 0)


def main() -> None:
    for stream in (sys.stdout, sys.stderr):  # a report never fails to print: odd bytes become escapes
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    args = sys.argv[1:]
    if args and args[0] not in COMMANDS:
        sys.argv.insert(1, "scan")
    elif len(args) == 2 and args[0] == "explain" and args[1].startswith("-") and args[1] not in ("--help", "-h"):
        sys.argv.insert(2, "--")  # `triage explain --sglang-mem-fraction-static`: a knob alias, not an option
    if args and args[0] == "--version":
        from triage import __version__

        typer.echo(f"triage {__version__}")
        return
    try:
        app()
    except KeyboardInterrupt:
        sys.stderr.write("triage: interrupted\n")
        sys.exit(130)
    except Exception as e:  # noqa: BLE001 - a bug must still be one line, never a traceback
        sys.stderr.write(f"triage: internal error: {type(e).__name__}: {e} (please report; TRIAGE_DEBUG=1 shows more)\n")
        if os.environ.get("TRIAGE_DEBUG"):
            raise
        sys.exit(2)


_RETIRED: list[object] | None = None  # set by run(): where the analysis leaves its objects for the exit


def run() -> None:
    """The console entry point: main(), then leave without tearing the interpreter down. A large run leaves
    hundreds of thousands of objects; freeing them one by one would only delay the exit."""
    global _RETIRED
    _RETIRED = []
    try:
        main()
        code: int = 0
    except SystemExit as e:
        if isinstance(e.code, int) or e.code is None:
            code = e.code or 0
        else:
            sys.stderr.write(f"{e.code}\n")
            code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`triage ... | head`): nothing more to say
            pass
    os._exit(code)
