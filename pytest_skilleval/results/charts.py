"""The report's plots, drawn by pygal as inline SVG (no script, no network, readable with JavaScript off).

Why pygal: it is pure Python, small (about 1 MB installed, one dependency), maintained, and renders SVG on the
server, so report.html stays one static file that also works where scripts are blocked (CI artifact viewers, mail)
and prints as it looks. A vendored JS library would add a script to every report and need a browser to draw.

Each chart gets a stable element id (pygal draws a random one) so the same run renders the same bytes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import pygal
from pygal.style import Style

__all__ = ["ForestRow", "case_chart", "charts_each_case", "forest_chart", "pass_k_chart", "score_bins", "trigger_chart"]

GREY, BLUE, GREEN, RED, AMBER = "#8c959f", "#1f6feb", "#1a7f37", "#cf222e", "#9a6700"
MAX_LABELLED_CASES = 40
# Past this many cases the case chart counts cases per band of mean overall instead of drawing a bar per case:
# hundreds of unlabelled bars say nothing, and drawing them is most of what a large report costs (the table below
# the chart still lists every case).
MAX_CHARTED_CASES = MAX_LABELLED_CASES
SCORE_BANDS = 10
BAND_COLOURS = {"PASS": GREEN, "FAIL": RED, "NEUTRAL": AMBER, None: GREY}
_CHART_ID = re.compile(r"chart-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_COMMENT = re.compile(r"<!--.*?-->", re.S)
# pygal writes its config into an inline <script> for its tooltip library even with js=[]; the report runs no script.
_SCRIPT = re.compile(r"<script\b.*?</script>", re.S)


def _style(colours: Sequence[str]) -> Style:
    return Style(
        background="white",
        plot_background="white",
        foreground="#24292f",
        foreground_strong="#24292f",
        foreground_subtle="#57606a",
        guide_stroke_color="#d0d7de",
        major_guide_stroke_color="#d0d7de",
        font_family="system-ui, -apple-system, 'Segoe UI', sans-serif",
        colors=tuple(colours),
        label_font_size=12,
        major_label_font_size=12,
        legend_font_size=13,
        title_font_size=15,
    )


def _render(chart: pygal.graph.graph.Graph, chart_id: str) -> str:
    svg = chart.render(is_unicode=True, disable_xml_declaration=True)
    svg = _SCRIPT.sub("", _COMMENT.sub("", svg))
    return _CHART_ID.sub(f"chart-{re.sub(r'[^A-Za-z0-9_-]', '_', chart_id)}", svg)


# No tooltip script (pygal would link one from the web), labels never truncated.
_COMMON: dict[str, object] = {
    "js": [],
    "truncate_label": -1,
    "truncate_legend": -1,
    "legend_at_bottom": True,
    "width": 720,
}


def _bar_chart(colours: Sequence[str], labels: list[str], y_title: str, height: int) -> pygal.Bar:
    """A 0-1 bar chart over named items; past MAX_LABELLED_CASES the names are left off (unreadable; the table
    below the chart has them)."""
    chart = pygal.Bar(
        style=_style(tuple(colours)),
        height=height,
        range=(0, 1),
        x_label_rotation=25 if len(labels) > 5 else 0,
        show_x_labels=len(labels) <= MAX_LABELLED_CASES,
        print_values=False,
        y_title=y_title,
        **_COMMON,
    )
    chart.x_labels = labels
    return chart


def charts_each_case(n_cases: int) -> bool:
    """Whether the case chart draws a bar per case (else it counts cases per band of mean overall)."""
    return n_cases <= MAX_CHARTED_CASES


def case_chart(
    chart_id: str, cases: Sequence[str], without: Sequence[float | None], with_skill: Sequence[float | None]
) -> str:
    """With vs without the skill per case: the mean overall of each arm, side by side (missing bars stay empty);
    past MAX_CHARTED_CASES cases, how many cases of each arm fall in each tenth of mean overall."""
    if not charts_each_case(len(cases)):
        return _case_bands(chart_id, without, with_skill)
    chart = _bar_chart((GREY, BLUE), list(cases), "mean overall", height=320)
    chart.add("without skill (baseline)", list(without))
    chart.add("with skill", list(with_skill))
    return _render(chart, chart_id)


def score_bins(values: Sequence[float | None]) -> list[int]:
    """How many of `values` fall in each tenth of 0-1 (1.0 in the last); a missing value is in none."""
    counts = [0] * SCORE_BANDS
    for value in values:
        if value is not None:
            counts[min(max(int(value * SCORE_BANDS), 0), SCORE_BANDS - 1)] += 1
    return counts


def _case_bands(chart_id: str, without: Sequence[float | None], with_skill: Sequence[float | None]) -> str:
    chart = pygal.Bar(
        style=_style((GREY, BLUE)),
        height=320,
        x_label_rotation=25,
        print_values=False,
        y_title="cases",
        x_title="mean overall",
        **_COMMON,
    )
    chart.x_labels = [f"{i / SCORE_BANDS:.1f}–{(i + 1) / SCORE_BANDS:.1f}" for i in range(SCORE_BANDS)]
    for label, values in (("without skill (baseline)", without), ("with skill", with_skill)):
        # An arm with no scored case (not run) draws no bars rather than ten empty ones.
        scored = any(value is not None for value in values)
        chart.add(label, score_bins(values) if scored else [None] * SCORE_BANDS)
    return _render(chart, chart_id)


@dataclass(frozen=True)
class ForestRow:
    label: str
    delta: float
    low: float
    high: float
    band: str | None


def forest_chart(chart_id: str, rows: Sequence[ForestRow]) -> str:
    """Lift per measure as a dot (the mean paired difference) on its 95% interval, against a dashed zero line."""
    n = len(rows)
    colours: list[str] = []
    chart = pygal.XY(
        style=_style(("#000",)),
        height=70 + 38 * n,
        range=(0.5, n + 0.5),
        xrange=(-1, 1),
        show_legend=False,
        show_y_guides=False,
        stroke_style={"width": 3},
        x_title="Skill Lift (with − without), 95% interval",
        y_labels=[{"label": row.label, "value": n - i} for i, row in enumerate(rows)],
        **_COMMON,
    )
    for i, row in enumerate(rows):
        y = n - i
        colour = BAND_COLOURS.get(row.band, GREY)
        chart.add(row.label, [(row.low, y), (row.high, y)], stroke=True, show_dots=False)
        chart.add(
            row.label,
            [{"value": (row.delta, y), "label": f"{row.delta:+.4f} [{row.low:+.4f}, {row.high:+.4f}]"}],
            stroke=False,
            dots_size=6,
        )
        colours += [colour, colour]
    chart.add("zero", [(0, 0.5), (0, n + 0.5)], stroke_style={"dasharray": "4,4", "width": 1}, show_dots=False)
    chart.config.style = _style((*colours, GREY))
    return _render(chart, chart_id)


def pass_k_chart(chart_id: str, ks: Sequence[int], series: Sequence[tuple[str, Sequence[float | None]]]) -> str:
    """pass@k (at least one of k passes) and pass^k (all k pass) over k, per arm."""
    colours = [BLUE, BLUE, GREY, GREY][: len(series)]
    chart = pygal.Line(style=_style(colours), height=300, range=(0, 1), y_title="rate", x_title="k", **_COMMON)
    chart.x_labels = [str(k) for k in ks]
    for label, values in series:
        dashed = "pass^k" in label
        chart.add(label, list(values), stroke_style={"width": 2, "dasharray": "6,4" if dashed else "0"}, dots_size=4)
    return _render(chart, chart_id)


def trigger_chart(chart_id: str, queries: Sequence[tuple[str, bool, float | None]]) -> str:
    """Trigger rate per query, should-trigger queries (blue, want 1) beside should-not ones (grey, want 0)."""
    chart = _bar_chart((BLUE, GREY), [query for query, _, _ in queries], "trigger rate", height=300)
    chart.add("should trigger", [rate if should else None for _, should, rate in queries])
    chart.add("should not trigger", [None if should else rate for _, should, rate in queries])
    return _render(chart, chart_id)
