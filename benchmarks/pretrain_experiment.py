"""Does a tiny masked-LM pretraining help, and does morpheme pre-tokenization help more? (KLUE paper sec. 5)

Protocol (all on this machine, 1 thread):
1. Corpus: the Korean text under --extra-data-dir (KorQuAD dev contexts, KorNLI XNLI dev, KorSTS, YNAT
   re-split train titles, UD Korean), split into sentences, deduplicated, minus EVERY sentence of the
   evaluation sets used below (KLUE NER dev, KLUE NLI dev premises and hypotheses).
2. Two WordPiece tokenizers on that corpus, same vocabulary size: morpheme vs whitespace pre-tokenization.
   Their word-internal cut points are compared with Kiwi's on NER dev sentences.
3. For each tokenizer, a tiny BERT pretrained with masked-LM for the same number of steps, and a randomly
   initialised twin (same config, same tokenizer, no weights).
4. Each of the four encoders fine-tuned with the same recipe on NER (local:ner-train5000: first 5,000 train
   sentences -> official dev) and NLI (local:dev-80-20: 80% of the dev premises -> the other 20%).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/pretrain_experiment.py --out /tmp/klue-pretrain-exp
    # more fine-tuning seeds on the same tokenizers and pretrained models (no new pretraining):
    ... pretrain_experiment.py --out /tmp/klue-pretrain-exp --reuse --seeds 1,2,3

Writes <out>/experiment.json and prints a markdown table (mean and spread over the fine-tuning seeds) for
benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from klue.errors import DataError
from klue.pretraining.corpus import normalise_sentence, split_sentences
from klue.scoring import RunRequest

# The corpus: the Korean text on hand under --extra-data-dir (KorQuAD contexts, KorNLI and KorSTS sentences,
# YNAT re-split titles, UD Korean sentences), split into sentences, minus every sentence that also occurs in
# the evaluation texts (compared after whitespace normalisation), so a model pretrained on it has never seen
# the sentences it is then evaluated on.


@dataclass
class CorpusBuild:
    sentences: list[str]
    by_source: dict[str, int] = field(default_factory=dict)
    excluded: int = 0  # corpus sentences dropped because an evaluation set holds them


def _korquad(path: Path) -> Iterator[str]:
    data = json.loads(path.read_text(encoding="utf-8"))
    for article in data["data"]:
        for paragraph in article["paragraphs"]:
            yield paragraph["context"]


def _tsv_columns(path: Path, columns: Sequence[str]) -> Iterator[str]:
    with path.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE):
            for column in columns:
                if row.get(column):
                    yield row[column]


def _ynat_titles(path: Path) -> Iterator[str]:
    for record in json.loads(path.read_text(encoding="utf-8")):
        yield record["title"]


def _conllu_texts(path: Path) -> Iterator[str]:
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("# text = "):
                yield line[len("# text = "):].strip()


def korean_sources(extra_data_dir: Path) -> dict[str, list[Path]]:
    """Source name -> files under `extra_data_dir` (the directory holding korean/ and klue-derived/)."""
    korean = extra_data_dir / "korean"
    return {
        "korquad-contexts": [korean / "korquad-v1" / "KorQuAD_v1.0_dev.json"],
        "kornli": [korean / "kornli" / "xnli.dev.ko.tsv"],
        "korsts": [korean / "korsts" / "sts-train.tsv", korean / "korsts" / "sts-dev.tsv"],
        "ynat-titles": [extra_data_dir / "klue-derived" / "ynat-resplit" / "ynat-resplit_train.json"],
        "ud-korean": sorted((korean / "ud-korean").glob("*.conllu")),
    }


def _read_source(name: str, path: Path) -> Iterator[str]:
    if name == "korquad-contexts":
        return _korquad(path)
    if name == "kornli":
        return _tsv_columns(path, ("sentence1", "sentence2"))
    if name == "korsts":
        return _tsv_columns(path, ("sentence1", "sentence2"))
    if name == "ynat-titles":
        return _ynat_titles(path)
    return _conllu_texts(path)


def korean_corpus(extra_data_dir: Path, exclude: Iterable[str], sources: Sequence[str] | None = None) -> CorpusBuild:
    """Deduplicated sentences of the Korean sets on hand, without any sentence of `exclude`."""
    banned = {s for text in exclude for s in split_sentences(text)} | {normalise_sentence(t) for t in exclude}
    available = korean_sources(extra_data_dir)
    chosen = list(sources) if sources is not None else list(available)
    seen: set[str] = set()
    build = CorpusBuild([])
    for name in chosen:
        count = 0
        for path in available[name]:
            if not path.is_file():
                raise DataError(f"corpus source {name!r} missing", path)
            for text in _read_source(name, path):
                for sentence in split_sentences(text):
                    if sentence in banned:
                        build.excluded += 1
                        continue
                    if sentence in seen:
                        continue
                    seen.add(sentence)
                    build.sentences.append(sentence)
                    count += 1
        build.by_source[name] = count
    return build


os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def eval_texts(roots: Any) -> list[str]:
    from klue import registry
    from klue.protocols import read_checked

    ner, nli = registry.get("ner"), registry.get("nli")
    ner_dev = read_checked(ner.read, roots.klue / "klue-ner-v1.1" / "klue-ner-v1.1_dev.tsv")
    nli_dev = read_checked(nli.read, roots.klue / "klue-nli-v1.1" / "klue-nli-v1.1_dev.json")
    return [r.text for r in ner_dev] + [r.premise for r in nli_dev] + [r.hypothesis for r in nli_dev]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("/tmp/klue-pretrain-exp"))
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--extra-data-dir", default=None)
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--pretrain-steps", type=int, default=400)
    parser.add_argument("--ner-steps", type=int, default=300)
    parser.add_argument("--nli-steps", type=int, default=300)
    parser.add_argument("--config", default="tiny")
    parser.add_argument("--seed", type=int, default=1, help="seed of the tokenizer-independent pretraining")
    parser.add_argument("--seeds", default=None, help="fine-tuning seeds, comma-separated (default: --seed)")
    parser.add_argument("--reuse", action="store_true",
                        help="take the tokenizers and finished pretraining runs already under --out")
    args = parser.parse_args()
    seeds = [int(x) for x in args.seeds.split(",")] if args.seeds else [args.seed]

    import torch

    torch.set_num_threads(1)
    from klue import protocols, registry
    from klue.io.locate import roots_from
    from klue.pretraining.mlm import MlmSettings, pretrain
    from klue.pretraining.morphemes import MorphemeSplitter
    from klue.pretraining.tokenizer import TokenizerSpec, boundary_agreement, save_tokenizer, train_tokenizer
    from klue.training.run import run as finetune

    shared = Path(__file__).resolve().parents[2] / "shared" / "data"  # this machine's layout
    roots = roots_from(args.data_dir or os.environ.get("KLUE_DATA_DIR") or str(shared / "klue"),
                                 args.extra_data_dir or os.environ.get("KLUE_EXTRA_DATA_DIR") or str(shared))
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    record: dict[str, Any] = {"args": {k: str(v) for k, v in vars(args).items()}}
    started = time.perf_counter()

    held_out = eval_texts(roots)
    build = korean_corpus(roots.extra, held_out)
    banned = {normalise_sentence(t) for t in held_out}
    assert not banned & set(build.sentences), "an evaluation sentence leaked into the corpus"
    corpus_file = out / "corpus.txt"
    corpus_file.write_text("\n".join(build.sentences) + "\n", encoding="utf-8")
    record["corpus"] = {"sentences": len(build.sentences), "by_source": build.by_source,
                        "excluded_eval_sentences": build.excluded,
                        "characters": sum(len(s) for s in build.sentences)}
    print(json.dumps(record["corpus"], ensure_ascii=False), flush=True)

    splitter = MorphemeSplitter()
    ner_sample = held_out[:300]
    tasks = {"ner": ("local:ner-train5000", args.ner_steps), "nli": (protocols.DEV_80_20, args.nli_steps)}
    protocol_data = {name: protocols.resolve(registry.get(name), proto, roots) for name, (proto, _) in tasks.items()}
    results: list[dict[str, Any]] = []
    for pretok in ("morpheme", "whitespace"):
        spec = TokenizerSpec("wordpiece", pretok, args.vocab_size, "bert")  # type: ignore[arg-type]
        t0 = time.perf_counter()
        tok_dir = out / f"tok-{pretok}"
        if args.reuse and (tok_dir / "tokenizer.json").is_file():
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(str(tok_dir))
        else:
            tokenizer = train_tokenizer(build.sentences, spec, splitter)
            tok_dir = save_tokenizer(tokenizer, spec, tok_dir)
        agreement = boundary_agreement(tokenizer, ner_sample, splitter)
        tokens_per_char = sum(len(tokenizer.tokenize(t)) for t in ner_sample) / sum(len(t) for t in ner_sample)
        tok_info = {"vocab": len(tokenizer), "train_s": time.perf_counter() - t0,
                    "kiwi_cut_precision": agreement.precision, "kiwi_cut_recall": agreement.recall,
                    "tokens_per_char": tokens_per_char}
        print(pretok, json.dumps(tok_info), flush=True)

        model_dir = out / f"mlm-{pretok}"
        settings = MlmSettings(tokenizer=tok_dir, model_config=args.config, corpus=[corpus_file], out=model_dir,
                               max_steps=args.pretrain_steps, batch_size=32, max_len=128, learning_rate=1e-3,
                               eval_fraction=0.02, save_every=0, log_every=50, seed=args.seed, progress=False)
        summary_file = model_dir / "pretrain_summary.json"
        summary = json.loads(summary_file.read_text(encoding="utf-8")) if summary_file.is_file() else {}
        if args.reuse and summary.get("finished") and summary.get("steps") == args.pretrain_steps:
            mlm_info = {"steps": summary["steps"], "first_loss": summary["first_loss"],
                        "last_loss": summary["last_loss"], "heldout_mlm_loss": summary["eval_loss"],
                        "train_s": summary["train_time_s"], "tokens_per_s": summary["tokens_per_s"], "reused": True}
        else:
            mlm = pretrain(settings)
            mlm_info = {"steps": mlm.steps, "first_loss": mlm.first_loss, "last_loss": mlm.last_loss,
                        "heldout_mlm_loss": mlm.eval_loss, "train_s": mlm.train_time_s,
                        "tokens_per_s": mlm.tokens_per_s}
        print(pretok, json.dumps(mlm_info), flush=True)

        random_dir = out / f"random-{pretok}"  # the twin: same config and tokenizer, no weights
        shutil.rmtree(random_dir, ignore_errors=True)
        random_dir.mkdir()
        for item in model_dir.iterdir():
            if item.is_file() and item.name not in ("model.safetensors", "train_log.jsonl", "pretrain_summary.json"):
                shutil.copyfile(item, random_dir / item.name)

        for init, directory in (("pretrained", model_dir), ("random", random_dir)):
            for seed, (task_name, (protocol, steps)) in ((sd, t) for sd in seeds for t in tasks.items()):
                task = registry.get(task_name)
                overrides = {"max_steps": steps, "batch_size": 32, "learning_rate": 5e-4, "max_len": 128,
                             "warmup_ratio": 0.1, "weight_decay": 0.0, "eval_steps": steps, "progress": False,
                             "cpu": True}
                t0 = time.perf_counter()
                res = finetune(RunRequest(task, str(directory), protocol_data[task_name], seed,
                               out / f"ft-{pretok}-{init}-{task_name}-seed{seed}"), overrides)
                row = {"pretokenize": pretok, "init": init, "task": task_name, "protocol": protocol, "seed": seed,
                       "scores": res.scores, "wall_s": time.perf_counter() - t0, "tokenizer": tok_info,
                       "mlm": mlm_info if init == "pretrained" else None}
                results.append(row)
                print(json.dumps(row["scores"]), pretok, init, task_name, seed, flush=True)
        record["results"] = results
        (out / "experiment.json").write_text(json.dumps(record, ensure_ascii=False, indent=2), encoding="utf-8")
    record["wall_s"] = time.perf_counter() - started
    (out / "experiment.json").write_text(json.dumps(record, ensure_ascii=False, indent=2), encoding="utf-8")

    def cell(pretok: str, init: str, task_name: str, metric: str) -> str:
        values = [r["scores"][metric] for r in results
                  if r["pretokenize"] == pretok and r["init"] == init and r["task"] == task_name]
        if len(values) == 1:
            return f"{values[0]:.2f}"
        return f"{statistics.mean(values):.2f} ± {statistics.stdev(values):.2f}"

    print(f"\nfine-tuning seeds: {seeds} (mean ± sample sd)")
    print("| pre-tokenization | init | NER entity F1 | NER char F1 | NLI acc |")
    print("|---|---|---|---|---|")
    for pretok in ("morpheme", "whitespace"):
        for init in ("pretrained", "random"):
            print(f"| {pretok} | {init} | {cell(pretok, init, 'ner', 'entity_macro_f1')} | "
                  f"{cell(pretok, init, 'ner', 'character_macro_f1')} | {cell(pretok, init, 'nli', 'accuracy')} |")
    print(f"\ntotal wall {record['wall_s']:.0f} s")


if __name__ == "__main__":
    main()
