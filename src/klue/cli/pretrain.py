"""`klue pretrain`: morpheme-aware tokenizers, PII pseudonymisation and masked-LM pretraining."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from klue.cli._common import stderr, stdout
from klue.io.choices import choice_of

CORPUS_HELP = ("Corpus: text files (one text per line), .jsonl (the text under --text-field), either of them "
               ".gz or .zst compressed, directories of such files (shards, read in sorted order), or a `datasets` "
               "save_to_disk directory (DIR or DIR:split). Repeat for several.")

pretrain_app = typer.Typer(
    name="pretrain", no_args_is_help=True, add_completion=False,
    help="The pretraining side of KLUE: train a (morpheme-aware) tokenizer, pseudonymise personal "
         "information in a corpus, prepare token shards, and pretrain a BERT / RoBERTa encoder with "
         "masked-LM.")


@pretrain_app.command("tokenizer")
def tokenizer_command(
    corpus: Annotated[list[Path], typer.Option("--corpus", "-c", help=CORPUS_HELP)],
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
    sample: Annotated[int | None, typer.Option(help="Train on N texts drawn uniformly from the streamed corpus "
                                               "(a seeded reservoir sample): memory holds N texts, not the "
                                               "corpus. Default: every text.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the --sample draw.")] = 0,
    text_field: Annotated[str, typer.Option(help="The text field of .jsonl and `datasets` corpora.")] = "text",
) -> None:
    """Train a tokenizer. The saved tokenizer is a standard tokenizer.json (no Kiwi needed to use it): the
    morpheme analysis shapes its vocabulary, and offsets map every token to its exact characters."""
    from klue.pretraining.corpus import iter_corpus, reservoir_sample
    from klue.pretraining.tokenizer import (
        ALGORITHMS,
        PRETOKENIZE,
        STYLES,
        TokenizerSpec,
        save_tokenizer,
        train_tokenizer,
    )

    spec = TokenizerSpec(choice_of(algorithm, ALGORITHMS, "--algorithm"),
                         choice_of(pretokenize, PRETOKENIZE, "--pretokenize"), vocab_size,
                         choice_of(style, STYLES, "--style"), min_frequency, max_length)
    texts = iter_corpus(corpus, text_field)
    if sample is not None:
        with stderr.status(f"drawing a sample of {sample:,} texts (seed {seed})"):
            chosen = reservoir_sample(texts, sample, seed)
    else:
        chosen = list(texts)
    with stderr.status(f"training a {algorithm} tokenizer on {len(chosen)} texts ({pretokenize} pre-tokenization)"):
        tokenizer = train_tokenizer(chosen, spec)
    extra = {"corpus": [str(p) for p in corpus], "n_texts": len(chosen)}
    if sample is not None:
        extra |= {"sample": sample, "sample_seed": seed}
    save_tokenizer(tokenizer, spec, out, extra)
    stdout.print(f"wrote {out} (vocabulary {len(tokenizer)})")


@pretrain_app.command("prepare")
def prepare_command(
    tokenizer: Annotated[Path, typer.Option(help="Tokenizer directory (e.g. from `klue pretrain tokenizer`).")],
    corpus: Annotated[list[Path], typer.Option("--corpus", "-c", help=CORPUS_HELP)],
    out: Annotated[Path, typer.Option("--out", "-o", help="Directory of token shards (manifest.json, index.json, "
                                      "shard-NNNNNN/); rerunning the same command resumes it.")],
    max_len: Annotated[int, typer.Option(help="Tokens per packed block, special tokens included (the "
                                         "model's sequence length).")] = 128,
    whole_word: Annotated[str, typer.Option(help="Masking unit stored with the tokens: none (sub-words), word "
                                            "(whitespace words) or morpheme (Kiwi morphemes).")] = "none",
    workers: Annotated[int, typer.Option(help="Worker processes that tokenize shards in parallel; the shards "
                                         "are the same bytes whatever the number.")] = 1,
    shard_texts: Annotated[int, typer.Option(help="Texts per shard (shard i holds texts i*N .. (i+1)*N-1): "
                                             "the unit of parallel work and of resuming.")] = 100_000,
    text_field: Annotated[str, typer.Option(help="The text field of .jsonl and `datasets` corpora.")] = "text",
) -> None:
    """Tokenize and pack a corpus, streamed, into memory-mapped token shards for `klue pretrain mlm --data`:
    memory stays flat however large the corpus, and an interrupted run continues where it stopped."""
    from klue.pretraining.packing import WHOLE_WORD
    from klue.pretraining.shards import PrepareSettings, prepare

    settings = PrepareSettings(tokenizer=tokenizer, corpus=corpus, out=out, max_len=max_len,
                               whole_word=choice_of(whole_word, WHOLE_WORD, "--whole-word"),
                               shard_texts=shard_texts, workers=workers, text_field=text_field)
    result = prepare(settings)
    resumed = f" ({result.shards - result.shards_written} were already there)" if result.shards_written < result.shards \
        else ""
    stdout.print(f"{result.shards} shards{resumed}: {result.texts:,} texts, {result.blocks:,} blocks, "
                 f"{result.tokens:,} tokens in {result.seconds:.1f} s; wrote {out}")


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
    workers: Annotated[int | None, typer.Option(help="Worker processes on this machine (default 1; 0: every "
                                                "core), or with --executor ray the Ray tasks run at once "
                                                "(default and 0: every CPU of the Ray). The output is the "
                                                "same bytes whatever the number.")] = None,
    executor: Annotated[str, typer.Option(help="local (worker processes here) or ray (a local Ray with "
                                          "--workers CPUs, or the cluster at --ray-address; needs pip "
                                          "install 'klue\\[ray]', and klue installed on every node).")] = "local",
    ray_address: Annotated[str | None, typer.Option(help="Address of a running Ray cluster for --executor "
                                                    "ray (e.g. auto, or ray://HEAD:10001); default: start a "
                                                    "local Ray.")] = None,
) -> None:
    """Find personal information (resident registration, phone, card and account numbers, e-mail
    addresses, personal URLs, street addresses, person names) and replace it with consistent pseudonyms
    of the same kind and shape. Originals are never written or printed. The inputs are streamed (memory
    stays flat) and can be spread over processes or a Ray cluster; a document's pseudonyms depend on the
    seed and its position only, so every worker count writes the same files."""
    import secrets

    from klue.errors import DataError
    from klue.pretraining.pii import PII_KINDS, PiiDetector
    from klue.pretraining.pii_parallel import EXECUTORS, pseudonymise_files

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
                                seed if seed is not None else secrets.randbits(63), text_field,
                                workers=workers, executor=choice_of(executor, EXECUTORS, "--executor"),
                                ray_address=ray_address, progress=True)
    counts = report["counts"]
    assert isinstance(counts, dict)
    stdout.print(f"{report['documents']} documents, {report['documents_changed']} changed; replaced: "
                 + ", ".join(f"{k} {v}" for k, v in counts.items()))
    stdout.print(f"wrote {output}")


@pretrain_app.command("mlm")
def mlm_command(
    out: Annotated[Path, typer.Option("--out", "-o", help="Output model directory; its checkpoints/ make the "
                                      "same command resume.")],
    tokenizer: Annotated[Path | None, typer.Option(help="Tokenizer directory (e.g. from `klue pretrain "
                                                   "tokenizer`); with --data, default: the shards' own.")] = None,
    corpus: Annotated[list[Path] | None, typer.Option("--corpus", "-c", help="Corpus, as for the tokenizer, "
                                                      "tokenized in memory (small corpora).")] = None,
    data: Annotated[Path | None, typer.Option(help="Token shards from `klue pretrain prepare`, read by memory "
                                              "map (any corpus size); instead of --corpus.")] = None,
    config: Annotated[str, typer.Option(help="tiny, small, base, large, or a JSON/YAML file of config "
                                        "fields.")] = "tiny",
    arch: Annotated[str | None, typer.Option(help="bert or roberta (default: from the tokenizer's special "
                                             "tokens).")] = None,
    max_steps: Annotated[int, typer.Option(help="Optimizer steps (the learning-rate schedule spans them).")] = 1000,
    max_minutes: Annotated[float | None, typer.Option(help="Stop after this much training time (resumable).")
                           ] = None,
    batch_size: Annotated[int, typer.Option(help="Sequences per optimizer step, over all processes (each "
                                            "of N processes takes 1/N of it).")] = 32,
    max_len: Annotated[int | None, typer.Option(help="Tokens per packed sequence, special tokens included "
                                                "(default 128; with --data, the shards').")] = None,
    learning_rate: Annotated[float, typer.Option(help="Peak AdamW learning rate.")] = 5e-4,
    warmup_ratio: Annotated[float, typer.Option(help="Share of steps of linear warm-up.")] = 0.06,
    weight_decay: Annotated[float, typer.Option(help="AdamW weight decay (not on biases, LayerNorm).")] = 0.01,
    mask_prob: Annotated[float, typer.Option(help="Share of tokens (or words) masked.")] = 0.15,
    whole_word: Annotated[str | None, typer.Option(help="Masking unit: none (sub-words), word (whitespace "
                                                   "words) or morpheme (Kiwi morphemes); default none, with "
                                                   "--data the shards'.")] = None,
    eval_fraction: Annotated[float, typer.Option(help="Held-out share of sequences for a final MLM loss.")] = 0.0,
    save_every: Annotated[int, typer.Option(help="Checkpoint every N steps (0: only at a time-budget stop).")
                          ] = 200,
    log_every: Annotated[int, typer.Option(help="Log loss and throughput every N steps.")] = 20,
    seed: Annotated[int, typer.Option(help="Seed (weights, data order, masks).")] = 0,
    resume: Annotated[bool, typer.Option(help="Continue from out/checkpoints when present.")] = True,
    cpu: Annotated[bool, typer.Option(help="Use the CPU even when a GPU is present.")] = False,
    mixed_precision: Annotated[str | None, typer.Option(
        help="no, fp16, bf16, or auto (bf16 on a GPU that supports it, fp16 on other GPUs; on the CPU bf16 only "
             "where it has amx_bf16 or avx512_bf16, else none); default auto, as MlmSettings from Python.",
        show_default=False)] = None,
) -> None:
    """Masked-LM pretraining with dynamic (and optionally whole-word) masking on accelerate. The output
    loads with AutoModel.from_pretrained and fine-tunes with `klue train --model OUT`. Several GPUs or
    machines: `accelerate launch [--config_file FILE] $(which klue) pretrain mlm ...` (DDP; FSDP or DeepSpeed through
    the accelerate config file, see docs/pretraining.md). Loss and tokens/s go to OUT/train_log.jsonl every
    --log-every steps."""
    from klue.errors import DataError
    from klue.pretraining.mlm import ARCHS, MlmSettings, pretrain
    from klue.pretraining.packing import WHOLE_WORD

    chosen_arch = None if arch is None else choice_of(arch, ARCHS, "--arch")
    if whole_word is not None:
        choice_of(whole_word, WHOLE_WORD, "--whole-word")  # refused before any data is read
    if (data is None) == (not corpus):
        raise DataError("give either --corpus (tokenized in memory) or --data (token shards), not both or neither")
    if data is not None:
        from klue.pretraining.shards import read_manifest

        manifest = read_manifest(data)
        tokenizer = tokenizer or Path(manifest["tokenizer"]["path"])
        max_len = max_len or manifest["max_len"]
        whole_word = whole_word or manifest["whole_word"]
    if tokenizer is None:
        raise DataError("--tokenizer: which tokenizer (a directory from `klue pretrain tokenizer`)")
    settings = MlmSettings(tokenizer=tokenizer, model_config=config, corpus=corpus or [], out=out,
                           arch=chosen_arch,
                           max_len=max_len or 128, batch_size=batch_size, learning_rate=learning_rate,
                           weight_decay=weight_decay, warmup_ratio=warmup_ratio, max_steps=max_steps,
                           max_minutes=max_minutes, mask_prob=mask_prob,
                           whole_word=choice_of(whole_word or "none", WHOLE_WORD, "--whole-word"),
                           eval_fraction=eval_fraction, save_every=save_every, log_every=log_every, seed=seed,
                           resume=resume, cpu=cpu, data=data,
                           # unset: MlmSettings' own default (one default: the CLI and the API train alike)
                           mixed_precision=mixed_precision or MlmSettings.mixed_precision)
    result = pretrain(settings)
    stdout.print(f"{result.steps} steps, loss {result.first_loss} -> {result.last_loss}, "
                 f"{result.tokens_per_s:.0f} tokens/s; wrote {out}")


def register(app: typer.Typer) -> None:
    app.add_typer(pretrain_app, name="pretrain")
