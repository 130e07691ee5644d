"""Small runs of the benchmark's generator, one per profile: each run dir is what its profile claims (share of
rows under KV pressure, retraction storm, metric records, file count), its truth points at the injected lines,
and triage finds every injected failure. Sizes of a few MB; nothing here is timed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bench.gen import DEFAULT_CORPUS, PROFILES, RETRACT, generate, main, merge_ray, parse_size
from bench.run import GREP_ALTERNATION, recall
from triage.analyze import Settings, analyze
from triage.report import RenderOptions, render

pytestmark = pytest.mark.skipif(not DEFAULT_CORPUS.is_dir(), reason="needs the shared corpus")

SIZE = 8 << 20  # a pressure engine log needs several episodes (a cycle is up to 3750 lines) for its share
STATS = re.compile(r"(?:Decode|Prefill) batch, .*?token usage: ([0-9.]+).*?#queue-req: (\d+)")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, list[dict], dict]]:
    """Every profile generated once: (run dir, truth, counts)."""
    base = tmp_path_factory.mktemp("bench")
    out = {}
    for name in PROFILES:
        d = base / name
        generate(d, SIZE if name != "small" else 2 << 20, engines=2, seed=5, profile=name)
        out[name] = (d, json.loads((base / f"{name}.truth.json").read_text()),
                     json.loads((base / f"{name}.counts.json").read_text()))
    return out


def _logs(d: Path) -> list[Path]:
    return sorted(p for p in d.rglob("*.log"))


def _injected_lines(truth: list[dict]) -> set[tuple[str, int]]:
    return {(t["file"], n) for t in truth if not t["case"].endswith("(generated)")
            for n in range(t["start"], t["end"] + 1)}


def _stats_rows(d: Path, truth: list[dict]) -> list[list[tuple[float, int]]]:
    """Per engine log, its generated stats rows (usage, queue) in order; injected lines left out."""
    skip = _injected_lines(truth)
    rows = []
    for p in _logs(d):
        if "engine" not in p.name:
            continue
        mine = []
        for n, line in enumerate(p.read_text().splitlines(), 1):
            m = STATS.search(line)
            if m and (p.name, n) not in skip:
                mine.append((float(m.group(1)), int(m.group(2))))
        rows.append(mine)
    return rows


def test_parse_size_reads_the_usual_suffixes() -> None:
    assert parse_size("100M") == 100 << 20
    assert parse_size("1G") == 1 << 30
    assert parse_size("1GiB") == 1 << 30
    assert parse_size("1.5K") == 1536


def test_the_grep_yardstick_is_a_ten_way_alternation() -> None:
    assert len(GREP_ALTERNATION.split("|")) == 10


def test_every_profile_is_near_its_size_and_counts_what_it_wrote(runs) -> None:  # type: ignore[no-untyped-def]
    for name, (d, truth, counts) in runs.items():
        size = sum(p.stat().st_size for p in _logs(d))
        want = SIZE if name != "small" else 2 << 20
        assert want * 0.97 < size < want * (1.3 if name == "ray" else 1.05), name  # Ray prefixes add ~20 %
        assert counts["files"] == len(_logs(d)), name
        if name != "ray":  # (the driver log's injected ranges hold other processes' lines too)
            assert counts["stats_rows"] == sum(map(len, _stats_rows(d, truth))), name


def test_mixed_and_healthy_engines_stay_below_pressure(runs) -> None:  # type: ignore[no-untyped-def]
    for name in ("mixed", "healthy", "trainer"):
        d, truth, counts = runs[name]
        rows = [r for engine in _stats_rows(d, truth) for r in engine]
        assert rows and max(u for u, _ in rows) < 0.9, name
        assert counts["high_rows"] == 0


def test_pressure_puts_a_tenth_to_a_third_of_the_rows_at_0_9_with_a_queue_in_episodes(runs) -> None:  # type: ignore[no-untyped-def]
    d, truth, counts = runs["pressure"]
    engines = _stats_rows(d, truth)
    rows = [r for engine in engines for r in engine]
    high = [u >= 0.9 and q > 0 for u, q in rows]
    assert 0.10 <= sum(high) / len(rows) <= 0.30
    assert all(q > 0 for u, q in rows if u >= 0.9)  # never at 0.9 without a queue
    assert counts["high_rows"] == sum(high)
    runs_of_high: list[int] = []  # lengths of the contiguous episodes, in stats rows
    for engine in engines:
        n = 0
        for u, q in engine + [(0.0, 0)]:
            if u >= 0.9 and q > 0:
                n += 1
            elif n:
                runs_of_high.append(n)
                n = 0
    assert runs_of_high and min(runs_of_high) >= 150  # an episode is 250-750 lines, ~80 % of them stats rows


def test_saturated_holds_every_row_at_0_95_with_a_queue(runs) -> None:  # type: ignore[no-untyped-def]
    d, truth, counts = runs["saturated"]
    rows = [r for engine in _stats_rows(d, truth) for r in engine]
    assert len(rows) > 20_000
    assert all(u >= 0.95 and q >= 1 for u, q in rows)
    assert counts["high_rows"] == len(rows)


def test_storm_is_a_tenth_of_the_engine_lines_in_both_sglang_wordings(runs) -> None:  # type: ignore[no-untyped-def]
    d, truth, counts = runs["storm"]
    total = retract = 0
    for p in _logs(d):
        if "engine" not in p.name:
            continue
        lines = p.read_text().splitlines()
        mine = [ln for ln in lines if RETRACT in ln]
        total += len(lines)
        retract += len(mine)
        if p.name == "sglang-engine-0.log":  # SGLang since 2025-12-24 (log-formats.md §A.e)
            assert re.search(r"#retracted_reqs: \d+, #new_tokens_gained: \d+, #new_token_ratio: [0-9.]+ -> [0-9.]+$",
                             mine[-1])
        else:  # 2025-05-31 to 2025-12-24
            assert all("#new_tokens_gained" not in ln for ln in mine)
            assert re.search(r"#retracted_reqs: \d+, #new_token_ratio: [0-9.]+ -> [0-9.]+$", mine[0])
    assert retract / total >= 0.10
    assert counts["retractions"] == retract
    storm = [t for t in truth if t["case"].endswith("(generated)")]
    assert [t["category"] for t in storm] == ["serving-oom-retraction"]


def test_storm_retractions_are_followed_by_a_longer_queue(runs) -> None:  # type: ignore[no-untyped-def]
    d, _, _ = runs["storm"]
    lines = (d / "sglang-engine-1.log").read_text().splitlines()
    queue = re.compile(r"#queue-req: (\d+)")
    grew = bursts = 0
    for i in range(1, len(lines) - 1):
        if RETRACT in lines[i] and RETRACT not in lines[i + 1]:
            before = next((queue.search(x) for x in reversed(lines[max(0, i - 20):i]) if "Decode batch" in x), None)
            after = queue.search(lines[i + 1]) if "Decode batch" in lines[i + 1] else None
            if before and after:
                bursts += 1
                grew += int(after.group(1)) > int(before.group(1))
    assert bursts > 100 and grew >= 0.9 * bursts  # (a prefill between the rows compared can admit some)


def test_trainer_logs_are_mostly_metric_records(runs) -> None:  # type: ignore[no-untyped-def]
    slime_record = re.compile(r" - (?:step|perf|rollout) \d+: \{'")
    for name, record, per in (("trainer", slime_record, 3), ("trainer-verl", re.compile(r"\) step:\d+ - "), 1)):
        d, _, counts = runs[name]
        train = d / "train.log"
        n = sum(1 for ln in train.read_text().splitlines() if record.search(ln))
        assert n == counts["metric_records"] and n % per == 0, name
        assert train.stat().st_size > 0.65 * SIZE, name
        # the 1 GiB run's trainer log (70 % of it) holds at least 500 k records
        assert n / train.stat().st_size * 0.7 * (1 << 30) >= 500_000, name


def test_small_is_many_files_of_a_few_kilobytes(runs) -> None:  # type: ignore[no-untyped-def]
    d, truth, counts = runs["small"]
    logs = _logs(d)
    assert len(logs) == counts["files"] >= (2 << 20) // 8000
    hosts = {t["file"] for t in truth}
    assert all(p.stat().st_size <= 12_000 for p in logs if str(p.relative_to(d)) not in hosts)
    assert {p.parent.name for p in logs} == {"ranks", "verifier"}


def test_truth_points_at_the_injected_lines(runs) -> None:  # type: ignore[no-untyped-def]
    for name, (d, truth, _) in runs.items():
        assert (truth == []) == (name == "healthy"), name
        for t in truth:
            lines = (d / t["file"]).read_text().splitlines()
            block = lines[t["start"] - 1:t["end"]]
            if t["case"].endswith("(generated)"):  # the storm: from its first retraction line to its last
                assert RETRACT in block[0] and RETRACT in block[-1]
                continue
            case_lines = next((DEFAULT_CORPUS / t["case"] / "input").iterdir()).read_text().splitlines()
            if name == "ray":  # the injected process's lines, behind its actor prefix, among the others'
                prefix = block[0].split(") ", 1)[0]
                block = [ln.split(") ", 1)[1] for ln in block if ln.split(") ", 1)[0] == prefix]
            assert block == case_lines, (name, t["case"])
            assert any(e in "\n".join(block) or e.replace("\\'", "'") in "\n".join(block) for e in t["evidence"])


@pytest.mark.parametrize("name", [p for p in PROFILES if p != "healthy"])
def test_triage_finds_every_injected_failure(runs, name: str) -> None:  # type: ignore[no-untyped-def]
    d, truth, _ = runs[name]
    report = json.loads(render("json", analyze(Settings(paths=[str(d)])), RenderOptions()))
    found, missing = recall(report, truth)
    assert missing == [] and found == len(truth) >= 4


def test_the_command_line_writes_the_profile_asked_for(tmp_path: Path) -> None:
    assert main([str(tmp_path / "run"), "--size", "1M", "--profile", "saturated", "--engines", "1"]) == 0
    counts = json.loads((tmp_path / "run.counts.json").read_text())
    assert counts["profile"] == "saturated" and counts["high_rows"] == counts["stats_rows"] > 1000
    assert main([str(tmp_path / "ray"), "--size", "1M", "--ray"]) == 0
    assert [p.name for p in (tmp_path / "ray").iterdir()] == ["driver.log"]


def test_the_same_run_as_one_ray_driver_log_keeps_its_failures_where_the_truth_says(tmp_path: Path) -> None:
    files = tmp_path / "files"
    truth = merge_ray(files, generate(files, 3 << 20, engines=2, seed=3), tmp_path / "ray")
    assert sorted(p.name for p in (tmp_path / "ray").iterdir()) == ["driver.log"]
    lines = (tmp_path / "ray" / "driver.log").read_text().splitlines()
    assert sum(len(p.read_text().splitlines()) for p in files.iterdir()) == len(lines)
    assert {ln.split(")", 1)[0] + ")" for ln in lines} == {
        "(SGLangEngine pid=4100, ip=10.0.0.1)", "(SGLangEngine pid=4101, ip=10.0.0.2)",
        "(MegatronTrainRayActor pid=3900, ip=10.0.0.9)"}
    for t in truth:
        block = "\n".join(lines[t.start - 1:t.end])
        assert t.evidence == [] or any(e in block or e.replace("\\'", "'") in block for e in t.evidence), t.case
