"""`triage explain NAME`: the text of a rule, a category or a knob, from the same YAML the reports use."""

from __future__ import annotations

import textwrap
from typing import Any

from triage.checks import PARAMS
from triage.library.rules import Library


def _wrap(text: str, indent: str = "  ") -> str:
    return textwrap.fill(text, width=96, initial_indent=indent, subsequent_indent=indent)


def _params(check: str, given: dict[str, Any]) -> str:
    """The check's declared parameters: the rule's value where it sets one, else the default."""
    declared = PARAMS.get(check, {})
    shown = [f"{k}={given[k]!r}" if k in given else f"{k}={p.default!r} (default)" for k, p in declared.items()
             if k in given or p.default not in (None, "", [])]
    return " (" + ", ".join(shown) + ")" if shown else ""


def explain_text(lib: Library, name: str) -> str | None:
    rule = lib.rule(name)
    if rule is not None:
        lines = [f"{rule.id}  ({rule.category}, {rule.severity})", f"  {rule.plain_title}", "", _wrap(rule.explain)]
        if rule.knobs:
            lines += ["", "  inspect: " + ", ".join(rule.knobs)]
        if rule.not_knobs:
            lines += ["  will not help: " + "; ".join(rule.not_knobs)]
        if rule.check:
            lines += [textwrap.fill(f"check: {rule.check}" + _params(rule.check, rule.params), width=96,
                                    initial_indent="  ", subsequent_indent="    ", break_on_hyphens=False)]
        lines += [f"  defined at {rule.origin}"]
        return "\n".join(lines) + "\n"
    cat = lib.categories.get(name)
    if cat is not None:
        rules = sorted(r.id for r in lib.rules if r.category == cat.id)
        lines = [f"{cat.id}: {cat.title}", "", _wrap(cat.explain), ""]
        if cat.knobs:
            lines.append("  inspect: " + ", ".join(cat.knobs))
        if cat.not_knobs:
            lines.append("  will not help: " + "; ".join(cat.not_knobs))
        lines.append("  rules: " + ", ".join(rules))
        return "\n".join(lines) + "\n"
    spec = lib.knob(name)
    if spec is not None:
        lines = [spec.name, "", _wrap(spec.meaning)]
        if spec.grows:
            lines += ["", "  as length grows:", _wrap(spec.grows, "    ")]
        lines += ["", "  also known as: " + ", ".join(spec.aliases)]
        users = sorted(r.id for r in lib.rules if spec.name in r.knobs)
        if users:
            lines.append("  named by rules: " + ", ".join(users))
        return "\n".join(lines) + "\n"
    return None
