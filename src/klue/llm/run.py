"""The prompted-LM producer: one task, one model spec, one seed -> predictions.jsonl, llm_outputs.jsonl and the
judge's results.json (the same scoring path as `klue score`).

Per evaluation example: `shots` few-shot examples drawn from the protocol's TRAINING part only, by a seeded
generator of its own (seed and guid), so an example's shots do not depend on which others run, balanced over
the labels for a classification task (`klue.llm.shots`); the prompt in the completion or the chat form
(`klue.tasks.prompting`), fitted into the model's context (`klue.llm.fitting`: shots dropped, then the
example's own context cut; an example that cannot fit is scored as wrong and counted); then either the
log-likelihood of every choice (normalised into the choice probabilities) or a greedy generation, cut at the
next example's marker and parsed by the task. A generation that does not parse is scored as wrong (the task
builds a wrong prediction) and counted, never dropped. Every request goes through the request cache, so an
interrupted run asks the model only for what is missing. A model's error names the example it came from.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from klue.errors import DataError, UnreachableError
from klue.io.atomic import write_jsonl_atomic
from klue.io.progress import ProgressBar
from klue.io.redact import redact_text
from klue.llm import fitting
from klue.llm.backends.base import (
    Backend,
    BackendError,
    Capabilities,
    ContextExceeded,
    GenerateRequest,
    LoglikRequest,
    schema_text,
)
from klue.llm.fitting import Fitted
from klue.llm.shots import draw_shots, shot_label_agreement, shot_policy
from klue.predictions import write_predictions
from klue.results import LLM, PREDICTIONS_FILE, LlmSummary, Results
from klue.scoring import ProducerReport, RunRequest
from klue.tasks.base import Task
from klue.tasks.prompting import (
    CHAT,
    COMPLETION,
    FORMS,
    GENERATE,
    LOGLIK,
    Parsed,
    TaskPrompts,
    answer_stops,
    chat_messages,
    completion_prompt,
    cut_at_stops,
    normalised,
)

OUTPUTS_FILE = "llm_outputs.jsonl"
CACHE_FILE = "llm_cache.sqlite"
AUTO = "auto"
CHUNK = 16  # examples per request batch: progress and the cache advance chunk by chunk


@dataclass(frozen=True)
class LlmSettings:
    method: str = AUTO  # how answers are scored: auto | loglik (the choices' log-likelihoods) | generate
    form: str = COMPLETION  # completion | chat
    shots: int = 0
    limit: int | None = None  # the first N evaluation examples only (a partial run, never ranked)
    constrained: bool = True  # ask the backend for constrained decoding where it offers it
    progress: bool = True
    max_context: int | None = None  # the model's context in tokens (--max-context), over what the backend says


def choose_method(prompts: TaskPrompts, asked: str, can_loglik: bool, task_name: str,
                why_not: str = "") -> tuple[str, list[str]]:
    """The method to run (loglik or generate) and the notes to record: `auto` takes the task's default where
    the backend can do it, else generation; an explicit `loglik` on a backend without prompt log-probabilities
    is refused. `why_not`: why the backend has none, where its probe found out (Capabilities.loglik_why_not),
    said in both."""
    notes: list[str] = []
    cause = why_not or "the backend returns no prompt log-probabilities"
    if asked == AUTO:
        method = prompts.default_mode
        if method == LOGLIK and not can_loglik:
            notes.append(f"{cause}: generate-and-parse instead of log-likelihood")
            method = GENERATE
    elif asked in (LOGLIK, GENERATE):
        method = asked
        if method == LOGLIK and not can_loglik:
            raise DataError(f"{task_name}: --method loglik needs prompt log-probabilities, which this backend does "
                            f"not give ({why_not or 'a server without echo log-probs'}); use --method generate or "
                            "auto")
    else:
        raise DataError(f"--method takes auto, loglik or generate, not {asked!r}")
    if not prompts.supports(method):
        raise DataError(f"{task_name} has no {method} method; its methods: {', '.join(prompts.modes)}")
    return method, notes


def _prompt_text(prompts: TaskPrompts, record: Any, shots: Sequence[Any], form: str, backend: Backend) -> str:
    """The log-likelihood context (shots answered with their gold choice)."""
    if form == CHAT:
        messages = tuple((m["role"], m["content"]) for m in chat_messages(prompts, record, shots, LOGLIK))
        return backend.chat_prompt(messages)
    return completion_prompt(prompts, record, shots, LOGLIK)


def _generate_request(prompts: TaskPrompts, record: Any, shots: Sequence[Any], form: str, constrained: bool,
                      capabilities: Capabilities, budget: int | None = None) -> GenerateRequest:
    """The generation request; its constraint is the first the task declares and the backend can apply
    (JSON schema, choices, regex, span), none when `constrained` is off."""
    schema = prompts.json_schema(record) if prompts.json_schema and constrained and capabilities.json_schema else None
    choices = (tuple(prompts.choice_strings(record)) if prompts.choice_strings and constrained
               and capabilities.choices and schema is None else None)
    regex = (prompts.regex(record) if prompts.regex and constrained and capabilities.regex
             and schema is None and choices is None else None)
    span_of = (prompts.span_of(record) if prompts.span_of and constrained and capabilities.spans
               and schema is None and choices is None and regex is None else None)
    tokens = prompts.max_new_tokens(record) if budget is None else min(budget, prompts.max_new_tokens(record))
    common: dict[str, Any] = {"max_new_tokens": tokens, "stop": answer_stops(prompts, record),
              "json_schema": schema_text(schema), "choices": choices, "regex": regex, "span_of": span_of}
    if form == CHAT:
        messages = tuple((m["role"], m["content"]) for m in chat_messages(prompts, record, shots))
        return GenerateRequest(messages=messages, **common)
    return GenerateRequest(prompt=completion_prompt(prompts, record, shots), **common)


@dataclass
class ExampleOutput:
    """One line of llm_outputs.jsonl: everything needed to re-parse or audit an example without the model."""

    guid: str
    shots: list[str]
    prompt: str | list[list[str]]
    method: str  # LOGLIK or GENERATE (the file's "mode")
    raw: Any  # log-likelihoods per choice, or the generated text
    prediction: dict[str, Any]
    parsed: bool
    note: str = ""
    n_shots_dropped: int = 0  # shots left out to fit the context
    truncated: str = ""  # what was cut of the example's own context
    unfit: bool = False  # the prompt could not fit: not asked, scored as wrong
    n_prompt_tokens: int | None = None  # as counted when fitting (None: no context known, nothing counted)


def run(request: RunRequest, settings: LlmSettings | None = None, *, backend: Backend | None = None,
        cache_path: Path | None = None) -> Results:
    """Evaluate the model `request.model_spec` (klue.llm.spec) on `request.task`; see the module docstring.
    `backend` replaces the one the spec names (tests); the request cache is `cache_path` (default:
    out_dir/llm_cache.sqlite)."""
    return _run(request, settings or LlmSettings(), backend, cache_path)


def _run(request: RunRequest, settings: LlmSettings, backend: Backend | None, cache_path: Path | None) -> Results:
    from klue.llm.cache import CachedBackend, RequestCache
    from klue.llm.spec import open_backend, parse_spec

    started = time.perf_counter()
    task, spec_text, data, seed, out_dir = (request.task, request.model_spec, request.protocol_data, request.seed,
                                            Path(request.out_dir))
    if settings.form not in FORMS:
        raise DataError(f"--form takes {' or '.join(FORMS)}, not {settings.form!r}")
    if settings.max_context is not None and settings.max_context < 1:
        raise DataError(f"--max-context must be 1 or more, not {settings.max_context}")
    prompts: TaskPrompts = task.make_prompts(data.roots)
    inner = backend if backend is not None else open_backend(parse_spec(spec_text))
    spec_text = redact_text(spec_text)  # the model's name in every output from here: no URL credentials
    method, notes = choose_method(prompts, settings.method, inner.capabilities.loglik, task.name,
                                  inner.capabilities.loglik_why_not)
    if settings.form == CHAT and not inner.capabilities.chat:
        raise DataError(f"{spec_text}: the chat form needs a chat template or endpoint, which this backend lacks; "
                        "use --form completion")
    if settings.form == CHAT and method == LOGLIK and not inner.renders_chat:
        raise DataError("chat-form log-likelihood needs the prompt as text (the in-process backend); over HTTP "
                        "use --form completion for log-likelihood, or --method generate")
    cached = CachedBackend(inner, RequestCache(cache_path or out_dir / CACHE_FILE))

    evaluated = list(data.eval)[:settings.limit] if settings.limit is not None else list(data.eval)
    if not evaluated:
        raise DataError(f"{task.name}: nothing to evaluate (the protocol's evaluation part is empty)")
    partial = settings.limit is not None and len(evaluated) < len(data.eval)
    shots_of = {task.guid(r): draw_shots(data.train, settings.shots, seed, task.guid(r), task.guid, prompts.label_of)
                for r in evaluated}
    context = _Context(settings.max_context, "--max-context") if settings.max_context is not None else \
        _Context(inner.context_length, "the backend")
    engine = _Engine(task, prompts, cached, inner, method, settings.form, settings.constrained, context,
                     fitting.token_budget(prompts, data.train, inner) if method == GENERATE else None)

    outputs: list[ExampleOutput] = []
    predictions: list[Any] = []
    progress = ProgressBar(f"{task.name} · {spec_text}", len(evaluated), enabled=settings.progress)
    eval_start = time.perf_counter()
    try:
        for start in range(0, len(evaluated), CHUNK):
            chunk = evaluated[start:start + CHUNK]
            for prediction, output in engine.run_chunk(chunk, shots_of):
                predictions.append(prediction)
                outputs.append(output)
            progress.update(advance=len(chunk))
    finally:
        progress.close()
        cached.close()
    eval_time = time.perf_counter() - eval_start

    eval_part = replace(data, eval=evaluated, description=data.description + (
        f"; the first {len(evaluated):,} of {len(data.eval):,} evaluation examples only (--limit): a partial "
        "score, never ranked" if partial else ""))
    write_predictions(out_dir / PREDICTIONS_FILE, task, evaluated, predictions, f"llm {spec_text!r}")
    write_jsonl_atomic(out_dir / OUTPUTS_FILE, (_output_json(o) for o in outputs))
    failures = sum(not o.parsed and not o.unfit for o in outputs)
    agreement = _agreement(prompts, predictions, outputs, shots_of, task)
    summary = LlmSummary(
        backend=inner.name, model_fingerprint=inner.fingerprint, mode=method, form=settings.form, shots=settings.shots,
        prompt_version=prompts.version, capabilities=inner.capabilities.to_json(), usage=cached.usage.to_json(),
        n_parse_failures=failures, parse_failure_rate=failures / len(outputs),
        n_constrained=sum(1 for o in outputs if isinstance(o.raw, dict) and o.raw.get("constrained")),
        limit=settings.limit, outputs_file=OUTPUTS_FILE,
        notes=[*notes, *([prompts.notes] if prompts.notes else []), *context.notes],
        not_applicable=list(prompts.not_applicable.get(method, ())),
        instead_of_loglik=settings.method == AUTO and prompts.default_mode == LOGLIK and method == GENERATE,
        shot_policy=shot_policy(settings.shots, prompts.label_of),
        shot_label_agreement=agreement[0] if agreement else None,
        shot_label_agreement_chance=agreement[1] if agreement else None,
        context_length=context.length, token_counter=inner.token_counter,
        n_shots_dropped=sum(1 for o in outputs if o.n_shots_dropped), n_truncated=sum(1 for o in outputs if o.truncated and not o.unfit),
        n_unfit=sum(1 for o in outputs if o.unfit), max_new_tokens=engine.budget,
        budget_rule=fitting.BUDGET_RULE if engine.budget is not None else "")
    producer = ProducerReport(
        model=spec_text, model_family=LLM, seed=seed, started=started, recipe=f"prompts {prompts.version}",
        hyperparameters={"mode": method, "form": settings.form, "shots": settings.shots, "seed": seed,
                         "limit": settings.limit, "constrained": summary.n_constrained > 0},  # applied, not asked
        eval_examples_per_s=len(evaluated) / eval_time if eval_time > 0 else None, partial=partial, llm=summary)
    return request.judge(eval_part, producer)


def _agreement(prompts: TaskPrompts, predictions: Sequence[Any], outputs: Sequence[ExampleOutput],
               shots_of: dict[str, list[Any]], task: Task[Any, Any]) -> tuple[float, float] | None:
    """The shot-label agreement (klue.llm.shots) over the examples asked with at least one shot."""
    if prompts.label_of is None:
        return None
    label_of = prompts.label_of
    pairs = []
    for prediction, output in zip(predictions, outputs):
        if output.shots and not output.unfit:
            last = next(s for s in shots_of[output.guid] if task.guid(s) == output.shots[-1])
            pairs.append((label_of(prediction), label_of(last)))
    return shot_label_agreement([p for p, _ in pairs], [s for _, s in pairs])


@dataclass
class _Context:
    """The model's context length as known now, where it came from, and what was learned on the way."""

    length: int | None
    source: str
    notes: list[str] = field(default_factory=list)

    def learn(self, length: int, how: str) -> bool:
        """Take a (smaller) length the server revealed; False when it says nothing new."""
        if self.length is not None and length >= self.length:
            return False
        self.length, self.source = length, how
        self.notes.append(f"context length {length:,} tokens, learned from {how}")
        return True


@dataclass
class _Engine:
    """Runs chunks of examples: fits their prompts, asks the model, parses, and names the failing example."""

    task: Task[Any, Any]
    prompts: TaskPrompts
    backend: Any  # the CachedBackend
    inner: Backend
    method: str  # LOGLIK or GENERATE
    form: str
    constrained: bool
    context: _Context
    budget: int | None

    ATTEMPTS = 3  # a chunk is fitted again at most this often as the server reveals its context

    def run_chunk(self, chunk: Sequence[Any], shots_of: dict[str, list[Any]]) -> list[tuple[Any, ExampleOutput]]:
        for _ in range(self.ATTEMPTS):
            fitted = [self.fit(record, shots_of[self.task.guid(record)]) for record in chunk]
            try:
                return self._ask(chunk, fitted)
            except ContextExceeded as error:
                if not self._learn(error, fitted):
                    break
            except UnreachableError:
                raise
            except BackendError:
                break  # asked one by one below, so the error names its example
        fitted = [self.fit(record, shots_of[self.task.guid(record)]) for record in chunk]
        done: list[tuple[Any, ExampleOutput]] = []
        for record, fit in zip(chunk, fitted):
            try:
                done += self._ask([record], [fit])
            except ContextExceeded as error:  # refused as too long even fitted: scored as wrong, counted
                done.append(self._unfit(record, replace(fit, fits=False), f"the server refused it: {error}"))
            except UnreachableError:
                raise
            except BackendError as error:
                raise BackendError(f"{self.task.name} example {self.task.guid(record)}: {error}") from None
        return done

    def _learn(self, error: ContextExceeded, fitted: Sequence[Fitted]) -> bool:
        if error.context_length is not None:
            return self.context.learn(error.context_length, "the server's refusal of a longer prompt")
        # The server names no length: assume three quarters of the longest prompt it was sent.
        longest = max(f.n_tokens or self._measure(f.record, f.shots) for f in fitted)
        return self.context.learn(max(1, longest * 3 // 4), "a refusal naming no length (3/4 of the longest "
                                  "prompt sent)")

    # -- fitting --------------------------------------------------------------------------------------------

    def fit(self, record: Any, shots: Sequence[Any]) -> Fitted:
        if self.context.length is None:
            return Fitted(record, list(shots))
        room = self.context.length - self._reserve(record) - fitting.MARGIN
        return fitting.fit_example(record, shots, self._measure, room, self.prompts.truncation)

    def _reserve(self, record: Any) -> int:
        """Tokens the answer needs after the prompt: the longest choice, or the generation budget."""
        if self.method == LOGLIK:
            assert self.prompts.choices is not None
            return max(self.inner.count_tokens([" " + c for c in self.prompts.choices(record)]))
        return self._request(record, []).max_new_tokens

    def _measure(self, record: Any, shots: Sequence[Any]) -> int:
        if self.method == LOGLIK:
            return self.inner.count_tokens([_prompt_text(self.prompts, record, shots, self.form, self.inner)])[0]
        request = self._request(record, shots)
        return fitting.prompt_tokens(self.inner, request.prompt, request.messages)

    def _request(self, record: Any, shots: Sequence[Any]) -> GenerateRequest:
        return _generate_request(self.prompts, record, shots, self.form, self.constrained,
                                 self.backend.capabilities, self.budget)

    # -- asking ---------------------------------------------------------------------------------------------

    def _ask(self, chunk: Sequence[Any], fitted: Sequence[Fitted]) -> list[tuple[Any, ExampleOutput]]:
        """The chunk's predictions in order: the unfit ones scored as wrong, the others asked of the model."""
        asked = [(record, fit) for record, fit in zip(chunk, fitted) if fit.fits]
        answered = iter(self._loglik(asked) if self.method == LOGLIK else self._generate(asked))
        return [next(answered) if fit.fits else self._unfit(record, fit, "the prompt cannot fit the context")
                for record, fit in zip(chunk, fitted)]

    def _unfit(self, record: Any, fit: Fitted, why: str) -> tuple[Any, ExampleOutput]:
        prompts = self.prompts
        prediction = (prompts.unfit_prediction(record) if prompts.unfit_prediction is not None
                      else prompts.parse(record, "").prediction)
        return prediction, ExampleOutput(
            self.task.guid(record), [], "", self.method, None, self.task.prediction_to_json(prediction), False,
            f"unfit: {why} ({self.context.length} tokens); scored as wrong", fit.n_shots_dropped, fit.truncated,
            True, fit.n_tokens)

    def _loglik(self, asked: Sequence[tuple[Any, Fitted]]) -> list[tuple[Any, ExampleOutput]]:
        prompts = self.prompts
        assert prompts.choices is not None and prompts.from_choices is not None
        requests: list[LoglikRequest] = []
        spans: list[tuple[int, int, str]] = []
        for _, fit in asked:
            context = _prompt_text(prompts, fit.record, fit.shots, self.form, self.inner)
            choices = list(prompts.choices(fit.record))
            spans.append((len(requests), len(choices), context))
            requests += [LoglikRequest(context, " " + choice) for choice in choices]
        answers = self.backend.loglik(requests) if requests else []
        done = []
        for (record, fit), (first, n, context) in zip(asked, spans):
            logprobs = [a.logprob for a in answers[first:first + n]]
            prediction = prompts.from_choices(record, normalised(logprobs))
            done.append((prediction, ExampleOutput(
                self.task.guid(record), [self.task.guid(s) for s in fit.shots], context, LOGLIK,
                {"logprobs": logprobs, "n_tokens": [a.n_tokens for a in answers[first:first + n]]},
                self.task.prediction_to_json(prediction), True, "", fit.n_shots_dropped, fit.truncated, False,
                fit.n_tokens)))
        return done

    def _generate(self, asked: Sequence[tuple[Any, Fitted]]) -> list[tuple[Any, ExampleOutput]]:
        requests = [self._request(fit.record, fit.shots) for _, fit in asked]
        answers = self.backend.generate(requests) if requests else []
        done = []
        for (record, fit), request, answer in zip(asked, requests, answers):
            learned = fitting.learned_from_answer(answer.n_prompt_tokens, answer.n_tokens, request.max_new_tokens,
                                                  answer.finish_reason)
            if learned is not None:
                self.context.learn(learned, "an answer the context cut short (prompt + answer - 1 tokens, a floor)")
            # Servers may ignore stop strings (or keep them): the answer ends at the first marker all the same.
            parsed = _safe_parse(self.prompts, record, cut_at_stops(answer.text, request.stop))
            prompt: str | list[list[str]] = (request.prompt if request.prompt is not None
                                             else [list(m) for m in request.messages or ()])
            done.append((parsed.prediction, ExampleOutput(
                self.task.guid(record), [self.task.guid(s) for s in fit.shots], prompt, GENERATE,
                {"text": answer.text, "constrained": answer.constrained, "finish_reason": answer.finish_reason},
                self.task.prediction_to_json(parsed.prediction), parsed.ok, parsed.note, fit.n_shots_dropped,
                fit.truncated, False, fit.n_tokens)))
        return done


def _safe_parse(prompts: TaskPrompts, record: Any, text: str) -> Parsed:
    """The task's parse; a parser that raises is a bug in the task's prompts, reported as such."""
    try:
        return prompts.parse(record, text)
    except Exception as error:
        raise RuntimeError(f"prompts {prompts.version}: parse raised on {text!r}: {error}") from error


def _output_json(output: ExampleOutput) -> dict[str, Any]:
    return {"guid": output.guid, "shots": output.shots, "mode": output.method, "prompt": output.prompt,
            "raw": output.raw, "prediction": output.prediction, "parsed": output.parsed, "note": output.note,
            "fit": {"n_shots_dropped": output.n_shots_dropped, "truncated": output.truncated, "unfit": output.unfit,
                    "n_prompt_tokens": output.n_prompt_tokens}}
