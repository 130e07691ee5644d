"""Secret redaction for everything that leaves the machine (on by default in every format).

Patterns cover Hugging Face tokens, OpenAI-style keys, W&B keys, AWS access keys and secrets, bearer and
JWT tokens, passwords in URLs, `--api-key X` style arguments and `*_TOKEN=`, `*_KEY=`, `*_SECRET=`,
`PASSWORD=` assignments.
"""

from __future__ import annotations

import re
from typing import Any

MASK = "[REDACTED]"

PATTERNS = [
    # environment-style assignments: HF_TOKEN=..., WANDB_API_KEY=..., AWS_SECRET_ACCESS_KEY=..., PASSWORD=...
    # (also as a quoted key of a printed dict: {'HF_TOKEN': 'hf_...'})
    (re.compile(r"\b([A-Z][A-Z0-9_]*(?:_TOKEN|_KEY|_SECRET|PASSWORD|_PASSWD)|TOKEN|SECRET|PASSWORD)(['\"]?\s*[=:]\s*)(['\"]?)"
                r"([^\s'\",;}]+)"),
     lambda m: f"{m.group(1)}{m.group(2)}{m.group(3)}{MASK}"),
    # config/JSON keys that hold secrets: api_key: ..., "password": "..."
    (re.compile(r"(?i)([\"']?\b(?:api[_-]?key|access[_-]?token|auth[_-]?token|secret[_-]?key|password|passwd|hf[_-]?token|"
                r"wandb[_-]?api[_-]?key|openai[_-]?api[_-]?key)\b[\"']?\s*[:=]\s*[\"']?)([^\s\"',}]+)"),
     lambda m: f"{m.group(1)}{MASK}"),
    # --api-key X, --token X, --password X, --hf-token=X, --wandb-key X
    # (starts only where a flag can start, so a long run of dashes or words stays linear)
    (re.compile(r"(?i)((?<![\w-])--[\w-]{0,60}?(?:api[-_]?key|token|password|secret|[-_]key)\b)(=|\s+)(['\"]?)([^\s'\"]+)"),
     lambda m: f"{m.group(1)}{m.group(2)}{m.group(3)}{MASK}"),
    # credentials in URLs: scheme://user:password@host
    (re.compile(r"((?<![a-zA-Z0-9+.-])[a-zA-Z][a-zA-Z0-9+.-]{0,30}://[^\s:/@]+:)([^\s@/]+)(@)"),
     lambda m: f"{m.group(1)}{MASK}{m.group(3)}"),
    # Authorization: Bearer <token>
    (re.compile(r"(?i)(\bbearer\s+)([A-Za-z0-9._~+/=-]{8,})"), lambda m: f"{m.group(1)}{MASK}"),
    # JWTs
    (re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), lambda m: MASK),
    # Hugging Face, OpenAI/Anthropic-style, GitHub, Slack tokens
    (re.compile(r"\bhf_[A-Za-z0-9]{20,}"), lambda m: MASK),
    (re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}"), lambda m: MASK),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}"), lambda m: MASK),
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"), lambda m: MASK),
    # AWS access key ids and secret keys
    (re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"), lambda m: MASK),
    (re.compile(r"(?i)(aws_secret_access_key\s*[=:]\s*)(\S+)"), lambda m: f"{m.group(1)}{MASK}"),
    # W&B API keys are 40 hex characters, usually after wandb login / WANDB_API_KEY (covered above)
    (re.compile(r"(?i)(wandb login(?:\s+--?[a-z][\w-]*)*\s+)((?:local-)?[0-9a-f]{40})"), lambda m: f"{m.group(1)}{MASK}"),
    (re.compile(r"(?i)(wandb\.login\([^)]{0,80}?key\s*=\s*['\"])([^'\"]+)"), lambda m: f"{m.group(1)}{MASK}"),
]


def redact(text: str) -> str:
    for rx, repl in PATTERNS:
        text = rx.sub(repl, text)
    return text


def redact_value(value: Any) -> Any:
    """Strings anywhere inside lists and dicts redacted; other values as they are."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redact_value(v) for v in value]
    if isinstance(value, tuple):
        return tuple(redact_value(v) for v in value)
    if isinstance(value, dict):
        return {k: redact_value(v) for k, v in value.items()}
    return value


def redact_report(report: Any) -> None:
    """Every string of a finished Report, in place: the last step before any format renders it.

    Evidence is already redacted where findings are built (templates must be taken of redacted text); this
    sweep also covers what reaches a report by other roads: extracted numbers, knob values and their
    sources, file names, coverage reasons and rule errors."""
    for f in report.findings:
        f.title, f.explain = redact(f.title), redact(f.explain)
        f.numbers = redact_value(f.numbers)
        f.not_knobs = redact_value(f.not_knobs)
        for ev in [*f.evidence, f.first, f.last]:
            if ev is not None:
                ev.text, ev.file = redact(ev.text), redact(ev.file)
        for k in f.knobs:
            k.current, k.source = redact_value(k.current), redact(k.source)
    for lf in report.files:
        lf.rel, lf.reason = redact(lf.rel), redact(lf.reason)
    report.root = redact(report.root)
    report.errors = [redact(e) for e in report.errors]
    report.config = redact_value(report.config)
