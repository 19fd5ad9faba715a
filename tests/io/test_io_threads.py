"""`single_threaded_numerics`: inside, every BLAS and OpenMP pool loaded runs one thread; outside, as before."""

from __future__ import annotations

from threadpoolctl import threadpool_info, threadpool_limits

from klue.io.threads import BASELINE_LIBRARIES, single_threaded_numerics


def _threads() -> dict[str, int]:
    return {pool["filepath"]: pool["num_threads"] for pool in threadpool_info()}


def test_every_pool_is_single_threaded_inside_and_given_back_after() -> None:
    with threadpool_limits(limits=2):
        before = _threads()
        with single_threaded_numerics(BASELINE_LIBRARIES):
            inside = _threads()
            assert inside and set(inside.values()) == {1}
            apis = {pool["user_api"] for pool in threadpool_info()}
            assert apis == {"blas", "openmp"}  # numpy's and scipy's BLAS, scikit-learn's OpenMP
        after = _threads()
    assert {path: after[path] for path in before} == before
