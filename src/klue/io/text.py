"""Low-level reading shared by every reader: bytes -> checked text, JSON or JSON Lines, with file:line errors.

Bytes that are not UTF-8 are reported with the encoding they most likely are (`encoding_hint`): Korean
text files are often CP949 / EUC-KR (the Windows and older Unix default) or UTF-16 (some Windows editors),
and naming the encoding with the command that converts it saves the user a search.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from klue.errors import DataError, ProblemLog

_SAMPLE_BYTES = 1 << 16  # how much of a file the encoding guess decodes
_NUL_SHARE = 0.25  # this share of NUL bytes in a sample means UTF-16 (or binary), not UTF-8 text
_READABLE = 0.8  # share of Hangul / ASCII / whitespace above which a decoded sample counts as Korean text
_BOMS: tuple[tuple[bytes, str], ...] = (  # UTF-32 first: its little-endian BOM starts like UTF-16's
    (b"\xff\xfe\x00\x00", "utf-32"), (b"\x00\x00\xfe\xff", "utf-32"),
    (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"),
)


def _convert_hint(path: str, encoding: str, label: str) -> str:
    quoted = shlex.quote(path) if path else "FILE"
    target = shlex.quote(f"{path}.utf8") if path else "FILE.utf8"
    return f"it decodes as {label}, convert with: iconv -f {encoding} -t utf-8 {quoted} > {target}"


def _readable_share(text: str) -> float:
    """Share of Hangul, ASCII-printable and whitespace characters: how much `text` looks like Korean text."""
    if not text:
        return 0.0
    return sum(1 for c in text if c.isspace() or " " <= c <= "~" or _is_hangul(c)) / len(text)


def _is_hangul(char: str) -> bool:
    return "\uac00" <= char <= "\ud7a3" or "\u3131" <= char <= "\u318e"  # syllables, compatibility jamo


def _utf16_without_bom(sample: bytes) -> str | None:
    """"utf-16le" or "utf-16be" when `sample` has many NUL bytes and reads as text in that byte order
    (UTF-16 without a byte-order mark); None otherwise (text, or binary)."""
    if not sample or sample.count(0) < _NUL_SHARE * len(sample):
        return None
    even = sample[: len(sample) // 2 * 2]
    shares = {name: _readable_share(even.decode(name, errors="replace")) for name in ("utf-16le", "utf-16be")}
    best = max(shares, key=shares.__getitem__)
    return best if shares[best] > _READABLE else None


def _decodes_as_cp949(sample: bytes) -> bool:
    """True when `sample` decodes as CP949 into text with Hangul (random bytes decode too, Hangul rarely)."""
    try:
        text = sample.decode("cp949")
    except UnicodeDecodeError as error:
        if error.start < len(sample) - 1:  # only a character cut off by the end of the sample is fine
            return False
        text = sample[: error.start].decode("cp949")
    return any(_is_hangul(c) for c in text) and _readable_share(text) > _READABLE


def encoding_hint(data: bytes, path: str = "", offset: int = 0) -> str:
    """What `data` (not UTF-8 from byte `offset` on) most likely is, as a clause with the command that
    converts it; a plain request to convert when no guess fits."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return _convert_hint(path, encoding, f"{encoding.upper()} (it starts with a byte-order mark)")
    utf16 = _utf16_without_bom(data[:_SAMPLE_BYTES])
    if utf16 is not None:
        return _convert_hint(path, utf16, f"{utf16.upper()} (many NUL bytes)")
    line_start = data.rfind(b"\n", 0, offset) + 1
    if _decodes_as_cp949(data[line_start:line_start + _SAMPLE_BYTES]):
        return _convert_hint(path, "cp949", "CP949 (EUC-KR)")
    return "its encoding is not one klue recognises; save it as UTF-8"


def read_bytes(path: Path, log: ProblemLog) -> bytes | None:
    """The file's bytes, or None after logging why not (missing, a directory, unreadable)."""
    if path.is_dir():  # said plainly: "Is a directory" from the OS reads like a missing file to many
        log.error("", "is a directory, not a file")  # noqa: PLE1205 (ProblemLog, not logging)
        return None
    try:
        return path.read_bytes()
    except OSError as error:
        log.error("", f"cannot read file: {error.strerror or error}")  # noqa: PLE1205
        return None


def decode_utf8(data: bytes, log: ProblemLog) -> str | None:
    """`data` as UTF-8 text without a leading BOM, or None after logging the line of the first bytes that
    are not UTF-8 (or of a UTF-16 file's first NUL) and the encoding they most likely are."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        log.error(f"line {line}", f"bytes that are not UTF-8 at byte offset {error.start}: "
                                 f"{data[error.start:error.start + 4]!r}; "
                                 f"{encoding_hint(data, log.path, error.start)}")
        return None
    # ASCII-only UTF-16 without a BOM is valid UTF-8 (every other byte NUL): caught here, not read as text.
    if _utf16_without_bom(data[:_SAMPLE_BYTES]) is not None:
        first_nul = data.index(0)
        line = data.count(b"\n", 0, first_nul) + 1
        log.error(f"line {line}", f"not UTF-8 text (NUL bytes); {encoding_hint(data, log.path, first_nul)}")
        return None
    return text.removeprefix("\ufeff")


def read_text(path: Path, log: ProblemLog) -> str | None:
    """The file's text, or None after logging why not (missing, a directory, empty, not UTF-8)."""
    data = read_bytes(path, log)
    if data is None:
        return None
    if not data.strip():
        log.error("line 1", "the file is empty")  # noqa: PLE1205
        return None
    return decode_utf8(data, log)


def load_json(path: Path, log: ProblemLog) -> Any | None:
    """Parsed JSON, or None after logging where it is invalid or truncated."""
    text = read_text(path, log)
    if text is None:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        truncated = error.pos >= len(text.rstrip())
        what = "truncated JSON (the file ends early)" if truncated else f"invalid JSON: {error.msg}"
        log.error(f"line {error.lineno} column {error.colno}", what)
        return None


def read_json_file(path: Path, what: str) -> Any:
    """A JSON file klue wrote itself (results, a manifest, a model card, a checkpoint), parsed; DataError
    "cannot read <what>: <why>" when it cannot be read or parsed (no line-level report, as for data files)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise DataError(f"cannot read {what}: {error}", path) from None


def check_unique_guids(guids: Iterable[tuple[str, str]], log: ProblemLog) -> None:
    """`guids` yields (guid, location); a guid seen twice is an error at its second place."""
    first_seen: dict[str, str] = {}
    for guid, location in guids:
        if guid in first_seen:
            log.error(location, f"duplicate guid {guid!r} (first at {first_seen[guid]})")
        else:
            first_seen[guid] = location


def jsonl_objects(lines: Iterable[str], log: ProblemLog, text_field: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of each JSON Lines line that is an object with a string `text_field`; blank
    lines are skipped, every other line is an error in `log`."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as error:
            log.error(f"line {number}", f"not JSON: {error.msg}")
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get(text_field), str):
            log.error(f"line {number}", f"expected an object with a string field {text_field!r}")
            continue
        yield number, obj
