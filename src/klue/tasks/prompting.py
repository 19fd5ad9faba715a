"""What a task gives the prompted-LLM engine (`klue.llm`): Korean prompts, the answers it may score by
log-likelihood, and a parser of generated text. Each task's `prompts.py` defines `make_prompts()` returning
a `TaskPrompts`; the engine never knows a task by name.

Two prompt forms are built from the same parts:
- completion: `instruction`, a blank line, each few-shot example as `render(shot) + "\\n" + cue + " " +
  gold_answer(shot)` separated by blank lines, then `render(record) + "\\n" + cue`; the model continues with
  " " + its answer (log-likelihood scores `" " + choice` as the continuation).
- chat: a system message `instruction` (its sentence naming the cue, `cue_sentence`, replaced by
  `CHAT_ANSWER_ONLY`: chat messages carry no cue), then per shot a user message `render(shot)` and an assistant message
  `gold_answer(shot)`, then a user message `render(record)`, through the model's chat template.

Scoring modes: `loglik` (only where `choices` is given): the normalised probabilities of the choices give the
prediction (`from_choices`); `generate`: greedy text up to `max_new_tokens` (or a stop), optionally constrained
by `json_schema`, `choice_strings`, `regex` or `span_of` (the first of these a task declares and the backend
can apply),
parsed by `parse`. A parse that fails must still give a prediction that scores as wrong (`Parsed.ok` False):
the engine counts the failures and never drops an example.

Label words are the official label names or their descriptions, one per label, unique (the guard tests
check it): the index of a choice is the label's index in the task's label order.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

LOGLIK = "loglik"
GENERATE = "generate"
MODES = (LOGLIK, GENERATE)
COMPLETION = "completion"
CHAT = "chat"
FORMS = (COMPLETION, CHAT)
CHAT_ANSWER_ONLY = "답만 쓰세요."  # "write only the answer": the chat form's end of an instruction
# What a small model writes after its answer when it goes on with a next example (SmolLM2-135M: "\n- 답:",
# "\n사람:"); every generation stops there, beside the task's own `stop` and the next example's header.
NEXT_EXAMPLE_MARKERS: tuple[str, ...] = ("\n\n", "\n- 답:", "\n사람:")


def cue_sentence(cue: str) -> str:
    """The completion form's last sentence of an instruction: write only the answer after the cue."""
    return f'"{cue}" 뒤에 답만 쓰세요.'


@dataclass(frozen=True)
class Truncation:
    """How a record's own context (an MRC passage, a WoS dialogue history) is cut to fit a model's context
    (`klue.llm.fitting`): `size` units in the record, `keep(record, n)` the record with only n of them."""

    what: str  # said in results: "the passage, cut from its end"
    unit: str  # "characters", "utterances"
    size: Callable[[Any], int]
    keep: Callable[[Any, int], Any]


@dataclass(frozen=True)
class Parsed:
    """A prediction made from generated text; `ok` False when the text did not parse (the prediction is
    then one that scores as wrong, e.g. built from the gold to differ from it), `note` says what failed."""

    prediction: Any
    ok: bool
    note: str = ""


@dataclass(frozen=True)
class TaskPrompts:
    """A task's prompts, version-stamped (the version goes into results.json)."""

    version: str  # e.g. "nli-ko-1": bump on any change of wording, cue, choices or parsing
    instruction: str  # Korean: what to do and how to answer
    cue: str  # the answer slot's label, e.g. "답:"
    render: Callable[[Any], str]  # a record's input block (never its gold)
    gold_answer: Callable[[Any], str]  # the answer a perfect model writes (few-shot examples, guards)
    parse: Callable[[Any, str], Parsed]  # generated text (after the cue) -> prediction, never raises
    modes: tuple[str, ...] = (GENERATE,)  # the modes this task supports
    default_mode: str = GENERATE  # what `--mode auto` takes where the backend can do it
    # loglik: the answer strings to score (index = label index for label tasks), and the prediction from
    # their normalised probabilities (same order)
    choices: Callable[[Any], Sequence[str]] | None = None
    from_choices: Callable[[Any, Sequence[float]], Any] | None = None
    gold_choice: Callable[[Any], int] | None = None  # the index of the gold answer among `choices`
    # generate: limits and optional constraints for backends that offer them
    max_new_tokens: Callable[[Any], int] = field(default=lambda record: 32)
    stop: tuple[str, ...] = ("\n\n",)
    json_schema: Callable[[Any], Mapping[str, Any]] | None = None
    choice_strings: Callable[[Any], Sequence[str]] | None = None  # a closed set of whole answers
    # a regular expression (Rust/Python common syntax, no lookaround) every valid answer matches in full
    regex: Callable[[Any], str] | None = None
    # extractive answers: the text every valid answer is a substring of (an empty answer allowed)
    span_of: Callable[[Any], str] | None = None
    notes: str = ""  # what a reader of results should know (e.g. "AUPRC needs loglik")
    # metrics that mean nothing in a mode (RE's AUPRC from generated names): left out of that mode's scores
    not_applicable: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # classification tasks: the label of a record or a prediction; shots are then balanced over labels and
    # the shot-label agreement is measured (klue.llm.shots)
    label_of: Callable[[Any], str] | None = None
    # the prediction of an example whose prompt cannot fit the model's context (scored as wrong, counted);
    # None: the prediction of an empty answer (`parse(record, "")`)
    unfit_prediction: Callable[[Any], Any] | None = None
    truncation: Truncation | None = None  # how the record's own context is cut to fit; None: it is not
    markers: tuple[str, ...] = ()  # more places where an answer ends (the next dialogue turn)

    def supports(self, mode: str) -> bool:
        return mode in self.modes and (mode != LOGLIK or (self.choices is not None and self.from_choices is not None))


def shot_answer(prompts: TaskPrompts, shot: Any, mode: str) -> str:
    """A few-shot example's answer: in log-likelihood mode the gold's own choice (STS: the integer the
    choices score, not "3.4"), so shots answer exactly as the scored continuations do; else the gold answer."""
    if mode == LOGLIK and prompts.choices is not None and prompts.gold_choice is not None:
        return str(prompts.choices(shot)[prompts.gold_choice(shot)])
    return prompts.gold_answer(shot)


def completion_prompt(prompts: TaskPrompts, record: Any, shots: Sequence[Any], mode: str = GENERATE) -> str:
    """The completion form's prompt for `record` after `shots` (see the module docstring)."""
    blocks = [prompts.instruction]
    blocks += [f"{prompts.render(shot)}\n{prompts.cue} {shot_answer(prompts, shot, mode)}" for shot in shots]
    blocks.append(f"{prompts.render(record)}\n{prompts.cue}")
    return "\n\n".join(blocks)


def chat_instruction(prompts: TaskPrompts) -> str:
    """The instruction as the chat form's system message: no cue to write after, only the answer."""
    return prompts.instruction.replace(cue_sentence(prompts.cue), CHAT_ANSWER_ONLY)


def chat_messages(prompts: TaskPrompts, record: Any, shots: Sequence[Any], mode: str = GENERATE) -> list[dict[str, str]]:
    """The chat form's messages for `record` after `shots`."""
    messages = [{"role": "system", "content": chat_instruction(prompts)}]
    for shot in shots:
        messages.append({"role": "user", "content": prompts.render(shot)})
        messages.append({"role": "assistant", "content": shot_answer(prompts, shot, mode)})
    messages.append({"role": "user", "content": prompts.render(record)})
    return messages


def answer_stops(prompts: TaskPrompts, record: Any) -> tuple[str, ...]:
    """Where a generated answer ends: the task's stops, the next example's cue and header (the first line's
    label of `render`, e.g. "\n제목:"), `NEXT_EXAMPLE_MARKERS` and the task's markers, each once."""
    header = prompts.render(record).split("\n", 1)[0].split(":", 1)
    found = [*prompts.stop, f"\n{prompts.cue}", *NEXT_EXAMPLE_MARKERS, *prompts.markers]
    if len(header) == 2 and header[0].strip():
        found.append(f"\n{header[0].strip()}:")
    return tuple(dict.fromkeys(stop for stop in found if stop))


def cut_at_stops(text: str, stops: Sequence[str]) -> str:
    """`text` up to its first stop: servers that ignore stop strings, or stop after them, are cut alike."""
    positions = [text.find(stop) for stop in stops if stop and stop in text]
    return text[:min(positions)] if positions else text


def normalised(logprobs: Sequence[float]) -> list[float]:
    """Probabilities of the choices from their summed log-likelihoods (a softmax, stable)."""
    import math

    top = max(logprobs)
    weights = [math.exp(lp - top) for lp in logprobs]
    total = sum(weights)
    return [w / total for w in weights]


def argmax(values: Sequence[float]) -> int:
    return max(range(len(values)), key=lambda i: (values[i], -i))


# Shared by the label tasks' parsers (YNAT, NLI, RE): how a generated answer line is cleaned and matched.
# Marks a model puts around or after its answer (quotes, bold, a full stop), stripped before matching.
_ANSWER_MARKS = " \t\"'`*“”‘’「」『』《》〈〉()[]<>{}.,!?。:;~-"
# Characters that differ between spellings of one label ("IT 과학", "IT/과학"), removed before comparing.
_ANSWER_NOISE = re.compile(r"[\s·ㆍ・/,_:\-]+")
CUE_WORDS: tuple[str, ...] = ("정?답", "answer", "label")  # a repeated answer slot ("답: 정치") still answered


def answer_line(text: str, cue_words: Sequence[str] = CUE_WORDS) -> str:
    """The first non-empty line of generated text, without an echoed cue (`cue_words`, regular expressions)
    and the marks around it."""
    line = next((part.strip() for part in text.strip().splitlines() if part.strip()), "")
    echoed = re.compile(rf"^(?:{'|'.join(cue_words)})\s*[:：]\s*", re.IGNORECASE)
    return echoed.sub("", line).strip(_ANSWER_MARKS)


def match_label(answer: str, forms: Sequence[Sequence[str]]) -> int | None:
    """The label whose accepted forms (`forms[i]` for label i) the answer names: a form exactly, else the
    longest form the answer starts with ("함의입니다"), else the one label of which the answer is a prefix
    (an answer cut short); None when nothing or several labels fit."""
    key = _ANSWER_NOISE.sub("", answer).casefold()
    if not key:
        return None
    keyed = [(label, _ANSWER_NOISE.sub("", form).casefold()) for label, group in enumerate(forms) for form in group]
    exact = {label for label, form in keyed if form == key}
    if len(exact) == 1:
        return exact.pop()
    starts = [(len(form), label) for label, form in keyed if key.startswith(form)]
    if starts:
        longest = max(length for length, _ in starts)
        found = {label for length, label in starts if length == longest}
        return found.pop() if len(found) == 1 else None
    prefixed = {label for label, form in keyed if form.startswith(key)}
    return prefixed.pop() if len(prefixed) == 1 else None
