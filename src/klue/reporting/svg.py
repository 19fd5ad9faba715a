"""Charts as inline SVG strings: grouped bars, heatmaps, line charts.

Hand-written rather than a plotting library because the report must be one file with no network and no
heavy dependency; each chart is a few dozen SVG elements with a `<title>` on every mark for hover.
Colours are the Okabe-Ito palette (distinguishable with the common colour-vision deficiencies); the
heatmap is a single-hue sequential scale, so it reads in greyscale too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape

PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000", "#F0E442")
REFERENCE_COLOUR = "#444444"
FONT = 12


def colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def _e(text: object) -> str:
    return escape(str(text), quote=True)


def _text_width(text: str, size: float = FONT) -> float:
    """A width estimate for layout: CJK characters are about one em wide, Latin ones about 0.6 em."""
    return sum(size if ord(c) > 0x2E80 else size * 0.6 for c in text)


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    if high <= low:
        high = low + 1
    raw = (high - low) / count
    step = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 2.5, 5, 10):
        if raw <= factor * step:
            step *= factor
            break
    start = math.floor(low / step) * step
    ticks, t = [], start
    while t <= high + step * 1e-9:
        ticks.append(round(t, 10))
        t += step
    if ticks[-1] < high:
        ticks.append(round(t, 10))
    return ticks


def _fmt(value: float) -> str:
    return f"{value:.0f}" if abs(value - round(value)) < 1e-9 else f"{value:g}"


@dataclass(frozen=True)
class Bar:
    series: str  # the legend entry: a model
    value: float
    std: float | None = None
    title: str = ""
    low: float | None = None  # an interval (95% bootstrap) drawn as the whisker instead of ±std
    high: float | None = None

    def whisker(self) -> tuple[float, float] | None:
        if self.low is not None and self.high is not None:
            return (self.low, self.high)
        if self.std:
            return (self.value - self.std, self.value + self.std)
        return None


@dataclass(frozen=True)
class BarGroup:
    label: str  # a metric or a class
    bars: tuple[Bar, ...]
    reference: float | None = None  # the paper's value for this group
    reference_title: str = ""


def _svg(width: float, height: float, body: list[str], label: str, kind: str) -> str:
    return (f'<svg class="chart" data-chart="{_e(kind)}" role="img" aria-label="{_e(label)}" '
            f'viewBox="0 0 {width:.0f} {height:.0f}" width="{width:.0f}" height="{height:.0f}" '
            f'xmlns="http://www.w3.org/2000/svg"><title>{_e(label)}</title>' + "".join(body) + "</svg>")


def legend(series: Sequence[str], reference: str | None = None) -> str:
    """An HTML legend (wraps like text, unlike SVG) for charts that share the series colours."""
    items = [f'<span class="key"><i style="background:{colour(i)}"></i>{_e(s)}</span>'
             for i, s in enumerate(series)]
    if reference:
        items.append(f'<span class="key"><i class="ref"></i>{_e(reference)}</span>')
    return '<div class="legend">' + "".join(items) + "</div>"


def bar_chart(groups: Sequence[BarGroup], series: Sequence[str], label: str, unit: str = "score (0–100)",
              width: float = 640, domain: tuple[float, float] | None = None,
              colour_of: Mapping[str, int] | None = None) -> str:
    """Horizontal grouped bars, one group per metric/class, one bar per series, whiskers (the bar's
    interval, else ±std),
    and the reference value as a dashed tick across the group. `colour_of` keeps a series' colour the
    same across charts that show different subsets of series."""
    bar_h, gap, group_gap = 16, 3, 16
    label_w = min(220.0, max([_text_width(g.label) for g in groups] + [40]) + 16)
    left, right, top = label_w, 56.0, 8.0
    n = max(len(series), 1)
    group_h = n * bar_h + (n - 1) * gap
    plot_h = len(groups) * group_h + max(len(groups) - 1, 0) * group_gap
    height = top + plot_h + 44
    values = [max(b.value, (b.whisker() or (0.0, 0.0))[1]) for g in groups for b in g.bars] + [
        g.reference for g in groups if g.reference is not None]
    lo, hi = domain if domain else (0.0, max(100.0, max(values, default=100.0)))
    ticks = nice_ticks(lo, hi)
    lo, hi = ticks[0], ticks[-1]
    plot_w = width - left - right

    def x(v: float) -> float:
        return left + (min(max(v, lo), hi) - lo) / (hi - lo) * plot_w

    body = []
    for t in ticks:
        body.append(f'<line class="grid" x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{top - 4:.1f}" '
                    f'y2="{top + plot_h + 4:.1f}"/>')
        body.append(f'<text class="tick" x="{x(t):.1f}" y="{top + plot_h + 18:.1f}" '
                    f'text-anchor="middle">{_fmt(t)}</text>')
    body.append(f'<text class="axis-label" x="{left + plot_w / 2:.1f}" y="{height - 6:.1f}" '
                f'text-anchor="middle">{_e(unit)}</text>')
    index = {s: i for i, s in enumerate(series)}
    for gi, group in enumerate(groups):
        y0 = top + gi * (group_h + group_gap)
        body.append(f'<text class="group-label" x="{left - 10:.1f}" y="{y0 + group_h / 2 + 4:.1f}" '
                    f'text-anchor="end">{_e(group.label)}</text>')
        for bar in group.bars:
            i = index[bar.series]
            y = y0 + i * (bar_h + gap)
            w = max(x(bar.value) - x(lo), 0.5)
            fill = colour(colour_of[bar.series] if colour_of else i)
            tip = bar.title or f"{bar.series} — {group.label}: {bar.value:.2f}"
            body.append(f'<g class="bar"><title>{_e(tip)}</title><rect x="{x(lo):.1f}" y="{y:.1f}" '
                        f'width="{w:.1f}" height="{bar_h}" rx="2" fill="{fill}"/>')
            whisker = bar.whisker()
            if whisker is not None:
                a, b = x(whisker[0]), x(whisker[1])
                ym = y + bar_h / 2
                body.append(f'<path class="whisker" d="M{a:.1f},{ym:.1f}H{b:.1f}M{a:.1f},{ym - 4:.1f}'
                            f'V{ym + 4:.1f}M{b:.1f},{ym - 4:.1f}V{ym + 4:.1f}"/>')
            end = x(max(bar.value, whisker[1])) if whisker is not None else x(bar.value)
            body.append(f'<text class="value" x="{end + 5:.1f}" y="{y + bar_h - 4:.1f}">'
                        f'{bar.value:.1f}</text></g>')
        if group.reference is not None:
            rx = x(group.reference)
            tip = group.reference_title or f"reference: {group.reference:.2f}"
            body.append(f'<g class="reference"><title>{_e(tip)}</title><line x1="{rx:.1f}" x2="{rx:.1f}" '
                        f'y1="{y0 - 5:.1f}" y2="{y0 + group_h + 5:.1f}"/>'
                        f'<rect x="{rx - 6:.1f}" y="{y0 - 5:.1f}" width="12" height="{group_h + 10:.1f}" '
                        f'fill="transparent"/></g>')
    return _svg(width, height, body, label, "bars")


def heatmap(labels: Sequence[str], counts: Sequence[Sequence[int]], label: str) -> str:
    """A confusion matrix: rows gold, columns predicted; colour = share of the gold row (recall)."""
    n = len(labels)
    cell = 46 if n <= 8 else max(18, 360 // max(n, 1))
    label_w = max([_text_width(x, 11) for x in labels] + [30]) + 14
    top = label_w * 0.72 + 30  # rotated column labels
    left = label_w + 24
    width = left + n * cell + 20
    height = top + n * cell + 16
    body = [(f'<text class="axis-label" x="{left + n * cell / 2:.1f}" y="14" text-anchor="middle">'
            'predicted label</text>'),
            (f'<text class="axis-label" transform="translate(12,{top + n * cell / 2:.1f}) rotate(-90)" '
            'text-anchor="middle">gold label</text>')]
    for j, name in enumerate(labels):
        cx = left + j * cell + cell / 2
        body.append(f'<text class="tick" transform="translate({cx + 4:.1f},{top - 6:.1f}) rotate(-40)">'
                    f'{_e(name)}</text>')
    for i, (gold, row) in enumerate(zip(labels, counts)):
        total = sum(row)
        y = top + i * cell
        body.append(f'<text class="tick" x="{left - 6:.1f}" y="{y + cell / 2 + 4:.1f}" text-anchor="end">'
                    f'{_e(gold)}</text>')
        for j, (pred, count) in enumerate(zip(labels, row)):
            share = count / total if total else 0.0
            fill = _blue(share)
            ink = "#ffffff" if share > 0.55 else "#1a1a1a"
            tip = f"gold {gold} → predicted {pred}: {count} ({share:.1%} of gold {gold})"
            body.append(f'<g class="cell"><title>{_e(tip)}</title><rect x="{left + j * cell:.1f}" y="{y:.1f}" '
                        f'width="{cell - 1}" height="{cell - 1}" fill="{fill}"/>')
            if cell >= 30:
                body.append(f'<text x="{left + j * cell + cell / 2:.1f}" y="{y + cell / 2 + 4:.1f}" '
                            f'text-anchor="middle" style="fill:{ink}" class="count">{count}</text>')
            body.append("</g>")
    return _svg(width, height, body, label, "heatmap")


def _blue(share: float) -> str:
    """White to dark blue, linear in lightness: a sequential scale readable without hue."""
    light, dark = (247, 251, 255), (8, 48, 107)
    t = max(0.0, min(1.0, share)) ** 0.8
    return "#" + "".join(f"{round(a + (b - a) * t):02x}" for a, b in zip(light, dark))


@dataclass(frozen=True)
class Series:
    label: str
    points: tuple[tuple[float, float], ...]
    colour_index: int = 0
    dashed: bool = False


def line_chart(series: Sequence[Series], label: str, x_label: str, y_label: str, width: float = 420,
               height: float = 240) -> str:
    left, right, top, bottom = 56.0, 16.0, 12.0, 44.0
    xs = [p[0] for s in series for p in s.points]
    ys = [p[1] for s in series for p in s.points]
    if not xs:
        return _svg(width, height, [(f'<text x="{width / 2}" y="{height / 2}" text-anchor="middle">'
                                    'no points</text>')], label, "lines")
    xt, yt = nice_ticks(min(xs), max(xs)), nice_ticks(min(ys), max(ys), 4)
    plot_w, plot_h = width - left - right, height - top - bottom

    def px(v: float) -> float:
        return left + (v - xt[0]) / (xt[-1] - xt[0]) * plot_w

    def py(v: float) -> float:
        return top + plot_h - (v - yt[0]) / (yt[-1] - yt[0]) * plot_h

    body = []
    for t in yt:
        body.append(f'<line class="grid" x1="{left}" x2="{left + plot_w}" y1="{py(t):.1f}" y2="{py(t):.1f}"/>'
                    f'<text class="tick" x="{left - 6}" y="{py(t) + 4:.1f}" text-anchor="end">{_fmt(t)}</text>')
    for t in xt:
        body.append(f'<text class="tick" x="{px(t):.1f}" y="{top + plot_h + 16:.1f}" text-anchor="middle">'
                    f'{_fmt(t)}</text>')
    body.append(f'<line class="axis" x1="{left}" x2="{left + plot_w}" y1="{top + plot_h}" y2="{top + plot_h}"/>')
    body.append(f'<text class="axis-label" x="{left + plot_w / 2:.1f}" y="{height - 6:.1f}" '
                f'text-anchor="middle">{_e(x_label)}</text>')
    body.append(f'<text class="axis-label" transform="translate(13,{top + plot_h / 2:.1f}) rotate(-90)" '
                f'text-anchor="middle">{_e(y_label)}</text>')
    for s in series:
        c = colour(s.colour_index)
        path = "M" + "L".join(f"{px(x):.1f},{py(y):.1f}" for x, y in s.points)
        dash = ' stroke-dasharray="5 3"' if s.dashed else ""
        body.append(f'<g class="line"><title>{_e(s.label)}</title><path d="{path}" stroke="{c}"{dash}/>')
        for x, y in s.points:
            body.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{c}">'
                        f'<title>{_e(s.label)} — {_e(x_label)} {_fmt(x)}: {y:.4g}</title></circle>')
        body.append("</g>")
    return _svg(width, height, body, label, "lines")
