"""`klue pretrain`: morpheme-aware tokenizers, PII pseudonymisation and masked-LM pretraining."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from klue.cli._common import stderr, stdout

pretrain_app = typer.Typer(
    name="pretrain", no_args_is_help=True, add_completion=False,
    help="The pretraining side of KLUE: train a (morpheme-aware) tokenizer, pseudonymise personal "
         "information in a corpus, and pretrain a BERT / RoBERTa encoder with masked-LM.")


@pretrain_app.command("tokenizer")
def tokenizer_command(
    corpus: Annotated[list[Path], typer.Option("--corpus", "-c", help="Corpus file(s): one text per line, or "
                                               ".jsonl with a \"text\" field. Repeat for several.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Directory to write (AutoTokenizer loads it).")],
    algorithm: Annotated[str, typer.Option(help="Subword model: wordpiece, bpe or unigram.")] = "wordpiece",
    pretokenize: Annotated[str, typer.Option(help="What the trainer sees: morpheme (words cut at Kiwi "
                                             "morpheme boundaries), whitespace (words) or none (whole texts).")
                           ] = "morpheme",
    vocab_size: Annotated[int, typer.Option(help="Largest vocabulary size (special tokens included); one "
                                            "below what the corpus's characters need is refused, naming "
                                            "that minimum.")] = 32000,
    style: Annotated[str, typer.Option(help="Special tokens and post-processor: bert ([CLS] [SEP] [PAD] [UNK] "
                                       "[MASK], token types) or roberta (<s> </s> <pad> <unk> <mask>).")] = "bert",
    min_frequency: Annotated[int, typer.Option(help="WordPiece/BPE: least count of a merge.")] = 2,
    max_length: Annotated[int, typer.Option(help="model_max_length written into the tokenizer.")] = 512,
) -> None:
    """Train a tokenizer. The saved tokenizer is a standard tokenizer.json (no Kiwi needed to use it): the
    morpheme analysis shapes its vocabulary, and offsets map every token to its exact characters."""
    from klue.pretraining.corpus import read_corpus
    from klue.pretraining.tokenizer import TokenizerSpec, save_tokenizer, train_tokenizer

    spec = TokenizerSpec(algorithm, pretokenize, vocab_size, style, min_frequency, max_length)  # type: ignore[arg-type]
    texts = read_corpus(corpus)
    with stderr.status(f"training a {algorithm} tokenizer on {len(texts)} texts ({pretokenize} pre-tokenization)"):
        tokenizer = train_tokenizer(texts, spec)
    save_tokenizer(tokenizer, spec, out, {"corpus": [str(p) for p in corpus], "n_texts": len(texts)})
    stdout.print(f"wrote {out} (vocabulary {len(tokenizer)})")


@pretrain_app.command("pii")
def pii_command(
    input: Annotated[list[Path], typer.Option("--input", "-i", help="Text file(s), one document per line, or "
                                              ".jsonl with the text under --text-field. Repeat for several.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Directory for the pseudonymised files (same "
                                         "names) and pii_report.json (counts by kind only).")],
    seed: Annotated[int | None, typer.Option(help="Seed of the pseudonym generator (default: a fresh random "
                                             "one, so runs cannot be linked).")] = None,
    kinds: Annotated[str, typer.Option(help="Comma-separated kinds to replace: rrn, phone, email, card, "
                                       "account, url, address, name, or all.")] = "all",
    ner_model: Annotated[Path | None, typer.Option(help="A klue fine-tuned NER model directory: its PS "
                                                   "entities are the names (instead of Kiwi + surnames).")] = None,
    text_field: Annotated[str, typer.Option(help="The text field of .jsonl inputs.")] = "text",
) -> None:
    """Find personal information (resident registration, phone, card and account numbers, e-mail
    addresses, personal URLs, street addresses, person names) and replace it with consistent pseudonyms
    of the same kind and shape. Originals are never written or printed."""
    import secrets

    from klue.errors import DataError
    from klue.pretraining.pii import PII_KINDS, PiiDetector, pseudonymise_files

    chosen = PII_KINDS if kinds == "all" else tuple(k.strip() for k in kinds.split(",") if k.strip())
    unknown = [k for k in chosen if k not in PII_KINDS]
    if unknown:
        raise DataError(f"--kinds: unknown kind {unknown[0]!r}; known: {', '.join(PII_KINDS)}")
    name_finder = None
    if ner_model is not None:
        from klue.pretraining.ner_names import ner_name_finder

        name_finder = ner_name_finder(ner_model)
    detector = PiiDetector(name_finder=name_finder, kinds=chosen)
    report = pseudonymise_files([str(p) for p in input], str(output), detector,
                                seed if seed is not None else secrets.randbits(63), text_field)
    counts = report["counts"]
    assert isinstance(counts, dict)
    stdout.print(f"{report['documents']} documents, {report['documents_changed']} changed; replaced: "
                 + ", ".join(f"{k} {v}" for k, v in counts.items()))
    stdout.print(f"wrote {output}")


@pretrain_app.command("mlm")
def mlm_command(
    tokenizer: Annotated[Path, typer.Option(help="Tokenizer directory (e.g. from `klue pretrain tokenizer`).")],
    corpus: Annotated[list[Path], typer.Option("--corpus", "-c", help="Corpus file(s), as for the tokenizer.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output model directory; its checkpoints/ make the "
                                      "same command resume.")],
    config: Annotated[str, typer.Option(help="tiny, small, base, large, or a JSON/YAML file of config "
                                        "fields.")] = "tiny",
    arch: Annotated[str | None, typer.Option(help="bert or roberta (default: from the tokenizer's special "
                                             "tokens).")] = None,
    max_steps: Annotated[int, typer.Option(help="Optimizer steps (the learning-rate schedule spans them).")] = 1000,
    max_minutes: Annotated[float | None, typer.Option(help="Stop after this much training time (resumable).")
                           ] = None,
    batch_size: Annotated[int, typer.Option(help="Sequences per step.")] = 32,
    max_len: Annotated[int, typer.Option(help="Tokens per packed sequence, special tokens included.")] = 128,
    learning_rate: Annotated[float, typer.Option(help="Peak AdamW learning rate.")] = 5e-4,
    warmup_ratio: Annotated[float, typer.Option(help="Share of steps of linear warm-up.")] = 0.06,
    weight_decay: Annotated[float, typer.Option(help="AdamW weight decay (not on biases, LayerNorm).")] = 0.01,
    mask_prob: Annotated[float, typer.Option(help="Share of tokens (or words) masked.")] = 0.15,
    whole_word: Annotated[str, typer.Option(help="Masking unit: none (sub-words), word (whitespace words) or "
                                            "morpheme (Kiwi morphemes).")] = "none",
    eval_fraction: Annotated[float, typer.Option(help="Held-out share of sequences for a final MLM loss.")] = 0.0,
    save_every: Annotated[int, typer.Option(help="Checkpoint every N steps (0: only at a time-budget stop).")
                          ] = 200,
    log_every: Annotated[int, typer.Option(help="Log loss and throughput every N steps.")] = 20,
    seed: Annotated[int, typer.Option(help="Seed (weights, data order, masks).")] = 0,
    resume: Annotated[bool, typer.Option(help="Continue from out/checkpoints when present.")] = True,
    cpu: Annotated[bool, typer.Option(help="Use the CPU even when a GPU is present.")] = False,
    mixed_precision: Annotated[str, typer.Option(help="no, fp16 or bf16.")] = "no",
) -> None:
    """Masked-LM pretraining with dynamic (and optionally whole-word) masking on accelerate. The output
    loads with AutoModel.from_pretrained and fine-tunes with `klue train --model OUT`."""
    from klue.errors import DataError
    from klue.pretraining.mlm import MlmSettings, pretrain

    if arch not in (None, "bert", "roberta"):
        raise DataError(f"--arch {arch!r}: bert or roberta")
    if whole_word not in ("none", "word", "morpheme"):
        raise DataError(f"--whole-word {whole_word!r}: none, word or morpheme")
    settings = MlmSettings(tokenizer=tokenizer, model_config=config, corpus=corpus, out=out, arch=arch,  # type: ignore[arg-type]
                           max_len=max_len, batch_size=batch_size, learning_rate=learning_rate,
                           weight_decay=weight_decay, warmup_ratio=warmup_ratio, max_steps=max_steps,
                           max_minutes=max_minutes, mask_prob=mask_prob, whole_word=whole_word,  # type: ignore[arg-type]
                           eval_fraction=eval_fraction, save_every=save_every, log_every=log_every, seed=seed,
                           resume=resume, cpu=cpu, mixed_precision=mixed_precision)
    result = pretrain(settings)
    stdout.print(f"{result.steps} steps, loss {result.first_loss} -> {result.last_loss}, "
                 f"{result.tokens_per_s:.0f} tokens/s; wrote {out}")


def register(app: typer.Typer) -> None:
    app.add_typer(pretrain_app, name="pretrain")
