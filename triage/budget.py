"""`triage budget`: the domain document's budget arithmetic for a planned run, before any log exists.

The numbers become a configuration (source: the budget command line) and go through the same config
cross-checks as a real run's configuration, so the warnings here and in `triage RUN_DIR` cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass

from triage.checks import Run
from triage.effective_config import REQUESTED, Config
from triage.findings import from_checks, rank
from triage.library.rules import Library
from triage.model import Finding, Line

SOURCE = "<budget>"


@dataclass
class Budget:
    context: int
    response: int
    prompt: int | None = None
    pool: int | None = None
    concurrency: int | None = None
    running: int | None = None
    pack: int | None = None
    training: bool = True


FLAGS = {  # option -> knob
    "context": ("--context", "inference.max_context_length"),
    "response": ("--response", "inference.max_response_length"),
    "prompt": ("--prompt", "miles.rollout_max_prompt_len"),
    "pool": ("--pool", "inference.sglang_max_total_tokens"),
    "concurrency": ("--concurrency", "inference.sglang_server_concurrency"),
    "running": ("--running", "inference.sglang_max_running_requests"),
    "pack": ("--pack", "trainer.packing_max_tokens"),
}


def budget_config(lib: Library, b: Budget) -> Config:
    cfg = Config(lib)
    for attr, (flag, knob) in FLAGS.items():
        value = getattr(b, attr)
        if value is not None:
            text = f"{flag} {value}"
            cfg.put(knob, value, f"budget {flag}", 2, REQUESTED, Line(SOURCE, 0, text, text))
    if b.training:
        cfg.facts["training"] = cfg.values["inference.max_context_length"]  # any setting: the run trains
    return cfg


def budget_findings(lib: Library, b: Budget) -> list[Finding]:
    cfg = budget_config(lib, b)
    return rank(from_checks(lib, Run(config=cfg), cfg, redact_on=False), lib.domain)


def _n(v: int) -> str:
    return f"{v:,}"


def render_budget(b: Budget, findings: list[Finding]) -> str:
    out = [f"budget for a {_n(b.context)}-token context with a {_n(b.response)}-token response cap"]
    prompt = b.prompt if b.prompt is not None else b.context - b.response
    how = "set" if b.prompt is not None else "not set: context − response"
    out.append(f"  prompt budget   {_n(prompt)} tokens ({how})")
    if b.prompt is not None:
        total = b.prompt + b.response
        verdict = "fits" if total <= b.context else "does not fit"
        out.append(f"  prompt + response = {_n(b.prompt)} + {_n(b.response)} = {_n(total)} {verdict} in {_n(b.context)}")
    longest = b.context
    if b.pool is not None:
        full = b.pool // longest
        out.append(f"  KV pool         {_n(b.pool)} ÷ {_n(longest)} = {full} full sequences "
                   "(an upper bound: rounding, reserved capacity, other requests and transient memory lower it)")
        for label, value in (("concurrency", b.concurrency), ("running", b.running)):
            if value is None:
                continue
            fits = "fits" if value <= full else f"exceeds it: requests queue or retract; at most {full} fit"
            out.append(f"  {label:<15} {value} {fits}")
        if b.concurrency is None and b.running is None:
            out.append(f"  concurrency     at most {full} full-length requests fit at once")
    if b.pack is not None:
        out.append(f"  pack budget     {_n(b.pack)} {'covers' if b.pack >= longest else 'does not cover'} "
                   f"the {_n(longest)}-token context")
    shown = [f for f in findings if f.rule.startswith("config.")]
    out.append("")
    if not shown:
        out.append("no warnings")
    for f in shown:
        knobs = ", ".join(k.name for k in f.knobs)
        out.append(f"{f.severity.upper()} {f.category}: {f.title}  [{f.rule}]")
        out.append(f"  inspect: {knobs}")
    return "\n".join(out) + "\n"
