"""Tiny encoders trained from scratch: a tokenizer trained on the spot and a small config, no download.

    from klue.models.tiny import make_tiny_model_dir
    make_tiny_model_dir("tiny-bert", arch="bert", texts=sentences)          # WordPiece
    make_tiny_model_dir("tiny-roberta", arch="roberta", texts=sentences)    # byte-level BPE
    make_tiny_model_dir("tiny-uni", arch="bert", texts=sentences, tokenizer="unigram")

The directory holds `config.json` and tokenizer files but no weights, so `klue train --model DIR` builds
the encoder from the config with seeded random weights (training from scratch). Tests and benchmarks use
it; a real run uses a pretrained model such as `klue/roberta-large` the same way.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

Arch = Literal["bert", "roberta"]
TokenizerKind = Literal["wordpiece", "bpe", "unigram"]

_SPECIALS: dict[str, dict[str, str]] = {
    # role -> token text; the order of insertion gives the ids (RoBERTa: <s>=0, <pad>=1, </s>=2 as usual)
    "bert": {"pad": "[PAD]", "unk": "[UNK]", "cls": "[CLS]", "sep": "[SEP]", "mask": "[MASK]"},
    "roberta": {"cls": "<s>", "pad": "<pad>", "sep": "</s>", "unk": "<unk>", "mask": "<mask>"},
}
_DEFAULT_TOKENIZER: dict[str, TokenizerKind] = {"bert": "wordpiece", "roberta": "bpe"}


def _bpe_pieces(texts: list[str], pre_tokenizer: Any, vocab_size: int, specials: list[str]) -> list[str]:
    """BPE pieces (without specials) in id order; BPE training without a continuing-subword prefix is
    deterministic."""
    from tokenizers import Tokenizer, models, normalizers, trainers

    bpe = Tokenizer(models.BPE())
    bpe.normalizer = normalizers.NFC()
    bpe.pre_tokenizer = pre_tokenizer
    bpe.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials))
    return [t for t, _ in sorted(bpe.get_vocab().items(), key=lambda item: item[1]) if t not in specials]


def train_tokenizer(texts: Iterable[str], arch: Arch = "bert", kind: TokenizerKind | None = None,
                    vocab_size: int = 2000, model_max_length: int = 512) -> Any:
    """A fast tokenizer (`PreTrainedTokenizerFast`) trained on `texts` with the `tokenizers` library."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    kind = kind or _DEFAULT_TOKENIZER[arch]
    specials = _SPECIALS[arch]
    special_list = list(specials.values())
    texts = list(texts)
    # The WordPiece trainer of `tokenizers` is not deterministic across processes (hash-map order,
    # huggingface/tokenizers#1794), so its vocabulary is built from deterministic BPE pieces (each piece
    # also as a `##` continuation). Unigram's EM scores also vary a little between processes: its pieces
    # are the same set, but tokenization of rare words may differ; WordPiece and BPE are reproducible.
    if kind == "wordpiece":
        pieces = _bpe_pieces(texts, pre_tokenizers.BertPreTokenizer(), max(vocab_size // 2, 1), special_list)
        vocab: dict[str, int] = {}
        for token in [*special_list, *(p for piece in pieces for p in (piece, f"##{piece}"))]:
            vocab.setdefault(token, len(vocab))
        tokenizer = Tokenizer(models.WordPiece(vocab, unk_token=specials["unk"]))
        tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tokenizer.decoder = decoders.WordPiece()
    elif kind == "bpe":
        tokenizer = Tokenizer(models.BPE())
        tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tokenizer.decoder = decoders.ByteLevel()
        tokenizer.normalizer = normalizers.NFC()  # before training: the trainer sees normalised text
        tokenizer.train_from_iterator(texts, trainers.BpeTrainer(
            vocab_size=vocab_size, special_tokens=special_list, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    elif kind == "unigram":
        trained = Tokenizer(models.Unigram())
        trained.pre_tokenizer = pre_tokenizers.Metaspace()
        trained.normalizer = normalizers.NFC()
        trained.train_from_iterator(texts, trainers.UnigramTrainer(
            vocab_size=vocab_size, special_tokens=special_list, unk_token=specials["unk"]))
        scored = json.loads(trained.to_str())["model"]["vocab"]
        ordered = [(p, s) for p, s in scored if p in specials.values()]
        ordered.sort(key=lambda item: special_list.index(item[0]))
        ordered += sorted(((p, s) for p, s in scored if p not in specials.values()), key=lambda x: (-x[1], x[0]))
        tokenizer = Tokenizer(models.Unigram(ordered, unk_id=special_list.index(specials["unk"]), byte_fallback=False))
        tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
        tokenizer.decoder = decoders.Metaspace()
    else:
        raise ValueError(f"unknown tokenizer kind {kind!r}: wordpiece, bpe or unigram")
    tokenizer.normalizer = normalizers.NFC()
    cls, sep = specials["cls"], specials["sep"]
    cls_id, sep_id = tokenizer.token_to_id(cls), tokenizer.token_to_id(sep)
    if arch == "roberta":
        pair = f"{cls} $A {sep} {sep} $B {sep}"
    else:
        pair = f"{cls} $A {sep} $B:1 {sep}:1"
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{cls} $A {sep}", pair=pair, special_tokens=[(cls, cls_id), (sep, sep_id)])
    names = ["input_ids", "token_type_ids", "attention_mask"] if arch == "bert" else ["input_ids", "attention_mask"]
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, model_max_length=model_max_length, model_input_names=names,
        **{f"{role}_token": token for role, token in specials.items()})


def tiny_config(arch: Arch, tokenizer: Any, hidden_size: int = 64, layers: int = 2, heads: int = 2,
                intermediate_size: int = 128, max_len: int = 512, dropout: float = 0.1) -> Any:
    from transformers import AutoConfig

    common: dict[str, Any] = {
        "vocab_size": len(tokenizer), "hidden_size": hidden_size, "num_hidden_layers": layers,
        "num_attention_heads": heads, "intermediate_size": intermediate_size, "hidden_dropout_prob": dropout,
        "attention_probs_dropout_prob": dropout, "pad_token_id": tokenizer.pad_token_id}
    if arch == "roberta":
        # RoBERTa positions start after the padding index, hence the +2; one token type only.
        return AutoConfig.for_model("roberta", max_position_embeddings=max_len + 2, type_vocab_size=1,
                                    bos_token_id=tokenizer.cls_token_id, eos_token_id=tokenizer.sep_token_id,
                                    **common)
    return AutoConfig.for_model("bert", max_position_embeddings=max_len, type_vocab_size=2, **common)


def make_tiny_model_dir(out: str | Path, arch: Arch = "bert", texts: Iterable[str] = (),
                        tokenizer: TokenizerKind | None = None, vocab_size: int = 2000, hidden_size: int = 64,
                        layers: int = 2, heads: int = 2, intermediate_size: int = 128, max_len: int = 512,
                        dropout: float = 0.1) -> Path:
    """Write config.json + tokenizer files (no weights) for a tiny `arch` model; returns the directory."""
    texts = list(texts)
    if not texts:
        raise ValueError("make_tiny_model_dir needs texts to train its tokenizer on")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    fast = train_tokenizer(texts, arch, tokenizer, vocab_size=vocab_size, model_max_length=max_len)
    config = tiny_config(arch, fast, hidden_size, layers, heads, intermediate_size, max_len, dropout)
    fast.save_pretrained(str(out))
    config.save_pretrained(str(out))
    return out


# A minimal chat template (Jinja, as transformers reads it): role headers and an assistant cue.
TINY_CHAT_TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}\n{% endfor %}"
                      "{% if add_generation_prompt %}<|assistant|>\n{% endif %}")


def make_tiny_llama_dir(out: str | Path, texts: Iterable[str], vocab_size: int = 600, hidden_size: int = 64,
                        layers: int = 2, heads: int = 2, max_len: int = 4096, seed: int = 0) -> Path:
    """A tiny random-weight Llama causal LM with a byte-level BPE tokenizer trained on `texts` (so Hangul
    never falls out of the vocabulary) and a chat template, saved as a loadable model directory: what
    `hf:DIR` specs name in tests. Random weights: the pipeline is exercised, not a model's skill."""
    import torch
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import AutoConfig, AutoModelForCausalLM, PreTrainedTokenizerFast

    texts = list(texts)
    if not texts:
        raise ValueError("make_tiny_llama_dir needs texts to train its tokenizer on")
    specials = ["<unk>", "<s>", "</s>"]
    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.normalizer = normalizers.NFC()
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials,
                                                       initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    from tokenizers import processors

    bpe.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", bpe.token_to_id("<s>"))])
    fast = PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                                   pad_token="</s>", model_max_length=max_len)
    fast.chat_template = TINY_CHAT_TEMPLATE
    config = AutoConfig.for_model("llama", vocab_size=len(fast), hidden_size=hidden_size, intermediate_size=hidden_size * 2,
                                  num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=heads,
                                  max_position_embeddings=max_len, bos_token_id=fast.bos_token_id,
                                  eos_token_id=fast.eos_token_id, pad_token_id=fast.pad_token_id,
                                  tie_word_embeddings=False)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out))
    fast.save_pretrained(str(out))
    return out
