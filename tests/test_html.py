"""HTML page: self-contained (no fetch, no script), the Markdown content plus timelines, checked in a real
headless Chromium (Debian's `chromium`): every chart lays out and every series draws a visible line."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from realcases import case, long_run, report_of

from triage.analyze import Settings, analyze
from triage.report import RenderOptions, render
from triage.report.figures import MAX_POINTS

PROBE = """<script>
const charts = [...document.querySelectorAll('svg.chart')].map(s => {
  const r = s.getBoundingClientRect();
  const vb = s.viewBox.baseVal;
  const clipped = [...s.querySelectorAll('text')].filter(t => {
    const b = t.getBBox();
    return b.x < 0 || b.y < 0 || b.x + b.width > vb.width || b.y + b.height > vb.height;
  }).map(t => t.textContent);
  return {title: s.dataset.title, w: r.width, h: r.height, clipped,
          figure: s.closest('figure') ? s.closest('figure').dataset.source : null,
          lines: [...s.querySelectorAll('polyline.series')].map(p => ({name: p.dataset.name, n: p.points.numberOfItems,
                  len: p.getTotalLength(), bw: p.getBBox().width, stroke: getComputedStyle(p).stroke})),
          findings: s.querySelectorAll('.mark-finding').length, retractions: s.querySelectorAll('.mark-retraction').length};
});
const out = document.createElement('pre');
out.id = 'probe';
out.textContent = JSON.stringify({charts, resources: performance.getEntriesByType('resource').length,
  tables: document.querySelectorAll('table').length, figures: document.querySelectorAll('figure.timeline').length,
  title: document.title});
document.body.appendChild(out);
</script>"""


def page(paths: list[str]) -> str:
    return render("html", analyze(Settings(paths=paths)), RenderOptions())


def chromium_probe(text: str, tmp_path: Path) -> dict:  # type: ignore[type-arg]
    """Load a copy of the page, without its CSP and with the probe script, in headless Chromium."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed (CI must install Debian's chromium package)")
        pytest.skip("chromium not installed")
    probe_page = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", text).replace("</body>", PROBE + "</body>")
    target = tmp_path / "page.html"
    target.write_text(probe_page, encoding="utf-8")
    proc = subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--window-size=1200,900",
                           f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", target.as_uri()],
                          capture_output=True, text=True, timeout=120)
    m = re.search(r'<pre id="probe">(.*?)</pre>', proc.stdout, re.S)
    assert m, f"probe did not run: {proc.stderr[-500:]}"
    return json.loads(html.unescape(m.group(1)))


def test_page_is_self_contained_and_forbids_fetches() -> None:
    text = page([str(case("045"))])
    assert '<meta http-equiv="Content-Security-Policy" content="default-src \'none\';' in text
    assert not re.search(r"<(script|link|img|iframe)\b", text)
    assert not re.search(r"""(src|href)=["']?(https?:|//)""", text)


def test_page_holds_the_markdown_summary_then_timelines_then_coverage() -> None:
    text = page([str(case("036"))])
    assert ("<h2>triage: warning: serving-oom-retraction: KV-cache pool under pressure while requests wait "
            "(2 of 2 rows (100%), peak usage 1.00, up to 3 waiting)</h2>") in text
    assert text.index("<table>") < text.index('id="timelines"') < text.index("<h2>Coverage</h2>")
    assert text.count('<figure class="timeline" data-kind="engine"') == 1


def test_long_engine_log_is_downsampled_keeping_the_peaks(tmp_path: Path) -> None:
    report = analyze(Settings(paths=[str(long_run(tmp_path / "run"))]))
    engine, trainer = report.timelines
    assert (engine.kind, engine.rows, len(engine.x)) == ("engine", 6000, MAX_POINTS)
    assert max(v for v in engine.series["token usage"] if v is not None) == 1.0
    assert max(v for v in engine.series["queued requests"] if v is not None) == 9.0
    assert [m["line"] for m in engine.marks] == [1501, 3002, 4503, 6004]
    assert (trainer.kind, trainer.file, trainer.rows) == ("trainer", "rollout.log", 8)
    assert trainer.series["perf/step_time (s)"][0] == 600.0


def test_charts_render_in_headless_chromium(tmp_path: Path) -> None:
    run = long_run(tmp_path / "run")
    shutil.copy(case("004") / "train.log", run / "train.log")
    text = render("html", analyze(Settings(paths=[str(run)])), RenderOptions())
    probe = chromium_probe(text, tmp_path)
    assert probe["resources"] == 0  # nothing fetched even without the CSP
    assert probe["title"] == "triage: error: trainer-oom: Trainer ran out of GPU memory"
    assert probe["figures"] == 2 and probe["tables"] == 1
    titles = [c["title"] for c in probe["charts"]]
    assert titles == ["token usage", "requests", "gen throughput (token/s)", "perf/step_time (s)"]
    for c in probe["charts"]:
        assert c["w"] > 600 and c["h"] > 80, c
        assert c["clipped"] == [], c  # every tick and mark label inside the chart
        for line in c["lines"]:
            assert line["len"] > 100 and line["bw"] > 600, line  # spans the chart: drawn, not collapsed
            assert line["stroke"] not in ("none", ""), line
    usage, requests = probe["charts"][0], probe["charts"][1]
    assert usage["lines"][0]["n"] == MAX_POINTS
    assert [x["name"] for x in requests["lines"]] == ["running requests", "queued requests"]
    assert usage["retractions"] == 4  # one tick per retraction line
    # #2 retraction first+last, #3 the pressure episode's first+last row; the OOM is in another file
    assert usage["findings"] == 4


def test_real_prefill_ramp_renders_in_headless_chromium(tmp_path: Path) -> None:
    probe = chromium_probe(page([str(case("045"))]), tmp_path)
    assert [c["title"] for c in probe["charts"]] == ["token usage", "requests"]
    assert all(line["n"] == 7 and line["len"] > 100 for c in probe["charts"] for line in c["lines"])


def test_no_timelines_says_so() -> None:
    text = render("html", report_of("004"), RenderOptions())
    assert "No batch statistics or step times in these logs." in text


def test_every_engine_has_its_charts_and_no_label_is_clipped(tmp_path: Path) -> None:
    run = long_run(tmp_path / "run", rows=3000, retract_every=1000)
    log = run / "sglang-engine-0.log"
    (run / "sglang-engine-1.log").write_text(log.read_text())
    report = analyze(Settings(paths=[str(run)]))
    engines = [t.source for t in report.timelines if t.kind == "engine"]
    assert len(engines) == 2
    probe = chromium_probe(render("html", report, RenderOptions()), tmp_path)
    for source in engines:
        charts = [c for c in probe["charts"] if c["figure"] == source]
        assert [c["title"] for c in charts] == ["token usage", "requests", "gen throughput (token/s)"], source
        assert all(line["len"] > 100 for c in charts for line in c["lines"]), source
    assert [c["clipped"] for c in probe["charts"]] == [[]] * len(probe["charts"])


def test_wide_axis_labels_stay_inside_the_chart(tmp_path: Path) -> None:
    """A week-long log: line numbers and values in the tens of millions (the last x label is the widest)."""
    from triage.report import svg

    xs = list(range(12_345_000, 98_765_433, 1_000_000))
    chart = svg.Chart("tokens", xs, {"tokens": [float(x) * 1.3 for x in xs]},
                      [svg.Mark(xs[-1], "#1 serving.kv-retraction line 98765432", "finding")])
    page = "<!doctype html><html><head><meta charset='utf-8'></head><body>" + svg.render(chart) + "</body></html>"
    (chart_probe,) = chromium_probe(page, tmp_path)["charts"]
    assert chart_probe["clipped"] == []
    assert 'text-anchor="end">98M</text>' in page  # the last x label: compact, ending at the axis' end


def test_the_page_is_never_capped_like_a_ticket(combined: Path) -> None:  # noqa: F811
    import copy

    report = analyze(Settings(paths=[str(combined)]))
    many = []
    for i in range(4):
        for f in report.findings:
            g = copy.deepcopy(f)
            g.fingerprint = f"{f.fingerprint}{i}"
            many.append(g)
    report.findings = many
    text = render("html", report, RenderOptions(max_chars=32_767))
    assert len(text) > 32_767
    assert text.count("<h3>") == sum(1 for f in report.findings if not f.known) == 80  # every finding's details
    assert "left out" not in text
