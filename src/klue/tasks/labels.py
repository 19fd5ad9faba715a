"""Single-label tasks (YNAT, NLI; RE for its prompts) made from their facts instead of code written again
per task: the labels in official order, how messages name a label, the scores the task reports and, for
prompted LLMs, the label words (the verbalizer) and the prompt's wording.

- `declare_label_task`: the task's declaration with the prediction parser of `{guid, label}` lines, the
  gold prediction, the metric binding and its per-example statistics (`klue.metrics.classification`)
  over `record.label` and `prediction.label`.
- `LabelPrompts`: the prompt functions (`klue.tasks.prompting.TaskPrompts`): choice i, and the answer
  word of label i, is `words[i]`; a generated answer names a label by one of its accepted forms; an answer
  that names none is parsed as the label after the gold, so that it scores as wrong.

RE is single-label in its prompts only: its predictions also carry the 30 probabilities AUPRC ranks, so it
declares its own parser and binding, and gives `LabelPrompts` how a prediction is made from a label index
and from the choices' probabilities.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from klue.io.locate import DataRoots
from klue.metrics.classification import SingleLabelMetrics
from klue.metrics.report import MetricSpec, spec_map
from klue.tasks.base import Task, declaration
from klue.tasks.kinds import Nouns, gold_prediction_of, label_parser, metric_binding, refuse_unlabelled
from klue.tasks.prompting import (
    CUE_WORDS,
    GENERATE,
    LOGLIK,
    Parsed,
    TaskPrompts,
    answer_line,
    argmax,
    match_label,
)


def declare_label_task(package: str, *, labels: tuple[str, ...], specs: tuple[MetricSpec, ...],
                       prediction_type: type[Any], nouns: Nouns = ("label", "labels"), refuse_index: bool = False,
                       **code: Any) -> Task[Any, Any]:
    """The task of `package` (the facts of its task.yaml, as `declare` reads them) as a single-label task:
    records with `guid` and `label` (one of `labels`), predictions `prediction_type(guid, label)`, scored by
    the single-label metrics `specs` (the report's scores, in order). `nouns` name a label in messages;
    `refuse_index`: a prediction line that gives a label's index instead of its name is refused (tools
    order the labels differently). `code`: the rest of the declaration (record type, readers, ...)."""
    facts = declaration(package)
    metrics = SingleLabelMetrics(facts["name"], specs)

    def columns(golds: Sequence[Any], preds: Sequence[Any]) -> tuple[list[str], list[str], tuple[str, ...]]:
        return [g.label for g in golds], [p.label for p in preds], labels

    return Task(**facts, package=package, labels=labels, metric_specs=spec_map(specs),
                prediction_type=prediction_type, gold_prediction=gold_prediction_of(prediction_type, "label"),
                parse_prediction=label_parser(prediction_type, labels, nouns, refuse_index),
                score=metric_binding(metrics.compute, columns),
                statistics=metric_binding(metrics.statistics, columns), **code)


ANSWER_ONE_OF = "다음 중 하나로만 답하세요"  # "answer with only one of the following"


@dataclass(frozen=True)
class LabelPrompts:
    """The prompts of a single-label task, from its facts; `make()` is its `TaskPrompts` (loglik and
    generate, loglik by default). A record's gold is `record.label`."""

    version: str  # e.g. "nli-ko-1": bump on any change of wording, cue, words or parsing
    instruction: str  # what to do; the instruction shown ends with the answers (`full_instruction`)
    render: Callable[[Any], str]  # a record's input block (never its gold)
    labels: tuple[str, ...]  # official order
    words: tuple[str, ...]  # the answer word of each label (index = label index): the choices
    prediction: Callable[[str, int], Any]  # the prediction of label index i for a guid
    noun: str = "label"  # what one label is called in messages: "(one per category)"
    unparsed: str = "no label"  # the note of an answer that names no label: "no category in '...'"
    # the answers accepted for each label (index = label index); empty: its word and its official name
    forms: tuple[tuple[str, ...], ...] = ()
    cue_words: tuple[str, ...] = CUE_WORDS  # an echoed answer slot, stripped before matching
    answers_on_lines: bool = False  # the answers one per line ("- word"), not in one line after a colon
    cue: str = "답:"
    max_new_tokens: int = 16
    # the prediction from the choices' probabilities (as many as labels); None: the most probable label
    from_choices: Callable[[Any, Sequence[float]], Any] | None = None
    notes: str = ""
    not_applicable: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.words) != len(self.labels) or (self.forms and len(self.forms) != len(self.labels)):
            raise ValueError(f"{self.version}: one word (and one group of forms) per label, for {len(self.labels)} "
                             f"labels: {len(self.words)} words, {len(self.forms)} groups of forms")

    def full_instruction(self) -> str:
        """`instruction`, then the answers: "다음 중 하나로만 답하세요: w1, w2." (answer with only one of), or
        with the words one per line."""
        if self.answers_on_lines:
            return f"{self.instruction} {ANSWER_ONE_OF}:\n" + "\n".join(f"- {word}" for word in self.words)
        return f"{self.instruction} {ANSWER_ONE_OF}: {', '.join(self.words)}."

    def gold_choice(self, record: Any) -> int:
        refuse_unlabelled(record)  # few-shot examples and guards need a gold; a record read for prediction has none
        return self.labels.index(record.label)

    def gold_answer(self, record: Any) -> str:
        return self.words[self.gold_choice(record)]

    def choices(self, record: Any) -> tuple[str, ...]:
        return self.words

    def from_probabilities(self, record: Any, probs: Sequence[float]) -> Any:
        """The prediction from the choices' probabilities, one per label (ValueError otherwise):
        `from_choices`, else the most probable label (ties: the earlier one in the official order)."""
        if len(probs) != len(self.labels):
            raise ValueError(f"expected {len(self.labels)} probabilities (one per {self.noun}), got {len(probs)}")
        if self.from_choices is not None:
            return self.from_choices(record, probs)
        return self.prediction(record.guid, argmax(probs))

    def wrong_prediction(self, record: Any) -> Any:
        """A prediction that is wrong for `record`: the label after the gold in the official order (the
        first one for a record without gold, which is never scored)."""
        gold = record.label
        index = (self.labels.index(gold) + 1) % len(self.labels) if gold in self.labels else 0
        return self.prediction(record.guid, index)

    def accepted_forms(self) -> tuple[tuple[str, ...], ...]:
        """The answers accepted for each label: `forms`, else the label's word and its official name."""
        if self.forms:
            return self.forms
        return tuple(tuple(dict.fromkeys((word, label))) for word, label in zip(self.words, self.labels, strict=True))

    def parse(self, record: Any, text: str) -> Parsed:
        answer = answer_line(text, self.cue_words)
        index = match_label(answer, self.accepted_forms())
        if index is None:
            return Parsed(self.wrong_prediction(record), False, f"{self.unparsed} in {answer[:40]!r}")
        return Parsed(self.prediction(record.guid, index), True)

    def make(self, roots: DataRoots | None = None) -> TaskPrompts:
        """The task's `TaskPrompts`: its `make_prompts(roots)` (`roots` is unused: a single-label task's
        prompts need no resource file)."""
        tokens = self.max_new_tokens
        return TaskPrompts(
            version=self.version, instruction=self.full_instruction(), cue=self.cue, render=self.render,
            gold_answer=self.gold_answer, parse=self.parse, modes=(LOGLIK, GENERATE), default_mode=LOGLIK,
            choices=self.choices, from_choices=self.from_probabilities, gold_choice=self.gold_choice,
            max_new_tokens=lambda record: tokens, choice_strings=self.choices, notes=self.notes,
            not_applicable=self.not_applicable, label_of=_label_of, unfit_prediction=self.wrong_prediction,
        )


def _label_of(record_or_prediction: Any) -> str:
    """The label a single-label record or prediction carries (both name it `label`)."""
    return str(record_or_prediction.label)
