"""Per-source parsers: each turns a candidate line into a typed Event (or nothing).

A parser module exposes ANCHORS (literal text its lines contain, fed to the shared prefilter) and
`parse(line) -> Event | None`.
"""

from triage.parsers import lifecycle, metrics, settings, sglang, startup, vllm

PARSERS = (sglang, metrics, settings, lifecycle, startup, vllm)
