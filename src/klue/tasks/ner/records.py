"""KLUE-NER records, the official TSV reader and the Hugging Face copy.

File format (docs/tasks.md, NER): a TSV file whose first `##` lines are a file header; each sentence starts
with `## <guid>\\t<marked-up sentence>` (entities written `<text:TYPE>`), then one `char\\ttag` line per
character of the sentence, spaces included, and a blank line ends it. The official reader drops space
characters and their tags, so the metric sees only the non-space characters of each sentence.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from klue.errors import DataError, ProblemLog
from klue.io import hf
from klue.io.fields import Fields
from klue.io.formats import ReadPurpose
from klue.io.text import check_unique_guids, read_text
from klue.metrics.ner import ENTITY_TYPES, TAGS
from klue.tasks.kinds import gold_prediction_of, reads_for_prediction

_TAG_SET = frozenset(TAGS)
SPACE = " "  # the only character the official reader drops (it compares `token == " "`)
FILE_HEADER_LINES = 5

# Marked-up entity: `<text:TYPE>`. The text may itself hold ':' (times such as `<12:30:TI>`), so the type
# is what follows the LAST colon; a few sentences upstream carry stray characters there (`<일:;LC>`).
_MARKUP = re.compile(r"<([^<>]*?):([^<>:]*)>")


@dataclass(frozen=True)
class NerRecord:
    """One sentence: every character (spaces included) with its tag, and the marked-up sentence."""

    guid: str
    marked: str  # the sentence with entities marked `<text:TYPE>`, as in the header line
    chars: tuple[str, ...]  # one character each, spaces included
    tags: tuple[str, ...]  # one tag per character (the tags of spaces are kept but never scored)
    # False: read for prediction from character lines without tags (then `tags` is ()); never scored
    labelled: bool = True

    @property
    def text(self) -> str:
        return "".join(self.chars)

    @property
    def nonspace_positions(self) -> tuple[int, ...]:
        """Indices into `chars` of the characters the official reader keeps."""
        return tuple(i for i, c in enumerate(self.chars) if c != SPACE)

    @property
    def nonspace_chars(self) -> tuple[str, ...]:
        return tuple(c for c in self.chars if c != SPACE)

    @property
    def nonspace_tags(self) -> tuple[str, ...]:
        return tuple(t for c, t in zip(self.chars, self.tags) if c != SPACE)


@dataclass(frozen=True)
class NerPrediction:
    """Predicted tags: one per character of the text (spaces included, their tags ignored), or one per
    non-space character."""

    guid: str
    tags: tuple[str, ...]


def marked_entities(marked: str) -> list[tuple[str, str]]:
    """The (text, TYPE) of each `<text:TYPE>` entity of a marked-up sentence, in order."""
    return [(text, kind) for text, kind in _MARKUP.findall(marked)]


def strip_markup(marked: str, lenient: bool = False) -> str:
    """The plain sentence behind `<text:TYPE>` markup.

    Angle brackets that are not entity markup (book titles such as `<뚝방전설>`) stay as they are. With
    `lenient`, markup whose type field carries stray characters (`<일:;LC>`) is stripped too.
    """

    def replace(match: re.Match[str]) -> str:
        kind = match.group(2)
        if kind in ENTITY_TYPES or (lenient and re.sub(r"[^A-Z]", "", kind) in ENTITY_TYPES):
            return match.group(1)
        return match.group(0)

    return _MARKUP.sub(replace, marked)


def bio_violations(tags: Sequence[str]) -> list[int]:
    """Positions of `I-X` tags that do not continue a `B-X` / `I-X` (seqeval strict drops them)."""
    bad = []
    previous = "O"
    for i, tag in enumerate(tags):
        if tag.startswith("I-") and previous[2:] != tag[2:]:
            bad.append(i)
        previous = tag
    return bad


@dataclass
class _Pending:
    guid: str
    marked: str
    line: int
    chars: list[str]
    tags: list[str]
    ok: bool = True
    untagged: int = 0  # character lines without a tag (read for prediction)


def _unlabelled(pending: _Pending, log: ProblemLog) -> bool | None:
    """Whether a sentence read for prediction has no tags (True), all of them (False), or some (None,
    logged: a sentence gives every tag or none)."""
    if pending.untagged == 0:
        return False
    if pending.untagged == len(pending.chars):
        return True
    log.error(f"line {pending.line}", f"sentence {pending.guid!r}: {pending.untagged} of its {len(pending.chars)} "
              "character lines have no tag; a sentence to predict leaves out every tag, a gold one gives each")
    return None


def _char_line(line: str, number: int, current: _Pending, log: ProblemLog, purpose: ReadPurpose) -> None:
    """One `char<TAB>tag` line into the sentence being read (read for prediction, `char` alone too)."""
    fields = line.split("\t")
    if len(fields) == 1 and len(line) == 1 and reads_for_prediction(purpose):
        current.chars.append(line)
        current.untagged += 1
        return
    if len(fields) != 2:
        what = "a line without a tab" if len(fields) == 1 else f"{len(fields)} tab-separated fields"
        wanted = "`char\\ttag` (or `char` alone)" if reads_for_prediction(purpose) else "`char\\ttag`"
        log.error(f"line {number}", f"expected {wanted}, found {what}: {line!r}")
        current.ok = False
        return
    char, tag = fields
    if len(char) != 1:
        log.error(f"line {number}", f"the character field must be exactly one character, found {char!r}")
        current.ok = False
    if tag not in _TAG_SET:
        log.error(f"line {number}", f"unknown tag {tag!r}; tags are {' '.join(TAGS)}")
        current.ok = False
    current.chars.append(char)
    current.tags.append(tag)


def read(path: Path, log: ProblemLog, purpose: ReadPurpose = "validate") -> list[NerRecord]:
    """Read an official KLUE-NER TSV file; every problem goes to `log` with its line. Read for prediction
    (`klue.tasks.kinds.reads_for_prediction`), a sentence's lines may hold its characters alone."""
    text = read_text(path, log)
    if text is None:
        return []
    records: list[NerRecord] = []
    guid_lines: list[tuple[str, str]] = []
    header: list[int] = []  # line numbers of `##` lines seen before the first character line
    current: _Pending | None = None
    started = False  # a character line has been seen: from here on every `##` line opens a sentence

    def finish(pending: _Pending | None) -> None:
        if pending is None:
            return
        where = f"line {pending.line}"
        if not pending.chars:
            log.error(where, f"sentence {pending.guid!r} has no characters")
            return
        unlabelled = _unlabelled(pending, log)
        if not pending.ok or unlabelled is None:
            return
        record = NerRecord(pending.guid, pending.marked, tuple(pending.chars), tuple(pending.tags), not unlabelled)
        _check_sentence(record, where, log)
        records.append(record)

    def open_sentence(line: str, number: int) -> _Pending | None:
        fields = line.split("\t")
        guid = fields[0][2:].strip()
        if len(fields) != 2 or not guid:
            log.error(f"line {number}", "a sentence header must be `## <guid>\\t<marked-up sentence>`")
            return _Pending("", "", number, [], [], ok=False)
        guid_lines.append((guid, f"line {number}"))
        return _Pending(guid, fields[1], number, [], [])

    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for number, raw in enumerate(lines, start=1):
        # Fast path for the common well-formed `char<TAB>tag` line (about 95% of a file); anything
        # else takes the checked path below.
        fields = raw.split("\t")
        if current is not None and len(fields) == 2 and len(fields[0]) == 1 and fields[1] in _TAG_SET:
            current.chars.append(fields[0])
            current.tags.append(fields[1])
            continue
        line = raw.removesuffix("\r")
        if line.strip("\t") == "":
            finish(current)
            current = None
            continue
        if line.startswith("##"):
            if not started:
                header.append(number)
                continue
            finish(current)
            current = open_sentence(line, number)
            continue
        if not started:
            started = True
            if not header:
                log.error(f"line {number}", "character line before any `## <guid>` sentence header")
            else:
                *file_header, sentence_line = header
                if len(file_header) != FILE_HEADER_LINES:
                    log.warning(f"line {sentence_line}", f"expected {FILE_HEADER_LINES} `##` file header "
                                f"lines before the first sentence, found {len(file_header)}")
                current = open_sentence(lines[sentence_line - 1].removesuffix("\r"), sentence_line)
        if current is None:
            log.error(f"line {number}", "character line outside a sentence (no `## <guid>` header above it)")
            continue
        _char_line(line, number, current, log, purpose)
    if not started and header:
        # Only `##` lines: with no character anywhere, the last one is a sentence without characters.
        current = open_sentence(lines[header[-1] - 1].removesuffix("\r"), header[-1])
    finish(current)
    check_unique_guids(guid_lines, log)
    if not records and not log.errors:
        log.error(location="line 1", message="no sentences in the file")
    return records


def _check_sentence(record: NerRecord, where: str, log: ProblemLog) -> None:
    text = record.text
    plain = strip_markup(record.marked)
    if plain != text:
        if strip_markup(record.marked, lenient=True) == text:
            pass  # only malformed markup differs: reported below
        elif plain.strip() == text.strip():
            log.warning(where, f"{record.guid}: the marked-up sentence and the characters differ in leading "
                        "or trailing spaces")
        else:
            log.error(where, f"{record.guid}: the marked-up sentence does not match the characters: "
                      f"{plain!r} != {text!r}")
    if strip_markup(record.marked, lenient=True) != plain:
        # Community-reported: a few upstream sentences have a typo in a type field, e.g. `<일:;LC>`; where
        # the characters carry the same text (markup included), it is kept as the file has it.
        leaked = " (the characters contain it too)" if plain == text else ""
        log.warning(where, f"{record.guid}: malformed entity markup in the marked-up sentence{leaked}")
    bad = bio_violations(record.nonspace_tags)
    if bad:
        # Community-reported: a few official sentences start an entity with I-X; strict IOB2 drops them.
        shown = ", ".join(f"{record.nonspace_chars[i]!r} {record.nonspace_tags[i]}" for i in bad[:3])
        log.warning(where, f"{record.guid}: ill-formed IOB2 (I-X not after B-X/I-X) at {shown}")


def parse_prediction(obj: Mapping[str, Any], log: ProblemLog, location: str) -> NerPrediction | None:
    guid = obj.get("guid")
    tags = obj.get("tags")
    if not isinstance(guid, str):
        log.error(location, "`guid` must be a string")
        return None
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        log.error(location, f"{guid}: `tags` must be a list of tag strings")
        return None
    unknown = sorted({t for t in tags if t not in _TAG_SET})
    if unknown:
        log.error(location, f"{guid}: unknown tags {unknown}; tags are {' '.join(TAGS)}")
        return None
    return NerPrediction(guid, tuple(tags))


gold_prediction = gold_prediction_of(NerPrediction, "tags")


def nonspace_prediction(record: NerRecord, prediction: NerPrediction) -> tuple[str, ...]:
    """The predicted tags of the record's non-space characters (the prediction may cover spaces or not)."""
    if len(prediction.tags) == len(record.chars):
        return tuple(prediction.tags[i] for i in record.nonspace_positions)
    if len(prediction.tags) == len(record.chars) - record.chars.count(SPACE):
        return prediction.tags
    raise DataError(f"{record.guid}: {len(prediction.tags)} predicted tags, but the sentence has "
                    f"{len(record.chars)} characters ({len(record.nonspace_positions)} without spaces)")


HF_GUID_PREFIX = "klue-ner-v1"  # rows of the hub copy carry no guid: they are named `klue-ner-v1_<split>_<row>`


def from_hf(dataset: Any, log: ProblemLog, purpose: ReadPurpose = "validate") -> list[NerRecord]:
    """HF `klue/klue` ner rows (`sentence` marked up as in the header line, `tokens` one per character,
    spaces included, `ner_tags` ClassLabels in the hub order B-DT I-DT B-LC ...) -> NER records, tags
    mapped by name; checked like the official file. An export's `guid` column (see `to_hf`) is kept, else
    the row is named by `klue.io.hf.records_from_named_rows`."""
    names = hf.label_names(dataset, "ner_tags")

    def record(guid: str | None, fields: Fields) -> NerRecord | None:
        marked = fields.str("sentence")
        chars = fields.str_list("tokens")
        raw_tags = fields.list("ner_tags")
        tags = [hf.by_name(t, names, TAGS, f"{fields.at('ner_tags')}[{i}]", log) for i, t in enumerate(raw_tags or [])]
        if chars is not None and any(len(c) != 1 for c in chars):
            fields.fail(fields.at("tokens"), "every token must be exactly one character")
        if chars is not None and raw_tags is not None and len(chars) != len(raw_tags):
            fields.fail(fields.location, f"{len(chars)} tokens but {len(raw_tags)} ner_tags")
        if chars is not None and not chars:
            fields.fail(fields.at("tokens"), "the sentence has no characters")
        built = fields.build(NerRecord, guid, marked, chars, tuple(tags)) if guid is not None and None not in tags \
            else None
        if built is None:
            return None
        _check_sentence(built, fields.location, log)
        return built

    return hf.records_from_named_rows(dataset, log, HF_GUID_PREFIX, record)


def to_hf(records: Sequence[NerRecord]) -> list[dict[str, Any]]:
    """Rows in the klue/klue ner layout (`sentence` the marked-up sentence, `tokens` every character,
    spaces included), plus the `guid` the hub copy lacks."""
    return [{"guid": r.guid, "sentence": r.marked, "tokens": list(r.chars), "ner_tags": list(r.tags)}
            for r in records]


# The export's columns: the hub's, with the tags in the OFFICIAL order (the hub's is B-DT I-DT B-LC ...;
# readers map by name either way), plus the guid.
HF_FEATURES: dict[str, Any] = {"guid": "string", "sentence": "string", "tokens": ["string"],
                               "ner_tags": [hf.Labels(TAGS)]}
HF_LAYOUT = hf.HfLayout(HF_FEATURES, to_hf, from_hf)
