"""The library's vocabulary for tests: the domain's own categories (`domain: true` in patterns/categories.yaml)."""

from __future__ import annotations

from triage.library.rules import load_library

LIBRARY = load_library()
SIX = LIBRARY.domain
CATEGORIES = tuple(LIBRARY.categories)
