"""PPAC leakage: one attacker, every victim, horizon t = 10, on a 10^5-node graph (``scale``)
and on a 5,000-node one (``quick``).

    NUMBA_NUM_THREADS=1 python -m pytest bench/test_bench_ppac.py -m scale --benchmark-only

Acceptance target (issue 6, the 10^5-node case): at most 60 s on the 2-core machine.  The
graph is the giant component of an Erdos-Renyi graph with n = 10^5 and mean degree 10 (about
5 * 10^5 edges, 10^6 randomness sources); W = I - L / d_max (the paper's matrix).  Two
attackers: a node of median degree (the typical case) and the node of largest degree (the
worst case: the work grows with deg(i)^2 (t + 3)^2).
"""

import numpy as np
import pytest

from sparsedp.graphs.large import erdos_renyi_large, largest_component
from sparsedp.ppac import laplacian_consensus_matrix, leakage, ppac_layout, random_designated

SIZES = [pytest.param(5_000, marks=pytest.mark.quick, id="n=5000"),
         pytest.param(100_000, marks=pytest.mark.scale, id="n=100000")]


@pytest.fixture(scope="module", params=SIZES)
def big(request):
    g = largest_component(erdos_renyi_large(request.param, 10, seed=1))
    layout = ppac_layout(g, random_designated(g, seed=0))
    return g, layout, laplacian_consensus_matrix(g)


@pytest.mark.parametrize("which", ["median-degree", "max-degree"])
def test_leakage_all_victims_t10(benchmark, big, which):
    g, layout, W = big
    deg = g.degrees
    i = int(np.argmax(deg)) if which == "max-degree" else \
        int(np.flatnonzero(deg == int(np.median(deg)))[0])
    # i is a position; leakage names nodes by label (the giant component keeps the ER ids)
    r = benchmark.pedantic(leakage, args=(layout, W, g.id_of(i), 10), rounds=1, iterations=1)
    benchmark.extra_info.update({"n": g.n, "edges": g.num_edges, "attacker_degree": int(deg[i]),
                                 "rank": r.rank, "method": r.method})
    assert r.victims.size == g.n - 1 and np.all(np.isfinite(r.nats))
