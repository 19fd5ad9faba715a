"""How the prompted LMs were run, in the report (issue 26): each LLM row's mode (and generation that stood in
for log-likelihood), form, shots, parse-failure and shot-label agreement rates, context and cuts, in the
Markdown, the HTML and the terminal; `§` on generated scores; RE in generation mode scored by its micro F1
(AUPRC not applicable, said so) and counted in the KLUE score, its interval included."""

from __future__ import annotations

import dataclasses
import random
import statistics
import time
from pathlib import Path

import pytest
from report_fixtures import ENCODER, fixture_results

from klue import registry
from klue.llm.shots import BALANCED, RANDOM
from klue.predictions import write_predictions
from klue.protocols import ProtocolData
from klue.reporting.aggregate import load_aggregate
from klue.reporting.html import render_report
from klue.reporting.intervals import compute_intervals
from klue.reporting.leaderboard import build_leaderboard, llm_runs_rich, to_markdown
from klue.reporting.llm_runs import GENERATED_MARK, NO_ANSWER_WITH_SHOT, NO_SHOT_LABEL, NOT_RECORDED
from klue.results import LLM, LlmSummary, Results, write_results
from klue.scoring import ProducerReport, judge
from klue.tasks.re.records import RELATIONS, Entity, RePrediction, ReRecord

MODEL = "openai:smol@http://127.0.0.1:8000/v1"
FALLBACK = "the backend returns no prompt log-probabilities: generate-and-parse instead of log-likelihood"
ONE_HOT = "AUPRC needs loglik: generated answers give one-hot probabilities"


PROBE = "no prompt log-probs with echo: generation modes only"


def summary(mode: str, **fields: object) -> LlmSummary:
    return LlmSummary(backend="openai", model_fingerprint="smol", mode=mode, form="completion", shots=1,
                      prompt_version="v1", capabilities={"loglik": False, "notes": [PROBE]},
                      **fields)  # type: ignore[arg-type]


def llm_results(task_name: str, llm: LlmSummary, rng: random.Random, n_eval: int = 200) -> Results:
    """A fixture row's results as a prompted LM's: its summary, no learning curve, and without the metrics
    the summary declares not applicable (as the judge leaves them out)."""
    task = registry.get(task_name)
    results = fixture_results(task, MODEL, 1, True, rng)
    scores = {k: v for k, v in results.scores.items() if k not in llm.not_applicable}
    return dataclasses.replace(results, model_family=LLM, llm=llm, learning_curve=[], scores=scores, n_eval=n_eval,
                               recipe="prompts v1")


@pytest.fixture()
def llm_bench(tmp_path: Path) -> Path:
    """A prompted LM on every registered task (RE generated, AUPRC not applicable; NLI log-likelihood with a
    shot-label agreement far above chance; YNAT from an older klue, its new fields unrecorded), and an
    encoder on every task."""
    rng = random.Random(3)
    for task in registry.all_tasks():
        write_results(tmp_path / task.name / "encoder" / "seed1" / "results.json",
                      fixture_results(task, ENCODER, 1, True, rng))
        if task.name == "re":
            llm = summary("generate", notes=[FALLBACK, ONE_HOT], instead_of_loglik=True, not_applicable=["auprc"],
                          n_parse_failures=20,
                          parse_failure_rate=0.1, shot_policy="balanced over labels, seeded",
                          shot_label_agreement=0.25, shot_label_agreement_chance=0.05, context_length=4096,
                          token_counter="server /tokenize", n_shots_dropped=3, n_truncated=2, n_unfit=1,
                          max_new_tokens=24, budget_rule="longest gold answer + 8")
        elif task.name in ("ner", "sts"):  # today's klue: NER has no label per shot; STS kept no shot
            llm = summary("generate", shot_policy=RANDOM if task.name == "ner" else BALANCED, context_length=4096,
                          token_counter="model tokenizer", n_shots_dropped=200 if task.name == "sts" else 0,
                          max_new_tokens=64)
        elif task.name == "nli":
            llm = summary("loglik", shot_policy="balanced over labels, seeded", shot_label_agreement=0.97,
                          shot_label_agreement_chance=1 / 3, context_length=4096, token_counter="model tokenizer")
        else:
            llm = summary("loglik" if task.name == "ynat" else "generate")
        write_results(tmp_path / task.name / "llm" / "seed1" / "results.json", llm_results(task.name, llm, rng))
    return tmp_path


def test_the_klue_score_counts_re_scored_by_its_micro_f1(llm_bench: Path) -> None:
    agg = load_aggregate(llm_bench)
    entry = next(e for e in agg.entries if e.model == MODEL)
    row = entry.rows["re"]
    assert row.not_applicable_metrics == ("auprc",) and row.counted_metrics(("micro_f1", "auprc")) == ("micro_f1",)
    re_score = entry.task_scores["re"]
    assert re_score.mean == pytest.approx(row.runs[0][1].scores["micro_f1"])
    assert entry.n_scored == len(registry.all_tasks()) and entry.klue_score is not None
    expected = statistics.fmean(statistics.fmean(entry.rows[t.name].runs[0][1].scores[m]
                                                 for m in t.main_metrics if m != "auprc" or t.name != "re")
                                for t in registry.all_tasks())
    assert entry.klue_score == pytest.approx(expected)


def test_markdown_shows_how_each_prompted_lm_was_run(llm_bench: Path) -> None:
    text = to_markdown(build_leaderboard(load_aggregate(llm_bench), n_resamples=0))
    board, _, runs = text.partition("## How the prompted LMs were run")
    assert runs, "the markdown has no section on the prompted LMs"
    line = next(li for li in board.splitlines() if MODEL.split("@")[0] in li)
    assert "partial" not in line and "?" not in line  # every task scored: a KLUE score, RE counted
    assert f"n/a{GENERATED_MARK}" in line  # RE: micro F1 / n/a, generated
    assert "not applicable" in board and "RE AUPRC" in board and f"- {GENERATED_MARK} " in board
    lines = {li.split(" | ")[0].strip("| "): li for li in runs.splitlines() if li.startswith("| ")}
    re_line, nli_line, ynat_line = lines["RE"], lines["NLI"], lines["YNAT"]
    assert f"generation {GENERATED_MARK}, instead of log-likelihood" in re_line and "plain" in re_line
    assert "10.0% (20 of 200)" in re_line  # parse failures, pooled
    assert "25.0% (chance 5.0%)" in re_line and "1, balanced over labels, seeded" in re_line
    assert "4,096 tokens; counted by: server /tokenize" in re_line
    assert "shots dropped in 3, context truncated in 2, 1 unfit (scored wrong) (of 200)" in re_line
    assert "24 new tokens: longest gold answer + 8" in re_line and "one-hot probabilities" in re_line
    assert f"backend: {PROBE}" in re_line  # why the backend gave no log-likelihoods, from its probe
    assert "log-likelihood" in nli_line and GENERATED_MARK not in nli_line
    assert "97.0% (chance 33.3%)" in nli_line and "nothing (of 200)" in nli_line
    assert "— (log-likelihood)" in nli_line  # no parse failures, no token budget in log-likelihood mode
    assert ynat_line.count(NOT_RECORDED) >= 3  # agreement, context and cuts of an older run: not recorded
    assert "1, drawn: not recorded" in ynat_line
    assert f"| {NO_SHOT_LABEL} |" in lines["NER"] and NOT_RECORDED not in lines["NER"]  # a run klue just made
    assert f"| {NO_ANSWER_WITH_SHOT} |" in lines["STS"] and "n/a: the task has no label" in NO_SHOT_LABEL
    assert f"- {GENERATED_MARK} scored from generated answers" in runs


def test_html_and_terminal_show_the_table(llm_bench: Path) -> None:
    from rich.console import Console

    agg = load_aggregate(llm_bench)
    html = render_report(agg, n_resamples=0)
    assert 'id="llm-runs"' in html and 'href="#llm-runs"' in html
    assert "10.0% (20 of 200)" in html and "97.0% (chance 33.3%)" in html
    assert f'<sup class="mark gen">{GENERATED_MARK}</sup>' in html and f"{GENERATED_MARK} generated" in html
    assert 'title="not applicable to these runs' in html and "prompted LM (LlmSummary)" in html
    board = build_leaderboard(agg, n_resamples=0)
    assert board.llm_runs is not None
    console = Console(record=True, width=250)
    console.print(llm_runs_rich(board.llm_runs))
    shown = console.export_text()
    assert "How the prompted LMs were run" in shown and "10.0% (20 of 200)" in shown


def test_where_no_terminal_reads_it_the_table_is_a_list(llm_bench: Path, capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    """In a log (stdout not a terminal), the 11-column table becomes one line per figure."""
    from klue.reporting.leaderboard import print_rich

    print_rich(build_leaderboard(load_aggregate(llm_bench), n_resamples=0))
    shown = capsys.readouterr().out.partition("How the prompted LMs were run\n")[2]
    assert shown and not any(mark in shown for mark in "┃│┏┡└")
    entries = shown.split("\n- ")
    ner = next(entry for entry in entries if entry.startswith("NER · "))
    assert f"\n    Shot-label agreement: {NO_SHOT_LABEL}\n" in ner and "\n    Mode: generation" in ner
    assert len(ner.splitlines()) == 1 + 9  # the run, then its 9 figures, each on its own line
    assert max(len(line) for line in ner.splitlines()) < 200


def test_a_report_without_prompted_lms_has_no_table(tmp_path: Path) -> None:
    task = registry.all_tasks()[0]
    write_results(tmp_path / "r.json" / "results.json", fixture_results(task, ENCODER, 1, True, random.Random(1)))
    agg = load_aggregate(tmp_path)
    assert build_leaderboard(agg, n_resamples=0).llm_runs is None
    assert "How the prompted LMs were run" not in to_markdown(build_leaderboard(agg, n_resamples=0))
    assert 'id="llm-runs"' not in render_report(agg, n_resamples=0)


def _re_records(n: int) -> list[ReRecord]:
    rng = random.Random(5)
    relations = ("no_relation", "per:title", "per:employee_of", "org:top_members/employees")
    records = []
    for i in range(n):
        company = f"회사{i}"
        sentence = f"홍길동은 {company}의 대표이다."
        records.append(ReRecord(f"re-{i}", sentence, Entity("홍길동", 0, 2, "PER"),
                                Entity(company, 5, 4 + len(company), "ORG"), rng.choice(relations), "wikipedia"))
    return records


def _judged_re_run(run_dir: Path, data: ProtocolData[ReRecord], model: str, mode: str, seed: int) -> Results:
    """An RE run as klue.llm.run hands it to the judge: generated answers (one-hot, AUPRC not applicable) or
    log-likelihood probabilities."""
    task = registry.get("re")
    rng = random.Random(f"{model}:{seed}")
    predictions = []
    for record in data.eval:
        label = record.label if rng.random() < 0.6 else rng.choice(RELATIONS)
        index = RELATIONS.index(label)
        if mode == "generate":
            probs = tuple(float(i == index) for i in range(len(RELATIONS)))
        else:
            raw = [rng.random() + (3.0 if i == index else 0.0) for i in range(len(RELATIONS))]
            probs = tuple(p / sum(raw) for p in raw)
        predictions.append(RePrediction(record.guid, label, probs))
    write_predictions(run_dir / "predictions.jsonl", task, data.eval, predictions, "test")
    llm = summary(mode, not_applicable=["auprc"] if mode == "generate" else [])
    return judge(task, data, run_dir, "official", ProducerReport(model, LLM, seed, time.perf_counter(), llm=llm))


def test_intervals_of_a_generated_re_row_cover_its_micro_f1(tmp_path: Path) -> None:
    records = _re_records(90)
    data = ProtocolData("files", False, "synthetic RE", records[:10], records[10:], None, ())
    for seed in (1, 2):
        generated = _judged_re_run(tmp_path / "re" / "gen" / f"seed{seed}", data, "gen", "generate", seed)
        assert "auprc" not in generated.scores and "micro_f1" in generated.scores
        _judged_re_run(tmp_path / "re" / "loglik" / f"seed{seed}", data, "loglik", "loglik", seed)
    agg = load_aggregate(tmp_path)
    intervals = compute_intervals(agg, n_resamples=100)
    rows = {row.model: row for row in agg.rows_for("re")}
    found = intervals.of(rows["gen"])
    assert found is not None and found.task_estimate is not None
    micro = rows["gen"].metric("micro_f1")
    assert micro is not None and found.task_estimate.value == pytest.approx(micro.mean)
    assert found.task_estimate.low <= micro.mean <= found.task_estimate.high
    loglik = intervals.of(rows["loglik"])
    assert loglik is not None and loglik.task_estimate is not None
    # the two task scores count different metrics: never tested against each other
    assert id(rows["gen"]) not in intervals.row_tests and id(rows["loglik"]) not in intervals.row_tests
    assert ("gen", "official") in intervals.klue_scores  # the partial score's interval counts RE too


def test_a_probe_finding_the_run_notes_already_quote_is_said_once() -> None:
    from klue.reporting.llm_runs import notes_text

    why = "the server's echoed prompt log-probs are shifted by one token"
    run = summary("generate", notes=[f"{why}: generate-and-parse instead of log-likelihood"])
    run.capabilities["notes"] = [f"no log-likelihoods: {why}; generation modes only", "the server lists no model 'x'"]
    text = notes_text([(None, run)])  # type: ignore[list-item]
    assert text.count(why) == 1 and "backend: the server lists no model 'x'" in text

