"""`klue report DIR --contamination SCAN`: each row's score on the clean subset of a (synthetic) scan, with its
interval, beside the full score, and whether they differ, in the Markdown leaderboard and the HTML report."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from klue import registry
from klue.cli import app
from klue.errors import DataError
from klue.metrics.resampling import Units
from klue.metrics.statistics import single_label_statistics
from klue.reporting.aggregate import load_aggregate
from klue.reporting.contamination import CONTAMINATION_TITLE, build_clean_table, read_scan
from klue.reporting.html import render_report
from klue.reporting.leaderboard import build_leaderboard, to_markdown
from klue.results import STATISTICS_FILE, Results, RunStatistics, write_results, write_statistics

N = 300
DIRTY = set(range(0, N, 3))  # every third example's input is in the corpus
DIRTY_WITH_ANSWER = set(range(0, N, 9))


def _gold() -> list[str]:
    labels = list(registry.get("nli").labels)
    return [labels[i] for i in np.random.default_rng(0).integers(0, len(labels), N)]


def _predictions(model: str, seed: int) -> list[str]:
    """'memoriser': right on every dirty example, right on 40% of the others; 'even': right on 60% of all."""
    labels = list(registry.get("nli").labels)
    rng = np.random.default_rng([seed, len(model)])
    out = []
    for i, gold in enumerate(_gold()):
        right = (i in DIRTY or rng.random() < 0.4) if model == "memoriser" else rng.random() < 0.6
        out.append(gold if right else labels[(labels.index(gold) + 1) % len(labels)])
    return out


def _write_run(run_dir: Path, model: str, seed: int) -> None:
    task = registry.get("nli")
    stats = single_label_statistics(_gold(), _predictions(model, seed), list(task.labels),
                                    [s.name for s in task.metric_specs.values()])
    guids = tuple(f"nli-{i}" for i in range(N))
    units = Units.of([i // 3 for i in range(N)]).index  # three pairs per premise: a unit
    write_statistics(run_dir / STATISTICS_FILE, RunStatistics(task.name, task.version, "official", guids, units, stats))
    write_results(run_dir / "results.json", Results(
        task=task.name, task_version=task.version, model=model, model_family="fake", seed=seed, protocol="official",
        protocol_official=True, protocol_description="synthetic", metric_mode="official", scores=stats.totals(),
        n_eval=N, statistics_file=STATISTICS_FILE, metric_versions={name: "1" for name in stats.metrics}))


@pytest.fixture()
def bench(tmp_path: Path) -> Path:
    for model in ("memoriser", "even"):
        for seed in (1, 2):
            _write_run(tmp_path / "bench" / "nli" / model / f"seed{seed}", model, seed)
    return tmp_path / "bench"


def _write_scan(root: Path, guids: range = range(N)) -> Path:
    """The shape `klue contamination scan` writes: SCAN/TASK/examples.jsonl and SCAN/summary.json."""
    (root / "nli").mkdir(parents=True)
    lines = [json.dumps({"guid": f"nli-{i}", "dirty_input": i in DIRTY, "dirty_with_answer": i in DIRTY_WITH_ANSWER,
                         "longest_match": 9 if i in DIRTY else 0, "covered": 0.5 if i in DIRTY else 0.0,
                         "first_match": {"file": "corpus.jsonl", "line": i} if i in DIRTY else None})
             for i in guids]
    (root / "nli" / "examples.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root / "summary.json").write_text(json.dumps({"corpus": [{"path": "corpus.jsonl"}],
                                                   "settings": {"unit": "eojeol", "n": 8, "normalise": "klue"}}),
                                       encoding="utf-8")
    return root


def _accuracy(model: str, seed: int, keep: set[int]) -> float:
    gold, pred = _gold(), _predictions(model, seed)
    return 100 * float(np.mean([gold[i] == pred[i] for i in sorted(keep)]))


def test_clean_scores_by_hand_and_the_difference(bench: Path, tmp_path: Path) -> None:
    agg = load_aggregate(bench)
    table = build_clean_table(agg, read_scan(_write_scan(tmp_path / "scan")), n_resamples=300)
    lines = {line.model: line for line in table.lines}
    clean = set(range(N)) - DIRTY
    for model in ("memoriser", "even"):
        line = lines[model]
        assert (line.n, line.n_clean) == (N, len(clean))
        assert line.full is not None and line.clean is not None and line.test is not None
        # seeds combined: the mean over the two seeds' accuracies, on all examples and on the clean ones
        assert line.full.value == pytest.approx(np.mean([_accuracy(model, s, set(range(N))) for s in (1, 2)]))
        assert line.clean.value == pytest.approx(np.mean([_accuracy(model, s, clean) for s in (1, 2)]))
        assert line.clean.low <= line.clean.value <= line.clean.high
        assert line.test.difference == pytest.approx(line.clean.value - line.full.value)
    # right on every dirty example: its clean score is far below its full one (about 40 against 60)
    assert lines["memoriser"].differs == "yes" and lines["memoriser"].test.high < 0  # type: ignore[union-attr]
    assert lines["even"].differs == "no"
    assert "memoriser" in table.lines[0].model + table.lines[1].model


def test_with_answer_dirtiness_and_unknown_examples(bench: Path, tmp_path: Path) -> None:
    agg = load_aggregate(bench)
    by_answer = build_clean_table(agg, read_scan(_write_scan(tmp_path / "a"), "with_answer"), n_resamples=50)
    line = next(x for x in by_answer.lines if x.model == "memoriser")
    assert line.n_clean == N - len(DIRTY_WITH_ANSWER)
    assert "dirty_with_answer" in by_answer.notes[0]
    partial = build_clean_table(agg, read_scan(_write_scan(tmp_path / "b", range(N - 10))), n_resamples=50)
    line = partial.lines[0]
    assert line.clean is None and line.test is None and "10 of its 300 examples are not in the scan" in line.note


def test_markdown_and_html_show_the_section(bench: Path, tmp_path: Path) -> None:
    scan = read_scan(_write_scan(tmp_path / "scan"))
    agg = load_aggregate(bench)
    markdown = to_markdown(build_leaderboard(agg, 100, 0, scan))
    assert f"## {CONTAMINATION_TITLE}" in markdown
    row = next(line for line in markdown.splitlines() if line.startswith("| NLI | memoriser"))
    assert f"{len(set(range(N)) - DIRTY)}/{N}" in row and row.rstrip().endswith("| yes |")
    assert "dirty_input" in markdown and "corpus corpus.jsonl; unit eojeol; n 8; normalise klue" in markdown
    assert CONTAMINATION_TITLE not in to_markdown(build_leaderboard(agg, 100, 0))
    page = render_report(agg, 100, 0, scan)
    assert 'id="contamination"' in page and 'href="#contamination"' in page and "memoriser" in page


def test_cli_report_with_a_scan(bench: Path, tmp_path: Path) -> None:
    scan = _write_scan(tmp_path / "scan")
    runner = CliRunner()
    done = runner.invoke(app, ["report", str(bench), "--format", "md", "--resamples", "50", "--contamination", str(scan)])
    assert done.exit_code == 0, done.output
    assert CONTAMINATION_TITLE in done.output
    (scan / "nli" / "examples.jsonl").write_text('{"guid": "nli-0", "dirty_input": true}\nnot json\n', encoding="utf-8")
    out = tmp_path / "report.html"
    bad = runner.invoke(app, ["report", str(bench), "--output", str(out), "--contamination", str(scan)])
    # the app raises; `klue`'s entry point turns a DataError into its message and exit code 2
    assert isinstance(bad.exception, DataError) and bad.exception.exit_code == 2
    assert "examples.jsonl:line 2" in str(bad.exception) and not out.exists()


def test_what_is_not_a_scan_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="not the output of `klue contamination scan`"):
        read_scan(tmp_path)
    with pytest.raises(DataError, match="--contamination-by takes"):
        read_scan(tmp_path, "answer")
    (tmp_path / "nli").mkdir()
    (tmp_path / "nli" / "examples.jsonl").write_text('{"guid": "a", "dirty_input": "yes"}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"line 1: .*true/false `dirty_input`"):
        read_scan(tmp_path)
