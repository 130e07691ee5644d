"""Secret redaction for everything that leaves the machine (on by default in every format).

Patterns cover Hugging Face tokens, OpenAI-style keys, W&B keys, AWS access keys and secrets, bearer and
JWT tokens, passwords in URLs, `--api-key X` style arguments and `*_TOKEN=`, `*_KEY=`, `*_SECRET=`,
`PASSWORD=` assignments; and the other families a secret scanner knows (the formats each vendor documents for its
tokens, as detectors such as gitleaks list them; the expressions here are this project's own): GitHub
fine-grained and OAuth/app tokens, GitLab tokens, Google API keys and OAuth tokens, Azure storage account keys
and SAS signatures, PEM private keys (inline, with `\n` escapes, or the header line of a block), Slack tokens and
webhooks, Stripe, npm, PyPI, Docker Hub, SendGrid, Databricks, Replicate and Groq keys, `Authorization:` headers
of any scheme, `sshpass -p`, and an AWS secret key (40 base64 characters) printed next to its access key id.
"""

from __future__ import annotations

import re
from typing import Any

from triage.lazyre import lazy

MASK = "[REDACTED]"
_AWS_ID = lazy(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b")
_AWS_SECRET = lazy(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")

# Each pattern comes with its gate: literals (lower-cased, `|` between them) of which the text must hold one for the
# pattern to be tried; testing them costs far less than running forty expressions over every line.
PATTERNS = [
    # PEM private keys: a whole inline block (a JSON string's `\n` escapes, or a block joined on one line), else
    # everything after a BEGIN line's marker on that line
    ("-----begin", lazy(r"-----BEGIN ((?:[A-Z0-9]+ ){0,3})PRIVATE KEY((?: BLOCK)?)-----.*?-----END \1PRIVATE KEY\2-----"),
     lambda m: MASK),
    ("-----begin", lazy(r"(-----BEGIN (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----)(.+)"), lambda m: f"{m.group(1)}{MASK}"),
    # environment-style assignments: HF_TOKEN=..., WANDB_API_KEY=..., AWS_SECRET_ACCESS_KEY=..., PASSWORD=...
    # (also as a quoted key of a printed dict: {'HF_TOKEN': 'hf_...'})
    ("token|_key|secret|password|passwd",
     lazy(r"\b([A-Z][A-Z0-9_]*(?:_TOKEN|_KEY|_SECRET|PASSWORD|_PASSWD)|TOKEN|SECRET|PASSWORD)(['\"]?\s*[=:]\s*)(['\"]?)"
                r"([^\s'\",;}]+)"),
     lambda m: f"{m.group(1)}{m.group(2)}{m.group(3)}{MASK}"),
    # config/JSON keys that hold secrets: api_key: ..., "password": "..."
    ("key|token|secret|passw|private", lazy(r"(?i)([\"']?\b(?:api[_-]?key|access[_-]?token|auth[_-]?token|secret[_-]?key|password|passwd|hf[_-]?token|"
                r"wandb[_-]?api[_-]?key|openai[_-]?api[_-]?key|client[_-]?secret|private[_-]?key(?:[_-]?id)?|account[_-]?key|"
                r"sas[_-]?token|refresh[_-]?token|session[_-]?token)\b[\"']?\s*[:=]\s*[\"']?)([^\s\"',}]+)"),
     lambda m: f"{m.group(1)}{MASK}"),
    # --api-key X, --token X, --password X, --hf-token=X, --wandb-key X
    # (starts only where a flag can start, so a long run of dashes or words stays linear)
    ("--", lazy(r"(?i)((?<![\w-])--[\w-]{0,60}?(?:api[-_]?key|token|password|secret|[-_]key)\b)(=|\s+)(['\"]?)([^\s'\"]+)"),
     lambda m: f"{m.group(1)}{m.group(2)}{m.group(3)}{MASK}"),
    # credentials in URLs: scheme://user:password@host, the user possibly empty (redis://:pw@host), the password
    # possibly holding `@` or `/` unescaped: it runs to the last `@` that a host name and a path, port or end follow
    ("://", lazy(r"((?<![a-zA-Z0-9+.-])[a-zA-Z][a-zA-Z0-9+.-]{0,30}://[^\s:/@]{0,256}:)(\S{1,256}?)"
                r"(@[A-Za-z0-9.\[\]_-]+(?::\d+)?(?=[/\s?#'\")\],;]|$))(?!\S*@[A-Za-z0-9.\[\]_-]+(?::\d+)?(?:[/\s?#'\")\],;]|$))"),
     lambda m: f"{m.group(1)}{MASK}{m.group(3)}"),
    # Authorization headers of any scheme (Basic, Bearer, token, Digest ...) and API-key headers
    ("authorization", lazy(r"(?i)(\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?:(?:basic|bearer|token|digest|negotiate|ntlm|"
                r"apikey|sso-key)\s+)?)([^\s\"',;]{4,})"),
     lambda m: f"{m.group(1)}{MASK}"),
    ("api-key|auth-token|subscription-key",
     lazy(r"(?i)(\b(?:x-api-key|api-key|x-auth-token|ocp-apim-subscription-key|x-goog-api-key)[\"']?\s*[:=]\s*[\"']?)"
                r"([^\s\"',;]{4,})"),
     lambda m: f"{m.group(1)}{MASK}"),
    # Authorization: Bearer <token>
    ("bearer", lazy(r"(?i)(\bbearer\s+)([A-Za-z0-9._~+/=-]{8,})"), lambda m: f"{m.group(1)}{MASK}"),
    # sshpass -p PASSWORD, and the password options of common clients (mysql -pPASS is a short option glued on)
    ("sshpass", lazy(r"(\bsshpass\s+(?:-[a-oq-zA-Z]\s+\S+\s+)*-p\s*)(['\"]?)([^\s'\"]+)"),
     lambda m: f"{m.group(1)}{m.group(2)}{MASK}"),
    # Azure storage connection strings and SAS tokens
    ("accountkey|sharedaccess", lazy(r"(?i)(\b(?:AccountKey|SharedAccessKey|SharedAccessSignature)\s*=\s*)([^;\s'\"]+)"),
     lambda m: f"{m.group(1)}{MASK}"),
    ("sig=", lazy(r"([?&;]sig=)([A-Za-z0-9%+/=_-]{16,})"), lambda m: f"{m.group(1)}{MASK}"),
    # JWTs
    ("eyj", lazy(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), lambda m: MASK),
    # Hugging Face, OpenAI/Anthropic-style, GitHub, Slack tokens
    ("hf_", lazy(r"\bhf_[A-Za-z0-9]{20,}"), lambda m: MASK),
    ("sk-", lazy(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}"), lambda m: MASK),
    ("ghp_|gho_|ghu_|ghs_|ghr_", lazy(r"\bgh[pousr]_[A-Za-z0-9]{30,}"), lambda m: MASK),
    ("github_pat_", lazy(r"\bgithub_pat_[A-Za-z0-9_]{20,}"), lambda m: MASK),  # GitHub fine-grained personal access token
    ("xox", lazy(r"\bxox[abeprs]-[A-Za-z0-9-]{10,}"), lambda m: MASK),
    ("hooks.slack.com", lazy(r"\bhooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]{16,}"), lambda m: MASK),
    # GitLab: personal, deploy, runner, pipeline-trigger, CI-job, OAuth, feed, incoming-mail, agent tokens
    ("glpat-|gldt-|glrt-|glptt-|glcbt-|gloas-|glsoat-|glft-|glimt-|glagent-|glffct-",
     lazy(r"\bgl(?:pat|dt|rt|ptt|cbt|oas|soat|ft|imt|agent|ffct)-[A-Za-z0-9_-]{20,}"), lambda m: MASK),
    ("gr1348941", lazy(r"\bGR1348941[A-Za-z0-9_-]{20,}"), lambda m: MASK),  # GitLab runner registration token
    # Google: API keys, OAuth access and refresh tokens, OAuth client secrets
    ("aiza", lazy(r"\bAIza[0-9A-Za-z_-]{35}"), lambda m: MASK),
    ("ya29.", lazy(r"\bya29\.[0-9A-Za-z_-]{20,}"), lambda m: MASK),
    ("1//0", lazy(r"\b1//0[0-9A-Za-z_-]{30,}"), lambda m: MASK),
    ("gocspx-", lazy(r"\bGOCSPX-[0-9A-Za-z_-]{20,}"), lambda m: MASK),
    # payment, package-registry and platform keys
    ("_live_|_test_", lazy(r"\b(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}"), lambda m: MASK),  # Stripe
    ("npm_", lazy(r"\bnpm_[A-Za-z0-9]{36}\b"), lambda m: MASK),
    ("pypi-age", lazy(r"\bpypi-AgE[A-Za-z0-9_-]{40,}"), lambda m: MASK),
    ("dckr_pat_", lazy(r"\bdckr_pat_[A-Za-z0-9_-]{20,}"), lambda m: MASK),
    ("sg.", lazy(r"\bSG\.[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}"), lambda m: MASK),  # SendGrid
    ("dapi", lazy(r"\bdapi[0-9a-f]{32}(?:-\d)?\b"), lambda m: MASK),  # Databricks
    ("r8_", lazy(r"\br8_[A-Za-z0-9]{30,}"), lambda m: MASK),  # Replicate
    ("gsk_", lazy(r"\bgsk_[A-Za-z0-9]{40,}"), lambda m: MASK),  # Groq
    ("api_org_", lazy(r"\bapi_org_[A-Za-z0-9]{20,}"), lambda m: MASK),  # Hugging Face organisation token
    # AWS: a bare secret key (40 base64 characters) on a line that also holds an access key id; the ids; the
    # secret under its config name, quoted or not
    ("akia|asia", lazy(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"), lambda m: MASK),
    ("secret", lazy(r"(?i)(aws_?secret_?access_?key[\"']?\s*[=:]\s*[\"']?)([^\s\"',}]+)"), lambda m: f"{m.group(1)}{MASK}"),
    # W&B API keys are 40 hex characters, usually after wandb login / WANDB_API_KEY (covered above)
    ("wandb login", lazy(r"(?i)(wandb login(?:\s+--?[a-z][\w-]*)*\s+)((?:local-)?[0-9a-f]{40})"), lambda m: f"{m.group(1)}{MASK}"),
    ("wandb.login", lazy(r"(?i)(wandb\.login\([^)]{0,80}?key\s*=\s*['\"])([^'\"]+)"), lambda m: f"{m.group(1)}{MASK}"),
]


_GATED = [(tuple(gate.split("|")), rx, repl) for gate, rx, repl in PATTERNS]
# any gate's literal: a text holding none (most file names and notes: two a file of a report of 200 k files) is
# left as it is after one search, not one test per pattern
_ANY_GATE = re.compile("|".join(re.escape(g) for gate, _, _ in _GATED for g in gate))


def redact(text: str) -> str:
    if ("AKIA" in text or "ASIA" in text) and _AWS_ID.search(text):
        text = _AWS_SECRET.sub(MASK, text)
    low = text.lower()
    if _ANY_GATE.search(low) is None:
        return text
    for gate, rx, repl in _GATED:
        if any(g in low for g in gate):
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
    sources, file names (of evidence, coverage and timelines), coverage reasons and rule errors."""
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
    for t in report.timelines:  # a source is a file name (and an engine's prefix): a secret in a name is masked here too
        t.source, t.file = redact(t.source), redact(t.file)
        t.marks = redact_value(t.marks)
    report.root = redact(report.root)
    report.errors = [redact(e) for e in report.errors]
    report.config = redact_value(report.config)
