"""Corpus files for tokenizer and masked-LM training, and a Korean corpus that leaves evaluation sets out.

`read_corpus`: a `.jsonl` file holds one JSON object per line with the text under "text"; any other file
holds one text per line. Blank lines are skipped.

`korean_corpus`: the Korean text on hand under `--extra-data-dir` (KorQuAD contexts, KorNLI and KorSTS
sentences, YNAT re-split titles, UD Korean sentences), split into sentences, minus every sentence that also
occurs in the given evaluation texts (compared after whitespace normalisation), so a model pretrained on it
has never seen the sentences it is then evaluated on.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from klue.errors import DataError, ProblemLog
from klue.io.text import jsonl_objects

_SENTENCE_END = re.compile(r"(?<=[.?!。])\s+")


def read_corpus(paths: Sequence[Path | str], text_field: str = "text") -> list[str]:
    texts: list[str] = []
    for raw in paths:
        path = Path(raw)
        if not path.is_file():
            raise DataError("corpus file not found", path)
        log = ProblemLog(str(path))
        with path.open(encoding="utf-8") as handle:
            lines = [line.rstrip("\n") for line in handle]
        if path.suffix == ".jsonl":
            texts += [obj[text_field].strip() for _, obj in jsonl_objects(lines, log, text_field)]
        else:
            texts += [line.strip() for line in lines if line.strip()]
        log.raise_if_errors()
    if not texts:
        raise DataError(f"no text in the corpus files: {', '.join(str(p) for p in paths)}")
    return texts


def normalise_sentence(text: str) -> str:
    return " ".join(text.split())


def split_sentences(text: str) -> list[str]:
    return [s for s in (normalise_sentence(p) for p in _SENTENCE_END.split(text)) if s]


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
