"""pytest-benchmark: the engine's paths against the dense reference, same instance (quick).

    python -m pytest bench -m quick --benchmark-only

The dense reference forms H_T explicitly (mT x nT) and takes a pseudo-inverse; both sides run
on the same pinned BLAS threads (``--blas-threads``, default 1; ``bench/conftest.py``).
"""

import pytest

import sparsedp
from sparsedp.testing import dense_M

T = 20

pytestmark = pytest.mark.quick


@pytest.mark.parametrize("method", ["structured", "matrix-free"])
def test_engine(benchmark, er200, method):
    r = benchmark(sparsedp.squared_sensitivity, er200, 17, [0], T, method=method, exact=False)
    assert r.lower <= r.upper


def test_dense_reference(benchmark, er200):
    """The published approach: explicit H_T, pseudo-inverse, slice of H^+ H."""
    M = benchmark.pedantic(dense_M, args=(er200, 17, [0], T), rounds=2, iterations=1)
    assert M.shape == (T, T)
