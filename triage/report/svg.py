"""Line charts as inline SVG: no script, no fonts or files to fetch, so the HTML page opens offline anywhere.

A plotting library would bring megabytes of JavaScript into every ticket attachment; the charts needed
here are a few polylines over line numbers with vertical marks, which SVG draws natively.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape

WIDTH, HEIGHT = 960, 150
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 12, 26
COLORS = ("#1f6feb", "#d97706", "#059669", "#9333ea")
DOTS_UP_TO = 200  # points drawn as dots too, so a short series (one or two rows) is visible


@dataclass
class Mark:
    x: float
    label: str
    kind: str  # retraction | finding


@dataclass
class Chart:
    title: str
    x: list[int]
    series: dict[str, list[float | None]]
    marks: list[Mark] = field(default_factory=list)
    y_max: float | None = None  # fixed top of the axis (token usage: 1.0)


def _fmt(v: float) -> str:
    if abs(v) >= 10_000_000:  # at most 6 characters: fits the left margin as a y label
        return f"{v / 1e6:,.0f}M"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:.2f}".rstrip("0").rstrip(".") if v != int(v) else str(int(v))


class _Scale:
    def __init__(self, lo: float, hi: float, a: float, b: float):
        if hi <= lo:
            lo, hi = lo - 1, hi + 1
        self.lo, self.hi, self.a, self.b = lo, hi, a, b

    def __call__(self, v: float) -> float:
        return round(self.a + (v - self.lo) / (self.hi - self.lo) * (self.b - self.a), 1)


def _segments(xs: list[int], ys: list[float | None]) -> list[list[tuple[int, float]]]:
    """Runs of points without gaps (None breaks a line)."""
    out: list[list[tuple[int, float]]] = [[]]
    for x, y in zip(xs, ys):
        if y is None:
            if out[-1]:
                out.append([])
        else:
            out[-1].append((x, y))
    return [s for s in out if s]


def _axes(sx: _Scale, sy: _Scale, x: list[int]) -> list[str]:
    out = [f'<line class="axis" x1="{LEFT}" y1="{sy.a}" x2="{WIDTH - RIGHT}" y2="{sy.a}"/>',
           f'<line class="axis" x1="{LEFT}" y1="{sy.a}" x2="{LEFT}" y2="{TOP}"/>']
    for frac in (0.0, 0.5, 1.0):
        v = sy.lo + frac * (sy.hi - sy.lo)
        out.append(f'<text class="tick" x="{LEFT - 6}" y="{sy(v) + 4}" text-anchor="end">{_fmt(v)}</text>')
    lo, hi = x[0], x[-1]
    ticks = sorted({round(lo + (hi - lo) * i / 4) for i in range(5)})
    for v in ticks:
        # the last label ends at the axis' end instead of centring on it, so it is never cut at the edge
        anchor = "end" if v == ticks[-1] and len(ticks) > 1 else "middle"
        out.append(f'<text class="tick" x="{sx(v)}" y="{HEIGHT - 8}" text-anchor="{anchor}">{_fmt(v)}</text>')
    return out


def _marks(chart: Chart, sx: _Scale, sy: _Scale) -> list[str]:
    out = []
    findings = 0
    for m in chart.marks:
        px = sx(min(max(m.x, sx.lo), sx.hi))
        tip = f"<title>{escape(m.label)}</title>"
        if m.kind == "finding":
            # labels near the right edge point left; successive labels step down so neighbours stay readable
            anchor, dx = ("end", -3) if px > WIDTH - RIGHT - 40 else ("start", 3)
            y = TOP + 10 + 11 * (findings % 4)
            findings += 1
            out.append(f'<g class="mark mark-finding"><line x1="{px}" y1="{TOP}" x2="{px}" y2="{sy.a}"/>'
                       f'<text x="{px + dx}" y="{y}" text-anchor="{anchor}">{escape(m.label.split(" ")[0])}</text>'
                       f'{tip}</g>')
        else:
            out.append(f'<g class="mark mark-retraction"><line x1="{px}" y1="{sy.a - 10}" x2="{px}" y2="{sy.a}"/>'
                       f'{tip}</g>')
    return out


def render(chart: Chart) -> str:
    values = [v for ys in chart.series.values() for v in ys if v is not None]
    if not chart.x or not values:
        return ""
    sx = _Scale(chart.x[0], chart.x[-1], LEFT, WIDTH - RIGHT)
    sy = _Scale(0.0, chart.y_max if chart.y_max is not None else max(max(values), 1e-9), HEIGHT - BOTTOM, TOP)
    parts = _axes(sx, sy, chart.x)
    legend = []
    for i, (name, ys) in enumerate(chart.series.items()):
        color = COLORS[i % len(COLORS)]
        legend.append(f'<span class="key" style="color:{color}">━ {escape(name)}</span>')
        for seg in _segments(chart.x, ys):
            pts = " ".join(f"{sx(x)},{sy(y)}" for x, y in seg)
            parts.append(f'<polyline class="series" data-name="{escape(name)}" stroke="{color}" points="{pts}"/>')
            if len(ys) <= DOTS_UP_TO:
                parts += [f'<circle class="dot" cx="{sx(x)}" cy="{sy(y)}" r="2.5" fill="{color}">'
                          f'<title>{escape(name)} {_fmt(y)} at line {x}</title></circle>' for x, y in seg]
    parts += _marks(chart, sx, sy)
    return (f'<div class="chart-box"><div class="chart-title">{escape(chart.title)} {" ".join(legend)}</div>'
            f'<svg class="chart" data-title="{escape(chart.title)}" viewBox="0 0 {WIDTH} {HEIGHT}" '
            f'width="100%" role="img" aria-label="{escape(chart.title)}">{"".join(parts)}</svg></div>')
