"""Model-based membership signals (`klue contamination mink`, docs/contamination.md): how familiar a causal LM
finds each example's input text, from the log-probabilities of the text's own tokens.

Per example (its input fields as its task declares them, joined by newlines):
- Min-K% Prob (Shi et al. 2023, arXiv 2310.16789): the mean of the lowest k share of the text's token
  log-probabilities, k from a list (default 20%); floor(k x n) tokens, at least one. Higher: more member-like.
- Min-K%++ (Zhang et al. 2024, arXiv 2404.02936): per token (log p(x_t) - mu_t) / sigma_t, with mu_t and
  sigma_t^2 the mean and variance of log p(z) for z drawn from the model's next-token distribution at t, then
  the lowest k share averaged. Needs the whole distribution: the in-process backend only (a server sends
  token log-probs, not distributions). Higher: member-like.
- loss: the mean negative log-probability per token. Lower: member-like.
- zlib: the loss divided by the zlib-compressed length of the text's UTF-8 bytes (Carlini et al. 2021). Lower:
  member-like.

AUROC is computed only against a member list the user gives (`--members`): the probability that a member
scores more member-like than a non-member, with a bootstrap interval over the task's resampling units. Without
one the scores and their distribution are written as they are: membership inference is near chance when
members and non-members come from one distribution, so a score alone is weak evidence.

The model is asked through klue's LLM backends and request cache (`klue.llm`): a rerun asks nothing, and an
interrupted one asks only for what is missing.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from klue.errors import DataError
from klue.io.atomic import write_json_atomic, write_jsonl_atomic
from klue.io.progress import ProgressBar
from klue.io.redact import redact_text
from klue.llm.backends.base import Backend, TokenScoresRequest, TokenScoresResult
from klue.tasks.base import Task

FORMAT = "klue.contamination.mink/1"
EXAMPLES_FILE = "examples.jsonl"
SUMMARY_FILE = "summary.json"
CACHE_FILE = "llm_cache.sqlite"
DEFAULT_KS = (0.2,)
CHUNK = 64  # texts per request batch: progress and the cache advance chunk by chunk
DEFAULT_RESAMPLES = 1000
QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)
LOSS = "loss"
ZLIB = "zlib"
CAVEAT = ("Weak evidence: membership scores of one model mean little alone. Members and non-members drawn from "
          "the same distribution are told apart near chance (Duan et al. 2024; Hayes et al. 2025, arXiv "
          "2505.18773); an AUROC means something only against a known split (--members).")


@dataclass(frozen=True)
class Sample:
    """One example's text to score; `group`: its resampling unit (the task's group key; empty: the example
    is a unit of its own)."""

    guid: str
    text: str
    group: str = ""

    @property
    def unit(self) -> str:
        return self.group or f"guid:{self.guid}"


@dataclass(frozen=True)
class TaskInput:
    """One task's part of a run: its input fields, its samples, and where they come from (for the summary)."""

    fields: tuple[str, ...]
    samples: Sequence[Sample]
    source: str = ""


@dataclass(frozen=True)
class Signal:
    name: str  # "min_k_20", "min_kpp_20", "loss", "zlib"
    what: str  # one line for the summary
    higher_is_member: bool


def k_name(k: float) -> str:
    """0.2 -> "20" (percent, as the names of the scores carry it)."""
    return f"{100 * k:g}"


def signals(ks: Sequence[float], distributions: bool) -> list[Signal]:
    """The scores a run computes, in the order they are written."""
    out = [Signal(f"min_k_{k_name(k)}", f"Min-K% Prob, k = {k_name(k)}%: mean of the lowest {k_name(k)}% token "
                  "log-probabilities", True) for k in ks]
    if distributions:
        out += [Signal(f"min_kpp_{k_name(k)}", f"Min-K%++, k = {k_name(k)}%: mean of the lowest {k_name(k)}% "
                       "token log-probabilities standardised by their next-token distribution", True) for k in ks]
    out += [Signal(LOSS, "mean negative log-probability per token", False),
            Signal(ZLIB, "loss / zlib-compressed UTF-8 bytes of the text", False)]
    return out


def check_ks(ks: Sequence[float]) -> tuple[float, ...]:
    """The k values, each a share in (0, 1], unique, in the order given; DataError otherwise."""
    if not ks:
        raise DataError("--k needs at least one value")
    bad = [k for k in ks if not (0.0 < k <= 1.0)]
    if bad:
        raise DataError(f"--k takes shares in (0, 1] (0.2 for 20%), not {', '.join(map(str, bad))}")
    return tuple(dict.fromkeys(float(k) for k in ks))


# ----------------------------------------------------------------------------------- the scores themselves


def lowest_share_mean(values: Sequence[float], k: float) -> float | None:
    """The mean of the lowest floor(k x n) values (at least one); None for no values. The floor follows the
    reference implementation; the small epsilon keeps 0.3 x 10 at 3, not 2."""
    if not values:
        return None
    count = max(1, int(k * len(values) + 1e-9))
    return float(np.mean(np.sort(np.asarray(values, dtype=np.float64))[:count]))


def standardised(result: TokenScoresResult) -> list[float]:
    """Min-K%++'s per-token scores (log p - mu) / sigma; a position whose distribution has no spread (sigma
    0: one token certain) scores 0 when the token is that one."""
    if result.means is None or result.variances is None:
        raise ValueError("standardised scores need the next-token distributions' moments")
    logprobs = np.asarray(result.logprobs, dtype=np.float64)
    sigma = np.sqrt(np.maximum(np.asarray(result.variances, dtype=np.float64), 1e-12))
    return ((logprobs - np.asarray(result.means, dtype=np.float64)) / sigma).tolist()


def zlib_bytes(text: str) -> int:
    return len(zlib.compress(text.encode("utf-8")))


@dataclass
class ExampleScores:
    guid: str
    group: str
    n_tokens: int  # tokens scored
    n_truncated: int  # tokens cut off the end to fit the model
    zlib_bytes: int
    scores: dict[str, float | None]  # signal name -> value (None: no token scored)
    member: bool | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"guid": self.guid, "n_tokens": self.n_tokens, "n_truncated": self.n_truncated,
                               "zlib_bytes": self.zlib_bytes, "scores": self.scores}
        if self.member is not None:
            out["member"] = self.member
        return out


def example_scores(sample: Sample, result: TokenScoresResult, ks: Sequence[float], distributions: bool) -> (
        ExampleScores):
    """Every signal of one example from its token scores."""
    logprobs = list(result.logprobs)
    scores: dict[str, float | None] = {f"min_k_{k_name(k)}": lowest_share_mean(logprobs, k) for k in ks}
    if distributions:
        plus = standardised(result) if logprobs else []
        scores.update({f"min_kpp_{k_name(k)}": lowest_share_mean(plus, k) for k in ks})
    packed = zlib_bytes(sample.text)
    loss = -float(np.mean(logprobs)) if logprobs else None
    scores[LOSS] = loss
    scores[ZLIB] = None if loss is None else loss / packed
    return ExampleScores(sample.guid, sample.unit, len(logprobs), result.n_truncated, packed, scores)


def score_samples(backend: Any, samples: Sequence[Sample], ks: Sequence[float], distributions: bool,
                  progress: ProgressBar | None = None) -> list[ExampleScores]:
    """`samples` scored through `backend` (a `klue.llm.cache.CachedBackend`, or any object with `token_scores`),
    `CHUNK` texts a call; an error from the model names the chunk's first guid."""
    from klue.llm.backends.base import BackendError

    out: list[ExampleScores] = []
    for start in range(0, len(samples), CHUNK):
        chunk = samples[start:start + CHUNK]
        try:
            results = backend.token_scores([TokenScoresRequest(s.text, distributions) for s in chunk])
        except BackendError as error:
            raise BackendError(f"scoring the example {chunk[0].guid} (or one of the {len(chunk) - 1} after it): "
                               f"{error}") from None
        out += [example_scores(s, r, ks, distributions) for s, r in zip(chunk, results)]
        if progress is not None:
            progress.update(advance=len(chunk))
    return out


# ------------------------------------------------------------------------------------ distributions, AUROC


def distribution(values: Sequence[float]) -> dict[str, float] | None:
    """Mean, sample standard deviation and quantiles of the scores (None for none)."""
    if not values:
        return None
    array = np.asarray(values, dtype=np.float64)
    out = {"mean": float(array.mean()), "std": float(array.std(ddof=1)) if len(array) > 1 else 0.0}
    out.update({f"p{round(100 * q):02d}": float(v) for q, v in zip(QUANTILES, np.quantile(array, QUANTILES))})
    return out


@dataclass(frozen=True)
class Auroc:
    value: float
    low: float
    high: float
    tpr_at_5_fpr: float  # the share of members found when 5% of non-members are (wrongly) flagged
    n_members: int
    n_non_members: int

    def to_json(self) -> dict[str, Any]:
        return {"auroc": self.value, "low": self.low, "high": self.high, "tpr_at_5_fpr": self.tpr_at_5_fpr,
                "n_members": self.n_members, "n_non_members": self.n_non_members}


def auroc(scores: Sequence[float], members: Sequence[bool], groups: Sequence[str], higher_is_member: bool,
          n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> Auroc | None:
    """AUROC of `scores` separating members from non-members (None unless both are present), with a 95%
    bootstrap interval: the examples of one group (the task's group key) are drawn together, as
    `klue.metrics.resampling` draws units, and weigh by how often their unit was drawn."""
    from sklearn.metrics import roc_auc_score, roc_curve

    from klue.metrics.resampling import LEVEL, Units, bootstrap_indices, counts_of, interval, streams

    labels = np.asarray(members, dtype=bool)
    if labels.all() or not labels.any():
        return None
    oriented = np.asarray(scores, dtype=np.float64) * (1.0 if higher_is_member else -1.0)
    value = float(roc_auc_score(labels, oriented))
    fpr, tpr, _ = roc_curve(labels, oriented)
    found = float(tpr[fpr <= 0.05].max()) if (fpr <= 0.05).any() else 0.0
    units = Units.of(list(groups))
    rng, _ = streams(seed)
    resampled = [weighted_auroc(oriented, labels, counts_of(indices, units.n_units)[:, units.index])
                 for indices in bootstrap_indices(rng, units.n_units, n_resamples)]
    low, high = interval(np.concatenate(resampled), LEVEL) if resampled else (math.nan, math.nan)
    return Auroc(value, low, high, found, int(labels.sum()), int((~labels).sum()))


def weighted_auroc(scores: np.ndarray, labels: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """AUROC under each row of example `weights` (R x n): the weighted share of (member, non-member) pairs
    ordered right, ties counting half (what sklearn's roc_auc_score gives with sample_weight, checked in the
    tests). Hand-written because it takes all resamples in a few array operations, where calling sklearn per
    resample costs about a millisecond each; NaN where a row weighs no member or no non-member."""
    values, position = np.unique(scores, return_inverse=True)
    member = np.zeros((len(weights), len(values)))
    other = np.zeros((len(weights), len(values)))
    np.add.at(member.T, position[labels], weights[:, labels].T)
    np.add.at(other.T, position[~labels], weights[:, ~labels].T)
    below = np.cumsum(other, axis=1) - other  # non-member weight strictly below each score
    pairs = member.sum(1) * other.sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(pairs > 0, (member * (below + 0.5 * other)).sum(1) / pairs, np.nan)


def read_members(path: Path) -> set[str]:
    """A member list: one guid per line (blank lines and lines starting with # ignored); DataError naming the
    file otherwise."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise DataError(f"cannot read the member list: {error}", path) from None
    guids = {line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")}
    if not guids:
        raise DataError("the member list holds no guid (one guid per line)", path)
    return guids


# ---------------------------------------------------------------------------------------------------- a run


@dataclass
class TaskScores:
    task: str
    given: TaskInput
    examples: list[ExampleScores] = field(default_factory=list)


def task_summary(scored: TaskScores, run_signals: Sequence[Signal], members: set[str] | None,
                 n_resamples: int, seed: int) -> dict[str, Any]:
    """One task's part of summary.json: counts, each score's distribution, and AUROC where members are known."""
    examples = scored.examples
    out: dict[str, Any] = {"fields": list(scored.given.fields), "source": scored.given.source,
                           "n_examples": len(examples),
                           "n_unscored": sum(e.n_tokens == 0 for e in examples),
                           "n_truncated": sum(e.n_truncated > 0 for e in examples),
                           "tokens_mean": float(np.mean([e.n_tokens for e in examples])) if examples else 0.0,
                           "distribution": {}}
    for signal in run_signals:
        values = [v for e in examples if (v := e.scores.get(signal.name)) is not None]
        out["distribution"][signal.name] = distribution(values)
    if members is not None:
        out["n_members"] = sum(e.member is True for e in examples)
        out["auroc"] = aurocs(examples, run_signals, n_resamples, seed)
    return out


def aurocs(examples: Sequence[ExampleScores], run_signals: Sequence[Signal], n_resamples: int,
           seed: int) -> dict[str, Any]:
    """Each signal's AUROC (as JSON; None where members or non-members are missing) over the scored examples."""
    out: dict[str, Any] = {}
    for signal in run_signals:
        kept = [(value, e) for e in examples if (value := e.scores.get(signal.name)) is not None
                and e.member is not None]
        found = auroc([value for value, _ in kept], [bool(e.member) for _, e in kept], [e.group for _, e in kept],
                      signal.higher_is_member, n_resamples, seed)
        out[signal.name] = None if found is None else found.to_json()
    return out


def run_mink(backend: Backend, spec_text: str, samples: Mapping[str, TaskInput],
             out_dir: Path, ks: Sequence[float] = DEFAULT_KS, members: set[str] | None = None, *,
             members_file: Path | None = None, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
             progress: bool = True, skipped: Sequence[str] = ()) -> dict[str, Any]:
    """Score every task's samples (task -> its `TaskInput`) with `backend` and write
    OUT/TASK/examples.jsonl and OUT/summary.json atomically; the request cache is OUT/llm_cache.sqlite. The
    summary comes back too; `skipped`: tasks of `all` left out because their examples are not here."""
    from klue.io.lock import exclusive

    ks = check_ks(ks)
    if members is not None and not any(s.guid in members for part in samples.values() for s in part.samples):
        raise DataError(f"none of its {len(members)} guids is among the examples to score", members_file)
    if not backend.gives_token_scores:
        why = backend.capabilities.loglik_why_not or "its answers carry no prompt log-probabilities"
        raise DataError(f"{redact_text(spec_text)}: the {backend.name} backend gives no per-token log-probabilities "
                        f"of a text ({why}); Min-K% needs them (an hf: model gives them)")
    with exclusive(out_dir, f"klue contamination mink {redact_text(spec_text)}"):
        summary = _run(backend, redact_text(spec_text), samples, out_dir, ks, members, members_file, n_resamples,
                       seed, progress, list(skipped))
    return summary


def _run(backend: Backend, spec_text: str, samples: Mapping[str, TaskInput],
         out_dir: Path, ks: tuple[float, ...], members: set[str] | None, members_file: Path | None,
         n_resamples: int, seed: int, progress: bool, skipped: list[str]) -> dict[str, Any]:
    from klue.llm.cache import CachedBackend, RequestCache

    distributions = backend.gives_distributions
    run_signals = signals(ks, distributions)
    cached = CachedBackend(backend, RequestCache(out_dir / CACHE_FILE))
    total = sum(len(part.samples) for part in samples.values())
    bar = ProgressBar(f"mink · {spec_text}", total, enabled=progress)
    scored: dict[str, TaskScores] = {}
    try:
        for task, given in samples.items():
            bar.update(info=task)
            scored[task] = TaskScores(task, given, score_samples(cached, given.samples, ks, distributions, bar))
    finally:
        bar.close()
        cached.cache.close()
    seen: set[str] = set()
    for part in scored.values():
        for example in part.examples:
            seen.add(example.guid)
            if members is not None:
                example.member = example.guid in members
    summary: dict[str, Any] = {
        "format": FORMAT, "model": spec_text, "backend": backend.name, "fingerprint": backend.fingerprint,
        "ks": list(ks), "signals": {s.name: {"what": s.what, "higher_is_member": s.higher_is_member}
                                    for s in run_signals},
        "min_kpp": distributions or f"not computed: the {backend.name} backend gives no next-token distributions "
                                    "(the in-process hf: backend does)",
        "members_file": None if members_file is None else str(members_file),
        "caveat": CAVEAT, "n_resamples": n_resamples, "seed": seed,
        "tasks": {task: task_summary(part, run_signals, members, n_resamples, seed) for task, part in scored.items()},
        "usage": backend.usage.to_json(),
    }
    if skipped:
        summary["skipped"] = {"tasks": skipped, "why": "their dev file is not here"}
    if members is not None:
        missing = sorted(members - seen)
        summary["members_not_found"] = {"count": len(missing), "first": missing[:10]}
        if len(scored) > 1:
            pooled = [replace(e, group=f"{task}\t{e.group}") for task, p in scored.items() for e in p.examples]
            summary["auroc_all_tasks"] = aurocs(pooled, run_signals, n_resamples, seed)
    for task, part in scored.items():
        write_jsonl_atomic(out_dir / task / EXAMPLES_FILE, (e.to_json() for e in part.examples))
    write_json_atomic(out_dir / SUMMARY_FILE, summary)
    return summary


# ------------------------------------------------------------------------------ which examples, from where


def samples_of(task: Task[Any, Any], records: Sequence[Any], source: str = "") -> TaskInput:
    """The task's input fields (`Task.text_fields`) and each record's input texts joined by newlines, in
    their declared order, with the record's resampling unit (`Task.group_key`)."""
    if task.text_fields is None:
        raise DataError(f"task {task.name!r} declares no input fields (text_fields): it cannot be scored")
    samples = [Sample(task.guid(r), "\n".join(t for t in task.example_text(r).input if t), str(task.group_key(r)))
               for r in records]
    return TaskInput(task.text_fields.input, samples, source)


def run_mink_command(*, model: str, tasks: str, out: Path, ks: Sequence[float] | None, members_file: Path | None,
                     protocol: str | None, eval_file: Path | None, eval_format: str | None, limit: int | None,
                     batch_size: int, cpu: bool, resamples: int, seed: int, data_dir: str | None,
                     extra_data_dir: str | None) -> dict[str, Any]:
    """`klue contamination mink`: the examples of each task read, the model opened, every example scored."""
    from klue import registry
    from klue.contamination.examples import evaluation_set
    from klue.io.endpoints import ServerOptions
    from klue.io.locate import how_to_get, roots_from
    from klue.io.output import check_output_dir
    from klue.llm.spec import open_backend, parse_spec

    chosen = check_ks(ks or DEFAULT_KS)
    if limit is not None and limit < 1:
        raise DataError(f"--limit must be 1 or more, not {limit}")
    if resamples < 0:
        raise DataError(f"--resamples must be 0 or more, not {resamples}")
    picked = registry.resolve(tasks)
    if eval_file is not None and len(picked) != 1:
        raise DataError("--eval names one task's file: give one task with --tasks")
    check_output_dir(out, "--out")
    members = read_members(members_file) if members_file is not None else None
    spec = parse_spec(model)
    roots = roots_from(data_dir, extra_data_dir)
    samples: dict[str, TaskInput] = {}
    skipped: list[str] = []
    for task in picked:
        try:
            found = evaluation_set(task, roots, protocol, eval_file, eval_format)
        except DataError as error:
            # `all` means every task whose set is here; a task named on purpose must be here
            if tasks.strip().lower() != "all" or not str(error).endswith(how_to_get(task.name)):
                raise
            skipped.append(task.name)
            continue
        records, source = found.records, found.what
        if limit is not None and limit < len(records):
            records, source = records[:limit], f"{source}, its first {limit} examples"
        samples[task.name] = samples_of(task, records, source)
    if not samples:
        raise DataError(f"no task's examples are here ({', '.join(skipped)}): {how_to_get('TASK')}")
    backend = open_backend(spec, ServerOptions(batch_size=batch_size, cpu=cpu))
    try:
        return run_mink(backend, model, samples, out, chosen, members, members_file=members_file,
                        n_resamples=resamples, seed=seed, skipped=skipped)
    finally:
        backend.close()


def summary_lines(summary: Mapping[str, Any]) -> list[str]:
    """A few plain lines per task: each score's median and spread, and its AUROC where members were given."""
    lines = [f"{summary['model']} ({summary['fingerprint']})"]
    if summary["min_kpp"] is not True:
        lines.append(f"Min-K%++ {summary['min_kpp']}")
    for task, part in summary["tasks"].items():
        lines.append(f"{task}: {part['n_examples']} examples ({', '.join(part['fields'])}), "
                     f"{part['tokens_mean']:.1f} tokens on average, from {part['source'] or 'the samples given'}")
        for name, shape in part["distribution"].items():
            found = (part.get("auroc") or {}).get(name)
            said = f"  {name:<12} median {shape['p50']:.4g} [p05 {shape['p05']:.4g}, p95 {shape['p95']:.4g}]" \
                if shape else f"  {name:<12} no example scored"
            if found:
                said += (f"   AUROC {found['auroc']:.3f} [{found['low']:.3f}, {found['high']:.3f}], TPR at 5% FPR "
                         f"{found['tpr_at_5_fpr']:.3f} ({found['n_members']} members, {found['n_non_members']} not)")
            lines.append(said)
    if summary.get("skipped"):
        lines.append(f"not scored: {', '.join(summary['skipped']['tasks'])} ({summary['skipped']['why']})")
    if "members_not_found" in summary and summary["members_not_found"]["count"]:
        lines.append(f"{summary['members_not_found']['count']} member guid(s) were not among the examples scored")
    if "auroc" not in next(iter(summary["tasks"].values()), {}):
        lines.append(summary["caveat"])
    return lines
