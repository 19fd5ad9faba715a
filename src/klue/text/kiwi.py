"""The Kiwi morphological analyser (kiwipiepy), shared by everything that analyses Korean morphemes.

Loading Kiwi's model takes seconds and analysing does not change the analyser, so one instance per
process and worker count serves the baselines, the DP adapter's predicted POS tags and the morpheme-aware
tokenizer. One worker thread by default: Kiwi's multi-threaded batch analysis is only used on request.
"""

from __future__ import annotations

import functools
from typing import Any


@functools.cache
def analyser(num_workers: int = 1) -> Any:
    """The process's `kiwipiepy.Kiwi` with `num_workers` threads (kiwipiepy >= 0.21: -1 = every core)."""
    from kiwipiepy import Kiwi

    return Kiwi(num_workers=num_workers)
