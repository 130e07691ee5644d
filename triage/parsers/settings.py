"""Launch settings printed in logs: MILES/slime/SGLang command lines and argparse Namespace dumps.

Every value found becomes a `settings` event keyed by the flag (`--sglang-mem-fraction-static`) or
the Namespace field (`sglang_mem_fraction_static`); knobs.yaml maps both to canonical knob names.
"""

from __future__ import annotations

import re

from triage.model import Event, Line
from triage.parsers.values import literal

FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]+)(?:=|\s+)(?!--)([^\s\\'\"]+|'[^']*'|\"[^\"]*\")")
NAMESPACE_PAIR = re.compile(r"\b([a-z_][a-z0-9_]*)=('[^']*'|\"[^\"]*\"|[^,()\s]+)")

ANCHORS = ("--sglang-", "--rollout-", "--max-tokens-per-gpu", "--log-probs-chunk-size", "--micro-batch-size",
           "Namespace(", "--mem-fraction-static", "--max-running-requests", "--context-length", "--max-total-tokens")


def parse(line: Line) -> Event | None:
    msg = line.msg
    if "Namespace(" in msg:
        body = msg[msg.index("Namespace(") :]
        fields = {k: literal(v) for k, v in NAMESPACE_PAIR.findall(body)}
        return Event("settings", line, fields | {"_source": "launch args"}) if fields else None
    fields = {k: literal(v) for k, v in FLAG.findall(msg)}
    for flag in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]+)(?=\s+--|\s*$)", msg):
        fields.setdefault(flag, True)  # a store_true flag such as --sglang-disable-radix-cache
    return Event("settings", line, fields | {"_source": "command line"}) if fields else None
