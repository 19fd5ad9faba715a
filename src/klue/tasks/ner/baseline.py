"""NER baseline: a linear-chain CRF (python-crfsuite) over character features, trained from scratch.

The sequence is a sentence's non-space characters (the official metric never sees spaces). Each
character is described by its identity and its neighbours within two positions, character bigrams and
trigrams around it, a character class (Hangul, digit, Latin upper/lower, Hanja, punctuation by Unicode
category, other) with the classes of its neighbours, whether a space precedes or follows it (its
position in the eojeol), the eojeol it belongs to with that eojeol's first two and last one or two
characters, and the Kiwi morpheme covering it: its tag (B-/I- prefixed) with its neighbours' tags, and
its form and the forms of the morphemes before and after it. On a 4,000/1,000 split of the training
data, Kiwi tags added about 2.5 entity F1 points over characters alone; the morpheme form with 250 L-BFGS
iterations (instead of 100) took the split from 78.19 to 78.46, the neighbouring forms to 78.73.
Spaces are predicted as `O` (their tags are ignored by the metric).

Training: averaged passive-aggressive, 20 epochs (`TRAINERS["pa"]`), replacing L-BFGS (250 iterations,
still `NerBaseline(seed, trainer="lbfgs")`) for speed at the official size; measured on the local protocol
and on the 4,000/1,000 split in benchmarks/history/quickstart.md, "The quickstart at official scale". Kiwi analyses 512 sentences per
call, and features are made chunk by chunk, so memory does not grow with the training set.

crfsuite trains in a child process (`python -m klue.tasks.ner.baseline`): its online trainers shuffle the
sentences with the C library's process-wide `rand()`, and any other thread of the process calling `rand()`
during training (a Ray worker's, under load) changes the order and the model. Alone in its process, the
model depends on the data and the seed only (benchmarks/RESULTS.md, "NER's CRF in its own process"). Kiwi's
analyses of the training sentences are made in `fit`'s process, which needs Kiwi to predict anyway, and
written after the records in the job file chunk by chunk: the child never loads Kiwi (loading it and its
first analysis cost 2-3 CPU-s a cell) and memory does not grow with the training set.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile
import unicodedata
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from .records import SPACE, NerPrediction, NerRecord

_BOS, _EOS = "<s>", "</s>"
_CHUNK = 512  # sentences per Kiwi call and per batch of feature lists


def char_class(char: str) -> str:
    """A coarse class: H Hangul syllable, J Hangul jamo, D digit, L/U Latin lower/upper, C Hanja,
    P<x> punctuation of Unicode subcategory x, S anything else."""
    code = ord(char)
    if 0xAC00 <= code <= 0xD7A3:
        return "H"
    if 0x1100 <= code <= 0x11FF or 0x3130 <= code <= 0x318F:
        return "J"
    if char.isdigit():
        return "D"
    if char.isascii() and char.isalpha():
        return "L" if char.islower() else "U"
    if 0x4E00 <= code <= 0x9FFF:
        return "C"
    category = unicodedata.category(char)
    return "P" + category[1] if category.startswith("P") else "S"


class MorphemeTagger:
    """Kiwi morphemes per character: tags (`B-NNP`, `I-NNP`, ...) and forms; single-threaded."""

    def __init__(self) -> None:
        from klue.text.kiwi import analyser

        self._kiwi = analyser()

    @staticmethod
    def _per_character(text: str, tokens: Any) -> tuple[list[str], list[str]]:
        tags = ["X"] * len(text)
        forms = ["X"] * len(text)
        for token in tokens:
            for position in range(token.start, min(token.start + token.len, len(text))):
                tags[position] = ("B-" if position == token.start else "I-") + token.tag
                forms[position] = f"{token.form}/{token.tag}"
        return tags, forms

    def analyse(self, text: str) -> tuple[list[str], list[str]]:
        """One tag and one `form/TAG` per character of `text` (spaces included; characters Kiwi skips
        get `X`). Kiwi's forms are normalised morphemes, so they are features, never offsets."""
        return self._per_character(text, self._kiwi.tokenize(text))

    def analyse_many(self, texts: Sequence[str]) -> list[tuple[list[str], list[str]]]:
        """`analyse` of each text, in one Kiwi call: the same analyses (checked on the 10,000 sentences of
        the local protocol), about a third less time than one call per text."""
        if not texts:
            return []
        return [self._per_character(text, tokens)
                for text, tokens in zip(texts, self._kiwi.tokenize(list(texts)), strict=True)]



def neighbour_morphemes(forms: Sequence[str]) -> tuple[list[str], list[str]]:
    """For each character, the morpheme before and after the one covering it (`forms` repeats a morpheme
    once per character it covers, so runs of equal values are one morpheme)."""
    n = len(forms)
    previous, following = [_BOS] * n, [_EOS] * n
    for k in range(1, n):
        previous[k] = previous[k - 1] if forms[k] == forms[k - 1] else forms[k - 1]
    for k in range(n - 2, -1, -1):
        following[k] = following[k + 1] if forms[k] == forms[k + 1] else forms[k + 1]
    return previous, following


def sentence_features(chars: Sequence[str], morpheme_tags: Sequence[str] | None,
                      morpheme_forms: Sequence[str] | None = None) -> list[list[str]]:
    """Feature strings for each non-space character of a sentence (`chars` includes spaces).

    `morpheme_tags` and `morpheme_forms`, when given, have one entry per character of `chars`. Built
    column-wise (shifted lists zipped together): the same strings in the same order as the earlier loop
    over positions (checked on the 10,000 sentences of the local protocol), 10-20% less CPU time.
    """
    keep = [i for i, c in enumerate(chars) if c != SPACE]
    text = [chars[i] for i in keep]
    n = len(text)
    last = len(chars) - 1
    space_before = [i == 0 or chars[i - 1] == SPACE for i in keep]
    space_after = [i == last or chars[i + 1] == SPACE for i in keep]
    words = "".join(chars).split()
    word_of: list[str] = []  # the eojeol of each character
    word_index = -1
    for before in space_before:
        word_index += before
        word_of.append(words[word_index])
    classes = [char_class(c) for c in text]
    padded = [_BOS, _BOS, *text, _EOS, _EOS]
    prev2, prev1, next1, next2 = padded[:n], padded[1:n + 1], padded[3:n + 3], padded[4:n + 4]
    class_padded = ["#", *classes, "#"]
    in_word = [("S" if after else "B") if before else ("E" if after else "I")
               for before, after in zip(space_before, space_after, strict=True)]
    features = [
        ["bias", f"c={c}", f"k={k}", f"c-1={p1}", f"c+1={n1}", f"c-2={p2}", f"c+2={n2}", f"b-={p1}{c}",
         f"b+={c}{n1}", f"t0={p1}{c}{n1}", f"t-={p2}{p1}{c}", f"t+={c}{n1}{n2}", f"kw={kp}{k}{kn}",
         f"p={iw}", f"pc={iw}{c}", f"w={w}", f"wl2={w[-2:]}", f"wl1={w[-1:]}", f"wf2={w[:2]}"]
        for c, k, p1, n1, p2, n2, kp, kn, iw, w in zip(text, classes, prev1, next1, prev2, next2, class_padded,
                                                         class_padded[2:], in_word, word_of)]
    if morpheme_tags is not None:
        tags = [morpheme_tags[i] for i in keep]
        for k, (row, tag, c) in enumerate(zip(features, tags, text, strict=True)):
            row += (f"m={tag}", f"mc={tag}{c}")
            if k > 0:
                row.append(f"m-={tags[k - 1]}{tag}")
            if k + 1 < n:
                row.append(f"m+={tag}{tags[k + 1]}")
    if morpheme_forms is not None:
        forms = [morpheme_forms[i] for i in keep]
        previous_form, next_form = neighbour_morphemes(forms)
        for row, form, before_form, after_form in zip(features, forms, previous_form, next_form, strict=True):
            row += (f"mf={form}", f"mf-={before_form}", f"mf+={after_form}")
    return features


# crfsuite training algorithms and their parameters. `pa` (averaged passive-aggressive, PA-I, crfsuite's
# defaults, 20 epochs) is the default: as good as `lbfgs` (L1+L2 L-BFGS, 250 iterations, the earlier
# default), above it on the local protocol, equal or 0.7 entity F1 below on the 4,000/1,000 split of its
# training file depending on the shuffle, in a small fraction of the training time. With L-BFGS the NER
# cell alone took 484 CPU s (9.5 minutes) at the official 21,008 sentences, nearly all of the 10-minute
# goal for the whole quickstart; with PA, 114 CPU s (benchmarks/history/quickstart.md, "The quickstart at official scale").
TRAINERS: dict[str, dict[str, Any]] = {
    "pa": {"type": 1, "c": 1.0, "error_sensitive": True, "averaging": True, "max_iterations": 20,
           "feature.possible_transitions": True},
    "lbfgs": {"c1": 0.1, "c2": 0.01, "max_iterations": 250, "feature.possible_transitions": True},
}
_DESCRIPTIONS = {"pa": "averaged passive-aggressive (PA-I)", "lbfgs": "L-BFGS, L1+L2"}


def seed_c_random(seed: int) -> None:
    """Seed the C library's `rand()`, which crfsuite's online trainers shuffle the sentences with each epoch:
    without it the order depends on whatever else used `rand()` in the process before (liblinear does)."""
    import ctypes
    import sys

    libc = ctypes.CDLL("ucrtbase") if sys.platform == "win32" else ctypes.CDLL(None)
    libc.srand(ctypes.c_uint(seed))


class NerBaseline:
    """Character CRF with Kiwi morpheme-tag features, trained by crfsuite (`TRAINERS`)."""

    name = "char-crf"

    def __init__(self, seed: int, trainer: str = "pa", morpheme_features: bool = True) -> None:
        if trainer not in TRAINERS:
            raise ValueError(f"unknown NER CRF trainer {trainer!r}; known: {', '.join(TRAINERS)}")
        # The online trainer's sentence order comes from the seed (`seed_c_random`); L-BFGS ignores it.
        self.seed = seed
        self._algorithm = trainer
        self._params = dict(TRAINERS[trainer])
        self.hyperparameters: dict[str, Any] = {
            "model": f"linear-chain CRF (python-crfsuite, {_DESCRIPTIONS[trainer]})",
            "algorithm": trainer, **self._params,
            "features": "char window +-2, char bigrams/trigrams, char classes, eojeol position/prefix/suffix"
                        + (", Kiwi morpheme tags and forms" if morpheme_features else ""),
            "morpheme_features": morpheme_features,
        }
        self._morpheme_features = morpheme_features
        self._morphemes: MorphemeTagger | None = None  # Kiwi, loaded where features are made
        self._model: bytes | None = None

    def _analyses(self, records: Sequence[NerRecord]) -> Iterator[list[tuple[list[str], list[str]]] | None]:
        """Kiwi's per-character tags and forms of the records, one list per `_CHUNK` sentences (one Kiwi
        call each); None for each chunk when the features leave morphemes out."""
        for first in range(0, len(records), _CHUNK):
            if not self._morpheme_features:
                yield None
                continue
            if self._morphemes is None:
                self._morphemes = MorphemeTagger()
            yield self._morphemes.analyse_many([record.text for record in records[first:first + _CHUNK]])

    def _features(self, records: Sequence[NerRecord],
                  analysed: Iterator[list[tuple[list[str], list[str]]] | None] | None = None,
                  ) -> Iterator[list[list[str]]]:
        """Each record's features, chunk by chunk (the feature lists of the official train set at once would
        take gigabytes); `analysed`: the chunks' analyses made elsewhere (`_analyses`), else Kiwi's here."""
        chunks = self._analyses(records) if analysed is None else analysed
        for first, analyses in zip(range(0, len(records), _CHUNK), chunks, strict=True):
            chunk = records[first:first + _CHUNK]
            if analyses is None:
                yield from (sentence_features(record.chars, None) for record in chunk)
                continue
            for record, (tags, forms) in zip(chunk, analyses, strict=True):
                yield sentence_features(record.chars, tags, forms)

    def fit(self, train: list[NerRecord], selection: list[NerRecord] | None) -> None:
        # `selection` is not used: hyper-parameters were tuned once on a split of the training data.
        with tempfile.TemporaryDirectory(prefix="klue-ner-crf-") as scratch:
            job, path = Path(scratch) / "job.pickle", Path(scratch) / "model.crfsuite"
            with job.open("wb") as handle:  # the records, then the analyses of those trained on, chunk by chunk
                pickle.dump((self.seed, self._algorithm, self._morpheme_features, train), handle)
                for analyses in self._analyses(_labelled(train)):
                    pickle.dump(analyses, handle)
            import klue

            # This process's klue, wherever it was imported from (a worktree, a Ray worker's path).
            root = str(Path(klue.__file__).resolve().parent.parent)
            env = os.environ | {"PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
            done = subprocess.run([sys.executable, "-m", "klue.tasks.ner.baseline", str(job), str(path)],
                                  env=env, capture_output=True, text=True, check=False)
            if done.returncode != 0 or not path.is_file():
                raise RuntimeError(f"the NER CRF's training process failed (exit {done.returncode}):\n"
                                   + done.stderr[-4000:])
            self._model = path.read_bytes()

    def train_here(self, train: list[NerRecord], path: Path,
                   analysed: Iterator[list[tuple[list[str], list[str]]] | None] | None = None) -> None:
        """Train crfsuite in this process and save the model at `path` (the child process of `fit`);
        `analysed`: the labelled records' analyses by chunk, as `_analyses` makes them (None: made here)."""
        import pycrfsuite

        trainer = pycrfsuite.Trainer(algorithm=self._algorithm, verbose=False)
        labelled = _labelled(train)
        for record, features in zip(labelled, self._features(labelled, analysed), strict=True):
            trainer.append(features, list(record.nonspace_tags))
        trainer.set_params(self._params)
        seed_c_random(self.seed)
        trainer.train(str(path))

    def predict(self, records: list[NerRecord]) -> list[NerPrediction]:
        import pycrfsuite

        if self._model is None:
            raise RuntimeError("NerBaseline.predict called before fit")
        tagger = pycrfsuite.Tagger()
        tagger.open_inmemory(self._model)
        labelled = [record for record in records if record.nonspace_tags]
        tagged = {id(record): tagger.tag(features)
                  for record, features in zip(labelled, self._features(labelled), strict=True)}
        predictions = []
        for record in records:
            nonspace = iter(tagged.get(id(record), []))
            tags = tuple("O" if c == SPACE else next(nonspace) for c in record.chars)
            predictions.append(NerPrediction(record.guid, tags))
        return predictions


def make_baseline(seed: int) -> NerBaseline:
    return NerBaseline(seed)


def _labelled(records: Sequence[NerRecord]) -> list[NerRecord]:
    """The records a CRF trains on: those with a non-space character."""
    return [record for record in records if record.nonspace_tags]


def _train_job(job: Path, model: Path) -> None:
    # What `fit` pickled a moment ago into its own temporary directory (no file from elsewhere): the records,
    # then one list of analyses per chunk of the labelled ones, read as training reaches them.
    with job.open("rb") as handle:
        seed, algorithm, morpheme_features, train = pickle.load(handle)
        chunks = range(0, len(_labelled(train)), _CHUNK)
        NerBaseline(seed, algorithm, morpheme_features).train_here(train, model,
                                                                  (pickle.load(handle) for _ in chunks))


if __name__ == "__main__":  # `fit`'s child process: JOB MODEL
    _train_job(Path(sys.argv[1]), Path(sys.argv[2]))
