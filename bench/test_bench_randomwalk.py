"""pytest-benchmark: one column of the log-Green matrix on a 10^6-node graph (``scale``) and
on a 10^4-node one (``quick``).

    python -m pytest bench/test_bench_randomwalk.py -m scale --benchmark-only

Erdos-Renyi, average degree 20, Metropolis weights; the spectral enclosure and the column
are timed together (one source, all receivers).  The acceptance target (10^6 nodes) is 60 s
on the 2-core machine; ``bench/randomwalk_column.py`` prints the split and writes the JSON record.
"""

import pytest

from sparsedp.graphs import large as lg
from sparsedp.graphs.weights import gossip_matrix
from sparsedp.randomwalk.log_green import log_green_columns, spectral_interval

TOL = 1e-8
SIZES = [pytest.param(10_000, marks=pytest.mark.quick, id="n=10000"),
         pytest.param(1_000_000, marks=pytest.mark.scale, id="n=1000000")]


@pytest.fixture(scope="module", params=SIZES)
def W_er(request):
    return gossip_matrix(lg.largest_component(lg.erdos_renyi_large(request.param, 20, seed=0)))


def one_column(W, method):
    interval = spectral_interval(W)
    return log_green_columns(W, [0], method=method, tol=TOL, interval=interval)


@pytest.mark.parametrize("method", ["chebyshev", "quadrature"])
def test_log_green_column(benchmark, W_er, method):
    col = benchmark.pedantic(one_column, args=(W_er, method), rounds=1, iterations=1)
    assert col.error_bound[0] <= TOL
    benchmark.extra_info["error_bound"] = float(col.error_bound[0])
    benchmark.extra_info["details"] = {k: v for k, v in col.details.items()
                                       if k in ("degree", "nodes", "matvecs")}
