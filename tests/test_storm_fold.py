"""A retraction storm in a saturated pool (bench's storm profile): bursts of one family of retraction lines, each
burst further from the last than a family bridges (origins.FAMILY_GAP), between rows at usage >= 0.95 with a queue.
The first line of each burst comes back to Python (the line its family folds into from then on), and the C side
goes on folding the pressure rows around it instead of writing out every engine's runs before it
(_linescan.c fold_settle). Both scan paths must give the same pressure episodes, claims and retraction events."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.test_fastscan import DECODE, PREFILL, pressure_view, scan
from triage.checks.serving import retracted
from triage.scan import native
from triage.scan import prefiltered as fastscan
from triage.scan.origins import FAMILY_GAP

pytestmark = pytest.mark.skipif(not native.available(), reason="the C prefilter is not built")

RETRACT = ("[2026-05-24 01:{m:02d}:{s:02d} TP0] KV cache pool is full. Retract requests. #retracted_reqs: {n}, "
           "#new_tokens_gained: {g}, #new_token_ratio: {a:.4f} -> {b:.4f}")


def saturated_storm(bursts: int, seed: int) -> list[str]:
    """Bursts of 1-6 retraction lines (stats rows between some), separated by FAMILY_GAP + 1 to 3 * FAMILY_GAP
    pressure rows; now and then a quiet row ends an episode, or a line of another kind comes between."""
    rng = random.Random(seed)
    out: list[str] = []
    i = 0

    def row(high: bool = True) -> str:
        u = f"{rng.choice((0.95, 0.97, 0.99, 1.0)):.2f}" if high else f"{rng.uniform(0.2, 0.85):.2f}"
        q = rng.choice((1, 3, 12, 40)) if high else 0
        return (DECODE if rng.random() < 0.85 else PREFILL).format(s=len(out) % 60, u=u, q=q)

    for _ in range(bursts):
        for _ in range(rng.randint(FAMILY_GAP + 1, 3 * FAMILY_GAP)):
            out.append(row(rng.random() > 0.01))
        if rng.random() < 0.05:
            out.append("[2026-05-24 01:00:00 TP0] Scheduler: request aborted, retrying")
        for _ in range(rng.randint(1, 6)):
            i += 1
            a = rng.uniform(0.05, 0.5)
            out.append(RETRACT.format(m=i // 60 % 60, s=i % 60, n=rng.randrange(1, 9), g=rng.randrange(100, 900),
                                      a=a, b=a + 0.2))
            if rng.random() < 0.3:
                out.append(row())
    return out


@pytest.mark.parametrize(("seed", "chunk"), [(1, 1 << 16), (2, 1 << 18), (3, 1 << 23)])
def test_restarts_of_a_storm_leave_the_pressure_fold_running_and_both_paths_agree(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, chunk: int) -> None:
    monkeypatch.setattr(fastscan, "SAMPLE_ALL_BELOW", 0)
    monkeypatch.setattr(fastscan, "TIMELINE_ROWS", 50)
    monkeypatch.setattr(fastscan, "CHUNK", chunk)
    out: list[tuple[int, ...]] = []
    real = native._linescan.scan
    monkeypatch.setattr(native._linescan, "scan", lambda *a: (r := real(*a), out.extend(
        h[:2] for h in r[4]))[0])
    log = tmp_path / "sglang-engine-0.log"
    lines = saturated_storm(300, seed)
    log.write_text("\n".join(lines) + "\n")
    fast, slow = scan(log), scan(log, native=False)

    (key,) = slow.engines
    assert list(fast.engines) == [key]
    assert pressure_view(fast.engines[key]) == pressure_view(slow.engines[key])
    view = lambda res: ([(h.rule, h.line.lineno, h.line.until, h.line.repeat) for h in res.hits],  # noqa: E731
                        [(e.line.lineno, e.fields.get("count"), e.fields.get("extra"), retracted(e))
                         for e in res.events if e.kind == "retraction"])
    assert view(fast) == view(slow)
    kept = [e for e in slow.events if e.kind == "retraction"]
    assert len(kept) >= 250  # a burst's first line starts a new kept line (the gap before it is wider than a family's)
    assert sum(retracted(e) for e in kept) == sum(int(ln.split("#retracted_reqs: ")[1].split(",")[0])
                                                   for ln in lines if "#retracted_reqs: " in ln)
    # in one chunk the C side folds the pressure rows across the bursts' first lines: a write-out per episode a quiet
    # row ends, not one per line returned (before: ~600 records for ~300 lines)
    returned = sum(1 for kind, _ in out if kind == native.K_CAND)
    records = sum(1 for kind, _ in out if kind in (fastscan.K_FOLD, fastscan.K_BATCH))
    assert returned >= 250
    if chunk >= len(log.read_bytes()):
        assert records < returned // 10
