"""The prompted-LM producer: one task, one model spec, one seed -> predictions.jsonl, llm_outputs.jsonl and the
judge's results.json (the same scoring path as `klue score`).

Per evaluation example: `shots` few-shot examples drawn from the protocol's TRAINING part only, by a seeded
generator of its own (seed and guid), so an example's shots do not depend on which others run; the prompt in
the completion or the chat form (`klue.tasks.prompting`); then either the log-likelihood of every choice
(normalised into the choice probabilities) or a greedy generation parsed by the task. A generation that does
not parse is scored as wrong (the task builds a wrong prediction) and counted, never dropped. Every request
goes through the request cache, so an interrupted run asks the model only for what is missing.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from klue.errors import DataError
from klue.io.atomic import write_jsonl_atomic
from klue.io.progress import ProgressBar
from klue.io.redact import redact_text
from klue.llm.backends.base import Backend, Capabilities, GenerateRequest, LoglikRequest, schema_text
from klue.predictions import write_predictions
from klue.protocols import ProtocolData
from klue.results import LLM, PREDICTIONS_FILE, LlmSummary, Results
from klue.scoring import ProducerReport, judge
from klue.tasks.base import Task
from klue.tasks.prompting import (
    CHAT,
    COMPLETION,
    FORMS,
    GENERATE,
    LOGLIK,
    Parsed,
    TaskPrompts,
    chat_messages,
    completion_prompt,
    normalised,
)

OUTPUTS_FILE = "llm_outputs.jsonl"
CACHE_FILE = "llm_cache.sqlite"
AUTO = "auto"
CHUNK = 16  # examples per request batch: progress and the cache advance chunk by chunk


@dataclass(frozen=True)
class LlmSettings:
    mode: str = AUTO  # auto | loglik | generate
    form: str = COMPLETION  # completion | chat
    shots: int = 0
    limit: int | None = None  # the first N evaluation examples only (a partial run, never ranked)
    constrained: bool = True  # ask the backend for constrained decoding where it offers it
    progress: bool = True


def choose_mode(prompts: TaskPrompts, asked: str, can_loglik: bool, task_name: str) -> tuple[str, list[str]]:
    """The mode to run and the notes to record: `auto` takes the task's default where the backend can do it,
    else generation; an explicit `loglik` on a backend without prompt log-probabilities is refused."""
    notes: list[str] = []
    if asked == AUTO:
        mode = prompts.default_mode
        if mode == LOGLIK and not can_loglik:
            notes.append("the backend returns no prompt log-probabilities: generate-and-parse instead of "
                         "log-likelihood")
            mode = GENERATE
    elif asked in (LOGLIK, GENERATE):
        mode = asked
        if mode == LOGLIK and not can_loglik:
            raise DataError(f"{task_name}: --mode loglik needs prompt log-probabilities, which this backend does "
                            "not return (a server without echo log-probs); use --mode generate or auto")
    else:
        raise DataError(f"--mode takes auto, loglik or generate, not {asked!r}")
    if not prompts.supports(mode):
        raise DataError(f"{task_name} has no {mode} mode; its modes: {', '.join(prompts.modes)}")
    return mode, notes


def draw_shots(pool: Sequence[Any], k: int, seed: int, guid: str, guid_of: Callable[[Any], str]) -> list[Any]:
    """`k` training examples for the example `guid`: a generator seeded by (seed, guid), so the same example
    gets the same shots whatever else runs; never the example itself."""
    if k <= 0:
        return []
    candidates = [r for r in pool if guid_of(r) != guid]
    if len(candidates) < k:
        raise DataError(f"{k} shots asked, but the training part holds only {len(candidates)} other examples")
    return random.Random(f"{seed}:{guid}").sample(candidates, k)


def _prompt_text(prompts: TaskPrompts, record: Any, shots: Sequence[Any], form: str, backend: Backend) -> str:
    """The log-likelihood context (shots answered with their gold choice)."""
    if form == CHAT:
        messages = tuple((m["role"], m["content"]) for m in chat_messages(prompts, record, shots, LOGLIK))
        return backend.chat_prompt(messages)
    return completion_prompt(prompts, record, shots, LOGLIK)


def _generate_request(prompts: TaskPrompts, record: Any, shots: Sequence[Any], form: str, constrained: bool,
                      capabilities: Capabilities) -> GenerateRequest:
    """The generation request; its constraint is the first the task declares and the backend can apply
    (JSON schema, choices, regex, span), none when `constrained` is off."""
    schema = prompts.json_schema(record) if prompts.json_schema and constrained and capabilities.json_schema else None
    choices = (tuple(prompts.choice_strings(record)) if prompts.choice_strings and constrained
               and capabilities.choices and schema is None else None)
    regex = (prompts.regex(record) if prompts.regex and constrained and capabilities.regex
             and schema is None and choices is None else None)
    span_of = (prompts.span_of(record) if prompts.span_of and constrained and capabilities.spans
               and schema is None and choices is None and regex is None else None)
    common: dict[str, Any] = {"max_new_tokens": prompts.max_new_tokens(record), "stop": prompts.stop,
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
    mode: str
    raw: Any  # log-likelihoods per choice, or the generated text
    prediction: dict[str, Any]
    parsed: bool
    note: str = ""


def run(task: Task[Any, Any], spec_text: str, protocol_data: ProtocolData[Any], seed: int, out_dir: Path,
        metric_mode: str = "official", settings: LlmSettings | None = None, *, backend: Backend | None = None,
        cache_path: Path | None = None) -> Results:
    """Evaluate the model `spec_text` (klue.llm.spec) on `task`; see the module docstring. `backend` replaces
    the one the spec names (tests); the request cache is `cache_path` (default: out_dir/llm_cache.sqlite)."""
    from klue.io.lock import exclusive

    with exclusive(Path(out_dir), f"klue llm {task.name} {redact_text(spec_text)}"):
        return _run(task, spec_text, protocol_data, seed, Path(out_dir), metric_mode, settings or LlmSettings(),
                    backend, cache_path)


def _run(task: Task[Any, Any], spec_text: str, data: ProtocolData[Any], seed: int, out_dir: Path,
         metric_mode: str, settings: LlmSettings, backend: Backend | None, cache_path: Path | None) -> Results:
    from klue.llm.cache import CachedBackend, RequestCache
    from klue.llm.spec import open_backend, parse_spec

    started = time.perf_counter()
    if settings.form not in FORMS:
        raise DataError(f"--form takes {' or '.join(FORMS)}, not {settings.form!r}")
    prompts: TaskPrompts = task.make_prompts(data.roots)
    inner = backend if backend is not None else open_backend(parse_spec(spec_text))
    spec_text = redact_text(spec_text)  # the model's name in every output from here: no URL credentials
    mode, notes = choose_mode(prompts, settings.mode, inner.capabilities.loglik, task.name)
    if settings.form == CHAT and not inner.capabilities.chat:
        raise DataError(f"{spec_text}: the chat form needs a chat template or endpoint, which this backend lacks; "
                        "use --form completion")
    if settings.form == CHAT and mode == LOGLIK and not inner.renders_chat:
        raise DataError("chat-form log-likelihood needs the prompt as text (the in-process backend); over HTTP "
                        "use --form completion for log-likelihood, or --mode generate")
    cached = CachedBackend(inner, RequestCache(cache_path or out_dir / CACHE_FILE))

    evaluated = list(data.eval)[:settings.limit] if settings.limit is not None else list(data.eval)
    if not evaluated:
        raise DataError(f"{task.name}: nothing to evaluate (the protocol's evaluation part is empty)")
    partial = settings.limit is not None and len(evaluated) < len(data.eval)
    shots_of = {task.guid(r): draw_shots(data.train, settings.shots, seed, task.guid(r), task.guid) for r in evaluated}

    outputs: list[ExampleOutput] = []
    predictions: list[Any] = []
    progress = ProgressBar(f"{task.name} · {spec_text}", len(evaluated), enabled=settings.progress)
    eval_start = time.perf_counter()
    try:
        for start in range(0, len(evaluated), CHUNK):
            chunk = evaluated[start:start + CHUNK]
            if mode == LOGLIK:
                done = _loglik_chunk(task, prompts, cached, chunk, shots_of, settings.form, inner)
            else:
                done = _generate_chunk(task, prompts, cached, chunk, shots_of, settings.form, settings.constrained)
            for prediction, output in done:
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
    failures = sum(not o.parsed for o in outputs)
    summary = LlmSummary(
        backend=inner.name, model_fingerprint=inner.fingerprint, mode=mode, form=settings.form, shots=settings.shots,
        prompt_version=prompts.version, capabilities=inner.capabilities.to_json(), usage=cached.usage.to_json(),
        n_parse_failures=failures, parse_failure_rate=failures / len(outputs),
        n_constrained=sum(1 for o in outputs if isinstance(o.raw, dict) and o.raw.get("constrained")),
        limit=settings.limit, outputs_file=OUTPUTS_FILE, notes=[*notes, *([prompts.notes] if prompts.notes else [])],
        not_applicable=list(prompts.not_applicable.get(mode, ())))
    producer = ProducerReport(
        model=spec_text, model_family=LLM, seed=seed, started=started, recipe=f"prompts {prompts.version}",
        hyperparameters={"mode": mode, "form": settings.form, "shots": settings.shots, "seed": seed,
                         "limit": settings.limit, "constrained": summary.n_constrained > 0},  # applied, not asked
        eval_examples_per_s=len(evaluated) / eval_time if eval_time > 0 else None, partial=partial, llm=summary)
    return judge(task, eval_part, out_dir, metric_mode, producer)  # type: ignore[arg-type]


def _loglik_chunk(task: Task[Any, Any], prompts: TaskPrompts, backend: Any, chunk: Sequence[Any],
                  shots_of: dict[str, list[Any]], form: str, inner: Backend) -> list[tuple[Any, ExampleOutput]]:
    assert prompts.choices is not None and prompts.from_choices is not None
    requests: list[LoglikRequest] = []
    spans: list[tuple[int, int, str]] = []
    for record in chunk:
        context = _prompt_text(prompts, record, shots_of[task.guid(record)], form, inner)
        choices = list(prompts.choices(record))
        spans.append((len(requests), len(choices), context))
        requests += [LoglikRequest(context, " " + choice) for choice in choices]
    answers = backend.loglik(requests)
    done = []
    for record, (first, n, context) in zip(chunk, spans):
        logprobs = [a.logprob for a in answers[first:first + n]]
        prediction = prompts.from_choices(record, normalised(logprobs))
        guid = task.guid(record)
        done.append((prediction, ExampleOutput(
            guid, [task.guid(s) for s in shots_of[guid]], context, LOGLIK,
            {"logprobs": logprobs, "n_tokens": [a.n_tokens for a in answers[first:first + n]]},
            task.prediction_to_json(prediction), True)))
    return done


def _generate_chunk(task: Task[Any, Any], prompts: TaskPrompts, backend: Any, chunk: Sequence[Any],
                    shots_of: dict[str, list[Any]], form: str, constrained: bool) -> list[tuple[Any, ExampleOutput]]:
    requests = [_generate_request(prompts, r, shots_of[task.guid(r)], form, constrained, backend.capabilities)
                for r in chunk]
    answers = backend.generate(requests)
    done = []
    for record, request, answer in zip(chunk, requests, answers):
        parsed = _safe_parse(prompts, record, answer.text)
        guid = task.guid(record)
        prompt: str | list[list[str]] = (request.prompt if request.prompt is not None
                                         else [list(m) for m in request.messages or ()])
        done.append((parsed.prediction, ExampleOutput(
            guid, [task.guid(s) for s in shots_of[guid]], prompt, GENERATE,
            {"text": answer.text, "constrained": answer.constrained, "finish_reason": answer.finish_reason},
            task.prediction_to_json(parsed.prediction), parsed.ok, parsed.note)))
    return done


def _safe_parse(prompts: TaskPrompts, record: Any, text: str) -> Parsed:
    """The task's parse; a parser that raises is a bug in the task's prompts, reported as such."""
    try:
        return prompts.parse(record, text)
    except Exception as error:
        raise RuntimeError(f"prompts {prompts.version}: parse raised on {text!r}: {error}") from error


def _output_json(output: ExampleOutput) -> dict[str, Any]:
    return {"guid": output.guid, "shots": output.shots, "mode": output.mode, "prompt": output.prompt,
            "raw": output.raw, "prediction": output.prediction, "parsed": output.parsed, "note": output.note}
