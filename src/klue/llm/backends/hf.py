"""The in-process backend: a transformers causal LM (`hf:NAME_OR_DIR`, or `hf:FILE.gguf`: a GGUF file loaded
through transformers' GGUF support, dequantised to float32, its tokenizer from the same file; converted once
and read from klue's cache afterwards: `gguf_cache`).

- Log-likelihood: the context is run once and its key/value cache reused for every continuation of that
  context (the choices of one example: 30 relation descriptions cost one context pass, not 30); contexts
  are batched (left-padded, longest together), the continuations batched too, right-padded. The context and the continuation are tokenized apart (context with
  the tokenizer's special tokens, continuation without), so the continuation's tokens are exactly its own:
  nothing straddles the boundary by construction.
- Generation: greedy, batched, left-padded; a row ends at a stop string (transformers' `stop_strings`),
  and the text is cut there after decoding. A request's
  constraint (choices, JSON schema or regex) is applied by llguidance as a token mask per sequence
  (`klue.llm.constrained`); without llguidance, or for a constraint that does not compile, the answer is
  generated unconstrained, counted in `usage` and said in the capabilities' notes (never silently).
- Chat form: the tokenizer's chat template (a model without one has `chat` False in its capabilities).
Hand-written on top of transformers because the reuse of one context cache across choices and the exact
continuation boundary are what log-likelihood scoring needs, and `generate` alone offers neither.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

from klue.io.endpoints import ServerOptions
from klue.llm.backends import base
from klue.llm.constrained import LIBRARY, Constrainer, GrammarMasks, RowState, library_version

# Continuation passes take up to this many times `batch_size` rows (each a copy of its context's cache rows):
# fewer, fuller forwards; lower the batch size for long prompts on a large model.
REST_ROWS_PER_BATCH = 4
# Token scoring keeps [rows x positions x vocabulary] log-probabilities (and, for the moments, about three more
# tensors of that size): at most this many positions per forward, about 200 MB each in float32 for a 49k
# vocabulary, so long texts go a few rows at a time.
TOKEN_SCORE_POSITIONS = 1024


def _fingerprint(name: str, model: Any) -> str:
    """The HF commit of a hub model, else a hash of the local weight files (what the weights are); a GGUF
    file's is its sha256, taken where it is loaded (`_load`)."""
    commit = getattr(model.config, "_commit_hash", None)
    if commit:
        return f"hf-commit:{commit}"
    path = Path(name).expanduser()
    weights = sorted(p for p in path.glob("*") if p.suffix in (".safetensors", ".bin")) if path.is_dir() else []
    if not weights:
        return f"hf-name:{name}"
    return f"sha256:{_sha256(weights)}"


def _sha256(files: Sequence[Path]) -> str:
    digest = hashlib.sha256()
    for weight in files:
        with weight.open("rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    return digest.hexdigest()


def _cache_arg() -> str:
    """transformers 5.x names the key/value cache `cache` (older releases: `past_key_values`)."""
    import inspect

    from transformers import LlamaForCausalLM

    return "cache" if "cache" in inspect.signature(LlamaForCausalLM.forward).parameters else "past_key_values"


def _last_logits_only(lm: Any) -> dict[str, int]:
    """The forward argument that computes logits at the last position only (`logits_to_keep`; older
    releases `num_logits_to_keep`; none for a model without it): a context pass needs no other, and the
    full [positions x vocabulary] logits of a long prompt cost more than the rest of a small model."""
    import inspect

    names = inspect.signature(lm.forward).parameters
    for name in ("logits_to_keep", "num_logits_to_keep"):
        if name in names:
            return {name: 1}
    return {}


def _cache_of(output: Any) -> Any:
    cache = output.get("cache") if hasattr(output, "get") else None
    return cache if cache is not None else output.past_key_values


def _cache_rows(cache: Any, rows: Any) -> Any:
    """A cache holding `rows` of `cache` (repeats allowed), leaving `cache` as it was: its layer objects are
    copied shallowly before the beam-search reorder replaces their tensors."""
    import copy

    chosen = copy.copy(cache)
    chosen.layers = [copy.copy(layer) for layer in cache.layers]
    chosen.reorder_cache(rows)
    return chosen


def cut_at_stop(text: str, stops: Sequence[str]) -> str:
    positions = [text.find(stop) for stop in stops if stop and stop in text]
    return text[:min(positions)] if positions else text


def _constrainer(tokenizer: Any, lm: Any, wanted: bool) -> tuple[Constrainer | None, str]:
    """The constraint compiler for this tokenizer, or None and why not (not wanted, llguidance absent, a
    tokenizer it cannot read): the run then parses unconstrained and its capabilities say so."""
    if not wanted:
        return None, "constrained decoding switched off"
    if library_version() is None:
        return None, f"{LIBRARY} is not installed (pip install 'klue[llm]')"
    width = int(lm.get_output_embeddings().weight.shape[0])
    try:
        return Constrainer(tokenizer, width), ""
    except (ValueError, TypeError, RuntimeError) as error:  # e.g. a slow (Python) tokenizer
        return None, f"{LIBRARY} cannot use this tokenizer ({error})"


GGUF_SUFFIX = ".gguf"


def _looks_local(target: str) -> bool:
    """A path, not a hub repo id ("org/name"): absolute, relative with ./ or ../, from ~, or a .gguf file."""
    return target.startswith(("/", "./", "../", "~", ".\\")) or target.lower().endswith(GGUF_SUFFIX)


def check_target(target: str) -> None:
    """A hub name, a directory or a .gguf file; a path that is not there says so (not a hub id error). Whether
    it holds a causal LM is known when it is opened."""
    if not _looks_local(target):
        return
    path = Path(target).expanduser()
    if target.lower().endswith(GGUF_SUFFIX):
        if not path.is_file():
            raise base.BackendError(f"hf:{target}: no such GGUF file")
    elif not path.is_dir():
        raise base.BackendError(f"hf:{target}: no such directory" + (" (it is a file; hf: takes a model "
                                "directory or a .gguf file)" if path.exists() else ""))


def _load(model_name: str) -> tuple[Any, Any, str]:
    """(tokenizer, model, fingerprint) of a hub name or directory, or of a GGUF file through transformers' GGUF
    support (the weights dequantised to float32, the tokenizer from the same file), converted once and read
    from klue's cache afterwards (`gguf_cache`, keyed by the file's sha256: hashed once, for both)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from klue.llm.backends import gguf_cache
    from klue.models.loading import FILES_WITHOUT_CODE, WEIGHTS_WITHOUT_CODE

    if model_name.lower().endswith(GGUF_SUFFIX):
        path = Path(model_name).expanduser()
        digest = _sha256([path])
        tokenizer, lm, _ = gguf_cache.load(path, digest, FILES_WITHOUT_CODE, WEIGHTS_WITHOUT_CODE)
        return tokenizer, lm, f"sha256:{digest}"
    tokenizer = AutoTokenizer.from_pretrained(model_name, **FILES_WITHOUT_CODE)
    lm = cast(Any, AutoModelForCausalLM).from_pretrained(model_name, **WEIGHTS_WITHOUT_CODE)
    return tokenizer, lm, _fingerprint(model_name, lm)


def open_backend(target: str, options: ServerOptions) -> HfBackend:
    return HfBackend(target, cpu=options.cpu, batch_size=options.batch_size)


class HfBackend(base.BackendBase):
    name = "hf"
    renders_chat = True  # the tokenizer's chat template gives the prompt as text

    @property
    def gives_distributions(self) -> bool:
        """The whole next-token distribution is in hand (Min-K%++)."""
        return True

    def __init__(self, model_name: str, *, cpu: bool = False, batch_size: int = 8, constrained: bool = True) -> None:
        import torch

        from klue.models.loading import check_loads_without_code, refusing_model_code

        check_target(model_name)
        check_loads_without_code(model_name)  # no pickle, no code the model ships: refused before any load
        try:
            with refusing_model_code(f"hf:{model_name}"):
                self.tokenizer, self.lm, self.fingerprint = _load(model_name)
        except (OSError, ValueError) as error:
            raise base.BackendError(f"hf:{model_name}: cannot load a causal LM and its tokenizer "
                                    f"({error})") from None
        self.device = torch.device("cuda" if torch.cuda.is_available() and not cpu else "cpu")
        self.lm.to(self.device).eval()
        self.model = model_name
        self.batch_size = max(1, batch_size)
        self.cache_arg = _cache_arg()
        self.last_logits_only = _last_logits_only(self.lm)
        self.max_positions = int(getattr(self.lm.config, "max_position_embeddings", 0) or 1 << 30)
        self.usage = base.Usage()
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token or self.tokenizer.unk_token
        self.constrainer, why_not = _constrainer(self.tokenizer, self.lm, constrained)
        has_template = bool(getattr(self.tokenizer, "chat_template", None))
        can = self.constrainer is not None
        self.capabilities = base.Capabilities(
            loglik=True, completion=True, chat=has_template, json_schema=can, choices=can, regex=can, spans=can,
            constrained_by=f"{LIBRARY} {self.constrainer.version}" if self.constrainer is not None else None,
            notes=(f"in process; constrained decoding with {LIBRARY} (JSON schema, choices, regex, spans)" if can else
                   f"in process; generated answers are parsed unconstrained: {why_not}",))

    # -- token counts and the context (klue.llm.fitting) ---------------------------------------------
    @property
    def token_counter(self) -> str:
        return "the model's tokenizer (transformers), special tokens included"

    @property
    def context_length(self) -> int | None:
        """The positions the model takes (its config's max_position_embeddings), None where it states none."""
        return None if self.max_positions == 1 << 30 else self.max_positions

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return [len(ids) for ids in self._encode_many(texts, special=True)]

    # -- prompts -------------------------------------------------------------------------------------
    def chat_prompt(self, messages: Sequence[tuple[str, str]]) -> str:
        """The chat template applied to `messages`, ready for the assistant's answer."""
        if not self.capabilities.chat:
            raise base.BackendError(f"hf:{self.model} has no chat template: use the completion form "
                                    "(--form completion)")
        return str(self.tokenizer.apply_chat_template([{"role": r, "content": c} for r, c in messages],
                                                      tokenize=False, add_generation_prompt=True))

    def _context_ids(self, text: str, room: int = 0) -> list[int]:
        """The prompt's tokens, fitted (`_fit`) to leave `room` positions for what follows."""
        return self._fit(list(self.tokenizer(text, add_special_tokens=True)["input_ids"]), room)

    def _fit(self, ids: list[int], room: int) -> list[int]:
        """A prompt's tokens; one longer than the model takes (leaving `room` for what follows) keeps its
        last tokens (the example and its cue) and is counted in usage as `truncated_prompts`."""
        if not ids:
            raise base.BackendError("an empty context has no next-token distribution")
        limit = self.max_positions - room
        if limit < 1:
            raise base.BackendError(f"hf:{self.model} takes {self.max_positions} positions, fewer than the {room} "
                               "an answer needs")
        if len(ids) > limit:
            self.usage.extra["truncated_prompts"] = self.usage.extra.get("truncated_prompts", 0) + 1
            ids = ids[len(ids) - limit:]
        return ids

    # -- log-likelihood ------------------------------------------------------------------------------
    def loglik(self, requests: Sequence[base.LoglikRequest],
               on_result: base.ResultSink | None = None) -> list[base.LoglikResult]:
        by_context: dict[str, list[int]] = {}
        for index, request in enumerate(requests):
            by_context.setdefault(request.context, []).append(index)
        conts = self._encode_many([r.continuation for r in requests], special=False)
        for request, ids in zip(requests, conts):
            if not ids:
                raise base.BackendError(f"the continuation {request.continuation!r} has no tokens")
        contexts = self._encode_many(list(by_context), special=True)
        groups = [(self._fit(ids, room=max(len(conts[i]) for i in indices)), indices)
                  for ids, indices in zip(contexts, by_context.values())]
        # longest contexts together: little padding in a batch
        groups.sort(key=lambda group: -len(group[0]))
        results: list[base.LoglikResult | None] = [None] * len(requests)
        for start in range(0, len(groups), self.batch_size):
            batch = groups[start:start + self.batch_size]
            scored = self._score_contexts([ids for ids, _ in batch], [[conts[i] for i in idx] for _, idx in batch])
            for (_, indices), answers in zip(batch, scored):
                for i, answer in zip(indices, answers):
                    results[i] = answer
        for ids, indices in groups:
            self.usage.requests += len(indices)
            self.usage.prompt_tokens += len(ids) + sum(len(conts[i]) for i in indices)
        return base.hand_over([r for r in results if r is not None], on_result)

    def _encode_many(self, texts: Sequence[str], special: bool) -> list[list[int]]:
        """Token ids of many texts in one tokenizer call (the fast tokenizer batches them in Rust)."""
        unique = list(dict.fromkeys(texts))
        encoded = self.tokenizer(unique, add_special_tokens=special)["input_ids"] if unique else []
        by_text = {text: list(ids) for text, ids in zip(unique, encoded)}
        return [by_text[text] for text in texts]

    def _score_contexts(self, contexts: Sequence[list[int]], conts: Sequence[Sequence[list[int]]]
                        ) -> list[list[base.LoglikResult]]:
        """Each context's continuations scored: one forward over the batch of contexts (left-padded), whose
        last position predicts every continuation's first token; then, for continuations of two tokens or
        more, forwards over their tokens (all but the last) from the contexts' key/value cache, the cache
        rows repeated per continuation, `REST_ROWS_PER_BATCH * batch_size` continuations at a time.
        Log-probabilities are read with one gather per forward, no per-token Python loop."""
        import torch

        width = max(len(c) for c in contexts)
        pad = self.tokenizer.pad_token_id
        ids = torch.tensor([[pad] * (width - len(c)) + c for c in contexts], device=self.device)
        mask = torch.tensor([[0] * (width - len(c)) + [1] * len(c) for c in contexts], device=self.device)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        lengths = mask.sum(-1)
        with torch.inference_mode():
            out = self.lm(ids, attention_mask=mask, position_ids=positions, use_cache=True, **self.last_logits_only)
            first = torch.log_softmax(out.logits[:, -1].float(), dim=-1)  # [contexts, vocab]
            first_best = first.argmax(-1).tolist()
            rows = [(c, k) for c in range(len(contexts)) for k in range(len(conts[c]))]
            head = torch.tensor([conts[c][k][0] for c, k in rows], device=self.device)
            owner = torch.tensor([c for c, _ in rows], device=self.device)
            head_logprob = first[owner, head].tolist()
            totals = {row: lp for row, lp in zip(rows, head_logprob)}
            greedy = {(c, k): first_best[c] == conts[c][k][0] for c, k in rows}
            longer = [(c, k) for c, k in rows if len(conts[c][k]) > 1]
            past = _cache_of(out)
            step = REST_ROWS_PER_BATCH * self.batch_size
            for start in range(0, len(longer), step):
                chunk = longer[start:start + step]
                for row, (logprob, best) in zip(chunk, self._score_rest(past, mask, lengths, conts, chunk)):
                    totals[row] += logprob
                    greedy[row] = greedy[row] and best
        return [[base.LoglikResult(totals[(c, k)], len(conts[c][k]), greedy[(c, k)])
                 for k in range(len(conts[c]))] for c in range(len(contexts))]

    def _score_rest(self, past: Any, mask: Any, lengths: Any, conts: Sequence[Sequence[list[int]]],
                    chunk: Sequence[tuple[int, int]]) -> list[tuple[float, bool]]:
        """(log-probability of tokens 1.. of each continuation, whether each was the argmax) for `chunk`
        (context index, continuation index), from the contexts' cache `past`."""
        import torch

        tokens = [conts[c][k] for c, k in chunk]
        width = max(len(t) for t in tokens) - 1  # the last token is predicted, never fed
        pad = self.tokenizer.pad_token_id
        owner = torch.tensor([c for c, _ in chunk], device=self.device)
        fed = torch.tensor([t[:-1] + [pad] * (width - len(t) + 1) for t in tokens], device=self.device)
        target = torch.tensor([t[1:] + [pad] * (width - len(t) + 1) for t in tokens], device=self.device)
        real = torch.tensor([[1] * (len(t) - 1) + [0] * (width - len(t) + 1) for t in tokens], device=self.device)
        positions = lengths[owner].unsqueeze(-1) + torch.arange(width, device=self.device)
        logits = self.lm(fed, attention_mask=torch.cat([mask[owner], real], dim=-1), position_ids=positions,
                         use_cache=True, **{self.cache_arg: _cache_rows(past, owner)}).logits.float()
        logprobs = torch.log_softmax(logits, dim=-1)
        picked = torch.where(real.bool(), logprobs.gather(-1, target.unsqueeze(-1)).squeeze(-1), 0.0)
        best = (logprobs.argmax(-1) == target) | (real == 0)
        return list(zip(picked.sum(-1).tolist(), best.all(-1).tolist()))

    # -- per-token scores of a text (klue.contamination.mink) -------------------------------------------
    def token_scores(self, requests: Sequence[base.TokenScoresRequest],
                     on_result: base.ResultSink | None = None) -> list[base.TokenScoresResult]:
        """Each text's tokens scored by one forward pass over the text (right-padded batches of similar
        length, at most `batch_size` rows and `TOKEN_SCORE_POSITIONS` positions each); a text longer than
        the model's positions keeps its first tokens and says how many were cut."""
        encoded = self._encode_many([r.text for r in requests], special=True)
        order = sorted(range(len(requests)), key=lambda i: -len(encoded[i]))
        results: list[base.TokenScoresResult | None] = [None] * len(requests)
        start = 0
        while start < len(order):
            width = max(1, min(len(encoded[order[start]]), self.max_positions))
            rows = max(1, min(self.batch_size, TOKEN_SCORE_POSITIONS // width))
            chunk = order[start:start + rows]
            scored = self._score_tokens([encoded[i] for i in chunk], [requests[i].distribution for i in chunk])
            for i, result in zip(chunk, scored):
                results[i] = result
            start += rows
        return base.hand_over([r for r in results if r is not None], on_result)

    def _score_tokens(self, texts: Sequence[list[int]], distribution: Sequence[bool]) -> list[base.TokenScoresResult]:
        import torch

        kept = [ids[:self.max_positions] for ids in texts]
        width = max(len(ids) for ids in kept)
        pad = self.tokenizer.pad_token_id
        ids = torch.tensor([k + [pad] * (width - len(k)) for k in kept], device=self.device)
        mask = torch.tensor([[1] * len(k) + [0] * (width - len(k)) for k in kept], device=self.device)
        results = []
        with torch.inference_mode():
            if width < 2:  # nothing has a context to be scored in
                logprobs = torch.zeros((len(kept), 0, 1), device=self.device)
            else:
                positions = torch.arange(width, device=self.device).expand(len(kept), -1)
                logits = self.lm(ids, attention_mask=mask, position_ids=positions).logits[:, :-1].float()
                logprobs = torch.log_softmax(logits, dim=-1)
            picked = logprobs.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1).tolist() if width >= 2 else []
            means = variances = None
            if any(distribution) and width >= 2:
                probs = logprobs.exp()
                mean_t = (probs * logprobs).sum(-1)
                # two passes (E[(log p - mu)^2], not E[log p^2] - mu^2): no cancellation in float32
                variances = (probs * (logprobs - mean_t.unsqueeze(-1)).square()).sum(-1).tolist()
                means = mean_t.tolist()
        for row, (ids_in, wanted) in enumerate(zip(kept, distribution)):
            n = max(len(ids_in) - 1, 0)
            self.usage.requests += 1
            self.usage.prompt_tokens += len(ids_in)
            cut = len(texts[row]) - len(ids_in)
            if cut:
                self._count("truncated_texts")
            results.append(base.TokenScoresResult(
                tuple(picked[row][:n]) if n else (),
                (tuple(means[row][:n]) if means is not None else ()) if wanted else None,
                (tuple(variances[row][:n]) if variances is not None else ()) if wanted else None, cut))
        return results

    # -- generation ----------------------------------------------------------------------------------
    def generate(self, requests: Sequence[base.GenerateRequest],
                 on_result: base.ResultSink | None = None) -> list[base.GenerateResult]:
        results: list[base.GenerateResult] = []
        for start in range(0, len(requests), self.batch_size):
            results += self._generate_chunk(requests[start:start + self.batch_size])
        return base.hand_over(results, on_result)

    def _prompt_of(self, request: base.GenerateRequest) -> str:
        if request.messages is not None:
            return self.chat_prompt(request.messages)
        assert request.prompt is not None
        return request.prompt

    def _generate_chunk(self, chunk: Sequence[base.GenerateRequest]) -> list[base.GenerateResult]:
        import torch
        from transformers import LogitsProcessorList

        prompts = [self._prompt_of(r) for r in chunk]
        encoded = [self._context_ids(p, room=r.max_new_tokens) for p, r in zip(prompts, chunk)]
        width = max(len(e) for e in encoded)
        pad = self.tokenizer.pad_token_id
        eos = self.tokenizer.eos_token_id
        ids = torch.tensor([[pad] * (width - len(e)) + e for e in encoded], device=self.device)  # left padding
        mask = torch.tensor([[0] * (width - len(e)) + [1] * len(e) for e in encoded], device=self.device)
        budget = max(r.max_new_tokens for r in chunk)
        rows = [RowState(self._matcher(r), r.max_new_tokens) for r in chunk]
        processors = LogitsProcessorList([GrammarMasks(rows, width, eos)] if any(r.matcher for r in rows) else [])
        # Stop strings end a row's generation where it writes one (the next example's marker), instead of
        # running to the budget; transformers matches them on token ids, so it needs the tokenizer.
        stops = sorted({stop for r in chunk for stop in r.stop if stop})
        stopping: dict[str, Any] = {"stop_strings": stops, "tokenizer": self.tokenizer} if stops else {}
        with torch.inference_mode():
            out = self.lm.generate(input_ids=ids, attention_mask=mask, max_new_tokens=budget, do_sample=False,
                                   pad_token_id=pad, eos_token_id=eos, logits_processor=processors, **stopping)
        results = []
        for row, (request, state) in enumerate(zip(chunk, rows)):
            new = out[row, width:width + request.max_new_tokens].tolist()
            if state.n_answer is not None:  # the grammar ended the answer (no EOS to end it)
                new = new[:state.n_answer]
            if eos is not None and eos in new:
                new = new[:new.index(eos)]
            if stops and pad is not None and pad in new:  # a row stopped by a stop string is padded after it
                new = new[:new.index(pad)]
            text = cut_at_stop(str(self.tokenizer.decode(new, skip_special_tokens=True)), request.stop)
            if state.failed:
                self._count("constraint_dropped")
                self._note(f"a constraint was dropped during generation ({state.failed}); that answer is "
                           "unconstrained (counted in usage.constraint_dropped)")
            self.usage.requests += 1
            self.usage.prompt_tokens += len(encoded[row])
            self.usage.completion_tokens += len(new)
            finished = state.n_answer is not None or len(new) < request.max_new_tokens
            results.append(base.GenerateResult(text, len(encoded[row]), len(new),
                                          state.matcher is not None and not state.failed,
                                          "stop" if finished else "length"))
        return results

    def _matcher(self, request: base.GenerateRequest) -> Any:
        """The request's compiled constraint (None without one, or when it does not compile: then the
        answer is generated unconstrained, counted and noted in the capabilities)."""
        if self.constrainer is None:
            return None
        matcher, error = self.constrainer.matcher(request)
        if error:
            self._count("constraint_errors")
            self._note(f"a constraint did not compile ({error}); those answers are unconstrained (counted in "
                       "usage.constraint_errors)")
        return matcher

    def _count(self, name: str) -> None:
        self.usage.extra[name] = self.usage.extra.get(name, 0) + 1

    def _note(self, note: str) -> None:
        """A note in the capabilities (they go into results.json), each kind once."""
        head = note.split(" (")[0]
        if not any(n.startswith(head) for n in self.capabilities.notes):
            self.capabilities = replace(self.capabilities, notes=(*self.capabilities.notes, note))
