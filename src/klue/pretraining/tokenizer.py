"""Subword tokenizers trained on morpheme-split, whitespace-split or unsplit Korean text.

Design (why the saved tokenizer needs no Kiwi at inference): a Python pre-tokenizer cannot be written into
`tokenizer.json`, so a tokenizer that ran Kiwi at inference would not load with `AutoTokenizer` alone.
Instead the morpheme analysis shapes the *vocabulary*: the subword trainer sees each word already cut at
Kiwi's morpheme boundaries, with the pieces after the first marked as word-internal (WordPiece / BPE:
the `##` continuation prefix; Unigram: no leading `▁`). No learned piece ever crosses a morpheme boundary,
and the word-internal morphemes (particles, endings) become continuation pieces (`##에서`, `##었다`). At
inference the saved tokenizer is a standard Rust pipeline (NFC normaliser, whitespace / punctuation
pre-tokenizer, the subword model, BERT- or RoBERTa-style post-processor), which segments whole words with
that vocabulary and so lands on morpheme boundaries most of the time (`boundary_agreement` measures how
often). This is also what the released KLUE tokenizers do (a plain WordPiece vocabulary learned on
morpheme-split text). Offsets are the `tokenizers` library's own, into the original (un-normalised) text.

Pre-tokenization per algorithm:
- wordpiece, bpe: `BertPreTokenizer` (split at whitespace and punctuation), continuation prefix `##`;
  `none`: no pre-tokenizer at all (the whole text is one "word", spaces included in pieces).
- unigram: whitespace split, then `Metaspace` (word-initial pieces start with `▁`, which covers no
  character: the vocabulary holds no bare `▁`, so it always fuses with the following character and no
  token is zero-width or overlaps another); `none`: `Metaspace(split=False)`, spaces become `▁` inside pieces.

How the trainer is told "word-internal" for the `##` algorithms, reproducibly: the trainers of `tokenizers`
assign the ids of `##` pieces in hash-map order when they add the prefix themselves, so two runs on the
same corpus learned different vocabularies (ties between merges are broken by id). Instead the trainer
gets no prefix and sees every non-initial character of a pre-token as its private-use "continuation twin"
(U+F0000 + code point, supplementary private use planes), so the alphabet is sorted characters and
training is deterministic; each non-initial morpheme is given behind a private-use sentinel character.
After training, twins become `##` pieces again and pieces that start with the sentinel are renamed to
`##` pieces (merges that only attach the sentinel are dropped, duplicates removed). Every
character is then made available both word-initially and as a continuation (`c`, `##c`; Unigram: `▁c`),
and the last-learned pieces are dropped until the vocabulary is at most `vocab_size` again. Those single
characters and the special tokens are never dropped, so a `vocab_size` below their count
(`minimum_vocab_size`) is refused before training, with that count, instead of silently giving more.
"""

from __future__ import annotations

import itertools
import json
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from klue.errors import DataError
from klue.pretraining.morphemes import MorphemeSplitter

Algorithm = Literal["wordpiece", "bpe", "unigram"]
Pretokenize = Literal["morpheme", "whitespace", "none"]
Style = Literal["bert", "roberta"]
ALGORITHMS: tuple[Algorithm, ...] = ("wordpiece", "bpe", "unigram")
PRETOKENIZE: tuple[Pretokenize, ...] = ("morpheme", "whitespace", "none")
STYLES: tuple[Style, ...] = ("bert", "roberta")

CONTINUATION = "##"
METASPACE = "▁"
_SENTINEL = "\ue000"  # private use: marks a word-internal morpheme for the trainer, never in a saved vocab
_TWIN_OFFSET = 0xF0000  # continuation twin of character c: chr(_TWIN_OFFSET + ord(c)), for ord(c) < _TWIN_LIMIT
_TWIN_LIMIT = 0x1FFFE  # BMP and plane 1; rarer characters keep one form (as word-initial pieces)
_BOM = "\ufeff"  # a byte-order mark: no character of the text, never a vocabulary entry
_UNIT_SEPARATOR = "\x1f"  # joins training units into one string; the training pre-tokenizer splits on it
SPECIALS: dict[str, dict[str, str]] = {
    # role -> token; insertion order gives the ids (RoBERTa: <s>=0, <pad>=1, </s>=2, <unk>=3, <mask>=4)
    "bert": {"pad": "[PAD]", "unk": "[UNK]", "cls": "[CLS]", "sep": "[SEP]", "mask": "[MASK]"},
    "roberta": {"cls": "<s>", "pad": "<pad>", "sep": "</s>", "unk": "<unk>", "mask": "<mask>"},
}
SPEC_FILE = "klue_tokenizer.json"
_LONGEST_WORD = 100_000  # WordPiece's per-word limit (default 100 chars); `none` makes a text one word


@dataclass(frozen=True)
class TokenizerSpec:
    algorithm: Algorithm = "wordpiece"
    pretokenize: Pretokenize = "morpheme"
    vocab_size: int = 32000
    style: Style = "bert"
    min_frequency: int = 2
    model_max_length: int = 512

    def __post_init__(self) -> None:
        for name, value, allowed in (("algorithm", self.algorithm, ALGORITHMS),
                                     ("pretokenize", self.pretokenize, PRETOKENIZE),
                                     ("style", self.style, STYLES)):
            if value not in allowed:
                raise DataError(f"unknown {name} {value!r}: one of {', '.join(allowed)}")
        if self.vocab_size < 10:
            raise DataError(f"vocab_size {self.vocab_size} is too small")

    @property
    def continuation(self) -> bool:
        """True for the `##` algorithms (WordPiece, BPE); False for Unigram (`▁` marks word starts)."""
        return self.algorithm != "unigram"


def _inference_pre_tokenizer(spec: TokenizerSpec) -> Any:
    from tokenizers import pre_tokenizers

    if spec.continuation:
        return None if spec.pretokenize == "none" else pre_tokenizers.BertPreTokenizer()
    if spec.pretokenize == "none":
        return pre_tokenizers.Metaspace(replacement=METASPACE, prepend_scheme="never", split=False)
    return pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(),
                                    pre_tokenizers.Metaspace(replacement=METASPACE, prepend_scheme="always")])


def normalize(text: str) -> str:
    """What the saved tokenizer's normaliser does (NFC), so training sees the same text as inference."""
    return unicodedata.normalize("NFC", text)


def _word_spans(text: str, spec: TokenizerSpec, pre_tokenizer: Any) -> list[tuple[int, int]]:
    """Spans of the inference pre-tokens in `text` (already normalised)."""
    if pre_tokenizer is None or spec.pretokenize == "none":
        return [(0, len(text))] if text else []
    return [span for _, span in pre_tokenizer.pre_tokenize_str(text)]


def training_units(text: str, spec: TokenizerSpec, pre_tokenizer: Any, cuts: Sequence[int] = ()) -> list[str]:
    """The pre-tokens the subword trainer sees for one normalised text (see the module doc)."""
    if spec.pretokenize == "none":
        return [text.replace(" ", METASPACE) if not spec.continuation else text] if text.strip() else []
    units: list[str] = []
    cut_set = sorted(cuts)
    for start, end in _word_spans(text, spec, pre_tokenizer):
        inner = [p for p in cut_set if start < p < end]
        bounds = [start, *inner, end]
        for index, (a, b) in enumerate(itertools.pairwise(bounds)):
            piece = text[a:b]
            if spec.continuation:
                units.append(piece if index == 0 else _SENTINEL + piece)
            else:
                units.append(METASPACE + piece if index == 0 else piece)
    return units


def _clean_training_text(text: str) -> str:
    # A BOM or NUL the corpus reader did not see (texts given in code) must not become a vocabulary entry.
    text = normalize(text).replace(_UNIT_SEPARATOR, " ").replace(_SENTINEL, " ").replace("\0", " ")
    text = text.replace(_BOM, "")
    if any(ord(c) >= _TWIN_OFFSET for c in text):  # supplementary private use: reserved for the twins
        text = "".join(" " if ord(c) >= _TWIN_OFFSET else c for c in text)
    return text.strip()


def _twin(char: str) -> str:
    code = ord(char)
    return chr(_TWIN_OFFSET + code) if code < _TWIN_LIMIT else char


def _untwin(text: str) -> str:
    return "".join(chr(ord(c) - _TWIN_OFFSET) if ord(c) >= _TWIN_OFFSET else c for c in text)


def _with_twins(unit: str) -> str:
    """A training pre-token with its non-initial characters as continuation twins."""
    return unit[:1] + "".join(_twin(c) for c in unit[1:])


def _training_strings(texts: Iterable[str], spec: TokenizerSpec, splitter: MorphemeSplitter | None) -> Iterator[str]:
    pre_tokenizer = _inference_pre_tokenizer(spec)
    for raw in texts:
        text = _clean_training_text(raw)
        if not text:
            continue
        cuts = splitter.cuts(text) if splitter is not None else ()
        units = training_units(text, spec, pre_tokenizer, cuts)
        if spec.continuation:
            units = [_with_twins(u) for u in units]
        if units:
            yield _UNIT_SEPARATOR.join(units)


def _rename_sentinel(token: str) -> str | None:
    """A trained piece in its saved form: `\\ue000` + twins -> `##x..`, twins only -> `##x..`, a
    character + twins -> `cx..`; the bare sentinel -> None (it stands for no character)."""
    if token.startswith(_SENTINEL):
        rest = _untwin(token[len(_SENTINEL):])
        return CONTINUATION + rest if rest else None
    if token and ord(token[0]) >= _TWIN_OFFSET:
        return CONTINUATION + _untwin(token)
    return _untwin(token)


def _complete_alphabet(tokens: list[str], specials: Sequence[str]) -> list[str]:
    """Every single character both as a word start and as a `##` continuation, so a known character
    never turns its whole word into [UNK] just because it was seen only in the other position."""
    present = set(tokens)
    extra: list[str] = []
    for token in tokens:
        if token in specials:
            continue
        char = token[len(CONTINUATION):] if token.startswith(CONTINUATION) and len(token) > 2 else token
        if len(char) != 1:
            continue
        for variant in (char, CONTINUATION + char):
            if variant not in present:
                present.add(variant)
                extra.append(variant)
    return tokens + extra


def _postprocess_continuation_model(model: dict[str, Any], specials: Sequence[str], vocab_size: int
                                    ) -> dict[str, Any]:
    """Rename sentinel pieces to `##` pieces in a trained WordPiece or BPE model (JSON form), complete the
    alphabet, then drop the last-learned pieces until the vocabulary fits `vocab_size` again."""
    by_id = sorted(model["vocab"].items(), key=lambda item: item[1])
    tokens: list[str] = []
    seen: set[str] = set()
    for token, _ in by_id:
        renamed = _rename_sentinel(token)
        if renamed is None or renamed in seen:
            continue
        seen.add(renamed)
        tokens.append(renamed)
    tokens = _complete_alphabet(tokens, specials)
    model["vocab"] = {token: index for index, token in enumerate(tokens)}
    if model["type"] == "BPE":
        merges: list[list[str]] = []
        seen_merges: set[tuple[str, str]] = set()
        for merge in model["merges"]:
            left, right = merge if isinstance(merge, list) else merge.split(" ", 1)
            if left == _SENTINEL:
                continue  # attaching the sentinel: the renamed result already is a base `##` piece
            left_renamed, right_renamed = _rename_sentinel(left), _rename_sentinel(right)
            assert left_renamed is not None and right_renamed is not None and _SENTINEL not in right
            pair = (left_renamed, right_renamed)
            if pair in seen_merges:
                continue
            seen_merges.add(pair)
            merges.append(list(pair))
        # The last merge's result feeds no later merge, so dropping merges from the end is always safe.
        vocab = model["vocab"]
        while len(vocab) > vocab_size and merges:
            left, right = merges.pop()
            vocab.pop(left + right.removeprefix(CONTINUATION), None)
        model["vocab"] = {token: index for index, token in enumerate(sorted(vocab, key=vocab.__getitem__))}
        model["merges"] = merges
    else:
        # WordPiece ids follow the order pieces were learned; drop the latest multi-character pieces.
        keep = list(tokens)
        index = len(keep) - 1
        while len(keep) > vocab_size and index >= 0:
            token = keep[index]
            if token not in specials and len(_strip_continuation(token)) > 1:
                keep.pop(index)
            index -= 1
        model["vocab"] = {token: i for i, token in enumerate(keep)}
    return model


def _strip_continuation(token: str) -> str:
    return token.removeprefix(CONTINUATION)


def _fix_unigram_metaspace(model: dict[str, Any], specials: Sequence[str], vocab_size: int) -> dict[str, Any]:
    """No bare `▁` piece, a `▁c` piece for every single character c: `▁` then always fuses with the
    character after it, so no token has an empty or overlapping span (see the module doc). Then the
    least likely multi-character pieces go until the vocabulary fits `vocab_size` again."""
    pieces: list[list[Any]] = [list(p) for p in model["vocab"]]
    score = {p: s for p, s in pieces}
    space_score = score.get(METASPACE, min(s for _, s in pieces) - 1.0)
    kept = [p for p in pieces if p[0] != METASPACE]
    present = {p for p, _ in kept}
    for piece, piece_score in pieces:
        if len(piece) == 1 and piece not in specials and piece != METASPACE and METASPACE + piece not in present:
            kept.append([METASPACE + piece, space_score + piece_score])
            present.add(METASPACE + piece)
    unk = pieces[model["unk_id"]][0] if model.get("unk_id") is not None else None
    removable = sorted((s, i) for i, (p, s) in enumerate(kept)
                       if p not in specials and len(p.removeprefix(METASPACE)) > 1)
    drop = {i for _, i in removable[:max(0, len(kept) - vocab_size)]}
    kept = [p for i, p in enumerate(kept) if i not in drop]
    model["vocab"] = kept
    model["unk_id"] = next(i for i, (p, _) in enumerate(kept) if p == unk) if unk is not None else None
    return model


def train_tokenizer(texts: Iterable[str], spec: TokenizerSpec, splitter: MorphemeSplitter | None = None) -> Any:
    """Train a tokenizer on `texts`; returns a `transformers.PreTrainedTokenizerFast`.

    `splitter` is needed for `pretokenize="morpheme"` (one is made when absent)."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

    if spec.pretokenize == "morpheme" and splitter is None:
        splitter = MorphemeSplitter()
    if spec.pretokenize != "morpheme":
        splitter = None
    specials = SPECIALS[spec.style]
    special_list = list(specials.values())
    trainer: Any
    if spec.algorithm == "wordpiece":
        tokenizer = Tokenizer(models.WordPiece(unk_token=specials["unk"], max_input_chars_per_word=_LONGEST_WORD))
        trainer = trainers.WordPieceTrainer(vocab_size=spec.vocab_size, min_frequency=spec.min_frequency,
                                            special_tokens=special_list, continuing_subword_prefix="",
                                            show_progress=False)  # twins instead (module doc)
    elif spec.algorithm == "bpe":
        tokenizer = Tokenizer(models.BPE(unk_token=specials["unk"], continuing_subword_prefix=CONTINUATION,
                                         fuse_unk=True))
        trainer = trainers.BpeTrainer(vocab_size=spec.vocab_size, min_frequency=spec.min_frequency,
                                      special_tokens=special_list, show_progress=False)  # twins instead
    else:
        tokenizer = Tokenizer(models.Unigram())
        trainer = trainers.UnigramTrainer(vocab_size=spec.vocab_size, special_tokens=special_list,
                                          unk_token=specials["unk"], show_progress=False)
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex(_UNIT_SEPARATOR), behavior="removed")
    strings = list(_training_strings(texts, spec, splitter))
    if not strings:
        raise DataError("the corpus holds no text to train a tokenizer on")
    _check_fits(minimum_vocab_size(strings, spec), spec)  # before training: it may take long
    tokenizer.train_from_iterator(strings, trainer, length=len(strings))
    finished = _finish(tokenizer, spec)
    _check_fits(len(finished), spec)  # a second line of defence: never a vocabulary larger than asked
    return finished


def minimum_vocab_size(strings: Iterable[str], spec: TokenizerSpec) -> int:
    """The least vocabulary the training strings allow: the pieces never dropped are the special tokens
    and every character in both of its positions (`c` and `##c`; Unigram: `c` and `▁c`)."""
    chars = {_untwin(c) for c in set().union(*strings)} - {_UNIT_SEPARATOR, _SENTINEL}
    if not spec.continuation:
        chars.discard(METASPACE)  # the bare `▁` is dropped; it is part of every `▁c` (module doc)
    return len(SPECIALS[spec.style]) + 2 * len(chars)


def _check_fits(minimum: int, spec: TokenizerSpec) -> None:
    """DataError when `minimum` entries exceed the vocabulary asked for: the trainer would silently give
    more than asked (or, for Unigram, fail with a bare exception)."""
    if minimum <= spec.vocab_size:
        return
    where = "a word start and a continuation" if spec.continuation else "a word start and inside a word"
    raise DataError(f"--vocab-size {spec.vocab_size} is below the smallest vocabulary this corpus allows: "
                    f"its {len(SPECIALS[spec.style])} special tokens and every character it holds (each as "
                    f"{where}) take {minimum} entries; use --vocab-size {minimum} or more")


def _finish(trained: Any, spec: TokenizerSpec) -> Any:
    """Swap the training pre-tokenizer for the inference pipeline and wrap it for transformers."""
    from tokenizers import Tokenizer, decoders, normalizers, processors
    from transformers import PreTrainedTokenizerFast

    specials = SPECIALS[spec.style]
    state = json.loads(trained.to_str())
    if spec.continuation:
        state["model"] = _postprocess_continuation_model(state["model"], list(specials.values()),
                                                         spec.vocab_size)
        state["model"]["continuing_subword_prefix"] = CONTINUATION  # trained without it (twins)
    else:
        state["model"] = _fix_unigram_metaspace(state["model"], list(specials.values()), spec.vocab_size)
    state["pre_tokenizer"] = None
    tokenizer = Tokenizer.from_str(json.dumps(state, ensure_ascii=False))
    tokenizer.normalizer = normalizers.NFC()
    pre_tokenizer = _inference_pre_tokenizer(spec)
    if pre_tokenizer is not None:
        tokenizer.pre_tokenizer = pre_tokenizer
    if spec.continuation:
        tokenizer.decoder = decoders.WordPiece(prefix=CONTINUATION, cleanup=False)
    else:
        tokenizer.decoder = decoders.Metaspace(replacement=METASPACE,
                                               prepend_scheme="never" if spec.pretokenize == "none" else "always")
    cls, sep = specials["cls"], specials["sep"]
    cls_id, sep_id = tokenizer.token_to_id(cls), tokenizer.token_to_id(sep)
    pair = f"{cls} $A {sep} {sep} $B {sep}" if spec.style == "roberta" else f"{cls} $A {sep} $B:1 {sep}:1"
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{cls} $A {sep}", pair=pair, special_tokens=[(cls, cls_id), (sep, sep_id)])
    names = ["input_ids", "token_type_ids", "attention_mask"] if spec.style == "bert" \
        else ["input_ids", "attention_mask"]
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, model_max_length=spec.model_max_length,
                                   model_input_names=names,
                                   **{f"{role}_token": token for role, token in specials.items()})


def save_tokenizer(tokenizer: Any, spec: TokenizerSpec, out: Path, extra: dict[str, Any] | None = None) -> Path:
    """`save_pretrained` into a temporary sibling, then rename: a crash never leaves half a tokenizer."""
    from klue.io.atomic import write_dir_atomic

    def fill(tmp: Path) -> None:
        tokenizer.save_pretrained(str(tmp))
        card = {"format": "klue.tokenizer/1", **asdict(spec), "actual_vocab_size": len(tokenizer), **(extra or {})}
        (tmp / SPEC_FILE).write_text(json.dumps(card, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")

    out = Path(out)
    write_dir_atomic(out, fill)
    return out


def token_surface(token: str, spec: TokenizerSpec) -> str:
    """The characters of the (normalised) text a vocabulary piece stands for."""
    if spec.continuation:
        return token.removeprefix(CONTINUATION)
    if spec.pretokenize == "none":
        return token.replace(METASPACE, " ")
    return token.removeprefix(METASPACE)


@dataclass(frozen=True)
class OffsetCheck:
    tokens: int
    mismatches: int  # tokens whose offsets do not cover exactly their own characters
    uncovered: int  # non-space characters no token covers
    overlaps: int  # tokens starting before the previous one ended

    @property
    def exact(self) -> bool:
        return self.mismatches == 0 and self.uncovered == 0 and self.overlaps == 0


def check_offsets(tokenizer: Any, text: str, spec: TokenizerSpec) -> OffsetCheck:
    """Do the offsets of `tokenizer(text)` map every token back to exactly its characters of `text`?

    Unknown-token pieces count as exact when their span is non-empty (their text is unknown by design)."""
    encoding = tokenizer(text, return_offsets_mapping=True, add_special_tokens=False)
    ids, offsets = encoding["input_ids"], encoding["offset_mapping"]
    norm = normalize(text)
    same_length = len(norm) == len(text)
    covered = [False] * len(text)
    mismatches = overlaps = 0
    last_end = 0
    for token_id, (start, end) in zip(ids, offsets, strict=True):
        if start < last_end:
            overlaps += 1
        last_end = max(last_end, end)
        for index in range(start, end):
            covered[index] = True
        if end <= start:
            mismatches += 1
            continue
        if token_id == tokenizer.unk_token_id:
            continue
        piece = tokenizer.convert_ids_to_tokens(token_id)
        original = text[start:end]
        if normalize(original) != token_surface(piece, spec) and (same_length or normalize(original) == original):
            mismatches += 1
    uncovered = sum(1 for index, ch in enumerate(text) if not ch.isspace() and not covered[index])
    return OffsetCheck(len(ids), mismatches, uncovered, overlaps)


@dataclass(frozen=True)
class BoundaryAgreement:
    """Cut points between two letters/digits: the tokenizer's against Kiwi's morpheme cuts (micro)."""

    tokenizer_cuts: int
    morpheme_cuts: int
    shared: int

    @property
    def precision(self) -> float:
        return 100.0 * self.shared / self.tokenizer_cuts if self.tokenizer_cuts else 0.0

    @property
    def recall(self) -> float:
        return 100.0 * self.shared / self.morpheme_cuts if self.morpheme_cuts else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


def _inside_word(text: str, position: int) -> bool:
    """A cut between two letters or digits (punctuation cuts are trivial for every tokenizer)."""
    if not 0 < position < len(text):
        return False
    before, after = text[position - 1], text[position]
    return (unicodedata.category(before)[0] in "LN") and (unicodedata.category(after)[0] in "LN")


def boundary_agreement(tokenizer: Any, texts: Iterable[str], splitter: MorphemeSplitter) -> BoundaryAgreement:
    """How often the saved tokenizer (no Kiwi at inference) cuts words where Kiwi cuts morphemes."""
    tok_cuts = morph_cuts = shared = 0
    for raw in texts:
        text = normalize(raw)
        if not text.strip():
            continue
        offsets = tokenizer(text, return_offsets_mapping=True, add_special_tokens=False)["offset_mapping"]
        inner = {start for (_, end), (start, _) in itertools.pairwise(offsets)
                 if end == start and _inside_word(text, start)}
        kiwi = {p for p in splitter.cuts(text) if _inside_word(text, p)}
        tok_cuts += len(inner)
        morph_cuts += len(kiwi)
        shared += len(inner & kiwi)
    return BoundaryAgreement(tok_cuts, morph_cuts, shared)
