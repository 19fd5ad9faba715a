"""Log-likelihood scoring: klue's in-process backend against lm-evaluation-harness's `hf` model, same model,
same requests, one process.

The model is a tiny Llama built from a config with seeded random weights and a byte-level BPE tokenizer
trained on the spot (`klue.models.tiny.make_tiny_llama_dir`), saved to a temporary directory that both
sides load. The requests are the ones `klue llm` sends in log-likelihood mode: per example the zero-shot
completion prompt (`klue.tasks.prompting.completion_prompt`) as the context and `" " + choice` for each
choice, for the first `--examples` NLI dev pairs (3 choices) and the YNAT dev sample (7 choices) under
KLUE_DATA_DIR / KLUE_EXTRA_DATA_DIR (`--tasks re`: RE's 30 relation descriptions on its train sample);
synthetic Korean contexts with 3 choices when the data is absent.

`--gguf FILE` takes a real model instead (e.g. SmolLM2-135M-Instruct's Q4_1 GGUF, whose path
`../shared/tools/real_models.py` prints as "smollm2_gguf"). transformers reads the GGUF (tokenizer and
weights, dequantised to float32), but a GGUF-loaded model refuses `save_pretrained`; so the script copies
its state dict into a model built from its config (the GGUF quantization entry removed) and saves that,
with the tokenizer, as a plain transformers directory (temporary, or `--gguf-dir DIR`, kept and reused).
Both sides load that directory: identical float32 weights and tokenizer. `--lm-eval-gguf` makes lm-eval
load the GGUF itself (`HFLM(pretrained=DIR_OF_FILE, gguf_file=NAME)`, which it accepts) while klue loads
the directory: a check that lm-eval's own GGUF route sees the same model and tokenizer (time the
directory route, where both sides load alike; on transformers 5.24 the GGUF-loaded and the directory-loaded
state dicts are bit-identical). The figures add the context lengths in tokens and how many requests both
sides cut into the same (context, continuation) token ids (`same_token_split`: lm-eval's `_encode_pair`
against klue's separate encoding).

- lm-evaluation-harness: `lm_eval.models.huggingface.HFLM(pretrained=DIR, device="cpu", dtype=float32,
  batch_size=B)` and `loglikelihood()` on `lm_eval.api.instance.Instance` requests (each choice a full
  context + continuation sequence; its one-token-continuation logits cache is on, as by default).
- klue: `klue.llm.backends.hf.HfBackend(DIR, cpu=True, batch_size=B).loglik()` (each context once, its
  key/value cache reused for the choices).

Both give (log-likelihood, is_greedy) per request; the script reports the largest absolute difference of
the log-likelihoods (goal: 1e-4) and whether is_greedy agrees. Speed: each side scores all requests
`--repeat` times, alternating which goes first; requests/s from each run's wall time, the median and the
best reported, and the ratio of the medians; also the ratio of the median CPU seconds of this process
(less sensitive to other processes on a shared machine than wall time). Run it on an idle machine when you can; on a shared one the
alternation keeps the ratio fair, not the absolute figures.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_llm_vs_lm_eval.py [--examples 200] [--repeat 3]
        [--tasks nli,ynat] [--threads 1] [--batch-size 8] [--json out.json] [--profile klue.prof]
        [--gguf FILE.gguf [--gguf-dir DIR] [--lm-eval-gguf]]

lm-eval is not a dependency of klue: install it apart (e.g. `pip install --target DIR --no-deps
lm-eval==0.4.13`, which keeps the venv's torch and transformers; `lm_eval.models.huggingface` imports with
nothing more) and run with `PYTHONPATH=DIR:src`. A real model is slow on one thread (SmolLM2 with NLI
prompts of about 390 tokens: about 2 s of CPU per lm-eval request): size `--examples` to the time you have.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

Pair = tuple[str, str]  # (context, continuation)


def klue_requests(examples: int, tasks: Sequence[str]) -> tuple[list[Pair], str, list[str]]:
    """The log-likelihood requests `klue llm` builds (zero-shot, completion form), the data described, and
    texts to train the tokenizer on; synthetic Korean when the KLUE files are absent."""
    from klue import registry
    from klue.tasks.prompting import LOGLIK, completion_prompt
    from klue.tasks.reading import read

    klue_dir = Path(os.environ.get("KLUE_DATA_DIR", "/work/shared/data/klue"))
    extra_dir = Path(os.environ.get("KLUE_EXTRA_DATA_DIR", "/work/shared/data"))
    files = {"nli": klue_dir / "klue-nli-v1.1" / "klue-nli-v1.1_dev.json",
             "ynat": extra_dir / "klue-partial" / "ynat-v1.1" / "ynat-v1_dev_sample_10.json",
             "re": extra_dir / "klue-derived" / "re-train-sample" / "klue-re-v1.1_train.sample3247.json"}
    sources = [(name, files[name], examples) for name in tasks]
    pairs: list[Pair] = []
    described: list[str] = []
    texts: list[str] = []
    for name, path, limit in sources:
        if not path.is_file():
            continue
        task = registry.get(name)
        records = read(task, path, purpose="score").records[:limit]
        prompts = task.make_prompts(None)
        assert prompts.choices is not None
        for record in records:
            context = completion_prompt(prompts, record, [], LOGLIK)
            pairs += [(context, " " + choice) for choice in prompts.choices(record)]
            texts.append(prompts.render(record))
        described.append(f"{name}: {len(records)} examples from {path.name}")
    if pairs:
        return pairs, "; ".join(described), texts
    return synthetic_requests(examples)


def synthetic_requests(examples: int) -> tuple[list[Pair], str, list[str]]:
    rng = random.Random(0)
    syllables = "가나다라마바사아자차카타파하서울한국경제정치사회문화세계과학스포츠오늘내일에서으로를은는이가"
    words = ["".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))) for _ in range(400)]
    texts, pairs = [], []
    for _ in range(examples):
        premise = " ".join(rng.choice(words) for _ in range(rng.randint(8, 20)))
        hypothesis = " ".join(rng.choice(words) for _ in range(rng.randint(4, 10)))
        texts += [premise, hypothesis]
        context = f"전제와 가설의 관계를 답하세요.\n\n전제: {premise}\n가설: {hypothesis}\n답:"
        pairs += [(context, " " + choice) for choice in ("함의", "모순", "중립")]
    return pairs, f"synthetic: {examples} NLI-shaped Korean examples, 3 choices", texts


def gguf_to_dir(gguf: Path, out: Path) -> Path:
    """A plain transformers directory (config, model.safetensors in float32, tokenizer) holding the weights
    and tokenizer transformers reads from `gguf` (dequantised to float32). A GGUF-loaded model refuses
    `save_pretrained`, so its state dict is copied into a model built from its config without the GGUF
    quantization entry; both sides then load this one directory: identical weights and tokenizer."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config  # the weights below are plain float32: nothing left to dequantise
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = plain.load_state_dict(loaded.state_dict(), strict=False)
    missing = [m for m in missing if not (m == "lm_head.weight" and config.tie_word_embeddings)]
    if missing or unexpected:
        raise SystemExit(f"{gguf}: the GGUF's tensors do not fill {type(plain).__name__}: missing {missing}, "
                         f"unexpected {unexpected}")
    plain.tie_weights()
    plain.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def lm_eval_scorer(model_dir: Path, batch_size: int, gguf: Path | None = None
                   ) -> tuple[Callable[[Sequence[Pair]], list[tuple[float, bool]]], Any]:
    """lm-eval's HFLM on `model_dir`, or (`gguf`) on the GGUF file through its own `gguf_file=` argument:
    the scorer and the HFLM (for its tokenization of the requests)."""
    import torch
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    source: dict[str, Any] = ({"pretrained": str(gguf.parent), "gguf_file": gguf.name} if gguf is not None
                              else {"pretrained": str(model_dir)})
    lm = HFLM(**source, device="cpu", dtype=torch.float32, batch_size=batch_size)

    def score(pairs: Sequence[Pair]) -> list[tuple[float, bool]]:
        instances = [Instance(request_type="loglikelihood", doc={}, arguments=pair, idx=i)
                     for i, pair in enumerate(pairs)]
        return [(float(lp), bool(greedy)) for lp, greedy in lm.loglikelihood(instances, disable_tqdm=True)]

    return score, lm


def klue_scorer(model_dir: Path, batch_size: int) -> Callable[[Sequence[Pair]], list[tuple[float, bool]]]:
    from klue.llm.backends.base import LoglikRequest
    from klue.llm.backends.hf import HfBackend

    backend = HfBackend(str(model_dir), cpu=True, batch_size=batch_size)

    def score(pairs: Sequence[Pair]) -> list[tuple[float, bool]]:
        results = backend.loglik([LoglikRequest(c, x) for c, x in pairs])
        return [(r.logprob, bool(r.is_greedy)) for r in results]

    return score


def token_figures(hflm: Any, model_dir: Path, pairs: Sequence[Pair]) -> dict[str, Any]:
    """Prompt lengths in tokens, and how many requests both sides cut into the same (context, continuation)
    token ids: lm-eval's own split (`HFLM._encode_pair`: context + continuation encoded whole, cut at the
    context's length) against klue's (each encoded apart, the context with special tokens, as `HfBackend`)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    same = 0
    lengths = []
    for context, continuation in pairs:
        theirs = hflm._encode_pair(context, continuation)
        ours = (tokenizer(context, add_special_tokens=True)["input_ids"],
                tokenizer(continuation, add_special_tokens=False)["input_ids"])
        same += list(theirs[0]) == list(ours[0]) and list(theirs[1]) == list(ours[1])
        lengths.append(len(ours[0]))
    return {"context_tokens_mean": statistics.fmean(lengths), "context_tokens_max": max(lengths),
            "same_token_split": f"{same}/{len(pairs)}"}


def timed(score: Callable[[Sequence[Pair]], list[tuple[float, bool]]], pairs: Sequence[Pair]
          ) -> tuple[float, float, list[Any]]:
    """(wall seconds, this process's CPU seconds, the answers)."""
    start, cpu = time.perf_counter(), time.process_time()
    out = score(pairs)
    return time.perf_counter() - start, time.process_time() - cpu, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=200, help="examples per task (YNAT: its 10-example sample)")
    parser.add_argument("--tasks", default="nli,ynat", help="comma-separated, of nli, ynat, re (RE: 30 choices, "
                                                            "from the 3,247-example train sample)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per side, alternating")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (both sides)")
    parser.add_argument("--batch-size", type=int, default=8, help="batch size of both sides")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--gguf", type=Path, help="a real model instead of the tiny one: this GGUF file, "
                                                   "dequantised into a plain float32 directory both sides load")
    parser.add_argument("--lm-eval-gguf", action="store_true", help="with --gguf: lm-eval loads the GGUF itself "
                                                                    "(HFLM's gguf_file=) instead of the directory")
    parser.add_argument("--gguf-dir", type=Path, help="with --gguf: make the plain directory here and keep it "
                                                       "(reused when it holds model.safetensors) instead of a "
                                                       "temporary one")
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--profile", type=Path, help="cProfile klue's side once into this file")
    args = parser.parse_args()

    import torch

    from klue.models.tiny import make_tiny_llama_dir

    torch.set_num_threads(args.threads)
    # read now: a long run should not lose its figures to a package changed under it meanwhile
    versions = {"lm_eval_version": _version("lm_eval"), "torch": torch.__version__,
                "transformers": _version("transformers")}
    pairs, data, texts = klue_requests(args.examples, args.tasks.split(","))
    if args.lm_eval_gguf and args.gguf is None:
        parser.error("--lm-eval-gguf needs --gguf")
    with tempfile.TemporaryDirectory() as tmp:
        if args.gguf is not None:
            model_dir = args.gguf_dir or Path(tmp) / "model"
            if not (model_dir / "model.safetensors").is_file():
                gguf_to_dir(args.gguf, model_dir)
            model = (f"{args.gguf.name}, dequantised by transformers to float32; "
                     + ("lm-eval loads the GGUF (gguf_file=), klue the directory made from it" if args.lm_eval_gguf
                        else "both sides load the plain directory made from it"))
        else:
            model_dir = make_tiny_llama_dir(Path(tmp) / "llama", texts, hidden_size=args.hidden, layers=args.layers)
            model = f"llama, {args.layers} layers, width {args.hidden}, random weights (seed 0)"
        lm_eval_score, hflm = lm_eval_scorer(model_dir, args.batch_size, args.gguf if args.lm_eval_gguf else None)
        sides = {"lm_eval": lm_eval_score, "klue": klue_scorer(model_dir, args.batch_size)}
        tokens = token_figures(hflm, model_dir, pairs)
        timings: dict[str, list[float]] = {name: [] for name in sides}
        cpu_times: dict[str, list[float]] = {name: [] for name in sides}
        outputs: dict[str, list[Any]] = {}
        for run in range(args.repeat):
            order = list(sides) if run % 2 == 0 else list(reversed(sides))
            for name in order:
                seconds, cpu, outputs[name] = timed(sides[name], pairs)
                timings[name].append(seconds)
                cpu_times[name].append(cpu)
                print(f"run {run + 1}: {name:8s} {len(pairs) / seconds:8.1f} requests/s ({seconds:.2f} s wall, "
                      f"{cpu:.2f} s CPU)", flush=True)
        if args.profile is not None:
            import cProfile

            cProfile.runctx("score(pairs)", {}, {"score": sides["klue"], "pairs": pairs}, str(args.profile))
    theirs, ours = outputs["lm_eval"], outputs["klue"]
    diffs = [abs(a[0] - b[0]) for a, b in zip(theirs, ours)]
    rates = {name: [len(pairs) / s for s in seconds] for name, seconds in timings.items()}
    figures = {
        "data": data, "requests": len(pairs), "contexts": len({c for c, _ in pairs}),
        "threads": args.threads, "batch_size": args.batch_size, "repeat": args.repeat,
        "model": model, **tokens,
        "max_abs_loglik_diff": max(diffs), "mean_abs_loglik_diff": statistics.fmean(diffs),
        "is_greedy_agree": sum(a[1] == b[1] for a, b in zip(theirs, ours)) / len(pairs),
        "is_greedy_true": {"lm_eval": sum(a[1] for a in theirs), "klue": sum(b[1] for b in ours)},
        "requests_per_s_median": {name: statistics.median(r) for name, r in rates.items()},
        "requests_per_s_best": {name: max(r) for name, r in rates.items()},
        "speedup_median": statistics.median(rates["klue"]) / statistics.median(rates["lm_eval"]),
        "cpu_s_median": {name: statistics.median(c) for name, c in cpu_times.items()},
        "speedup_cpu_median": statistics.median(cpu_times["lm_eval"]) / statistics.median(cpu_times["klue"]),
        **versions,
    }
    print(json.dumps(figures, indent=2, ensure_ascii=False))
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _version(package: str) -> str:
    from importlib.metadata import version

    return version(package)


if __name__ == "__main__":
    main()
