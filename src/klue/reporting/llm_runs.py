"""How the prompted LMs were run: one line per LLM row of the report, from each run's `LlmSummary`.

A prompted LM's score depends on how it was asked as much as on the model: scored by log-likelihood or by
generating and parsing (and whether generation stood in for log-likelihood), the prompt's form, how many
shots and how they were drawn, how often an answer did not parse, how often it just repeated the last
shot's label (against chance), and what was cut to fit the model's context. The report shows all of it
beside the scores (Markdown, HTML, terminal); this module builds the neutral table they render.

A field a run did not record (a results.json written before klue kept it) reads "not recorded", never a
guess; a figure that does not apply to a run (the shot-label agreement of a task without a label per shot)
says why ("n/a: ..."). Seeds of a row are pooled: counts add up, rates are pooled over the evaluated examples, settings
that differ between seeds are all shown.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from klue.llm.shots import RANDOM
from klue.reporting.aggregate import Aggregate, Row
from klue.results import LlmSummary, Results
from klue.tasks.prompting import CHAT, COMPLETION, GENERATE, LOGLIK

LLM_RUNS_TITLE = "How the prompted LMs were run"
GENERATED_MARK = "§"  # a score from generated (parsed) answers, not from log-likelihoods
NOT_RECORDED = "not recorded"
NOT_APPLICABLE = "n/a"  # the figure does not apply to the run; the cell says why
NO_SHOT_LABEL = f"{NOT_APPLICABLE}: the task has no label per shot"
NO_ANSWER_WITH_SHOT = f"{NOT_APPLICABLE}: no answer was given with a shot (every shot dropped to fit, or unfit)"
MODE_WORDS = {LOGLIK: "log-likelihood", GENERATE: "generation"}
FORM_WORDS = {COMPLETION: "plain", CHAT: "chat"}
# Said where `--mode auto` generated because the backend gave no usable log-likelihoods
# (LlmSummary.instead_of_loglik).
INSTEAD_OF_LOGLIK = "instead of log-likelihood"

HEADERS = ("Task", "Model", "Mode", "Form", "Shots", "Parse failures", "Shot-label agreement", "Context",
           "Cut to fit", "Token budget", "Notes")


@dataclass(frozen=True)
class LlmRunLine:
    """One LLM row of the report, in words: `cells` in `HEADERS` order."""

    task: str  # the task's name (registry)
    model: str
    row: Row
    cells: tuple[str, ...]
    generated: bool  # scored from generated answers (marked GENERATED_MARK)
    instead_of_loglik: bool  # generation stood in for the task's log-likelihood mode


@dataclass
class LlmRunsTable:
    headers: tuple[str, ...]
    lines: list[LlmRunLine]
    notes: list[str] = field(default_factory=list)


def summaries(row: Row) -> list[tuple[Results, LlmSummary]]:
    """The row's runs that carry a prompted-LM summary."""
    return [(r, r.llm) for _, r in row.runs if r.llm is not None]


def is_llm_row(row: Row) -> bool:
    return bool(summaries(row))


def generated(row: Row) -> bool:
    """Some run of the row scored generated answers: its scores carry GENERATED_MARK."""
    return any(s.mode == GENERATE for _, s in summaries(row))


def instead_of_loglik(row: Row) -> bool:
    """Some run generated where the task scores by log-likelihood (its notes say why)."""
    return any(s.instead_of_loglik for _, s in summaries(row))


def _distinct(values: Iterable[Any]) -> list[Any]:
    return list(dict.fromkeys(values))


def _joined(values: Iterable[str]) -> str:
    return " / ".join(_distinct(values))


def _percent(value: float) -> str:
    return f"{100 * value:.1f}%"


def mode_text(runs: Sequence[tuple[Results, LlmSummary]]) -> str:
    modes = _distinct(s.mode for _, s in runs)
    text = " / ".join(MODE_WORDS.get(m, m) + (f" {GENERATED_MARK}" if m == GENERATE else "") for m in modes)
    if any(s.instead_of_loglik for _, s in runs):
        text += f", {INSTEAD_OF_LOGLIK}"
    return text


def shots_text(runs: Sequence[tuple[Results, LlmSummary]]) -> str:
    parts = []
    for shots, policy in _distinct((s.shots, s.shot_policy) for _, s in runs):
        if shots == 0:
            parts.append("0")
        else:
            parts.append(f"{shots}, {policy or 'drawn: ' + NOT_RECORDED}")
    return " / ".join(parts)


def parse_failures_text(runs: Sequence[tuple[Results, LlmSummary]]) -> str:
    """Pooled over the seeds that generated: `26.7% (8 of 30)`; log-likelihood answers always parse."""
    generating = [(r, s) for r, s in runs if s.mode == GENERATE]
    if not generating:
        return f"— ({MODE_WORDS[LOGLIK]})"
    failed = sum(s.n_parse_failures for _, s in generating)
    evaluated = sum(r.n_eval for r, _ in generating)
    if evaluated <= 0:
        return _joined(_percent(s.parse_failure_rate) for _, s in generating)
    return f"{_percent(failed / evaluated)} ({failed:,} of {evaluated:,})"


def agreement_text(runs: Sequence[tuple[Results, LlmSummary]]) -> str:
    """Mean over seeds of the share of answers equal to the last shot's label, beside its chance level."""
    with_shots = [s for _, s in runs if s.shots > 0]
    if not with_shots:
        return "— (no shots)"
    values = [s.shot_label_agreement for s in with_shots if s.shot_label_agreement is not None]
    if not values:
        # The klue that records the policy records the agreement too (None: it did not apply): shots drawn
        # at random are those of a task without a label per shot (klue.llm.shots.shot_policy); drawn over
        # labels, no example kept a shot.
        policies = {s.shot_policy for s in with_shots}
        if "" in policies:
            return NOT_RECORDED
        return NO_SHOT_LABEL if policies == {RANDOM} else NO_ANSWER_WITH_SHOT
    chances = [s.shot_label_agreement_chance for s in with_shots if s.shot_label_agreement_chance is not None]
    chance = f"chance {_percent(statistics.fmean(chances))}" if chances else f"chance {NOT_RECORDED}"
    return f"{_percent(statistics.fmean(values))} ({chance})"


def context_text(runs: Sequence[tuple[Results, LlmSummary]]) -> str:
    if all(s.context_length is None and not s.token_counter for _, s in runs):
        return NOT_RECORDED
    lengths = _joined(f"{s.context_length:,} tokens" if s.context_length is not None else f"length {NOT_RECORDED}"
                      for _, s in runs)
    counters = _joined(s.token_counter or NOT_RECORDED for _, s in runs)
    return f"{lengths}; counted by: {counters}"


def cut_text(runs: Sequence[tuple[Results, LlmSummary]]) -> str:
    """What fitting the prompts into the context cut, pooled over seeds."""
    if all(s.context_length is None and not s.token_counter and not (s.n_shots_dropped or s.n_truncated or s.n_unfit)
           for _, s in runs):
        return NOT_RECORDED  # a run from before klue fitted prompts: nothing can be said
    dropped = sum(s.n_shots_dropped for _, s in runs)
    truncated = sum(s.n_truncated for _, s in runs)
    unfit = sum(s.n_unfit for _, s in runs)
    evaluated = sum(r.n_eval for r, _ in runs)
    if not (dropped or truncated or unfit):
        return f"nothing (of {evaluated:,})"
    parts = [f"shots dropped in {dropped:,}" if dropped else "", f"context truncated in {truncated:,}" if truncated
             else "", f"{unfit:,} unfit (scored wrong)" if unfit else ""]
    return ", ".join(p for p in parts if p) + f" (of {evaluated:,})"


def budget_text(runs: Sequence[tuple[Results, LlmSummary]]) -> str:
    generating = [s for _, s in runs if s.mode == GENERATE]
    if not generating:
        return f"— ({MODE_WORDS[LOGLIK]})"
    return _joined((f"{s.max_new_tokens:,} new tokens" if s.max_new_tokens is not None else NOT_RECORDED)
                   + (f": {s.budget_rule}" if s.budget_rule else "") for s in generating)


def notes_text(runs: Sequence[tuple[Results, LlmSummary]]) -> str:
    """The runs' notes, then what the backend's probe found (why it gave no log-likelihoods, which model a
    server serves under the name asked, which constraints it takes): the reasons behind the other columns."""
    notes = _distinct(note for _, s in runs for note in s.notes)
    probe = _distinct(str(note) for _, s in runs for note in s.capabilities.get("notes") or ())
    # A probe finding a run note already quotes (why generation replaced log-likelihood) is said once.
    probe = [note for note in probe if not any(_probe_reason(note) in run_note for run_note in notes)]
    return "; ".join([*notes, *(f"backend: {note}" for note in probe)]) or "—"


def _probe_reason(note: str) -> str:
    """The reason inside a probe note, without the wrapper the backend puts around it."""
    return note.removeprefix("no log-likelihoods: ").removesuffix("; generation modes only")


_COLUMNS: tuple[Callable[[Sequence[tuple[Results, LlmSummary]]], str], ...] = (
    mode_text, lambda runs: _joined(FORM_WORDS.get(s.form, s.form) for _, s in runs), shots_text,
    parse_failures_text, agreement_text, context_text, cut_text, budget_text, notes_text)


def build_llm_runs(agg: Aggregate) -> LlmRunsTable | None:
    """The table of every LLM row of `agg` (task order, then model); None when there is none."""
    rows = [row for row in agg.rows if is_llm_row(row)]
    if not rows:
        return None
    shared = {(r.task, r.model) for r in rows if sum((o.task, o.model) == (r.task, r.model) for o in rows) > 1}
    lines = []
    for row in rows:
        runs = summaries(row)
        model = row.model + (f" ({row.protocol}, {row.metric_mode} metrics)" if (row.task, row.model) in shared
                             else "")
        cells = (agg.tasks[row.task].label, model, *(column(runs) for column in _COLUMNS))
        lines.append(LlmRunLine(row.task, row.model, row, cells, generated(row), instead_of_loglik(row)))
    notes = [
        (f"{GENERATED_MARK} scored from generated answers, parsed by the task: an answer that does not parse is "
         "scored wrong and counted (parse failures), never dropped. Log-likelihood scoring ranks the task's answer "
         f"choices instead; \"{INSTEAD_OF_LOGLIK}\": the task scores by log-likelihood, but the backend gave none "
         "that could be used (the Notes say why), so the model generated."),
        ("Form: plain (one completion prompt) or chat (the model's chat template or chat endpoint). Shots: "
         "training examples answered in the prompt, and how they were drawn."),
        ("Shot-label agreement: the share of answers equal to the last shot's label, beside the share expected "
         "by chance if the answers ignored the shots; far above chance, the score mostly measures which shot "
         "was drawn."),
        ("Context: the model's context length and how prompt tokens were counted. Cut to fit: examples whose "
         "prompt lost shots, or whose own context was truncated, to fit; an example that cannot fit is scored "
         "wrong. Token budget: the most new tokens a generated answer may take, and how it was set."),
        f"{NOT_RECORDED}: the run's results.json does not hold the figure (the klue that wrote it did not record it).",
        f"{NOT_APPLICABLE}: the figure does not apply to the run, for the reason given.",
    ]
    return LlmRunsTable(HEADERS, lines, notes)
