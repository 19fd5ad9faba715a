"""The HTML report: one self-contained file, every chart present, rendered by headless Chromium."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from report_fixtures import ENCODER, PARTIAL

from klue import registry
from klue.reporting.aggregate import load_aggregate
from klue.reporting.html import render_report, write_report

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / ".test-artifacts"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def expected_charts(bench_dir: Path) -> dict[str, int]:
    """Charts the fixture asks for: an overview, per task one metric chart, one heatmap per row with a
    confusion matrix, one bar chart per breakdown, two line charts per row with learning curves."""
    agg = load_aggregate(bench_dir)
    heatmaps = sum(1 for row in agg.rows if row.confusion())
    breakdowns = sum(len({n for row in agg.rows_for(t) for n in row.breakdown_names()}) for t in agg.tasks)
    lines = sum(2 for row in agg.rows if any(r.learning_curve for _, r in row.runs))
    return {"heatmap": heatmaps, "bars": 1 + len(agg.tasks) + breakdowns, "lines": lines}


def test_report_is_one_self_contained_file(bench_dir: Path) -> None:
    page = render_report(load_aggregate(bench_dir))
    assert page.startswith("<!DOCTYPE html>")
    assert not re.search(r"<link|<img|\bsrc=|@import|url\(", page)
    assert set(re.findall(r"https?://[^\s\"'<]+", page)) <= {"http://www.w3.org/2000/svg"}
    for marker in ('id="leaderboard"', 'id="overview"', 'id="failures"', 'id="provenance"'):
        assert marker in page
    for task in registry.all_tasks():
        assert f'id="task-{task.name}"' in page
    counts = {kind: page.count(f'data-chart="{kind}"') for kind in ("heatmap", "bars", "lines")}
    assert counts == expected_charts(bench_dir)
    assert counts["heatmap"] > 0 and counts["lines"] > 0
    # provenance of every number: each results file and each data file's blob is named
    for path in bench_dir.rglob("results.json"):
        if "seed" in path.parent.name and PARTIAL not in str(path):
            assert str(path.relative_to(bench_dir)) in page
    assert "official v1.1" in page and "not comparable" in page


@pytest.mark.slow
def test_report_renders_in_headless_chromium(bench_dir: Path, tmp_path: Path) -> None:
    if not CHROMIUM.is_file():
        pytest.skip("chromium absent: apt-get install -y chromium (.ci/run does)")
    korean = subprocess.run(["fc-list", ":lang=ko", "family"], capture_output=True, text=True, check=False).stdout
    assert korean.strip(), "no font with Hangul: the screenshot would show boxes; apt-get install -y fonts-nanum"
    report = tmp_path / "report.html"
    write_report(load_aggregate(bench_dir), report)
    shot = tmp_path / "report.png"
    common = [str(CHROMIUM), *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([*common, "--dump-dom", report.as_uri()], capture_output=True, text=True, timeout=120,
                         check=True).stdout
    subprocess.run([*common, f"--screenshot={shot}", "--window-size=1400,3000", report.as_uri()],
                   capture_output=True, timeout=120, check=True)
    assert 'data-ready="1"' in dom  # the inline script ran
    board = re.search(r'<table class="board sortable">.*?</table>', dom, re.DOTALL)
    assert board is not None
    assert board.group(0).count("<tr") == 1 + 3 + 1  # header, three models, the paper
    assert ENCODER in board.group(0) and "KLUE-RoBERTa-large" in board.group(0)
    counts = {kind: len(re.findall(rf'<svg class="chart" data-chart="{kind}"', dom))
              for kind in ("heatmap", "bars", "lines")}
    assert counts == expected_charts(bench_dir)
    assert shot.is_file() and shot.stat().st_size > 50_000
    ARTIFACTS.mkdir(exist_ok=True)
    shutil.copy(shot, ARTIFACTS / "report.png")


def test_the_page_declares_a_font_stack_that_renders_hangul(bench_dir: Path) -> None:
    page = render_report(load_aggregate(bench_dir))
    stack = re.search(r"font-family:([^;]+);", page)
    assert stack is not None
    fonts = [f.strip().strip('"') for f in stack.group(1).replace("\n", "").split(",")]
    korean = ["Noto Sans KR", "Apple SD Gothic Neo", "Malgun Gothic"]
    assert fonts[:len(korean) + 1] == [korean[0], "Noto Sans CJK KR", *korean[1:]]  # Hangul fonts first
    assert fonts[-1] == "sans-serif"
