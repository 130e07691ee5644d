"""The command line: parse options, call one library function, render, map to an exit code.

`triage RUN_DIR...` is shorthand for `triage scan RUN_DIR...`.
Exit codes: 0 no finding at the gate severity, 1 at least one, 2 usage or input error.
"""

from __future__ import annotations

import os
import sys
from enum import Enum
from pathlib import Path
from typing import Optional

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None, pretty_exceptions_enable=False,
                  help="Read an LLM RL run's logs: what failed, the evidence line, the knob to inspect.")
rules_app = typer.Typer(add_completion=False, no_args_is_help=True, help="List or check rule libraries.")
app.add_typer(rules_app, name="rules")

COMMANDS = {"scan", "explain", "rules", "--help", "-h", "--version"}


class Format(str, Enum):
    text = "text"
    json = "json"


class FailOn(str, Enum):
    error = "error"
    warning = "warning"
    never = "never"


def _fail(message: str) -> None:
    typer.echo(f"triage: error: {message}", err=True)
    raise typer.Exit(2)


def exit_code(worst: Optional[str], fail_on: str) -> int:
    if fail_on == "never" or worst is None:
        return 0
    if fail_on == "warning":
        return 1 if worst in ("error", "warning") else 0
    return 1 if worst == "error" else 0


@app.command()
def scan(
    paths: list[str] = typer.Argument(..., help="Run directories, log files, or - for standard input."),
    fmt: Format = typer.Option(Format.text, "--format", "-f", help="Output format."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the report to this file."),
    patterns: list[Path] = typer.Option([], "--patterns", help="Extra rule directory (adds or overrides by id)."),
    config: Optional[Path] = typer.Option(None, "--config", help="Run configuration YAML to cross-check."),
    fail_on: FailOn = typer.Option(FailOn.error, "--fail-on", help="Lowest severity that makes the exit code 1."),
    no_redact: bool = typer.Option(False, "--no-redact", help="Do not mask secrets in the output."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show every finding."),
) -> None:
    """Triage the logs under PATHS."""
    from .analyze import InputError, Settings, analyze
    from .patterns import LibraryError
    from .report import RenderOptions, render

    try:
        report = analyze(Settings(paths=paths, patterns=patterns, config=config, redact=not no_redact))
    except (InputError, LibraryError) as e:
        _fail(str(e))
    color = fmt == Format.text and output is None and sys.stdout.isatty()
    text = render(fmt.value, report, RenderOptions(color=color, verbose=verbose))
    if output is not None:
        try:
            output.write_text(text, encoding="utf-8")
        except OSError as e:
            _fail(f"{output}: cannot write: {e.strerror or e}")
    else:
        sys.stdout.write(text)
    raise typer.Exit(exit_code(report.worst(), fail_on.value))


@app.command()
def explain(name: str = typer.Argument(..., help="A rule id, a category, or a knob (any alias).")) -> None:
    """Explain a rule, a category or a knob: what it means, what to check, what will not help."""
    from .explain import explain_text
    from .patterns import LibraryError, load_library

    try:
        lib = load_library()
    except LibraryError as e:
        _fail(str(e))
    text = explain_text(lib, name)
    if text is None:
        _fail(f"{name}: not a rule id, category or knob (try `triage rules list`)")
    sys.stdout.write(text)


@rules_app.command("list")
def rules_list(patterns: list[Path] = typer.Option([], "--patterns", help="Extra rule directory.")) -> None:
    """Every rule: id, category, severity, title."""
    from .patterns import LibraryError, load_library

    try:
        lib = load_library(patterns)
    except LibraryError as e:
        _fail(str(e))
    for r in sorted(lib.rules, key=lambda r: (r.category, r.id)):
        typer.echo(f"{r.id:40} {r.category:24} {r.severity:8} {r.title}")


@rules_app.command("check")
def rules_check(directory: Optional[Path] = typer.Argument(None, help="A rule directory (default: built-in).")) -> None:
    """Validate a rule library and run every rule's examples; exit 1 if an example fails."""
    from .patterns import LibraryError, load_library
    from .rulecheck import check_examples

    try:
        lib = load_library([directory] if directory else [])
    except LibraryError as e:
        _fail(str(e))
    problems = check_examples(lib, only_dir=directory)
    for p in problems:
        typer.echo(p)
    typer.echo(f"{len(lib.rules)} rules, {len(problems)} failing example(s)")
    raise typer.Exit(1 if problems else 0)


def main() -> None:
    for stream in (sys.stdout, sys.stderr):  # a report never fails to print: odd bytes become escapes
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    args = sys.argv[1:]
    if args and args[0] not in COMMANDS:
        sys.argv.insert(1, "scan")
    if args and args[0] == "--version":
        from . import __version__

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
