"""parsers/series_store.py in bulk: the statistics of a column made in Python (the derived share of a write-out)."""

from __future__ import annotations

import random
from typing import Any

from triage.parsers.series_store import TOP, column_stats


def test_column_stats_of_finite_values_take_the_quick_way_to_the_same_answer() -> None:
    """series_store.column_stats (the derived share's statistics): all-finite columns are summed, counted and searched
    in bulk; the answer is the one read value by value (ties, -0.0 against 0.0, more than TOP values at the bar)."""

    def by_value(values: list[float]) -> tuple[Any, ...]:
        fin = [i for i, v in enumerate(values) if v - v == 0]
        lo = min(fin, key=lambda i: (values[i], i))
        hi = min(fin, key=lambda i: (-values[i], i))
        b = sorted((values[i] for i in fin), reverse=True)[min(TOP, len(fin)) - 1]
        top, ties = [], 0
        for i in fin:
            if values[i] > b or len(fin) <= TOP:
                top.append(i)
            elif values[i] == b and ties < TOP:
                ties += 1
                top.append(i)
        return (sum(1 for v in values if v != 0), 0, -1, -1, lo, hi, top)

    rng = random.Random(5)
    for n in (1, 3, TOP, TOP + 1, 200, 5000):
        for pool in ([0.0, -0.0, 0.5, 0.25, 1.0], None):
            values = [rng.choice(pool) if pool else rng.uniform(-1, 1) for _ in range(n)]
            assert column_stats(values)[:7] == by_value(values)
    assert column_stats([1.0, float("nan"), 2.0])[:4] == (3, 1, 1, 1)  # not all finite: the general way
    assert column_stats([1e308, 1e308])[:7] == by_value([1e308, 1e308])  # the sum overflows: the general way
