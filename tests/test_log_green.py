"""The log-Green matrix L = -log(I - W + J/n): dense, matrix-free columns, ln det'(I - W)."""

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from sparsedp.errors import GossipMatrixError, ParameterError
from sparsedp.graphs.graph import hypercube
from sparsedp.graphs.weights import gossip_matrix
from sparsedp.randomwalk import log_green as lgm
from tests.conftest import connected_instance


def explicit_series(W, terms):
    """sum_{t=1}^{terms} (W^t - J/n) / t by dense powers (independent of eigh)."""
    A = W.toarray()
    n = A.shape[0]
    P, S = np.eye(n), np.zeros((n, n))
    for t in range(1, terms + 1):
        P = P @ A
        S += (P - 1.0 / n) / t
    return S


INSTANCES = [(kind, n, seed, scheme) for seed, (kind, n) in enumerate(
    [("er", 30), ("ba", 45), ("grid", 36), ("er", 60), ("ba", 25), ("ring", 15)])
    for scheme in ("metropolis", "max-degree")]


def instance(kind, n, seed, scheme):
    W = gossip_matrix(connected_instance(kind, n, seed), scheme=scheme)
    return W


def test_dense_matrix_equals_series_with_tail():
    W = instance("er", 30, 1, "metropolis")
    L = lgm.log_green_matrix(W)
    iv = lgm.spectral_interval(W)
    terms = 400
    from sparsedp.randomwalk.accounting import truncation_tail

    tail = truncation_tail(terms, iv)
    assert tail < 1e-10
    assert np.abs(L - explicit_series(W, terms)).max() <= tail + 1e-12
    np.testing.assert_allclose(L @ np.ones(30), 0.0, atol=1e-12)  # L 1 = 0
    np.testing.assert_allclose(L, L.T, atol=1e-14)


@pytest.mark.parametrize("kind,n,seed,scheme", INSTANCES)
@pytest.mark.parametrize("method", ["chebyshev", "lanczos", "quadrature"])
def test_columns_agree_with_eigendecomposition_within_bound(kind, n, seed, scheme, method):
    W = instance(kind, n, seed, scheme)
    L = lgm.log_green_matrix(W)
    sources = [0, n // 2]
    tol = 1e-9
    res = lgm.log_green_columns(W, sources, method=method, tol=tol)
    err = np.linalg.norm(res.columns - L[:, sources], axis=0)
    assert np.all(err <= res.error_bound)
    assert np.all(res.error_bound <= 2 * tol)
    # at that tolerance the agreement is also 1e-8 relative to the column
    assert np.all(err <= 1e-8 * np.linalg.norm(L[:, sources], axis=0))


def test_periodic_matrix_is_fine():
    """Max-degree weights on a hypercube: W_ii = 0, eigenvalue -1; L is still defined."""
    W = gossip_matrix(hypercube(4), scheme="max-degree")
    iv = lgm.spectral_interval(W)
    assert iv.lower == pytest.approx(-1.0)
    L = lgm.log_green_matrix(W)
    for method in ("chebyshev", "quadrature", "lanczos"):
        res = lgm.log_green_columns(W, [3], method=method, tol=1e-9)
        assert np.linalg.norm(res.columns[:, 0] - L[:, 3]) <= res.error_bound[0]


def test_lanczos_interval_path_contains_spectrum(monkeypatch):
    """The large-n enclosure (Gershgorin + Lanczos) on a small graph, against eigvalsh."""
    W = instance("er", 120, 3, "metropolis")
    ev = np.linalg.eigvalsh(W.toarray())
    monkeypatch.setattr(lgm, "DENSE_MAX_N", 50)
    iv = lgm.spectral_interval(W)
    assert "Lanczos" in iv.how
    assert iv.lower <= ev[0] and ev[-2] <= iv.upper < 1.0
    L = np.linalg.eigh(W.toarray() - 1 / 120)
    res = lgm.log_green_columns(W, [5], method="chebyshev", tol=1e-9, interval=iv)
    V, mu = L[1], L[0]
    exact = (V * -np.log1p(-mu)) @ V[5]
    assert np.linalg.norm(res.columns[:, 0] - exact) <= res.error_bound[0]


def test_chebyshev_tail_bound_bounds_the_scalar_error():
    iv = lgm.SpectralInterval(-0.6, 0.9, "test")
    xs, r, c0 = lgm._chebyshev_parameters(iv)
    lam = np.linspace(-0.6, 0.9, 2001)
    x = (2 * lam - iv.lower - iv.upper) / (iv.upper - iv.lower)
    for K in (3, 10, 30):
        approx = c0 + sum(2 / (k * r**k) * np.cos(k * np.arccos(x)) for k in range(1, K + 1))
        err = np.abs(approx + np.log1p(-lam)).max()
        assert err <= lgm.chebyshev_tail_bound(K, iv) * (1 + 1e-9) + 1e-14


def test_gauss_legendre_bound_bounds_the_scalar_error():
    iv = lgm.SpectralInterval(-1.0, 0.95, "test")
    for m in (2, 5, 12, 40):
        s, w = lgm._gauss_legendre_01(m)
        lam = np.linspace(-1.0, 0.95, 777)
        quad = (w[None, :] * lam[:, None] / (1 - s[None, :] * lam[:, None])).sum(axis=1)
        err = np.abs(-np.log1p(-lam) - quad).max()
        assert err <= lgm.gauss_legendre_error_bound(m, iv)


@pytest.mark.parametrize("kind,n,seed", [("er", 50, 7), ("grid", 49, 8), ("ba", 60, 9)])
def test_log_pseudo_determinant_exact_methods(kind, n, seed):
    W = gossip_matrix(connected_instance(kind, n, seed))
    L = lgm.log_green_matrix(W)
    reference = -np.trace(L)
    for method in ("dense", "sparse-lu"):
        r = lgm.log_pseudo_determinant(W, method=method)
        assert r.kind == "exact"
        assert r.value == pytest.approx(reference, rel=1e-8)
    # and it is the sum of L over ordered pairs u != v
    assert L.sum() - np.trace(L) == pytest.approx(reference, rel=1e-8)


def test_slq_within_stated_error():
    W = gossip_matrix(connected_instance("er", 300, 11))
    exact = lgm.log_pseudo_determinant(W, method="dense").value
    r = lgm.log_pseudo_determinant(W, method="slq", probes=200, seed=1)
    assert r.kind == "estimate"
    assert abs(r.value - exact) <= r.error
    assert r.details["quadrature_bound"] < 1e-6


def test_refusals():
    G = nx.star_graph(5)
    with pytest.raises(GossipMatrixError, match="symmetric"):
        lgm.log_green_columns(gossip_matrix(G, scheme="row-normalised"), [0])
    block = sp.block_diag([gossip_matrix(nx.cycle_graph(4)), gossip_matrix(nx.cycle_graph(5))])
    with pytest.raises(GossipMatrixError, match="reducible"):
        lgm.log_green_columns(block, [0])
    W = gossip_matrix(nx.cycle_graph(6))
    with pytest.raises(ParameterError, match="unknown log-Green method"):
        lgm.log_green_columns(W, [0], method="magic")
    with pytest.raises(ParameterError, match="tol"):
        lgm.log_green_columns(W, [0], tol=0.0)
    with pytest.raises(ParameterError, match="unknown log-determinant"):
        lgm.log_pseudo_determinant(W, method="magic")
    with pytest.raises(ParameterError, match="probes"):
        lgm.log_pseudo_determinant(W, method="slq", probes=1)


def test_quadrature_uses_amg_for_a_small_gap():
    """A 60-ring (gap ~ 4e-3): nodes near s = 1 are ill-conditioned and use the pyamg
    preconditioner; the result is still within its bound."""
    W = gossip_matrix(nx.cycle_graph(60))
    L = lgm.log_green_matrix(W)
    res = lgm.log_green_columns(W, [0], method="quadrature", tol=1e-9)
    assert res.details["preconditioned"]
    assert np.linalg.norm(res.columns[:, 0] - L[:, 0]) <= res.error_bound[0] <= 2e-9
