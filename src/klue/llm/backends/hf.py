"""The in-process backend: a transformers causal LM (`hf:NAME_OR_DIR`).

- Log-likelihood: the context is run once and its key/value cache reused for every continuation of that
  context (the choices of one example: 30 relation descriptions cost one context pass, not 30), the
  continuations batched, right-padded. The context and the continuation are tokenized apart (context with
  the tokenizer's special tokens, continuation without), so the continuation's tokens are exactly its own:
  nothing straddles the boundary by construction.
- Generation: greedy, batched, left-padded; a stop string cuts the text after decoding.
- Chat form: the tokenizer's chat template (a model without one has `chat` False in its capabilities).
Hand-written on top of transformers because the reuse of one context cache across choices and the exact
continuation boundary are what log-likelihood scoring needs, and `generate` alone offers neither.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from klue.llm.backends.base import (
    BackendError,
    Capabilities,
    GenerateRequest,
    GenerateResult,
    LoglikRequest,
    LoglikResult,
    Usage,
)


def _fingerprint(name: str, model: Any) -> str:
    """The HF commit of a hub model, else a hash of the local weight files (what the weights are)."""
    commit = getattr(model.config, "_commit_hash", None)
    if commit:
        return f"hf-commit:{commit}"
    path = Path(name)
    weights = sorted(p for p in path.glob("*") if p.suffix in (".safetensors", ".bin")) if path.is_dir() else []
    if not weights:
        return f"hf-name:{name}"
    digest = hashlib.sha256()
    for weight in weights:
        with weight.open("rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    return f"sha256:{digest.hexdigest()}"


def _cache_arg() -> str:
    """transformers 5.x names the key/value cache `cache` (older releases: `past_key_values`)."""
    import inspect

    from transformers import LlamaForCausalLM

    return "cache" if "cache" in inspect.signature(LlamaForCausalLM.forward).parameters else "past_key_values"


def _cache_of(output: Any) -> Any:
    cache = output.get("cache") if hasattr(output, "get") else None
    return cache if cache is not None else output.past_key_values


def cut_at_stop(text: str, stops: Sequence[str]) -> str:
    positions = [text.find(stop) for stop in stops if stop and stop in text]
    return text[:min(positions)] if positions else text


class HfBackend:
    name = "hf"

    def __init__(self, model_name: str, *, cpu: bool = False, batch_size: int = 8) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        try:
            self.tokenizer = AutoTokenizer.from_pretrained(model_name)
            self.lm = AutoModelForCausalLM.from_pretrained(model_name)
        except (OSError, ValueError) as error:
            raise BackendError(f"hf:{model_name}: cannot load a causal LM and its tokenizer ({error})") from None
        self.device = torch.device("cuda" if torch.cuda.is_available() and not cpu else "cpu")
        self.lm.to(self.device).eval()
        self.model = model_name
        self.batch_size = max(1, batch_size)
        self.cache_arg = _cache_arg()
        self.max_positions = int(getattr(self.lm.config, "max_position_embeddings", 0) or 1 << 30)
        self.fingerprint = _fingerprint(model_name, self.lm)
        self.usage = Usage()
        has_template = bool(getattr(self.tokenizer, "chat_template", None))
        self.capabilities = Capabilities(loglik=True, completion=True, chat=has_template,
                                         notes=("in process; constrained decoding not offered",))
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token or self.tokenizer.unk_token

    # -- prompts -------------------------------------------------------------------------------------
    def chat_prompt(self, messages: Sequence[tuple[str, str]]) -> str:
        """The chat template applied to `messages`, ready for the assistant's answer."""
        if not self.capabilities.chat:
            raise BackendError(f"hf:{self.model} has no chat template: use the completion form (--form completion)")
        return str(self.tokenizer.apply_chat_template([{"role": r, "content": c} for r, c in messages],
                                                      tokenize=False, add_generation_prompt=True))

    def _context_ids(self, text: str, room: int = 0) -> list[int]:
        """The prompt's tokens; one longer than the model takes (leaving `room` for what follows) keeps its
        last tokens (the example and its cue) and is counted in usage as `truncated_prompts`."""
        ids = list(self.tokenizer(text, add_special_tokens=True)["input_ids"])
        if not ids:
            raise BackendError("an empty context has no next-token distribution")
        limit = self.max_positions - room
        if limit < 1:
            raise BackendError(f"hf:{self.model} takes {self.max_positions} positions, fewer than the {room} "
                               "an answer needs")
        if len(ids) > limit:
            self.usage.extra["truncated_prompts"] = self.usage.extra.get("truncated_prompts", 0) + 1
            ids = ids[len(ids) - limit:]
        return ids

    def _continuation_ids(self, text: str) -> list[int]:
        ids = list(self.tokenizer(text, add_special_tokens=False)["input_ids"])
        if not ids:
            raise BackendError(f"the continuation {text!r} has no tokens")
        return ids

    # -- log-likelihood ------------------------------------------------------------------------------
    def loglik(self, requests: Sequence[LoglikRequest]) -> list[LoglikResult]:
        by_context: dict[str, list[int]] = {}
        for index, request in enumerate(requests):
            by_context.setdefault(request.context, []).append(index)
        results: list[LoglikResult | None] = [None] * len(requests)
        for context, indices in by_context.items():
            continuations = [requests[i].continuation for i in indices]
            for i, result in zip(indices, self._score_context(context, continuations)):
                results[i] = result
        return [r for r in results if r is not None]

    def _score_context(self, context: str, continuations: Sequence[str]) -> list[LoglikResult]:
        import torch

        conts = [self._continuation_ids(c) for c in continuations]
        context_ids = self._context_ids(context, room=max(len(c) for c in conts))
        self.usage.requests += len(conts)
        self.usage.prompt_tokens += len(context_ids) + sum(len(c) for c in conts)
        with torch.inference_mode():
            out = self.lm(torch.tensor([context_ids], device=self.device), use_cache=True)
            first = torch.log_softmax(out.logits[0, -1].float(), dim=-1)
            results: list[LoglikResult] = []
            for start in range(0, len(conts), self.batch_size):
                chunk = conts[start:start + self.batch_size]
                results += self._score_chunk(_cache_of(out), len(context_ids), first, chunk)
        return results

    def _score_chunk(self, past: Any, n_context: int, first: Any, chunk: Sequence[list[int]]) -> list[LoglikResult]:
        import copy

        import torch

        width = max(len(c) for c in chunk)
        pad = self.tokenizer.pad_token_id
        ids = torch.tensor([c + [pad] * (width - len(c)) for c in chunk], device=self.device)
        mask = torch.tensor([[1] * (n_context + len(c)) + [0] * (width - len(c)) for c in chunk], device=self.device)
        cache = copy.deepcopy(past)  # the context's cache serves every chunk: each chunk works on a copy
        cache.batch_repeat_interleave(len(chunk))
        logits = self.lm(ids, attention_mask=mask, use_cache=True, **{self.cache_arg: cache}).logits.float()
        logprobs = torch.log_softmax(logits, dim=-1)
        results = []
        for row, cont in enumerate(chunk):
            # token 0 is predicted by the context's last position, token k by the continuation's k-1
            predicted = [first] + [logprobs[row, k - 1] for k in range(1, len(cont))]
            total = sum(float(p[t]) for p, t in zip(predicted, cont))
            greedy = all(int(p.argmax()) == t for p, t in zip(predicted, cont))
            results.append(LoglikResult(total, len(cont), greedy))
        return results

    # -- generation ----------------------------------------------------------------------------------
    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        results: list[GenerateResult] = []
        for start in range(0, len(requests), self.batch_size):
            results += self._generate_chunk(requests[start:start + self.batch_size])
        return results

    def _prompt_of(self, request: GenerateRequest) -> str:
        if request.messages is not None:
            return self.chat_prompt(request.messages)
        assert request.prompt is not None
        return request.prompt

    def _generate_chunk(self, chunk: Sequence[GenerateRequest]) -> list[GenerateResult]:
        import torch

        prompts = [self._prompt_of(r) for r in chunk]
        encoded = [self._context_ids(p, room=r.max_new_tokens) for p, r in zip(prompts, chunk)]
        width = max(len(e) for e in encoded)
        pad = self.tokenizer.pad_token_id
        ids = torch.tensor([[pad] * (width - len(e)) + e for e in encoded], device=self.device)  # left padding
        mask = torch.tensor([[0] * (width - len(e)) + [1] * len(e) for e in encoded], device=self.device)
        budget = max(r.max_new_tokens for r in chunk)
        with torch.inference_mode():
            out = self.lm.generate(input_ids=ids, attention_mask=mask, max_new_tokens=budget, do_sample=False,
                                   pad_token_id=pad, eos_token_id=self.tokenizer.eos_token_id)
        results = []
        for row, request in enumerate(chunk):
            new = out[row, width:width + request.max_new_tokens].tolist()
            eos = self.tokenizer.eos_token_id
            if eos is not None and eos in new:
                new = new[:new.index(eos)]
            text = cut_at_stop(self.tokenizer.decode(new, skip_special_tokens=True), request.stop)
            self.usage.requests += 1
            self.usage.prompt_tokens += len(encoded[row])
            self.usage.completion_tokens += len(new)
            results.append(GenerateResult(text, len(encoded[row]), len(new), False,
                                          "length" if len(new) >= request.max_new_tokens else "stop"))
        return results

    def close(self) -> None:
        pass
