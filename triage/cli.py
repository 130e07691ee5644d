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

from triage.errors import TriageError

try:  # typer >= 0.28 coerces every value through pydantic; these helpers of its own do not need it
    from typer._coercion import build_runtime_param
    from typer._param_types import coerce_cli_choice, coerce_cli_path
except ImportError:  # an older typer: plain click coercion, nothing to avoid
    build_runtime_param = None  # type: ignore[assignment]


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

    def invoke(self, ctx: Any) -> Any:
        """Ctrl-C: the progress bar (if any) is already gone when the interrupt reaches here (the scan closes
        it on the way out), so the message is the last thing on the terminal."""
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            _say("triage: interrupted")
            raise typer.Exit(130) from None


class Group(TyperGroup):
    """The command groups (`triage`, `triage rules`): their --help coerces as in `Command`."""

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)
        _plain([option] if option is not None else [])
        return option


class UsageError(TriageError):
    """An option value the command cannot use (caught once, in main: one line, exit 2)."""


MAX_CHARS_PRESETS = {"jira": 32767}  # Jira's limit for a text field (a description or a comment), in characters


class FailOn(str, Enum):
    error = "error"
    warning = "warning"
    never = "never"


def exit_code(worst: str | None, fail_on: str) -> int:
    from triage.report.gate import exit_code as gate

    return gate(worst, fail_on)


def _terminal(stream: Any) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):  # a closed or odd stream
        return False


def _text_options(main_fmt: str, output: Path | None) -> tuple[bool, int | None]:
    """(colour, width) of the text report: the terminal's width and colour on a terminal (no colour with
    NO_COLOR set to anything (no-color.org) or TERM=dumb); elsewhere no colour and no wrapping, so a quoted log
    line never starts an output line of its own."""
    if main_fmt != "text" or output is not None or not _terminal(sys.stdout):
        return False, None
    import shutil

    color = not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
    return color, max(40, shutil.get_terminal_size().columns)


def _max_chars(value: str | None) -> int | None:
    if value is None:
        return None
    if value.lower() in MAX_CHARS_PRESETS:
        return MAX_CHARS_PRESETS[value.lower()]
    if value.isascii() and value.isdigit() and int(value) > 0:
        return int(value)
    presets = ", ".join(f"{k} ({v})" for k, v in MAX_CHARS_PRESETS.items())
    raise UsageError(f"--max-chars: a positive number of characters or a preset ({presets}), not {value!r}")


def _scan(
    paths: list[str] = typer.Argument(None, help="Run directories, log files, or - for standard input. "
                                      "With --ray: [ADDRESS] [LOG_DIR_PATTERN]."),
    fmt: str = typer.Option("text", "--format", "-f", help="Output format (auto: github inside GitHub Actions, else text)."),
    output: Path | None = typer.Option(None, "--output", "-o", help="Write the report to this file."),
    patterns: list[Path] = typer.Option([], "--patterns", help="Extra rule directory (adds or overrides by id)."),
    config: Path | None = typer.Option(None, "--config", help="Run configuration YAML to cross-check."),
    fail_on: FailOn = typer.Option(FailOn.error, "--fail-on", help="Lowest severity that makes the exit code 1."),
    baseline: Path | None = typer.Option(None, "--baseline", help="Known findings: shown as known, not gating."),
    write_baseline: Path | None = typer.Option(None, "--write-baseline",
                                                  help="Write the current findings as a baseline (then exit 0)."),
    export: Path | None = typer.Option(None, "--export", help="Also write findings, engine timelines, trainer series "
                                       "and run figures as Parquet tables into this directory."),
    sarif_category: str | None = typer.Option(None, "--sarif-category",
                                              help="SARIF automationDetails id: one per upload for the same commit."),
    max_chars: str | None = typer.Option(None, "--max-chars", help="Bound the Markdown summary to N characters "
                                         "(or a preset: jira = 32767)."),
    no_redact: bool = typer.Option(False, "--no-redact", help="Do not mask secrets in the output."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show every finding."),
    follow_links: bool = typer.Option(False, "--follow-links", help="Read files behind symlinks that lead out of the "
                                      "run directory (by default they are listed as skipped)."),
    ray: bool = typer.Option(False, "--ray", help="Triage every node of the Ray cluster at ADDRESS (default: the one "
                             "this machine is in), each over its LOG_DIR_PATTERN ({node_ip}, {node_id}, {hostname}; "
                             "default: Ray's session logs), and merge. Needs triage[ray]."),
    **also: Path | None,
) -> None:
    """Triage the logs under PATHS."""
    from triage.analyze import Settings, analyze
    from triage.report import RenderOptions, resolve
    from triage.report.gate import scan_exit
    from triage.report.outputs import Target, emit

    if write_baseline is not None:
        from triage.report.baseline import refuse_special

        refuse_special(write_baseline)  # before the analysis: a FIFO or a device is an error, not a hang
    bound = _max_chars(max_chars)
    if ray:
        report = _ray_report(paths or [], patterns, not no_redact)
    elif not paths:
        raise UsageError("no paths given: a run directory, log files, or - for standard input (or --ray)")
    else:
        report = analyze(Settings(paths=paths, patterns=patterns, config=config, redact=not no_redact,
                                  baseline=baseline, follow_links=follow_links), retired=_RETIRED)
    main_fmt = resolve(fmt, os.environ)
    targets = [Target(main_fmt, output)] + [Target(name, p) for name, p in also.items() if p is not None]
    color, width = _text_options(main_fmt, output)
    options = RenderOptions(color=color, width=width, verbose=verbose, fail_on=fail_on.value,
                            sarif_category=sarif_category, max_chars=bound)
    if write_baseline is not None:
        _write_baseline(report, write_baseline, baseline)
    if export is not None:
        from triage.report.export import write

        write(report, export)
    for warning in emit(report, targets, options, os.environ):
        typer.echo(f"triage: warning: {warning}", err=True)
    raise typer.Exit(scan_exit(report.findings, fail_on.value, wrote_baseline=write_baseline is not None,
                               complete=report.coverage_complete))


def _scan_command() -> Any:
    """`_scan` with the parameters the format registry gives: `--format` takes every registered format (and
    auto), and each format that can be written beside the main one has its flag `--NAME FILE`."""
    import inspect

    from triage.report import REGISTRY, choices, extras

    fixed = inspect.signature(_scan, eval_str=True).parameters
    fmt_enum = Enum("Format", {c: c for c in choices()}, type=str)  # type: ignore[misc]
    params = [p.replace(annotation=fmt_enum, default=typer.Option(fmt_enum("text"), "--format", "-f",
                                                                   help=p.default.help))
              if name == "fmt" else p for name, p in fixed.items() if p.kind is not p.VAR_KEYWORD]
    also = {f"also_{spec.name.replace('-', '_')}": spec.name for spec in extras()}  # parameter -> format
    taken = {flag for p in fixed.values() if p.kind is not p.VAR_KEYWORD for flag in p.default.param_decls or ()}
    for name in also.values():
        if f"--{name}" in taken:
            raise ValueError(f"format {name!r}: its extra-output flag --{name} is already an option of scan")
    params += [inspect.Parameter(param, inspect.Parameter.KEYWORD_ONLY, annotation=Path | None,
                                 default=typer.Option(None, f"--{name}", help=REGISTRY[name].also))
               for param, name in also.items()]

    def scan(**values: Any) -> None:
        values["fmt"] = values["fmt"].value
        _scan(**{k: v for k, v in values.items() if k not in also}, **{also[k]: values[k] for k in also})

    scan.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    scan.__annotations__ = {p.name: p.annotation for p in params}
    scan.__doc__ = _scan.__doc__
    return scan


def _ray_report(args: list[str], patterns: list[Path], redact: bool) -> Any:
    """`--ray [ADDRESS] [LOG_DIR_PATTERN]`: an argument that reads as a path (a `/` that is not `://`, or a
    `{placeholder}`) is the pattern; the other is the address."""
    from triage.checks import load_checked_library as load_library
    from triage.cluster import triage_cluster

    if len(args) > 2:
        raise UsageError("--ray takes at most two arguments: [ADDRESS] [LOG_DIR_PATTERN]")
    pattern = next((a for a in args if "{" in a or ("/" in a and "://" not in a)), "")
    address = next((a for a in args if a != pattern), None)
    return triage_cluster(address, pattern, load_library(patterns), patterns, redact)


def _write_baseline(report: Any, path: Path, previous: Path | None) -> None:
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
    write_text(path, bl.dumps(report.findings, old))


class DiffFormat(str, Enum):
    text = "text"
    json = "json"


def _side(path: str, patterns: list[Path]) -> dict[str, object]:
    """A run directory (analysed now), a JSON report written by `--format json`, or an `--export` directory."""
    from triage.analyze import Settings, analyze
    from triage.report import export
    from triage.report.diff import read_report
    from triage.report.json_format import as_dict

    p = Path(path)
    if p.is_file() and p.suffix == ".json":
        return read_report(p)
    if p.is_dir() and export.is_export(p):
        return export.read(p)
    return as_dict(analyze(Settings(paths=[path], patterns=patterns)))


def diff(
    old: str = typer.Argument(..., help="The earlier run: a run directory, a JSON report or an --export directory."),
    new: str = typer.Argument(..., help="The later run: a run directory, a JSON report or an --export directory."),
    fmt: DiffFormat = typer.Option(DiffFormat.text, "--format", "-f", help="Output format."),
    output: Path | None = typer.Option(None, "--output", "-o", help="Write the comparison to this file."),
    patterns: list[Path] = typer.Option([], "--patterns", help="Extra rule directory for run directories."),
    fail_on: FailOn = typer.Option(FailOn.error, "--fail-on", help="Lowest severity of a NEW finding that exits 1."),
) -> None:
    """Compare two runs: new, resolved and persisting findings, and regressions in run figures."""
    import json

    from triage.report.diff import compare, text
    from triage.report.gate import diff_exit
    from triage.report.outputs import fence, write_stdout, write_text

    result = compare(_side(old, patterns), _side(new, patterns), old, new)
    body = json.dumps(result.as_dict(), indent=2, default=str) + "\n" if fmt == DiffFormat.json else text(result)
    if output is not None:
        write_text(output, body)
    else:
        write_stdout(fence(body, os.environ) if fmt == DiffFormat.text else body)
    raise typer.Exit(diff_exit(result.new_findings, fail_on.value))


def merge(
    reports: list[Path] = typer.Argument(..., help="JSON reports of parts of one run (one per node or shard)."),
    fmt: str = typer.Option("text", "--format", "-f", help="Output format (text, json, markdown, html, sarif, junit, "
                            "github, gitlab; auto: github inside GitHub Actions, else text)."),
    output: Path | None = typer.Option(None, "--output", "-o", help="Write the report to this file."),
    patterns: list[Path] = typer.Option([], "--patterns", help="Extra rule directory the parts were scanned with."),
    fail_on: FailOn = typer.Option(FailOn.error, "--fail-on", help="Lowest severity that makes the exit code 1."),
    no_redact: bool = typer.Option(False, "--no-redact", help="Do not mask secrets in the output."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show every finding."),
) -> None:
    """Combine the JSON reports of a run's nodes into one report, as if one triage had read every file."""
    from triage.checks import load_checked_library as load_library
    from triage.report import RenderOptions, choices, resolve
    from triage.report.gate import scan_exit
    from triage.report.merge import merge_files
    from triage.report.outputs import Target, emit

    if fmt not in choices():
        raise UsageError(f"--format: one of {', '.join(choices())}, not {fmt!r}")
    report = merge_files(reports, load_library(patterns), redact=not no_redact)
    main_fmt = resolve(fmt, os.environ)
    color, width = _text_options(main_fmt, output)
    options = RenderOptions(color=color, width=width, verbose=verbose, fail_on=fail_on.value)
    for warning in emit(report, [Target(main_fmt, output)], options, os.environ):
        typer.echo(f"triage: warning: {warning}", err=True)
    raise typer.Exit(scan_exit(report.findings, fail_on.value, complete=report.coverage_complete))


def explain(name: str = typer.Argument(..., help="A rule id, a category, or a knob (any alias)."),
            patterns: list[Path] = typer.Option([], "--patterns", help="Extra rule directory.")) -> None:
    """Explain a rule, a category or a knob: what it means, what to check, what will not help."""
    from triage.checks import load_checked_library as load_library
    from triage.report.explain import explain_text
    from triage.report.outputs import write_stdout

    text = explain_text(load_library(patterns), name)
    if text is None:
        raise UsageError(f"{name}: not a rule id, category or knob (try `triage rules list`)")
    write_stdout(text)


def rules_list(patterns: list[Path] = typer.Option([], "--patterns", help="Extra rule directory.")) -> None:
    """Every rule: id, category, severity, title."""
    from triage.checks import load_checked_library as load_library
    from triage.report.outputs import write_stdout

    lib = load_library(patterns)
    write_stdout("".join(f"{r.id:40} {r.category:24} {r.severity:8} {r.plain_title}\n"
                         for r in sorted(lib.rules, key=lambda r: (r.category, r.id))))


def rules_check(directory: Path | None = typer.Argument(None, help="A rule directory (default: built-in).")) -> None:
    """Validate a rule library and run every rule's examples; exit 1 if an example fails."""
    from triage.checks import load_checked_library as load_library
    from triage.library.rules import LibraryError
    from triage.report.outputs import write_stdout
    from triage.rulecheck import check_examples

    if directory is not None and not directory.is_dir():
        raise UsageError(f"{directory}: not a directory")
    try:
        lib = load_library([directory] if directory else [], compile_all=True)
    except LibraryError as e:  # an invalid library is what this command checks for: a failure, not a usage error
        write_stdout(f"{e}\n")
        raise typer.Exit(1) from None
    problems = check_examples(lib, only_dir=directory)
    write_stdout("".join(f"{p}\n" for p in problems) + f"{len(lib.rules)} rules, {len(problems)} failing example(s)\n")
    raise typer.Exit(1 if problems else 0)


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
    from triage.report.gate import budget_exit
    from triage.report.outputs import write_stdout

    numbers = {"--context": context, "--response": response, "--prompt": prompt, "--pool": pool,
               "--concurrency": concurrency, "--running": running, "--pack": pack}
    for flag, value in numbers.items():
        if value is not None and value <= 0:
            raise UsageError(f"{flag} must be a positive number of tokens, got {value}")
    b = Budget(context, response, prompt, pool, concurrency, running, pack, training=not serving_only)
    findings = budget_findings(load_library(), b)
    write_stdout(render_budget(b, findings))
    raise typer.Exit(budget_exit(findings))


def build_app() -> typer.Typer:
    """The command line, its `scan` options derived from the format registry as it stands."""
    root = typer.Typer(cls=Group, add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                       pretty_exceptions_enable=False,
                       help="Read an LLM RL run's logs: what failed, the evidence line, the knob to inspect.")
    rules = typer.Typer(cls=Group, add_completion=False, no_args_is_help=True, help="List or check rule libraries.")
    root.add_typer(rules, name="rules")
    root.command("scan", cls=Command)(_scan_command())
    for command in (merge, diff, explain, budget):
        root.command(cls=Command)(command)
    rules.command("list", cls=Command)(rules_list)
    rules.command("check", cls=Command)(rules_check)
    return root


app = build_app()
COMMANDS = {"scan", "explain", "rules", "budget", "diff", "merge", "--help", "-h", "--version"}


def _say(line: str) -> None:
    """One line on stderr, if stderr can take it (closed or full, there is no one to tell)."""
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass


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
    except TriageError as e:  # every error worded for the user, from any command: one line, exit 2
        from triage.input.read import visible
        from triage.redact import redact

        _say(f"triage: error: {visible(redact(str(e)))}")  # a name from the logs stays on this one line
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        _say("triage: interrupted")
        sys.exit(130)
    except Exception as e:  # noqa: BLE001 - a bug must still be one line, never a traceback
        _say(f"triage: internal error: {type(e).__name__}: {e} (please report; TRIAGE_DEBUG=1 shows more)")
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
            _say(f"{e.code}")
            code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # a closed pipe (`triage ... | head`): the report was written or refused
            pass
    os._exit(code)
