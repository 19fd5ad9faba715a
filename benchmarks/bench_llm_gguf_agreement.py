"""Log-likelihoods of one GGUF through two engines on IDENTICAL token ids: transformers (klue's `hf:FILE.gguf`
backend: the GGUF dequantised to float32) against llama.cpp (llama-cpp-python in process, `logits_all=True`,
its quantised kernels and its default f16 key/value cache).

The requests are the ones `klue llm` sends in log-likelihood mode (zero-shot completion prompts, `" " +
choice` per choice; `bench_llm_vs_lm_eval.klue_requests`): the first `--examples` NLI dev pairs and YNAT dev
sample examples. Each (context, continuation) is tokenized once by klue's backend (the context with special
tokens, the continuation without), and the same ids go to both engines; each engine's per-token log-prob
of every continuation token is read from a full forward (log-softmax in float64).

Figures (nats): per token |Δ| median, mean and max; per continuation |Δ| max (the sum over its tokens); the
share of examples whose chosen answer (the arg-max choice) is the same; and klue's own `loglik()` against
the direct transformers forward (a check that the figures are klue's values).

    PYTHONPATH=src python benchmarks/bench_llm_gguf_agreement.py --gguf FILE.gguf [--examples 10] [--threads 2]

Why they differ at all: the GGUF holds Q4_1 blocks. transformers dequantises them once into float32 weights
and runs float32 matmuls; llama.cpp keeps the blocks and multiplies with its quantised kernels (activations
quantised to 8 bits per block for the dot products) and stores keys and values in f16. Both read the same
weights, but the arithmetic rounds differently at every layer, so values agree to a few hundredths of a nat
typically, with larger gaps on low-probability tokens.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _logsoftmax(rows: Any) -> Any:
    import numpy as np

    rows = np.asarray(rows, dtype=np.float64)
    top = rows.max(axis=-1, keepdims=True)
    return rows - top - np.log(np.exp(rows - top).sum(axis=-1, keepdims=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gguf", type=Path, required=True, help="the GGUF file (e.g. SmolLM2-135M-Instruct.Q4_1.gguf)")
    parser.add_argument("--examples", type=int, default=10, help="examples per task (NLI, YNAT)")
    parser.add_argument("--threads", type=int, default=2, help="llama.cpp threads")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args()

    import numpy as np
    import torch
    from bench_llm_vs_lm_eval import klue_requests
    from llama_cpp import Llama

    from klue.llm.backends.base import LoglikRequest
    from klue.llm.backends.hf import HfBackend

    started, cpu = time.perf_counter(), time.process_time()
    pairs, described, _ = klue_requests(args.examples, ("nli", "ynat"))
    hf = HfBackend(str(args.gguf), cpu=True)
    llama = Llama(model_path=str(args.gguf), n_ctx=2048, logits_all=True, n_threads=args.threads, verbose=False)
    klue_values = [r.logprob for r in hf.loglik([LoglikRequest(c, x) for c, x in pairs])]

    per_token: list[float] = []
    per_cont: list[float] = []
    hf_sums: list[float] = []
    cpp_sums: list[float] = []
    contexts = list(dict.fromkeys(c for c, _ in pairs))
    for n, context in enumerate(contexts):
        # One pass over the context per engine, its key/value cache reused for every choice (as klue does).
        head = list(hf.tokenizer(context, add_special_tokens=True)["input_ids"])
        with torch.inference_mode():
            out = hf.lm(torch.tensor([head]), use_cache=True, logits_to_keep=1)
        hf_last, hf_cache = out.logits[0, -1:].float().numpy(), out.past_key_values
        llama.reset()
        llama.eval(head)
        for continuation in [x for c, x in pairs if c == context]:
            tail = list(hf.tokenizer(continuation, add_special_tokens=False)["input_ids"])
            with torch.inference_mode():
                rest = hf.lm(torch.tensor([tail]), past_key_values=copy.deepcopy(hf_cache), use_cache=True)
            rows = np.concatenate([hf_last, rest.logits[0, :-1].float().numpy()])
            hf_lp = _logsoftmax(rows)[np.arange(len(tail)), tail]
            llama.n_tokens = len(head)  # back to the context: eval() drops the cache after it
            llama.eval(tail)
            cpp_rows = np.asarray(llama.scores[len(head) - 1:len(head) + len(tail) - 1])
            cpp_lp = _logsoftmax(cpp_rows)[np.arange(len(tail)), tail]
            per_token += [abs(float(a) - float(b)) for a, b in zip(hf_lp, cpp_lp)]
            hf_sums.append(float(hf_lp.sum()))
            cpp_sums.append(float(cpp_lp.sum()))
            per_cont.append(abs(hf_sums[-1] - cpp_sums[-1]))
        print(f"context {n + 1}/{len(contexts)} ({len(head)} tokens) done", file=sys.stderr, flush=True)

    # examples: consecutive pairs with the same context
    groups: list[list[int]] = []
    for i, (context, _) in enumerate(pairs):
        if groups and pairs[groups[-1][0]][0] == context:
            groups[-1].append(i)
        else:
            groups.append([i])
    same = sum(max(g, key=lambda i: hf_sums[i]) == max(g, key=lambda i: cpp_sums[i]) for g in groups)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    figures = {
        "model": args.gguf.name, "data": described, "examples": len(groups), "continuations": len(pairs),
        "tokens": len(per_token), "kv_cache": "f16 (llama-cpp-python default)",
        "per_token_abs_diff": {"median": statistics.median(per_token), "mean": statistics.fmean(per_token),
                               "max": max(per_token)},
        "per_continuation_abs_diff_max": max(per_cont),
        "per_continuation_abs_diff_median": statistics.median(per_cont),
        "chosen_answer_agrees": f"{same}/{len(groups)}",
        "klue_loglik_vs_direct_forward_max_abs": max(abs(a - b) for a, b in zip(klue_values, hf_sums)),
        "wall_s": round(time.perf_counter() - started, 1), "cpu_s": round(time.process_time() - cpu, 1),
        "cpu_s_rusage": round(usage.ru_utime + usage.ru_stime, 1), "load_avg_1min": os.getloadavg()[0],
    }
    text = json.dumps(figures, indent=2, ensure_ascii=False)
    print(text)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
