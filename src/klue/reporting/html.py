"""The HTML report: one self-contained file (inline CSS, inline SVG charts, a few lines of inline JS).

Sections: the leaderboard; how the prompted LMs were run; scores on the clean subset of a contamination
scan (`--contamination`); task scores against the paper; one section per task (its rows with every
metric, a chart against the paper, confusion heatmaps, per-class/type bars, learning curves); failed
cells; and the provenance of every number (data files and hashes, protocol, metric mode, recipe, seed,
library versions, git revision). Nothing is fetched from a network.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict
from html import escape
from pathlib import Path
from typing import Any

from klue.io import provenance
from klue.metrics.resampling import Estimate
from klue.reporting import svg
from klue.reporting.aggregate import Aggregate, Row, Stat, TaskInfo
from klue.reporting.contamination import CONTAMINATION_TITLE, Scan
from klue.reporting.intervals import REPORT_RESAMPLES, interval_text
from klue.reporting.leaderboard import (
    NOT_APPLICABLE,
    NOT_OFFICIAL_MARK,
    Cell,
    build_leaderboard,
    metric_label,
    metric_short,
    task_label,
)
from klue.reporting.llm_runs import GENERATED_MARK, LLM_RUNS_TITLE, generated
from klue.results import Results

REPORT_FILE = "report.html"  # the report's name in a benchmark directory
_CURVE_SKIP = frozenset({"learning_rate", "lr", "grad_norm", "examples_per_s"})  # not scores


def _e(text: object) -> str:
    return escape(str(text), quote=True)


def _anchor(*parts: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", "-".join(parts)).strip("-").lower()


def row_anchor(row: Row) -> str:
    return _anchor("row", row.task, row.model, row.protocol, row.metric_mode)


def _protocol_badge(protocol: str, official: bool, description: str = "") -> str:
    if official:
        return f'<span class="badge official" title="{_e(description or "official train → dev")}">official</span>'
    tip = (description + " — " if description else "") + "not the official protocol: not comparable with the paper"
    return f'<span class="badge local" title="{_e(tip)}">{_e(protocol)}</span>'


def _mode_badge(mode: str) -> str:
    if mode == "official":
        return ""
    return f' <span class="badge mode" title="metrics in {_e(mode)} mode, not the official code">{_e(mode)} metrics</span>'


def _stat_html(stat: Stat | None, estimate: Estimate | None = None) -> str:
    if stat is None:
        return '<span class="dim">—</span>'
    std = f'<span class="std">±{stat.std:.2f}</span>' if stat.std is not None else ""
    tip = "values over seeds: " + ", ".join(f"{v:.2f}" for v in stat.values)
    ci = ""
    if estimate is not None and interval_text(estimate):
        tip += f"; 95% bootstrap interval {interval_text(estimate)}"
        ci = f'<small class="ci">{_e(interval_text(estimate))}</small>'
    return f'<span class="num" title="{_e(tip)}">{stat.mean:.2f}</span>{std}{ci}'


class _Page:
    def __init__(self, agg: Aggregate, n_resamples: int = REPORT_RESAMPLES, seed: int = 0,
                 scan: Scan | None = None) -> None:
        self.agg = agg
        self.board = build_leaderboard(agg, n_resamples, seed, scan)
        self.intervals = self.board.intervals
        self.models = sorted({r.model for r in agg.rows} | {r.model for _, r in agg.failures},
                             key=lambda m: next((i for i, e in enumerate(agg.entries) if e.model == m), 99))
        self.reference = agg.references[0] if agg.references else None
        self.colour_of = {m: i for i, m in enumerate(self.models)}

    def series_index(self, model: str) -> int:
        return self.models.index(model)

    # -- the page -----------------------------------------------------------------------------------
    def render(self) -> str:
        tasks_with_rows = [t for t in self.agg.tasks.values() if self.agg.rows_for(t.name)]
        sections = [self.header(), self.summary(), self.leaderboard(), self.llm_runs(), self.contamination(),
                    self.overview()]
        sections += [self.task_section(t) for t in tasks_with_rows]
        sections += [self.failures(), self.provenance(), self.definitions()]
        nav = ('<a href="#llm-runs">LLM runs</a>' if self.board.llm_runs is not None else "") + (
            '<a href="#contamination">Clean subset</a>' if self.board.contamination is not None else "") + "".join(
            f'<a href="#task-{t.name}">{_e(task_label(t))}</a>' for t in tasks_with_rows)
        return (
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>KLUE benchmark report — {_e(self.agg.root.name)}</title><style>{_CSS}</style></head>"
            f"<body><nav class=\"top\"><span class=\"brand\">KLUE report</span><a href=\"#leaderboard\">Leaderboard</a>"
            f"{nav}<a href=\"#failures\">Failures</a><a href=\"#provenance\">Provenance</a></nav>"
            f"<main>{''.join(s for s in sections if s)}</main><script>{_JS}</script></body></html>\n"
        )

    def header(self) -> str:
        manifest = self.agg.manifest
        version = (manifest.klue_version if manifest else None) or provenance.library_versions().get("klue", "?")
        meta = [f"directory <code>{_e(self.agg.root)}</code>", f"klue {_e(version)}",
                f"report made {_e(provenance.utc_now())}"]
        if manifest is not None:
            meta.append(f"benchmark started {_e(manifest.started_at)}")
            meta.append(f"status {_e(manifest.status)}")
        return (f'<header><h1>KLUE benchmark report</h1><p class="lede">Korean Language Understanding '
                f'Evaluation, dev sets. Scores on a 0–100 scale, mean ± sample standard deviation over '
                f'seeds.</p><p class="meta">{" · ".join(meta)}</p></header>')

    def summary(self) -> str:
        agg = self.agg
        n_ok = sum(len(r.runs) for r in agg.rows)
        seeds = sorted({r.seed for _, r in agg.results})
        covered = {r.task for r in agg.rows}
        best = next((e for e in agg.entries if e.klue_score is not None), None)
        cards = [
            ("models", str(len(self.models)), ", ".join(self.models)),
            ("tasks with results", f"{len(covered)}/{len(agg.tasks)}",
             ", ".join(task_label(t) for t in agg.tasks.values() if t.name in covered)),
            ("seeds", str(len(seeds)), ", ".join(map(str, seeds))),
            ("cells ok / failed", f"{n_ok} / {len(agg.failures)}", "one cell = task × model × seed"),
        ]
        if best is not None:
            cards.insert(0, ("best KLUE score", f"{best.klue_score:.2f}", best.model))
        html = "".join(f'<div class="card" title="{_e(tip)}"><div class="card-value">{_e(v)}</div>'
                       f'<div class="card-label">{_e(k)}</div></div>' for k, v, tip in cards)
        notice = ""
        if any(not r.protocol_official for r in agg.rows):
            notice = (f'<p class="notice"><b>{NOT_OFFICIAL_MARK} Local protocols.</b> Rows marked with an orange '
                      'protocol badge were not trained on the official train set and evaluated on the official '
                      'dev set; their numbers are not comparable with the paper or with official rows.</p>')
        return f'<section class="cards">{html}</section>{notice}'

    def leaderboard(self) -> str:
        board = self.board
        tests = any(line.versus_next for line in board.lines)
        head = ("<tr><th>#</th><th>Model · protocol</th><th class=\"n\">KLUE score</th>"
                + "".join(f'<th class="n" title="{_e(t.title)}: '
                          f'{_e(" / ".join(metric_label(m) for m in t.main_metrics))}">{_e(task_label(t))}'
                          + "".join(f"<small>{_e(metric_short(m))}</small>" for m in t.main_metrics) + "</th>"
                          for t in board.tasks)
                + ('<th class="n" title="difference from the next ranked model, paired bootstrap p-value; '
                   '* p &lt; 0.05">vs next</th>' if tests else "") + "</tr>")
        body = []
        for line in board.lines:
            cls = "reference" if line.reference else ("local" if not line.official else "")
            model = _e(line.model) + _mode_badge(line.mode)
            protocols = "".join(_protocol_badge(p.strip(), p.strip() == "official") for p in line.protocol.split(","))
            cells = [self.board_cell(line.score, ref=line.reference, strong=True)]
            for task, cell in zip(board.tasks, line.tasks):
                cells.append(self.board_cell(cell, ref=line.reference, task=task))
            if tests:
                sig = " sig" if line.versus_next.endswith("*") else ""
                cells.append(f'<td class="n versus{sig}">{_e(line.versus_next)}</td>')
            family = "paper" if line.reference else _e(line.family)
            body.append(f'<tr class="{cls}"><td class="rank">{_e(line.rank)}</td><td class="model">{model}'
                        f'<small>{family} · {protocols}</small></td>{"".join(cells)}</tr>')
        notes = "".join(f"<li>{_e(n)}</li>" for n in board.notes)
        return (f'<section id="leaderboard"><h2>Leaderboard</h2><div class="scroll"><table class="board sortable">'
                f'<thead>{head}</thead><tbody>{"".join(body)}</tbody></table></div>'
                f'<ul class="notes">{notes}</ul></section>')

    def board_cell(self, cell: Cell, ref: bool, strong: bool = False, task: TaskInfo | None = None) -> str:
        sort = "" if cell.value is None else f' data-sort="{cell.value:.6f}"'
        if cell.kind in ("failed", "missing"):
            return f'<td class="n {cell.kind}" title="{_e(cell.title)}"{sort}>{_e(cell.text)}</td>'
        bar = ""
        if cell.value is not None:
            paper = ""
            if task is not None and self.reference is not None and not ref:
                p = self.agg.reference_task_score(self.reference, task.name)
                if p is not None:
                    paper = f'<i style="left:{min(p, 100):.1f}%" title="paper: {p:.2f}"></i>'
            bar = (f'<div class="mini{" ref" if ref else ""}"><span style="width:{max(0, min(cell.value, 100)):.1f}%">'
                   f'</span>{paper}</div>')
        cls = "n" + (" strong" if strong else "") + (" partial" if cell.kind == "partial" else "")
        if cell.kind == "partial" and cell.value is not None:
            text = f'{cell.value:.2f}<small class="partial-note">{_e(cell.text.split("(", 1)[-1].rstrip(")"))}</small>'
        elif cell.parts:
            mark = "" if cell.official or ref else f'<sup class="mark">{NOT_OFFICIAL_MARK}</sup>'
            mark += f'<sup class="mark gen">{GENERATED_MARK}</sup>' if cell.generated else ""
            text = "".join(f'<div class="part">{_part_html(p)}</div>' for p in cell.parts)
            text = text[: -len("</div>")] + mark + "</div>"
        else:
            text = _e(cell.text)
        interval = f'<small class="ci">{_e(cell.interval)}</small>' if cell.interval else ""
        return f'<td class="{cls}" title="{_e(cell.title)}"{sort}>{text}{interval}{bar}</td>'

    def llm_runs(self) -> str:
        """How the prompted LMs were run: one line per LLM row (klue.reporting.llm_runs)."""
        table = self.board.llm_runs
        if table is None:
            return ""
        head = "".join(f"<th>{_e(h)}</th>" for h in table.headers)
        body = "".join(
            f'<tr><td>{_e(line.cells[0])}</td><td class="model"><a href="#{row_anchor(line.row)}">'
            f'{_e(line.cells[1])}</a></td>' + "".join(f"<td>{_e(c)}</td>" for c in line.cells[2:]) + "</tr>"
            for line in table.lines)
        notes = "".join(f"<li>{_e(n)}</li>" for n in table.notes)
        return (f'<section id="llm-runs"><h2>{_e(LLM_RUNS_TITLE)}</h2><p class="explain">A prompted LM\'s score '
                f'depends on how it was asked: per row its scoring mode, prompt form, shots, parse failures, how '
                f'often it repeated the last shot\'s label, and what was cut to fit its context (seeds pooled).'
                f'</p><div class="scroll"><table class="rows llm">'
                f'<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div><ul class="notes">{notes}</ul>'
                f'</section>')

    def contamination(self) -> str:
        """Each row's score on the clean subset of a contamination scan (klue.reporting.contamination)."""
        table = self.board.contamination
        if table is None:
            return ""
        head = "".join(f"<th>{_e(h)}</th>" for h in table.headers)
        body = []
        for line in table.lines:
            cells = line.cells()
            sig = ' class="versus sig"' if line.differs == "yes" else ""
            body.append(f'<tr><td>{_e(cells[0])}</td><td class="model"><a href="#{row_anchor(line.row)}">'
                        f'{_e(cells[1])}</a></td>' + "".join(f'<td class="n">{_e(c)}</td>' for c in cells[2:-1])
                        + f"<td{sig}>{_e(cells[-1])}</td></tr>")
        notes = "".join(f"<li>{_e(n)}</li>" for n in table.notes)
        return (f'<section id="contamination"><h2>{_e(CONTAMINATION_TITLE)}</h2><p class="explain">Per row, the '
                f'task score on the examples the contamination scan found clean, beside the score on every '
                f'example, and whether they differ.</p><div class="scroll"><table class="rows">'
                f'<thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'
                f'<ul class="notes">{notes}</ul></section>')

    def overview(self) -> str:
        groups = []
        for info in self.agg.tasks.values():
            bars = []
            for entry in self.agg.entries:
                score = entry.task_scores.get(info.name)
                if score is None:
                    continue
                row = entry.rows[info.name]
                mark = "" if row.protocol_official else f" {NOT_OFFICIAL_MARK}{row.protocol}"
                found = self.intervals.of(row) if self.intervals is not None else None
                estimate = found.task_estimate if found is not None else None
                ci = f", 95% interval {interval_text(estimate)}" if estimate is not None else ""
                bars.append(svg.Bar(entry.model, score.mean, score.std,
                                    f"{entry.model} — {task_label(info)} task score {score.format()}"
                                    f" over {score.n} seed(s){ci}{mark}",
                                    estimate.low if estimate else None, estimate.high if estimate else None))
            if not bars:
                continue
            ref = self.agg.reference_task_score(self.reference, info.name) if self.reference else None
            groups.append(svg.BarGroup(task_label(info), tuple(bars), ref,
                                       f"paper ({self.reference.model if self.reference else ''}): "
                                       f"{ref:.2f}" if ref is not None else ""))
        if not groups:
            return ""
        chart = svg.bar_chart(groups, self.models, "Task scores of each model against the paper",
                              unit="task score (mean of the main metrics, 0–100)", width=980,
                              colour_of=self.colour_of)
        return (f'<section id="overview"><h2>Task scores against the paper</h2><p class="explain">Each bar is '
                f'a model\'s task score (mean of the task\'s main metrics, mean over seeds; whisker: the 95% '
                f'bootstrap interval where the runs kept their statistics, else ±1 std); '
                f'the dashed tick is the paper\'s number.</p>{self.legend()}{chart}</section>')

    def legend(self, models: Sequence[str] | None = None, with_reference: bool = True) -> str:
        ref = f"paper: {self.reference.model}" if self.reference and with_reference else None
        names = list(models) if models is not None else self.models
        # keep colours stable across charts: the legend lists every model in the page's order
        items = [f'<span class="key"><i style="background:{svg.colour(self.series_index(m))}"></i>{_e(m)}</span>'
                 for m in names]
        if ref:
            items.append(f'<span class="key"><i class="ref"></i>{_e(ref)} (reference)</span>')
        return '<div class="legend">' + "".join(items) + "</div>"

    # -- one task -------------------------------------------------------------------------------------
    def task_section(self, info: TaskInfo) -> str:
        rows = sorted(self.agg.rows_for(info.name), key=lambda r: (self.colour_of.get(r.model, 99), r.protocol))
        metrics: list[str] = list(info.metrics)
        for row in rows:
            metrics += [m for m in row.metric_names() if m not in metrics]
        ref_scores = self.reference.scores.get(info.name, {}) if self.reference else {}
        tested = self.intervals is not None and any(self.intervals.of(r) for r in rows)
        extra = ('<th class="n">task score [95% CI]</th><th class="n" title="task score minus the next row\'s '
                 '(next lower task score on the same examples), paired bootstrap p-value; * p &lt; 0.05">'
                 'vs next</th>') if tested else ""
        head = ("<tr><th>Model</th><th>Protocol</th><th class=\"n\">Seeds</th><th class=\"n\">Train / eval</th>"
                + "".join(f'<th class="n{" main" if m in info.main_metrics else ""}">{_e(metric_label(m))}</th>'
                          for m in metrics) + extra + "</tr>")
        body = []
        for row in rows:
            n_train = sorted({r.n_train for _, r in row.runs})
            n_eval = sorted({r.n_eval for _, r in row.runs})
            seeds = ", ".join(map(str, row.seeds))
            failed = f' <span class="failed">({len(row.failures)} failed)</span>' if row.failures else ""
            found = self.intervals.of(row) if self.intervals is not None else None
            cells = "".join(
                f'<td class="n dim" title="not applicable to these runs (results.json: llm.not_applicable)">'
                f'{NOT_APPLICABLE}</td>' if m in row.not_applicable_metrics else
                f'<td class="n">{_stat_html(row.metric(m), found.estimates.get(m) if found else None)}</td>'
                for m in metrics)
            mark = (f' <span class="badge mode" title="scored from generated answers: see {_e(LLM_RUNS_TITLE)}">'
                    f'{GENERATED_MARK} generated</span>' if generated(row) else "")
            if tested:
                cells += self.row_test_cells(info, row)
            body.append(f'<tr><td class="model"><a href="#{row_anchor(row)}">{_e(row.model)}</a>'
                        f'{_mode_badge(row.metric_mode)}{mark}</td><td>{_protocol_badge(row.protocol, row.protocol_official, row.protocol_description)}</td>'
                        f'<td class="n">{_e(seeds)}{failed}</td><td class="n">{_e("/".join(map(str, n_train)))} / '
                        f'{_e("/".join(map(str, n_eval)))}</td>{cells}</tr>')
        if ref_scores and self.reference:
            cells = "".join(f'<td class="n">{ref_scores[m]:.2f}</td>' if m in ref_scores else '<td class="n dim">—</td>'
                            for m in metrics)
            body.append(f'<tr class="reference"><td class="model">{_e(self.reference.model)} '
                        f'<span class="badge ref">paper</span></td><td>{_protocol_badge("official", True)}</td>'
                        f'<td class="n dim">—</td><td class="n dim">—</td>{cells}</tr>')
        table = (f'<div class="scroll"><table class="rows"><thead>{head}</thead><tbody>{"".join(body)}'
                 f'</tbody></table></div>')
        descriptions = "".join(f"<li>{_protocol_badge(p, o, d)} {_e(d)}</li>"
                               for p, o, d in sorted({(r.protocol, r.protocol_official, r.protocol_description)
                                                      for r in rows}))
        figures = [self.metric_chart(info, rows, metrics, ref_scores)]
        figures += [self.confusion(info, row) for row in rows if row.confusion()]
        for name in dict.fromkeys(n for row in rows for n in row.breakdown_names()):
            figures.append(self.breakdown_chart(info, rows, name))
        curves = [self.curves(info, row) for row in rows if any(r.learning_curve for _, r in row.runs)]
        curves_html = ""
        if curves:
            curves_html = '<h3>Learning curves</h3><div class="figs">' + "".join(curves) + "</div>"
        return (f'<section id="task-{_e(info.name)}" class="task"><h2>{_e(task_label(info))} '
                f'<span class="sub">{_e(info.title)}</span></h2>{table}<ul class="protocols">{descriptions}</ul>'
                f'<div class="figs">{"".join(f for f in figures if f)}</div>{curves_html}</section>')

    def row_test_cells(self, info: TaskInfo, row: Row) -> str:
        """The task score with its interval, and the paired test against the next row."""
        found = self.intervals.of(row) if self.intervals is not None else None
        estimate = found.task_estimate if found is not None else None
        if estimate is None:
            return '<td class="n dim">—</td><td class="n dim">—</td>'
        test = self.intervals.row_tests.get(id(row)) if self.intervals is not None else None
        versus = ('<td class="n dim">—</td>' if test is None else
                  f'<td class="n versus{" sig" if test.significant else ""}" title="interval of the difference '
                  f'{test.low:+.2f} to {test.high:+.2f}">{_e(test.text())}</td>')
        return (f'<td class="n"><span class="num">{estimate.value:.2f}</span><small class="ci">'
                f'{_e(interval_text(estimate))}</small></td>{versus}')

    def metric_chart(self, info: TaskInfo, rows: list[Row], metrics: list[str], ref: dict[str, float]) -> str:
        groups = []
        any_interval = False
        for m in metrics:
            bars = []
            for row in rows:
                stat = row.metric(m)
                found = self.intervals.of(row) if self.intervals is not None else None
                estimate = found.estimates.get(m) if found is not None else None
                any_interval = any_interval or estimate is not None
                if stat is not None:
                    ci = f", 95% interval {interval_text(estimate)}" if estimate is not None else ""
                    bars.append(svg.Bar(row.model, stat.mean, stat.std,
                                        f"{row.model} ({row.protocol}) — {metric_label(m)}: {stat.format()}, "
                                        f"{stat.n} seed(s){ci}", estimate.low if estimate else None,
                                        estimate.high if estimate else None))
            if bars:
                groups.append(svg.BarGroup(metric_label(m), tuple(_one_per_model(bars)), ref.get(m),
                                           f"paper: {ref[m]:.2f}" if m in ref else ""))
        models = list(dict.fromkeys(r.model for r in rows))
        chart = svg.bar_chart(groups, models, f"{task_label(info)}: every metric against the paper",
                              width=560, colour_of=self.colour_of)
        whisker = "95% bootstrap interval (seeds combined)" if any_interval else "±1 std"
        return _figure(f"{task_label(info)} metrics vs paper", self.legend(models) + chart,
                       f"mean over seeds, whisker {whisker}; dashed tick: the paper")

    def confusion(self, info: TaskInfo, row: Row) -> str:
        summed = row.confusion()
        assert summed is not None
        note = f"counts summed over {summed.n_runs} seed(s)" if summed.n_runs > 1 else "counts"
        chart = svg.heatmap(list(summed.matrix.labels), [list(r) for r in summed.matrix.counts],
                            f"{task_label(info)} confusion matrix, {row.model}")
        return _figure(f"Confusion — {row.model}", chart,
                       f"{note}; colour = share of the gold row (recall); {row.protocol}")

    def breakdown_chart(self, info: TaskInfo, rows: list[Row], name: str) -> str:
        keys: list[str] = []
        per_row = [(row, row.breakdown(name)) for row in rows]
        for _, values in per_row:
            keys += [k for k in values if k not in keys]
        groups = []
        for key in keys:
            bars = [svg.Bar(row.model, values[key].mean, values[key].std,
                            f"{row.model} — {_breakdown_key(name, key)}: {values[key].format()}")
                    for row, values in per_row if key in values]
            groups.append(svg.BarGroup(_breakdown_key(name, key), tuple(_one_per_model(bars))))
        title = f"{task_label(info)} {name.replace('_', ' ')}"
        models = list(dict.fromkeys(row.model for row, v in per_row if v))
        chart = svg.bar_chart(groups, models, title, width=560, colour_of=self.colour_of)
        return _figure(title, self.legend(models, with_reference=False) + chart,
                       "mean over seeds, whisker ±1 std, 0–100")

    def curves(self, info: TaskInfo, row: Row) -> str:
        charts = []
        # (step, values by name) of every point of every seed, built once for all the charts
        curves = [[(float(p.step), p.values()) for p in r.learning_curve] for _, r in row.runs]
        keys: list[str] = []
        for curve in curves:
            for _, values in curve:
                keys += [k for k in values if k not in keys and k not in _CURVE_SKIP]
        x_key = "step"
        for key in keys:
            series = []
            for i, ((_, r), curve) in enumerate(zip(row.runs, curves, strict=True)):
                pts = tuple((step, float(values[key])) for step, values in curve if key in values)
                if pts:
                    series.append(svg.Series(f"seed {r.seed}", pts, i))
            if series:
                label = "training loss" if key == "loss" else metric_label(key)
                charts.append(svg.line_chart(series, f"{task_label(info)} {row.model}: {label}", x_key,
                                             label if key == "loss" else f"{label} (0–100)"))
        seeds = "".join(f'<span class="key"><i style="background:{svg.colour(i)}"></i>seed {r.seed}</span>'
                        for i, (_, r) in enumerate(row.runs))
        return _figure(f"{row.model} ({row.protocol})", f'<div class="legend">{seeds}</div>' + "".join(charts),
                       "from the training log (Results.learning_curve)")

    # -- failures and provenance --------------------------------------------------------------------
    def failures(self) -> str:
        if not self.agg.failures:
            return '<section id="failures"><h2>Failed cells</h2><p class="explain">None.</p></section>'
        rows = "".join(
            f'<tr><td>{_e(task_label(self.agg.tasks[r.task]))}</td><td>{_e(r.model)}</td><td class="n">{r.seed}</td>'
            f'<td>{_e(r.protocol)}</td><td class="error">{_e(r.error)}</td><td><code>{_e(self.rel(p))}</code></td></tr>'
            for p, r in self.agg.failures)
        return (f'<section id="failures"><h2>Failed cells <span class="sub">{len(self.agg.failures)}</span></h2>'
                f'<p class="explain">A failed cell is tried again by the next <code>klue benchmark</code> with the '
                f'same --out; its full traceback is in <code>error.txt</code> beside its results.json.</p>'
                f'<div class="scroll"><table class="rows"><thead><tr><th>Task</th><th>Model</th><th class="n">Seed</th>'
                f'<th>Protocol</th><th>Error</th><th>File</th></tr></thead><tbody>{rows}</tbody></table></div></section>')

    def rel(self, path: Path) -> str:
        try:
            return str(path.relative_to(self.agg.root))
        except ValueError:
            return str(path)

    def provenance(self) -> str:
        blocks = [self.row_provenance(row) for row in self.agg.rows]
        return (f'<section id="provenance"><h2>Provenance</h2><p class="explain">Where every number comes from: '
                f'one block per row, one column per seed. Data files are identified by their git blob id; '
                f'“official v1.1” means the id equals the official file\'s.</p>{"".join(blocks)}</section>')

    def row_provenance(self, row: Row) -> str:
        info = self.agg.tasks[row.task]
        runs = [r for _, r in row.runs]
        fields: list[tuple[str, list[str]]] = [
            ("results file", [f"<code>{_e(self.rel(p))}</code>" for p, _ in row.runs]),
            ("seed", [str(r.seed) for r in runs]),
            ("task version", [_e(r.task_version) for r in runs]),
            ("protocol", [f"{_protocol_badge(r.protocol, r.protocol_official)} {_e(r.protocol_description)}"
                          for r in runs]),
            ("metric mode", [_e(r.metric_mode) for r in runs]),
            ("recipe", [_e(r.recipe or "—") for r in runs]),
            ("hyper-parameters", [_kv(r.hyperparameters) for r in runs]),
            ("training", [_kv(asdict(r.training) if r.training else {}) for r in runs]),
            *([("prompted LM (LlmSummary)", [_kv(asdict(r.llm) if r.llm else {}) for r in runs])]
              if any(r.llm for r in runs) else []),
            *([("embedding (EmbeddingSummary)", [_kv(asdict(r.embedding) if r.embedding else {}) for r in runs])]
              if any(r.embedding for r in runs) else []),
            ("data", [self.sources(info, r) for r in runs]),
            ("examples train / eval", [f"{r.n_train} / {r.n_eval}" for r in runs]),
            ("time", [_time(r) for r in runs]),
            ("library versions", [_kv(r.library_versions) for r in runs]),
            ("git revision", [f"<code>{_e(r.git_revision or '—')}</code>" for r in runs]),
            ("created", [_e(r.created_at or "—") for r in runs]),
        ]
        body = "".join(f'<tr><th>{_e(k)}</th>{"".join(f"<td>{v}</td>" for v in vals)}</tr>' for k, vals in fields)
        return (f'<details id="{row_anchor(row)}" class="prov"><summary>{_e(task_label(info))} · '
                f'<b>{_e(row.model)}</b> · {_protocol_badge(row.protocol, row.protocol_official)} · '
                f'{_e(row.metric_mode)} metrics · seeds {_e(", ".join(map(str, row.seeds)))}</summary>'
                f'<div class="scroll"><table class="kv">{body}</table></div></details>')

    def sources(self, info: TaskInfo, r: Results) -> str:
        items = []
        for s in r.data_sources:
            blob = s.git_blob
            official = info.official_blobs.get(blob)
            tag = (f'<span class="badge official" title="{_e(official)}">official v1.1</span>' if official
                   else '<span class="badge plain">not an official file</span>')
            items.append(f'<div class="src"><code>{_e(s.path)}</code> {tag}<br><span class="dim">'
                         f'{_e(s.used_as)} · {_e(s.n_examples)} examples · blob '
                         f'<code title="{_e(blob)}">{_e(blob[:12])}</code></span></div>')
        return "".join(items) or '<span class="dim">—</span>'

    def definitions(self) -> str:
        ref = ""
        if self.reference:
            ref = (f"<p><b>Reference.</b> {_e(self.reference.model)}: {_e(self.reference.source)}. Its KLUE "
                   f"score is computed here from the paper's numbers, the same way as for measured rows.</p>")
        return (f'<section id="definitions" class="defs"><h2>How the numbers are made</h2>'
                f'<p><b>Cell.</b> One task × model × seed: train on the protocol\'s train set, predict its '
                f'evaluation set, score with the official KLUE metrics (metric mode named on each row).</p>'
                f'<p><b>Row.</b> The cells of one task, model, protocol and metric mode; each metric is the mean '
                f'over seeds ± the sample standard deviation (none with one seed).</p>'
                f'<p><b>Task score.</b> Per seed the mean of the task\'s main metrics, then the mean over seeds.'
                f'</p><p><b>KLUE score.</b> The unweighted mean of the task scores over all {len(self.agg.tasks)} '
                f'tasks. A model missing a task has only a <i>partial</i> score (mean over the tasks it has), '
                f'shown in italics and never ranked. {NOT_OFFICIAL_MARK} marks numbers from a protocol other than '
                f'<code>official</code>.</p>{self.llm_definition()}{ref}</section>')

    def llm_definition(self) -> str:
        if self.board.llm_runs is None:
            return ""
        return (f'<p><b>Prompted LMs.</b> Scored by the log-likelihood of each answer choice, or by generating an '
                f'answer and parsing it ({GENERATED_MARK}: an answer that does not parse is scored wrong). A main '
                f'metric a run declares it cannot measure ({NOT_APPLICABLE}: an AUPRC from generated answers, '
                f'which carry no probabilities) is left out of its task score, which is then the mean of the '
                f'other main metrics and counts in the KLUE score. <a href="#llm-runs">{_e(LLM_RUNS_TITLE)}</a> '
                f'says, per row, how each was run.</p>')


def _part_html(text: str) -> str:
    """`85.12 ± 0.30` -> the mean, with the std small beside it."""
    mean, _, std = text.partition(" ± ")
    return _e(mean) + (f'<span class="std">±{_e(std)}</span>' if std else "")


def _one_per_model(bars: list[svg.Bar]) -> list[svg.Bar]:
    """A model with rows under several protocols: keep its first (official-first) bar per group."""
    seen: set[str] = set()
    out = []
    for bar in bars:
        if bar.series not in seen:
            seen.add(bar.series)
            out.append(bar)
    return out


def _breakdown_key(name: str, key: str) -> str:
    if "/" in key:
        group, metric = key.split("/", 1)
        prefix = name.removeprefix("per_").removeprefix("f1_per_").replace("_", " ")
        return f"{prefix} {group} · {metric_label(metric)}"
    return key


def _kv(values: dict[str, Any]) -> str:
    if not values:
        return '<span class="dim">—</span>'
    return "<br>".join(f'<span class="dim">{_e(k)}</span> {_e(v)}' for k, v in values.items())


def _time(r: Results) -> str:
    parts = [f"{r.wall_time_s:.1f} s wall"]
    if r.train_time_s:
        parts.append(f"{r.train_time_s:.1f} s training")
    if r.train_examples_per_s:
        parts.append(f"{r.train_examples_per_s:,.0f} train ex/s")
    if r.eval_examples_per_s:
        parts.append(f"{r.eval_examples_per_s:,.0f} eval ex/s")
    return "<br>".join(parts)


def _figure(title: str, content: str, caption: str) -> str:
    return (f'<figure class="fig"><figcaption><b>{_e(title)}</b><span>{_e(caption)}</span></figcaption>'
            f'{content}</figure>')


def render_report(agg: Aggregate, n_resamples: int = REPORT_RESAMPLES, seed: int = 0,
                  scan: Scan | None = None) -> str:
    """The page; intervals and neighbour tests from `n_resamples` bootstrap resamples (0: none); with `scan`,
    each row's score on its clean subset."""
    return _Page(agg, n_resamples, seed, scan).render()


def write_report(agg: Aggregate, path: Path, n_resamples: int = REPORT_RESAMPLES, seed: int = 0,
                 scan: Scan | None = None) -> None:
    from klue.io.atomic import write_text_atomic

    write_text_atomic(path, render_report(agg, n_resamples, seed, scan))


_CSS = """
:root{--ink:#1d2330;--soft:#5b6475;--line:#e3e6ec;--bg:#f5f6f8;--card:#fff;--accent:#0072B2;--warn:#D55E00;
--ok:#007a5a;font-family:"Noto Sans KR","Noto Sans CJK KR","Apple SD Gothic Neo","Malgun Gothic","NanumGothic",
system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);background:var(--bg);font-size:15px;line-height:1.5}
*{box-sizing:border-box}body{margin:0}
nav.top{position:sticky;top:0;z-index:5;display:flex;gap:18px;align-items:center;padding:10px 32px;
background:#1d2330;color:#fff;font-size:13px;overflow-x:auto;white-space:nowrap}
nav.top a{color:#cfd6e4;text-decoration:none}nav.top a:hover{color:#fff}
nav.top .brand{font-weight:700;letter-spacing:.02em;margin-right:8px}
main{max-width:1240px;margin:0 auto;padding:28px 32px 64px}
header h1{font-size:30px;margin:8px 0 4px;letter-spacing:-.01em}
.lede{margin:0;color:var(--soft);font-size:16px}.meta{color:var(--soft);font-size:12.5px;margin:6px 0 0}
h2{font-size:21px;margin:0 0 12px;letter-spacing:-.005em}h2 .sub{font-weight:400;color:var(--soft);font-size:15px;margin-left:6px}
h3{font-size:15px;margin:22px 0 8px;color:var(--soft);text-transform:uppercase;letter-spacing:.06em}
section{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:22px 24px;margin:18px 0}
section.cards{display:flex;gap:14px;flex-wrap:wrap;background:none;border:0;padding:0}
.card{flex:1 1 150px;background:var(--card);border:1px solid var(--line);border-radius:10px;padding:14px 16px}
.card-value{font-size:26px;font-weight:650;font-variant-numeric:tabular-nums}
.card-label{color:var(--soft);font-size:12.5px;text-transform:uppercase;letter-spacing:.05em}
.notice{background:#fff4ec;border:1px solid #f3c7a6;border-left:4px solid var(--warn);padding:10px 14px;
border-radius:6px;margin:14px 0;font-size:14px}
.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%;font-size:13.5px}
th,td{padding:7px 8px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
thead th{font-size:12px;color:var(--soft);font-weight:600;border-bottom:2px solid #cdd2db;white-space:nowrap}
thead th small{display:block;font-weight:400;font-size:11px}
th.n,td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table.sortable th{cursor:pointer}table.sortable th:hover{color:var(--ink)}
td.model{font-weight:600;min-width:170px}.part{line-height:1.35}
sup.mark{color:var(--warn);font-weight:700;margin-left:1px}sup.mark.gen{color:#7b3d8f}
table.llm td{font-size:12.5px;min-width:70px}td.model small{display:block;font-weight:400;color:var(--soft);font-size:11.5px}
td.model a{color:inherit;text-decoration:none;border-bottom:1px dotted #9aa3b2}
td.rank{color:var(--soft);width:28px}td.strong{font-weight:700;font-size:14.5px}
tr.reference td{color:#555;font-style:italic;background:#fafafa}
tr.local td.strong{color:var(--warn)}
td.partial{font-style:italic;color:var(--soft)}td.failed,span.failed{color:#b3261e;font-weight:600}
td.missing,.dim{color:#9aa3b2}
.mini{position:relative;height:4px;background:#eef0f4;border-radius:2px;margin-top:4px;min-width:44px}
small.partial-note{display:block;font-size:11px;font-weight:400}
small.ci{display:block;font-size:11px;font-weight:400;color:var(--soft);white-space:nowrap}
td.versus{font-size:12px;color:var(--soft);white-space:nowrap}td.versus.sig{color:var(--ok);font-weight:600}
.mini span{position:absolute;left:0;top:0;bottom:0;background:var(--accent);border-radius:2px}
.mini.ref span{background:#9aa3b2}.mini i{position:absolute;top:-3px;width:2px;height:10px;background:#444;margin-left:-1px}
.std{color:var(--soft);font-size:11.5px;margin-left:3px}
.badge{display:inline-block;font-size:11px;font-weight:600;padding:1px 7px;border-radius:10px;margin:1px 2px 1px 0;
font-style:normal;white-space:nowrap}
.badge.official{background:#e3f4ee;color:var(--ok);border:1px solid #b5e0d0}
.badge.local{background:#fff0e5;color:#a8430a;border:1px solid #f3c7a6}
.badge.ref{background:#eceef2;color:#555;border:1px solid #d5d9e0}.badge.mode{background:#f3e8f7;color:#7b3d8f}
.badge.plain{background:#f2f3f5;color:var(--soft)}
ul.notes,ul.protocols{color:var(--soft);font-size:12.5px;margin:12px 0 0;padding-left:18px}
.explain{color:var(--soft);font-size:13px;margin:-4px 0 12px}
.figs{display:flex;flex-wrap:wrap;gap:18px;margin-top:16px;align-items:flex-start}
figure.fig{margin:0;padding:12px 14px;border:1px solid var(--line);border-radius:8px;background:#fcfcfd;max-width:100%}
figcaption{font-size:13px;margin-bottom:6px}figcaption span{display:block;color:var(--soft);font-size:11.5px}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:12px;margin:4px 0 8px}
.key{display:inline-flex;align-items:center;gap:6px}.key i{display:inline-block;width:12px;height:12px;border-radius:2px}
.key i.ref{background:none;border-left:2px dashed #444;width:2px;border-radius:0}
svg.chart{display:block;max-width:100%;height:auto;overflow:visible}
svg .grid{stroke:#e6e8ee;stroke-width:1}svg .axis{stroke:#9aa3b2}
svg text{font-family:inherit;fill:#1d2330}svg .tick{font-size:11px;fill:#5b6475}
svg .axis-label{font-size:11.5px;fill:#5b6475}svg .group-label{font-size:12px}
svg .value{font-size:11px;fill:#39404d;font-variant-numeric:tabular-nums;paint-order:stroke;stroke:#fff;
stroke-width:3px;stroke-linejoin:round}
svg .whisker{stroke:#1d2330;stroke-width:1.2;fill:none}
svg .reference line{stroke:#444;stroke-width:2;stroke-dasharray:4 3}
svg .bar:hover rect,svg .cell:hover rect{opacity:.82}svg .count{font-size:11px;font-variant-numeric:tabular-nums}
svg .line path{fill:none;stroke-width:2}
details.prov{border:1px solid var(--line);border-radius:8px;margin:8px 0;padding:0 12px}
details.prov summary{cursor:pointer;padding:9px 0;font-size:13.5px}
details.prov[open]{padding-bottom:10px}
table.kv th{width:170px;color:var(--soft);font-weight:600;font-size:12px;white-space:nowrap}
table.kv td{font-size:12.5px}.src{margin-bottom:4px}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.9em;background:#f2f3f5;
padding:0 4px;border-radius:3px}
td.error{color:#7a1d16;font-size:12.5px;max-width:560px}
.defs p{font-size:13.5px;color:#39404d;margin:6px 0}
@media print{nav.top{display:none}section{break-inside:avoid}}
"""

# Sort the leaderboard by a column (numbers by data-sort), open provenance when its anchor is followed.
_JS = """
(function(){
document.querySelectorAll('table.sortable').forEach(function(table){
  table.querySelectorAll('thead th').forEach(function(th,col){
    th.title=(th.title?th.title+' — ':'')+'click to sort';
    th.addEventListener('click',function(){
      var body=table.tBodies[0],rows=[].slice.call(body.rows),dir=th.dataset.dir==='desc'?1:-1;
      th.dataset.dir=dir===1?'asc':'desc';
      rows.sort(function(a,b){
        var x=a.cells[col],y=b.cells[col],u=x.dataset.sort,v=y.dataset.sort;
        if(u!==undefined&&v!==undefined)return dir*(parseFloat(u)-parseFloat(v));
        if(u!==undefined)return -1;if(v!==undefined)return 1;
        return dir*x.textContent.localeCompare(y.textContent);});
      rows.forEach(function(r){body.appendChild(r);});});});});
function openTarget(){var t=location.hash&&document.getElementById(location.hash.slice(1));
  if(t&&t.tagName==='DETAILS')t.open=true;}
window.addEventListener('hashchange',openTarget);openTarget();
document.documentElement.dataset.ready='1';
})();
"""
