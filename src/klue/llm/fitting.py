"""Prompts that fit the model's context, and generation budgets sized from the gold answers.

Tokens are counted by the backend (`Backend.count_tokens`: the server's tokenize endpoint, the model's
tokenizer, or a stated upper-bound estimate; `token_counter` names which). The context length comes from
`--max-context`, else from the backend (the model's config, the server's metadata), else it is learned
from the server: a refusal naming its context (`ContextExceeded`), or an answer cut short by the context
(prompt tokens + answer tokens < the budget asked). While no length is known nothing is cut.

Fitting one example (`fit_example`), with room = context - the answer's budget - `MARGIN`:
1. the whole prompt, if it fits;
2. else drop shots, the first (farthest from the question) first, until it fits;
3. else, with no shots, cut the example's own context the task's stated way (`TaskPrompts.truncation`:
   the MRC passage from its end, the WoS history from its oldest utterance), keeping the most that fits
   (a binary search over the units kept);
4. else the example is unfit: not asked, scored as wrong (`TaskPrompts.unfit_prediction`), counted.
What was cut is recorded per example in llm_outputs.jsonl and counted in results.json.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from klue.llm.backends.base import Backend
from klue.tasks.prompting import TaskPrompts, Truncation

MARGIN = 8  # tokens kept free beyond the answer's budget: a server's own additions (a BOS, a chat suffix)
CHAT_MESSAGE_TOKENS = 8  # counted per chat message where the server renders the chat (its template's tokens)
BUDGET_SAMPLE = 32  # the longest gold answers (by characters) counted in tokens for the budget
BUDGET_CAP = 2048
BUDGET_RULE = (f"ceil(1.5 x the most tokens among the {BUDGET_SAMPLE} longest training gold answers) + 16, at most "
               f"{BUDGET_CAP}; per example the smaller of that and the task's own limit")


@dataclass(frozen=True)
class Fitted:
    """One example as it is asked: the record (its context perhaps cut), the shots kept, and what was cut."""

    record: Any
    shots: list[Any]
    n_shots_dropped: int = 0
    truncated: str = ""  # what was cut of the example's own context, in words ("" for nothing)
    fits: bool = True
    n_tokens: int | None = None  # the prompt's tokens as asked (None: not counted, no context known)


def fit_example(record: Any, shots: Sequence[Any], measure: Callable[[Any, Sequence[Any]], int], room: int,
                truncation: Truncation | None) -> Fitted:
    """The example fitted into `room` prompt tokens (see the module docstring); `measure(record, shots)`
    counts the tokens of the prompt built from them."""
    shots = list(shots)
    for dropped in range(len(shots) + 1):
        n = measure(record, shots[dropped:])
        if n <= room:
            return Fitted(record, shots[dropped:], dropped, "", True, n)
    if truncation is None:
        return Fitted(record, [], len(shots), "", False, n)
    size = truncation.size(record)
    low, high, best = 0, size - 1, None  # the most units kept that fit: a binary search
    while low <= high:
        middle = (low + high) // 2
        count = measure(truncation.keep(record, middle), [])
        if count <= room:
            best, low = (middle, count), middle + 1
        else:
            high = middle - 1
    if best is None:
        return Fitted(record, [], len(shots), f"{truncation.what}: nothing left fits", False, n)
    kept, count = best
    return Fitted(truncation.keep(record, kept), [], len(shots),
                  f"{truncation.what}: {kept:,} of {size:,} {truncation.unit} kept", True, count)


def prompt_tokens(backend: Backend, prompt: str | None, messages: Sequence[tuple[str, str]] | None) -> int:
    """Tokens of a completion prompt, or of chat messages: rendered by the backend's chat template where it
    renders one, else their contents plus `CHAT_MESSAGE_TOKENS` per message (the server's template)."""
    if prompt is not None:
        return backend.count_tokens([prompt])[0]
    assert messages is not None
    if backend.renders_chat:
        return backend.count_tokens([backend.chat_prompt(messages)])[0]
    counts = backend.count_tokens([content for _, content in messages])
    return sum(counts) + CHAT_MESSAGE_TOKENS * len(messages)


def token_budget(prompts: TaskPrompts, train: Sequence[Any], backend: Backend) -> int | None:
    """The task's generation budget by `BUDGET_RULE` from the training part's gold answers (None: no
    training example has one)."""
    answers = sorted({prompts.gold_answer(record) for record in train}, key=len, reverse=True)[:BUDGET_SAMPLE]
    answers = [a for a in answers if a]
    if not answers:
        return None
    longest = max(backend.count_tokens(answers))
    return min(BUDGET_CAP, math.ceil(1.5 * longest) + 16)


def learned_from_answer(n_prompt_tokens: int | None, n_tokens: int | None, asked: int,
                        finish_reason: str | None) -> int | None:
    """The context an answer reveals, as a floor: one the server cut short ("length" before the budget asked)
    ended where the context did. The last token a server counts may have been sampled but never stored in the
    context (llama-cpp-python 0.3.36 goes one token past its limit when that limit falls inside a UTF-8
    character: 3,464 prompt + 633 answer tokens in a 4,096-token context), so the context holds at least
    prompt + answer - 1 tokens; one token too few costs nothing, one too many would overfill prompts."""
    if finish_reason != "length" or n_prompt_tokens is None or n_tokens is None or n_tokens >= asked:
        return None
    return n_prompt_tokens + n_tokens - 1
