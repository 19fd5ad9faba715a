"""KLUE-RE entity markers: the sentence with its subject and object mentions wrapped in marker strings, as the
official baseline marks them (`<subj>`...`</subj>`, `<obj>`...`</obj>`; typed: `<subj:PER>`...`</subj:PER>`).
The fine-tuning adapter adds the markers to the tokenizer; the sentence-embedding declaration embeds the
marked sentence as text. Torch-free.
"""

from __future__ import annotations

from typing import Any

from .records import ENTITY_TYPES


def marker_pair(role: str, entity_type: str | None) -> tuple[str, str]:
    """The opening and closing marker of `role` ("subj" / "obj"), typed when `entity_type` is given."""
    suffix = f":{entity_type}" if entity_type else ""
    return f"<{role}{suffix}>", f"</{role}{suffix}>"


def all_markers() -> list[str]:
    markers = [m for role in ("subj", "obj") for m in marker_pair(role, None)]
    markers += [m for role in ("subj", "obj") for t in ENTITY_TYPES for m in marker_pair(role, t)]
    return markers


def mark(record: Any, typed: bool) -> tuple[str, str, str]:
    """The sentence with markers around both mentions, and the subject's and object's opening markers.

    Insertions are made from the end of the sentence backwards so earlier offsets stay valid; at one
    position a closing marker goes before an opening one (adjacent mentions), and nested mentions nest."""
    text = record.sentence
    inserts: list[tuple[int, int, str]] = []  # (position, order at that position, marker)
    openings = []
    for role, entity in (("subj", record.subject_entity), ("obj", record.object_entity)):
        opening, closing = marker_pair(role, entity.type if typed else None)
        openings.append(opening)
        inserts.append((entity.start_idx, 1, opening))
        inserts.append((entity.end_idx + 1, 0, closing))
    for position, _, marker in sorted(inserts, reverse=True):
        text = text[:position] + marker + text[position:]
    return text, openings[0], openings[1]
