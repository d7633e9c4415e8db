"""Cyffers et al. (2022)'s Muffliato-SGD bound as MFDL computes it (the dashed lines of Bellet
et al.'s Fig. 2): against a literal dense transcription of MFDL's formula, and its relation to
the certified matrix-factorisation accounting of the same view."""

import networkx as nx
import numpy as np
import pytest

import sparsedp
from sparsedp.errors import SparseDPError
from sparsedp.mf import mf_sensitivity
from sparsedp.randomwalk import muffliato_sgd_rdp
from tests.conftest import connected_instance


def _mfdl_literal(W: np.ndarray, G: nx.Graph, u: int, v: int, T: int, alpha: float,
                  sigma: float) -> float:
    """MFDL's epsilon_upper_bound, transcribed with dense matrix powers."""
    total = 0.0
    for s in range(T):
        product = np.linalg.matrix_power(W, s)
        norms = np.linalg.norm(product, axis=0) ** 2
        for w in G.neighbors(v):
            total += product[u, w] / norms[w] * (T - s)
    return alpha / (2 * sigma**2) * min(total, T)


@pytest.mark.parametrize("seed", range(10))
def test_equals_mfdl_formula_on_random_graphs(seed):
    G = connected_instance("er", 20, 500 + seed)
    W = sparsedp.gossip_matrix(G, scheme="row-normalised-self-loops")
    v, T = seed % 20, 7
    bound = muffliato_sgd_rdp(W, v, T, sigma=1.3, alpha=3.0)
    assert bound.kind == "estimate" and np.isnan(bound.rdp[v])
    for u in range(20):
        if u != v:
            assert bound.rdp[u] == pytest.approx(
                _mfdl_literal(W.toarray(), G, u, v, T, 3.0, 1.3), rel=1e-10)
    assert np.all(bound.rdp[np.arange(20) != v] <= bound.local_dp)


def test_neighbours_are_at_local_dp_and_ours_is_below():
    """Within distance 1 the estimate is the local-DP level; the certified MF upper bound of
    the same PNDP view (1/(d+1) weights, attacker's own noise known) is at or below it."""
    G = nx.florentine_families_graph()
    W = sparsedp.gossip_matrix(G, scheme="row-normalised-self-loops")
    T = 6
    bound = muffliato_sgd_rdp(W, 0, T)
    for u in range(1, 15):
        ours = mf_sensitivity(W, u, [0], T).rdp(alpha=2.0, sigma=1.0)
        assert ours <= bound.local_dp * (1 + 1e-12)
        if W[0, u] > 0:
            assert bound.rdp[u] == bound.local_dp and bound.clipped[u]


def test_bad_input():
    W = sparsedp.gossip_matrix(nx.path_graph(4))
    for kwargs in (dict(receiver=7, T=3), dict(receiver=0, T=0),
                   dict(receiver=0, T=3, sigma=-1.0), dict(receiver=0, T=3, alpha=1.0)):
        with pytest.raises(SparseDPError) as info:
            muffliato_sgd_rdp(W, **kwargs)
        assert "\n" not in str(info.value)
