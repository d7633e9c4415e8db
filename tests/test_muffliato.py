"""The Muffliato gossip bound: dense and matrix-free against explicit polynomials."""

import math

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from sparsedp.errors import GossipMatrixError, ParameterError
from sparsedp.graphs.weights import gossip_matrix
from sparsedp.randomwalk import muffliato as mf
from tests.conftest import connected_instance, random_doubly_stochastic, small_graph


def brute_force(W, G, u, T, sigma, alpha, gamma):
    """Explicit P_t(W) matrices and the sum over t = 0..T-1 and w in N(v), clipped."""
    A = W.toarray()
    n = A.shape[0]
    Ps = [np.eye(n), A.copy()]
    while len(Ps) < T:
        Ps.append(A @ Ps[-1] if gamma is None else gamma * A @ Ps[-1] + (1 - gamma) * Ps[-2])
    eps = np.zeros(n)
    for v in range(n):
        for P in Ps[:T]:
            for w in G.neighbors(v):
                eps[v] += P[w, u] ** 2 / np.sum(P[w] ** 2)
    ldp = alpha / (2 * sigma**2)
    return np.minimum(ldp * eps, ldp)


@pytest.mark.parametrize("kind,n,seed", [("er", 30, 1), ("grid", 25, 2), ("ba", 35, 3)])
@pytest.mark.parametrize("accelerated", [False, True])
@pytest.mark.parametrize("T", [1, 2, 12])
def test_dense_and_propagation_match_brute_force(kind, n, seed, accelerated, T):
    G = connected_instance(kind, n, seed)
    W = gossip_matrix(G)
    gamma = (mf.chebyshev_gamma(1 - np.sort(np.linalg.eigvalsh(W.toarray()))[-2])
             if accelerated else None)
    u = 2
    ref = np.delete(brute_force(W, G, u, T, 3.0, 2.0, gamma), u)
    for method in ("dense", "propagation"):
        r = mf.muffliato_rdp(W, u, T, 3.0, 2.0, accelerated=accelerated, method=method)
        assert r.kind == "estimate"  # per-message composition, not certified
        np.testing.assert_allclose(r.rdp, ref, rtol=1e-10, atol=1e-14)
    bound = mf.muffliato_rdp(W, u, T, 3.0, 2.0, accelerated=accelerated, row_norms="bound",
                             method="propagation")
    assert np.all(bound.rdp >= ref - 1e-14)  # the cheap row-norm bound gives an upper bound
    if T <= 2:  # rounds 0 and 1 use the exact row norms
        np.testing.assert_allclose(bound.rdp, ref, rtol=1e-12)


@pytest.mark.parametrize("accelerated", [False, True])
@pytest.mark.parametrize("T", [4, 25])
def test_rounds_stop_at_the_clip_without_changing_any_value(accelerated, T):
    """Sums stop once they reach the local-DP clip: the values equal the brute-force sum over
    all T rounds (T = 4: some receivers clipped, some not; T = 25: all), and T = 10^9 costs
    no more than the rounds to the clip."""
    G = connected_instance("er", 30, 1)
    W = gossip_matrix(G)
    gap, _ = mf.acceleration_gap(W)
    gamma = mf.chebyshev_gamma(gap) if accelerated else None
    ref = np.delete(brute_force(W, G, 2, T, 3.0, 2.0, gamma), 2)
    for method in ("dense", "propagation"):
        r = mf.muffliato_rdp(W, 2, T, 3.0, 2.0, accelerated=accelerated, method=method)
        np.testing.assert_allclose(r.rdp, ref, rtol=1e-10, atol=1e-14)
    clipped = np.isclose(ref, 2.0 / 18.0, rtol=1e-12, atol=0)
    assert clipped.any() and (clipped.all() == (T == 25))
    if T == 25:
        for method in ("dense", "propagation"):
            huge = mf.muffliato_rdp(W, 2, 10**9, 3.0, 2.0, accelerated=accelerated,
                                    method=method)
            np.testing.assert_allclose(huge.rdp, ref, rtol=1e-10)
            assert any("rounds summed up to" in note for note in huge.notes)


def test_neighbours_are_saturated_and_receivers_subset():
    G = connected_instance("er", 40, 4)
    W = gossip_matrix(G)
    full = mf.muffliato_rdp(W, 0, 10, 1.0, 2.0)
    # a neighbour v of u receives x_u + eta_u at round 0: the local-DP value
    for j, v in enumerate(full.receivers):
        if G.has_edge(0, v):
            assert full.rdp[j] == pytest.approx(full.local_dp)
            assert full.clipped[j] or full.rdp[j] == full.local_dp
    some = mf.muffliato_rdp(W, 0, 10, 1.0, 2.0, receivers=[5, 9], method="propagation")
    np.testing.assert_allclose(some.rdp, full.rdp[[4, 8]], rtol=1e-12)


def test_chebyshev_polynomials_fix_the_constant_vector():
    W = gossip_matrix(connected_instance("er", 30, 6))
    gamma = mf.chebyshev_gamma(0.2)
    assert 1.0 <= gamma < 2.0
    for P1 in mf.gossip_polynomial(W, np.ones(30), 15, gamma):
        np.testing.assert_allclose(P1, 1.0, atol=1e-12)


def test_rounds_rule():
    assert mf.muffliato_rounds(2048, 0.25, 1.0) == math.ceil(math.log(2048) / 0.5)
    assert mf.muffliato_rounds(2048, 0.25, 1.0, accelerated=False) == math.ceil(
        math.log(2048) / 0.25)


def test_refusals():
    W = gossip_matrix(nx.star_graph(4), scheme="row-normalised")
    with pytest.raises(GossipMatrixError, match="symmetric"):
        mf.muffliato_rdp(W, 0, 5, 1.0, 2.0)
    W = gossip_matrix(nx.cycle_graph(6))
    with pytest.raises(ParameterError, match="row_norms"):
        mf.muffliato_rdp(W, 0, 5, 1.0, 2.0, row_norms="approx")
    with pytest.raises(ParameterError, match="own data"):
        mf.muffliato_rdp(W, 0, 5, 1.0, 2.0, receivers=[0])
    with pytest.raises(ParameterError, match="gap"):
        mf.chebyshev_gamma(0.0)


def _spectrum_but_one(W):
    ev = np.sort(np.linalg.eigvalsh(W.toarray()))
    return ev[:-1]  # drop the eigenvalue 1


def _accelerated_rate_holds(W, gamma, T=40):
    """|P_t(lambda)| <= (t + 1) (gamma - 1)^(t/2) on every eigenvalue but 1, t < T."""
    lam = _spectrum_but_one(W)
    P = np.stack(list(mf.gossip_polynomial(sp.diags(lam).tocsr(), np.ones(len(lam)), T,
                                           gamma)))
    t = np.arange(T)[:, None]
    return bool(np.all(np.abs(P) <= (t + 1) * (gamma - 1) ** (t / 2) * (1 + 1e-9) + 1e-15))


COMPLETE_NO_LOOPS = {n: sp.csr_matrix((np.ones((n, n)) - np.eye(n)) / (n - 1)) for n in (3, 7)}


def test_accelerated_gossip_with_negative_second_eigenvalue():
    """W = (J - I)/6: lambda_2 = -1/6, so 1 - lambda_2 = 7/6 > 1; this used to raise 'gap
    must be in (0, 1]'.  Now g = 7/6 (it covers the spectrum, 1/6 <= 1 - g/2 = 5/12)."""
    W = COMPLETE_NO_LOOPS[7]
    g, note = mf.acceleration_gap(W)
    assert g == pytest.approx(7 / 6)
    gamma = mf.chebyshev_gamma(g)
    assert 1.0 <= gamma < 2.0 and _accelerated_rate_holds(W, gamma)
    r = mf.muffliato_rdp(W, 0, 6, 3.0, 2.0, accelerated=True)
    assert any("gamma" in s for s in r.notes)
    G = nx.complete_graph(7)
    ref = np.delete(brute_force(W, G, 0, 6, 3.0, 2.0, gamma), 0)
    np.testing.assert_allclose(r.rdp, ref, rtol=1e-10)
    p = mf.muffliato_rdp(W, 0, 6, 3.0, 2.0, accelerated=True, method="propagation")
    np.testing.assert_allclose(p.rdp, ref, rtol=1e-10)


def test_acceleration_gap_covers_the_most_negative_eigenvalue():
    """K3 without loops: lambda_2 = lambda_3 = -1/2.  Muffliato's g = 1 - lambda_2 = 3/2
    gives rho* = 1/4 < 1/2 and a rate of 0.47 per round instead of sqrt(gamma - 1) = 0.27;
    acceleration_gap gives g = 2 (1 - 1/2) = 1, which attains it."""
    W = COMPLETE_NO_LOOPS[3]
    g, note = mf.acceleration_gap(W)
    assert g == pytest.approx(1.0) and "lambda_n" in note
    assert _accelerated_rate_holds(W, mf.chebyshev_gamma(g))
    assert not _accelerated_rate_holds(W, mf.chebyshev_gamma(1.5))


def test_acceleration_gap_is_muffliato_gap_in_the_usual_case_and_rate_holds():
    """Metropolis W on graphs and random symmetric doubly stochastic W: g = 1 - lambda_2 when
    lambda_n >= -(1 + lambda_2)/2, and the accelerated rate holds on the whole spectrum."""
    rng = np.random.default_rng(7)
    usual = 0
    for _ in range(30):
        G = small_graph(rng)
        W = (gossip_matrix(G) if rng.random() < 0.5
             else random_doubly_stochastic(G, rng, "sinkhorn"))
        lam = _spectrum_but_one(W)
        g, _ = mf.acceleration_gap(W)
        assert 0.0 < g <= 2.0
        if lam[0] >= -(1 + lam[-1]) / 2:
            assert g == pytest.approx(1.0 - lam[-1], abs=1e-12)
            usual += 1
        if max(abs(lam[0]), abs(lam[-1])) < 1 - 1e-9:
            assert _accelerated_rate_holds(W, mf.chebyshev_gamma(g))
    assert usual >= 20


def test_periodic_matrix_keeps_muffliato_gap_with_a_note():
    W = gossip_matrix(nx.cycle_graph(6), scheme="max-degree")  # W_ii = 0, eigenvalue -1
    g, note = mf.acceleration_gap(W)
    assert g == pytest.approx(1.0 - np.cos(2 * np.pi / 6)) and "periodic" in note
    r = mf.muffliato_rdp(W, 0, 5, 1.0, 2.0, accelerated=True)
    assert any("periodic" in s for s in r.notes)


def test_gap_range_is_zero_to_two():
    assert mf.chebyshev_gamma(2.0) == 1.0  # rho* = 0: plain gossip
    for g in (0.01, 0.3, 1.0, 1.5, 1.99):  # Muffliato's form cancels towards g = 2
        muffliato_form = 2 * (1 - math.sqrt(g * (1 - g / 4))) / (1 - g / 2) ** 2
        assert mf.chebyshev_gamma(g) == pytest.approx(muffliato_form, rel=1e-8)
    for bad in (0.0, -0.1, 2.0001, math.nan):
        with pytest.raises(ParameterError, match=r"gap must be in \(0, 2\]"):
            mf.chebyshev_gamma(bad)
    assert mf.muffliato_rounds(100, 1.5, 1.0) == math.ceil(math.log(100) / math.sqrt(1.5))
