"""A line that a shared fragment accepts reaches every rule whose match uses the fragment.

The C prefilter hands a rule only lines holding one of its anchors, so a wording added to a shared fragment (the
accelerator OOMs of `cuda_oom_other`: torch_memory_saver's driver checks, Intel XPU, XLA/TPU, tt-metal, CANN, cudarc)
is seen by a rule only when that rule's anchors cover it too. Found when the trainer and engine OOM rules drifted
apart: the tt-metal allocator's "Out of Memory: Not enough space" reached the engine rules only, the XPU and cudarc
wordings the trainer rules only. Every example line of every rule using a fragment is the test input."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from triage.library.rules import Library

PATTERNS = Path(__file__).resolve().parent.parent / "patterns"
FRAGMENT_REF = re.compile(r"\$\{(\w+)\}")


def _fragment_users() -> dict[str, list[str]]:
    """fragment name -> ids of the line rules whose `match` refers to it."""
    users: dict[str, list[str]] = {}
    for path in sorted(PATTERNS.glob("*.yaml")):
        for raw in (yaml.safe_load(path.read_text()) or {}).get("rules") or []:
            for name in set(FRAGMENT_REF.findall(str(raw.get("match") or ""))):
                users.setdefault(name, []).append(raw["id"])
    return users


USERS = {name: ids for name, ids in _fragment_users().items() if len(ids) > 1}


def test_the_accelerator_oom_fragment_is_shared_by_both_sides() -> None:
    ids = USERS["cuda_oom_other"]
    assert any(i.startswith("trainer.") for i in ids) and any(i.startswith("serving.") for i in ids)


@pytest.mark.parametrize("fragment", sorted(USERS))
def test_every_rule_using_a_fragment_lets_its_lines_through(lib: Library, fragment: str) -> None:
    rules = [r for r in lib.rules if r.id in USERS[fragment]]
    lines = {line for r in rules for line in r.examples.get("match", [])}
    missed = [(r.id, line) for r in rules for line in sorted(lines)
              if r.search(line) and not any(a in line for a in r.anchors)]
    assert not missed
