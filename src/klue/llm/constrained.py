"""Constrained decoding for the in-process backend, with llguidance (a token mask per sequence and step).

A request carries at most one constraint, as the task declared it (`klue.tasks.prompting.TaskPrompts`): a
closed set of whole answers (`choices`), a JSON schema (`json_schema`), a regular expression (`regex`) or
a text the answer is a substring of (`span_of`, extractive answers; llguidance's `substring_chars`).
`lark_grammar` is the one place that turns each into llguidance's Lark dialect; the HTTP backend turns the
same declarations into what its server takes (GBNF, response_format, vLLM's structured outputs).

Every grammar lets the answer start with one optional space: in the completion form the prompt ends with the
cue (`답:`) and a model continues with `" " + answer`, as the few-shot examples show it; forcing the answer's
first character right after the cue would push a model off the form it was shown. JSON is compact (no
whitespace between tokens) with the separators `json.dumps` writes, as the tasks' gold answers are.

llguidance (not xgrammar or outlines) because it needs no torch and has a small dependency set (the `llm`
extra), computes a mask in microseconds on CPU, and compiles JSON schemas, regular expressions and Lark
grammars through one entry point. The masking itself (`GrammarMasks`) is written here: llguidance's torch
helper compiles its kernel with `torch.compile`, which needs a C compiler at run time.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from klue.llm.backends.base import GenerateRequest

LIBRARY = "llguidance"
# JSON as the tasks' gold answers write it (json.dumps' separators), on one line, no other whitespace.
JSON_LAYOUT = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}


def library_version() -> str | None:
    """The installed llguidance's version, or None when it cannot be imported."""
    try:
        import llguidance
    except ImportError:
        return None
    return str(llguidance.__version__)


def _lark_literal(text: str) -> str:
    # A JSON string literal is a valid Lark string literal (llguidance reads the same escapes).
    return json.dumps(text, ensure_ascii=False)


def _lark_regex(pattern: str) -> str:
    """A regular expression as a Lark terminal `/.../` (a `/` in it escaped)."""
    return "/" + pattern.replace("/", "\\/") + "/"


def lark_grammar(request: GenerateRequest) -> str | None:
    """The request's constraint in llguidance's Lark dialect, with an optional leading space; None when the
    request has none."""
    if request.choices is not None:
        if not request.choices:
            raise ValueError("a choice constraint needs at least one choice")
        body = "(" + " | ".join(_lark_literal(c) for c in request.choices) + ")"
    elif request.json_schema is not None:
        schema = json.loads(request.json_schema)
        body = "%json " + json.dumps({**schema, "x-guidance": JSON_LAYOUT}, ensure_ascii=False)
    elif request.regex is not None:
        body = _lark_regex(request.regex)
    elif request.span_of is not None:  # any substring of the text, the empty one included
        body = "%regex " + json.dumps({"substring_chars": request.span_of}, ensure_ascii=False)
    else:
        return None
    return f'start: " "? answer\nanswer: {body}\n'


@dataclass
class RowState:
    """One sequence's matcher during a batched generation."""

    matcher: Any  # llguidance.LLMatcher, or None for an unconstrained row
    budget: int  # the row's own max_new_tokens (the batch runs to the largest)
    done: bool = False  # the row produced its end (EOS, or the grammar stopped) or failed
    failed: str = ""  # why the constraint was dropped mid-generation (a dead end), "" when it held
    n_answer: int | None = None  # tokens of the answer where the grammar stopped without EOS


class Constrainer:
    """Compiles constraints against one tokenizer (`tokenizer`: a fast HF tokenizer; `vocab_size`: the
    model's logits width, which may exceed the tokenizer's) and builds the per-batch logits mask."""

    def __init__(self, tokenizer: Any, vocab_size: int) -> None:
        import llguidance
        import llguidance.hf

        self.version = str(llguidance.__version__)
        self.eos = tokenizer.eos_token_id
        self.vocab_size = vocab_size
        self.tokenizer = llguidance.hf.from_tokenizer(tokenizer, n_vocab=vocab_size)

    def matcher(self, request: GenerateRequest) -> tuple[Any, str]:
        """(matcher, "") for a request with a constraint that compiles; (None, why) when it does not;
        (None, "") for a request without a constraint."""
        from llguidance import LLMatcher

        try:
            grammar = lark_grammar(request)
        except ValueError as error:
            return None, str(error)
        if grammar is None:
            return None, ""
        matcher = LLMatcher(self.tokenizer, LLMatcher.grammar_from_lark(grammar), log_level=0)
        if matcher.is_error():
            return None, matcher.get_error().strip().splitlines()[0][:300]
        return matcher, ""


class GrammarMasks:
    """A transformers `LogitsProcessor` for a left-padded batch: before each greedy step, every constrained
    row's logits outside its grammar's allowed tokens are set to -inf. `width` is the padded prompt
    length, so the tokens a row generated so far are `input_ids[row, width:]`. A row whose grammar is
    finished gets only EOS; a row whose grammar allows nothing (a dead end, e.g. a budget the tokenizer
    cannot meet) drops its constraint and says why in `failed`."""

    def __init__(self, rows: Sequence[RowState], width: int, eos: int | None) -> None:
        self.rows = list(rows)
        self.width = width
        self.eos = eos

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        generated = input_ids.shape[1] - self.width
        for index, row in enumerate(self.rows):
            if row.matcher is None or row.done:
                continue
            if generated >= row.budget:  # the row's answer is cut here; later tokens are not its own
                row.done = True
                continue
            if generated > 0:
                token = int(input_ids[index, -1])
                if self.eos is not None and token == self.eos:
                    row.done = True
                    continue
                if not row.matcher.consume_token(token):
                    row.done, row.failed = True, f"the grammar refused token {token}: {row.matcher.get_error()}"
                    continue
            if row.matcher.is_stopped():
                # finished: EOS ends the row (or, without an EOS, the answer is cut here afterwards)
                row.done = True
                row.n_answer = generated
                if self.eos is not None:
                    scores[index, :] = float("-inf")
                    scores[index, self.eos] = 0.0
                continue
            allowed = self._allowed(row.matcher, scores.shape[1])
            if not allowed.any():
                row.done, row.failed = True, "the grammar allows no token here"
                continue
            scores[index, ~torch.from_numpy(allowed).to(scores.device)] = float("-inf")
        return scores

    @staticmethod
    def _allowed(matcher: Any, width: int) -> Any:
        """The boolean mask of tokens the matcher allows next (llguidance's bitmask, unpacked)."""
        import numpy as np

        bits = np.frombuffer(matcher.compute_bitmask(), dtype=np.uint8)
        allowed = np.unpackbits(bits, bitorder="little")[:width].astype(bool)
        if allowed.shape[0] < width:  # logits wider than the mask: the extra tokens are not allowed
            allowed = np.concatenate([allowed, np.zeros(width - allowed.shape[0], dtype=bool)])
        return allowed
