"""Throughput of fine-tuning and inference at the paper's shapes, and of the in-process LLM backend: one command
for a GPU machine (docs/benchmarks: "GPU throughput").

    .venv/bin/python benchmarks/gpu_throughput.py --out gpu.json            # base + large, bf16, on the GPU

For each encoder size (base: 12 x 768, large: 24 x 1024; RoBERTa-style configs with KLUE's 32,000-token
vocabulary, random weights built from the config: no hub) and each of the NLI, NER and MRC shapes (the paper
recipe's max length and batch size, read from klue's `paper` recipe; every sequence at full length, the worst
case of padding), it times training steps (forward, backward, AdamW step, under bf16 autocast) and inference
steps, and reports examples/s, tokens/s, the model FLOPs utilisation against the device's peak (dense bf16
tensor throughput of known devices, or --peak-tflops), and peak memory. The heads are transformers' own
sequence/token classification and span heads: the same linear heads on [CLS], on every token and on every
token's start/end as klue's adapters, so the FLOPs are those of `klue train`.

Then the LLM backend (`hf:DIR`, klue.llm.backends.hf) on a random-weight Llama built from a config: NLI-style
log-likelihood requests (one context, three choices) with the context's cache reused across choices, as
`klue llm --mode loglik` sends them: requests/s and context tokens/s.

Model FLOPs follow the usual count (PaLM, appendix B): per token, 6N + 12 L d T for a training step and
2N + 4 L d T for inference, N the non-embedding parameters, L layers, d width, T sequence length. `--size tiny`
runs the same code in seconds on a CPU (the test suite does so); its figures mean nothing.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

# Dense bf16 tensor throughput in TFLOPS, from the vendors' data sheets (without sparsity).
PEAK_BF16_TFLOPS = {"H200": 989.4, "H100 SXM": 989.4, "H100 PCIe": 756.0, "H100 NVL": 835.0, "A100": 312.0,
                    "L40S": 362.1, "L4": 121.0, "A10G": 70.0, "A10": 125.0}
ENCODERS = {  # hidden, layers, heads, intermediate
    "base": (768, 12, 12, 3072),
    "large": (1024, 24, 16, 4096),
    "tiny": (64, 2, 2, 128),
}
LLMS = {  # hidden, layers, heads, kv heads, intermediate, context tokens
    "base": (2048, 16, 32, 8, 8192, 512),  # about 1B parameters (Llama-3.2-1B's shape)
    "large": (3072, 28, 24, 8, 8192, 512),  # about 3B parameters (Llama-3.2-3B's shape)
    "tiny": (64, 2, 2, 2, 128, 48),
}
KLUE_VOCAB = 32000
TASK_SHAPES = ("nli", "ner", "mrc")
LABELS = {"nli": 3, "ner": 13}


@dataclass(frozen=True)
class Measurement:
    kind: str  # "train", "infer" or "llm-loglik"
    size: str
    task: str
    batch_size: int
    seq_len: int
    steps: int
    seconds: float
    examples_per_s: float
    tokens_per_s: float
    tflops: float | None
    mfu: float | None
    peak_memory_gb: float


def device_peak_tflops(device: torch.device, given: float | None) -> float | None:
    if given is not None:
        return given
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    matches = [peak for key, peak in PEAK_BF16_TFLOPS.items() if key.lower() in name.lower()]
    return max(matches) if matches else None


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def reset_peak(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def peak_memory_gb(device: torch.device) -> float:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**30
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # the process's peak RSS (KiB on Linux)


def paper_shape(task: str, size: str) -> tuple[int, int]:
    """(max_len, batch_size) of klue's `paper` recipe for `task` at `size` (tiny uses base's)."""
    from types import SimpleNamespace

    from klue.training.recipes import resolve

    hidden = ENCODERS["large" if size == "large" else "base"][0]
    hp = resolve("paper", task, SimpleNamespace(hidden_size=hidden), {}).hyperparameters
    return hp.max_len, hp.batch_size


def encoder(task: str, size: str, seq_len: int, device: torch.device) -> torch.nn.Module:
    from transformers import (
        AutoModelForQuestionAnswering,
        AutoModelForSequenceClassification,
        AutoModelForTokenClassification,
        RobertaConfig,
    )

    hidden, layers, heads, intermediate = ENCODERS[size]
    config = RobertaConfig(vocab_size=KLUE_VOCAB, hidden_size=hidden, num_hidden_layers=layers,
                           num_attention_heads=heads, intermediate_size=intermediate,
                           max_position_embeddings=seq_len + 2, attn_implementation="sdpa",
                           num_labels=LABELS.get(task, 2))
    build = {"nli": AutoModelForSequenceClassification, "ner": AutoModelForTokenClassification,
             "mrc": AutoModelForQuestionAnswering}[task]
    torch.manual_seed(0)
    return build.from_config(config).to(device)


def batch_for(task: str, batch_size: int, seq_len: int, device: torch.device) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(5, KLUE_VOCAB, (batch_size, seq_len), generator=generator)
    batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    if task == "nli":
        batch["labels"] = torch.randint(0, LABELS["nli"], (batch_size,), generator=generator)
    elif task == "ner":
        batch["labels"] = torch.randint(0, LABELS["ner"], (batch_size, seq_len), generator=generator)
    else:
        batch["start_positions"] = torch.randint(0, seq_len, (batch_size,), generator=generator)
        batch["end_positions"] = torch.randint(0, seq_len, (batch_size,), generator=generator)
    return {k: v.to(device) for k, v in batch.items()}


def non_embedding_parameters(model: torch.nn.Module) -> int:
    return sum(p.numel() for name, p in model.named_parameters() if "embed" not in name)


def timed(step: Callable[[], None], warmup: int, steps: int, device: torch.device) -> float:
    for _ in range(warmup):
        step()
    synchronize(device)
    start = time.perf_counter()
    for _ in range(steps):
        step()
    synchronize(device)
    return time.perf_counter() - start


def measure_encoder(task: str, size: str, kind: str, args: argparse.Namespace, device: torch.device,
                    peak: float | None) -> Measurement:
    seq_len, batch_size = paper_shape(task, size)
    if size == "tiny":
        seq_len, batch_size = min(seq_len, 64), min(batch_size, 4)
    reset_peak(device)
    model = encoder(task, size, seq_len, device)
    batch = batch_for(task, batch_size, seq_len, device)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.dtype == "bf16")
    hidden, layers, _, _ = ENCODERS[size]
    n = non_embedding_parameters(model)
    if kind == "train":
        model.train()
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=device.type == "cuda")

        def step() -> None:
            with autocast:
                loss = model(**batch).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

        flops_per_token = 6 * n + 12 * layers * hidden * seq_len
    else:
        model.eval()
        inputs = {k: batch[k] for k in ("input_ids", "attention_mask")}

        def step() -> None:
            with torch.inference_mode(), autocast:
                model(**inputs)

        flops_per_token = 2 * n + 4 * layers * hidden * seq_len
    seconds = timed(step, args.warmup, args.steps, device)
    tokens = batch_size * seq_len * args.steps
    tflops = flops_per_token * tokens / seconds / 1e12
    measurement = Measurement(kind, size, task, batch_size, seq_len, args.steps, seconds,
                              batch_size * args.steps / seconds, tokens / seconds, tflops,
                              tflops / peak if peak else None, peak_memory_gb(device))
    return measurement


def tiny_llama_dir(out: Path, size: str) -> Path:
    """A random-weight Llama of `size`'s shape with a byte-level tokenizer trained on a few Korean lines."""
    from transformers import AutoConfig, AutoModelForCausalLM

    from klue.models.tiny import make_tiny_llama_dir

    texts = ["한국어 문장의 관계를 판단하세요. 전제와 가설이 주어집니다.", "정답은 함의, 중립, 모순 가운데 하나입니다."] * 20
    make_tiny_llama_dir(out, texts, vocab_size=400)
    hidden, layers, heads, kv_heads, intermediate, _ = LLMS[size]
    config = AutoConfig.from_pretrained(out)
    config.update({"hidden_size": hidden, "num_hidden_layers": layers, "num_attention_heads": heads,
                   "num_key_value_heads": kv_heads, "intermediate_size": intermediate})
    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(config).save_pretrained(str(out))
    return out


def measure_llm(size: str, args: argparse.Namespace, device: torch.device, workdir: Path) -> Measurement:
    from klue.llm.backends.base import LoglikRequest
    from klue.llm.backends.hf import HfBackend

    hidden, layers, _, _, _, context_tokens = LLMS[size]
    model_dir = tiny_llama_dir(workdir / f"llama-{size}", size)
    reset_peak(device)
    backend = HfBackend(str(model_dir), cpu=device.type == "cpu", batch_size=args.llm_batch_size)
    if args.dtype == "bf16":
        backend.lm.to(torch.bfloat16)  # the backend loads in the checkpoint's dtype (float32 here)
    context = ("전제: 한국어 문장 " * context_tokens)[: context_tokens * 2]
    requests = [LoglikRequest(f"{context} {i}\n가설: 문장 {i}\n정답:", f" {choice}")
                for i in range(args.llm_requests) for choice in ("함의", "중립", "모순")]
    backend.loglik(requests[: 3 * max(1, args.warmup)])
    synchronize(device)
    start = time.perf_counter()
    backend.loglik(requests)
    synchronize(device)
    seconds = time.perf_counter() - start
    n_tokens = sum(len(backend.tokenizer(r.context)["input_ids"]) for r in requests[::3])
    n = non_embedding_parameters(backend.lm)
    tflops = (2 * n + 4 * layers * hidden * n_tokens / len(requests[::3])) * n_tokens / seconds / 1e12
    peak = device_peak_tflops(device, args.peak_tflops)
    measurement = Measurement("llm-loglik", size, "nli", args.llm_batch_size, n_tokens // len(requests[::3]),
                              len(requests), seconds, len(requests) / seconds, n_tokens / seconds, tflops,
                              tflops / peak if peak else None, peak_memory_gb(device))
    backend.close()
    return measurement


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="base,large", help="encoder/LLM sizes: base, large, tiny")
    parser.add_argument("--tasks", default=",".join(TASK_SHAPES), help="task shapes (nli, ner, mrc)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--dtype", choices=("bf16", "fp32"), default="bf16")
    parser.add_argument("--steps", type=int, default=20, help="timed steps per measurement")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps before timing")
    parser.add_argument("--peak-tflops", type=float, default=None, help="the device's peak, if not in the table")
    parser.add_argument("--llm-requests", type=int, default=64, help="NLI examples (x3 choices) for the LLM")
    parser.add_argument("--llm-batch-size", type=int, default=16)
    parser.add_argument("--no-llm", action="store_true", help="skip the LLM backend")
    parser.add_argument("--out", type=Path, default=None, help="write every measurement as JSON here")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    peak = device_peak_tflops(device, args.peak_tflops)
    sizes = [s for s in args.sizes.split(",") if s]
    tasks = [t for t in args.tasks.split(",") if t]
    unknown = [s for s in sizes if s not in ENCODERS] + [t for t in tasks if t not in TASK_SHAPES]
    if unknown:
        parser.error(f"unknown size or task: {', '.join(unknown)}")
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu"
    print(f"device {name}, dtype {args.dtype}, peak {peak or 'unknown'} TFLOPS, torch {torch.__version__}",
          flush=True)
    measurements: list[Measurement] = []
    for size in sizes:
        for task in tasks:
            for kind in ("train", "infer"):
                m = measure_encoder(task, size, kind, args, device, peak)
                measurements.append(m)
                print(_line(m), flush=True)
        if not args.no_llm:
            with tempfile.TemporaryDirectory() as workdir:
                m = measure_llm(size, args, device, Path(workdir))
            measurements.append(m)
            print(_line(m), flush=True)
    if args.out is not None:
        report: dict[str, Any] = {"device": name, "dtype": args.dtype, "peak_tflops": peak,
                                  "torch": torch.__version__, "measurements": [asdict(m) for m in measurements]}
        args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


def _line(m: Measurement) -> str:
    mfu = f"{100 * m.mfu:5.1f}%" if m.mfu is not None else "  n/a"
    return (f"{m.kind:10s} {m.size:5s} {m.task:3s} batch {m.batch_size:3d} x {m.seq_len:4d}: "
            f"{m.examples_per_s:9.1f} ex/s {m.tokens_per_s:11.0f} tok/s {m.tflops or 0:7.1f} TFLOPS MFU {mfu} "
            f"peak {m.peak_memory_gb:6.2f} GB")


if __name__ == "__main__":
    sys.exit(main())
