"""Few-shot examples and what they teach: the draw, and the shot-label agreement diagnostic.

- `draw_shots`: `k` training examples for one evaluation example, by a generator seeded with (seed, guid), so
  an example gets the same shots whatever else runs and whichever model is asked; never the example itself.
  For a classification task (its prompts give `label_of`) the shots are balanced over the labels: a seeded
  order of the labels per example, one shot per label in that order (k above the number of labels starts it
  again), so over the evaluation set every label is shown about equally often and no single label is the
  last shot of most prompts. A label with no training example is left out of the draw.
- `shot_label_agreement`: the share of examples whose predicted label equals the label of their last shot
  (the one next to the question, which a small model copies most), and the share expected by chance, if the
  predictions ignored the shots: the sum over labels of P(prediction = l) x P(last shot = l), from the run's
  own counts. Agreement far above chance says the score measures the shots more than the model.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from klue.errors import DataError

RANDOM = "random, seeded by (seed, guid)"
BALANCED = "balanced over labels, seeded by (seed, guid)"


def shot_policy(k: int, label_of: Callable[[Any], str] | None) -> str:
    """The policy `draw_shots` applies, in words (results.json's `llm.shot_policy`)."""
    if k <= 0:
        return "no shots"
    return BALANCED if label_of is not None else RANDOM


def draw_shots(pool: Sequence[Any], k: int, seed: int, guid: str, guid_of: Callable[[Any], str],
               label_of: Callable[[Any], str] | None = None) -> list[Any]:
    """`k` training examples for the example `guid` (see the module docstring)."""
    if k <= 0:
        return []
    candidates = [r for r in pool if guid_of(r) != guid]
    if len(candidates) < k:
        raise DataError(f"{k} shots asked, but the training part holds only {len(candidates)} other examples")
    generator = random.Random(f"{seed}:{guid}")
    if label_of is None:
        return generator.sample(candidates, k)
    by_label: dict[str, list[Any]] = {}
    for record in candidates:
        by_label.setdefault(label_of(record), []).append(record)
    labels = sorted(by_label)
    generator.shuffle(labels)
    chosen: list[Any] = []
    used: set[int] = set()
    while len(chosen) < k:
        for label in labels:
            free = [r for r in by_label[label] if id(r) not in used]
            if free and len(chosen) < k:
                pick = generator.choice(free)
                used.add(id(pick))
                chosen.append(pick)
    return chosen


def shot_label_agreement(predicted: Sequence[str], last_shot: Sequence[str]) -> tuple[float, float] | None:
    """(agreement, chance) over aligned predicted labels and last-shot labels; None for no examples."""
    if len(predicted) != len(last_shot):
        raise ValueError("one last-shot label per prediction")
    n = len(predicted)
    if n == 0:
        return None
    agreement = sum(p == s for p, s in zip(predicted, last_shot)) / n
    predicted_counts, shot_counts = Counter(predicted), Counter(last_shot)
    chance = sum(count / n * shot_counts.get(label, 0) / n for label, count in predicted_counts.items())
    return agreement, chance
