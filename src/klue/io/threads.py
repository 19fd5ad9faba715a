"""Results that do not depend on the thread count: numerical libraries single-threaded where it matters.

A multi-threaded BLAS sums a dot product in per-thread pieces, so the same fit gives other last bits with
1 and with 2 threads; an L-BFGS fit amplifies them into other predictions (KLUE NLI's CPU baseline: 52.93
vs 53.10 accuracy). A benchmark cell under Ray gets one thread, a local process as many as the machine has,
so the same seed must not depend on it. Inside `single_threaded_numerics()` every BLAS and OpenMP pool
loaded in the process runs one thread; on leaving, the previous limits come back. The CPU baselines and
every evaluation (scoring, intervals, comparisons) run inside it.

threadpoolctl limits the libraries loaded when the limit is set, so `preload` names the modules to import
first: numpy's BLAS always; the baselines add scipy's own BLAS (scipy.linalg: L-BFGS-B calls it) and
scikit-learn's OpenMP runtime. Scoring does not load scipy's BLAS, and `klue score` must start fast.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager

BASELINE_LIBRARIES = ("numpy", "scipy.linalg", "sklearn")


@contextmanager
def single_threaded_numerics(preload: tuple[str, ...] = ("numpy",)) -> Iterator[None]:
    """Every BLAS and OpenMP thread pool loaded in this process (after importing `preload`) limited to one
    thread while inside."""
    for module in preload:
        importlib.import_module(module)
    from threadpoolctl import threadpool_limits  # ships no type hints (mypy: ignore_missing_imports)

    with threadpool_limits(limits=1):
        yield
