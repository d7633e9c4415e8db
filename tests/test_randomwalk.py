"""Random-walk accounting: the series, the log-Green bound and its variants."""

import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparsedp.errors import GossipMatrixError, GraphError, ParameterError
from sparsedp.graphs.weights import gossip_matrix
from sparsedp.privacy.gaussian import DEFAULT_ALPHAS, rdp_to_dp
from sparsedp.randomwalk import accounting as rw
from sparsedp.randomwalk import log_green as lgm
from tests.conftest import connected_instance

SIGMA, ALPHA = 2.0, 2.0  # sigma^2 = 4 = 2 alpha (alpha - 1): the boundary of the condition


def dense_series(W, u, T):
    A = W.toarray()
    P, S = np.eye(A.shape[0]), np.zeros(A.shape[0])
    for t in range(1, T + 1):
        P = P @ A
        S += P[u] / t
    return S


@pytest.fixture(scope="module")
def W_er():
    return gossip_matrix(connected_instance("er", 40, 5))


def test_harmonic_number():
    assert rw.harmonic_number(1) == 1.0
    assert rw.harmonic_number(4) == pytest.approx(25 / 12, rel=1e-15)
    big = 2_000_000
    assert rw.harmonic_number(big) == pytest.approx(
        math.log(big) + np.euler_gamma + 1 / (2 * big) - 1 / (12 * big**2), rel=1e-14)
    assert rw.harmonic_number(1000) > math.log(1000)  # ln T under-reports


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), T=st.integers(1, 60), kind=st.sampled_from(["er", "ba"]))
def test_series_matches_dense_powers(seed, T, kind):
    W = gossip_matrix(connected_instance(kind, 25, seed))
    u = seed % 25
    np.testing.assert_allclose(rw.walk_series(W, u, T), dense_series(W, u, T),
                               rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("kind,n,seed", [("er", 40, 1), ("grid", 36, 2), ("ba", 30, 3),
                                         ("ring", 20, 4)])
@pytest.mark.parametrize("T", [5, 60, 400])
def test_log_green_bound_dominates_series_and_is_tight(kind, n, seed, T):
    """H_T/n + L_uv - tail <= series <= H_T/n + L_uv + tail (remainder bound), and the
    reported bound (with the L error added) is >= the exact series."""
    W = gossip_matrix(connected_instance(kind, n, seed))
    u = 1
    series = rw.random_walk_rdp(W, u, T, SIGMA, ALPHA, contributions=1, clip=False,
                                method="series")
    bound = rw.random_walk_rdp(W, u, T, SIGMA, ALPHA, contributions=1, clip=False,
                               method="log-green", tol=1e-12)
    assert np.all(bound.rdp >= series.rdp - 1e-15)
    L = lgm.log_green_matrix(W)
    iv = lgm.spectral_interval(W)
    scale = ALPHA / SIGMA**2
    core = scale * (rw.harmonic_number(T) / n + np.delete(L[u], u))
    tail = scale * rw.truncation_tail(T, iv)
    assert np.all(np.abs(series.rdp - core) <= tail + 1e-12)
    assert np.all(bound.rdp - core <= tail + 1e-9)


def test_truncation_tail_is_a_bound_on_the_remainder():
    W = gossip_matrix(connected_instance("er", 30, 8), scheme="max-degree")
    iv = lgm.spectral_interval(W)
    L = lgm.log_green_matrix(W)
    for T in (1, 3, 10, 50):
        partial = np.array([dense_series(W, u, T) for u in range(30)]) - rw.harmonic_number(T) / 30
        assert np.abs(L - partial).max() <= rw.truncation_tail(T, iv) * (1 + 1e-9) + 1e-14


def test_contributions_scale_and_kind(W_er):
    one = rw.random_walk_rdp(W_er, 0, 100, SIGMA, ALPHA, contributions=1, clip=False)
    three = rw.random_walk_rdp(W_er, 0, 100, SIGMA, ALPHA, contributions=3, clip=False)
    expected = rw.random_walk_rdp(W_er, 0, 100, SIGMA, ALPHA, clip=False)
    assert one.kind == "upper" and expected.kind == "estimate"
    np.testing.assert_allclose(three.rdp, 3 * one.rdp, rtol=1e-14)
    np.testing.assert_allclose(expected.rdp, (100 / 40) * one.rdp, rtol=1e-14)
    with pytest.raises(ParameterError, match="contributions"):
        rw.random_walk_rdp(W_er, 0, 100, SIGMA, ALPHA, contributions=0.5)


def test_clip_at_local_dp(W_er):
    raw = rw.random_walk_rdp(W_er, 0, 300, SIGMA, ALPHA, contributions=2, clip=False)
    clipped = rw.random_walk_rdp(W_er, 0, 300, SIGMA, ALPHA, contributions=2)
    ldp = 2 * ALPHA / (2 * SIGMA**2)
    assert clipped.local_dp == pytest.approx(ldp)
    np.testing.assert_allclose(clipped.rdp, np.minimum(raw.rdp, ldp))
    assert np.array_equal(clipped.clipped, raw.rdp > ldp)


def test_sender_known_is_max_over_neighbours(W_er):
    T, u = 80, 3
    G = nx.from_scipy_sparse_array(W_er)
    G.remove_edges_from(nx.selfloop_edges(G))
    base = (ALPHA / SIGMA**2) * dense_series(W_er, u, T)
    base[u] = ALPHA / (2 * SIGMA**2)
    expected = np.array([max(base[w] for w in G.neighbors(v)) for v in range(40) if v != u])
    r = rw.random_walk_rdp(W_er, u, T, SIGMA, ALPHA, contributions=1, sender_known=True,
                           clip=False)
    np.testing.assert_allclose(r.rdp, expected, rtol=1e-12)
    plain = rw.random_walk_rdp(W_er, u, T, SIGMA, ALPHA, contributions=1)
    clipped = rw.random_walk_rdp(W_er, u, T, SIGMA, ALPHA, contributions=1, sender_known=True)
    # neighbours of u get the local-DP value; the variant is never below the plain bound's
    # value at some neighbour
    for j, v in enumerate(clipped.receivers):
        if G.has_edge(u, v):
            assert clipped.rdp[j] == pytest.approx(clipped.local_dp)
    assert clipped.rdp.mean() >= plain.rdp.mean()


def test_collusion_is_sum_over_coalition(W_er):
    coalition = [5, 9, 17]
    single = rw.random_walk_rdp(W_er, 0, 50, SIGMA, ALPHA, contributions=1, clip=False,
                                receivers=coalition)
    joint = rw.random_walk_rdp(W_er, 0, 50, SIGMA, ALPHA, contributions=1, clip=False,
                               coalition=coalition)
    assert joint.rdp.shape == (1,)
    assert joint.rdp[0] == pytest.approx(single.rdp.sum(), rel=1e-14)
    # eq. (17) directly: the series of the summed rows
    direct = (ALPHA / SIGMA**2) * dense_series(W_er, 0, 50)[coalition].sum()
    assert joint.rdp[0] == pytest.approx(direct, rel=1e-12)
    with pytest.raises(ParameterError, match="coalition"):
        rw.random_walk_rdp(W_er, 0, 50, SIGMA, ALPHA, coalition=[0, 5])


def test_noise_condition_is_enforced(W_er):
    assert rw.max_renyi_order(2.0) == pytest.approx(2.0)
    with pytest.raises(ParameterError, match="2 alpha"):
        rw.random_walk_rdp(W_er, 0, 50, 1.9, 2.0)
    rw.require_noise_condition(2.0, 2.0)  # boundary holds


def test_epsilon_optimises_over_valid_orders(W_er):
    r = rw.random_walk_rdp(W_er, 0, 4000, 10.0, 2.0, contributions=100)
    eps = r.epsilon(1e-6)
    orders = DEFAULT_ALPHAS
    amax = rw.max_renyi_order(10.0)
    ldp_only = rdp_to_dp(orders * r.local_dp / 2.0, 1e-6, orders)[0]
    for j in (0, 7, 20):
        curve = np.where(orders <= amax, orders * r.rdp[j] / 2.0, orders * r.local_dp / 2.0)
        assert eps[j] == rdp_to_dp(curve, 1e-6, orders)[0]
        assert eps[j] <= ldp_only
    assert eps.min() < ldp_only
    # a higher order beyond alpha_max uses local DP
    assert np.all(r.rdp_at(amax + 1) == pytest.approx(r.local_dp * (amax + 1) / 2.0))


def test_mean_over_pairs_matches_dense(W_er):
    T, n = 150, 40
    m = rw.random_walk_mean_rdp(W_er, T, SIGMA, ALPHA, contributions=2)
    L = lgm.log_green_matrix(W_er)
    iv = lgm.spectral_interval(W_er)
    offdiag = (L.sum() - np.trace(L)) / (n * (n - 1))
    expected = (2 * ALPHA / SIGMA**2) * (rw.harmonic_number(T) / n + offdiag
                                         + rw.truncation_tail(T, iv))
    assert m.kind == "upper"
    assert m.value == pytest.approx(expected, rel=1e-10)
    series_mean = np.mean([np.delete(dense_series(W_er, u, T), u) for u in range(n)])
    assert m.value >= (2 * ALPHA / SIGMA**2) * series_mean


def test_large_scale_path_on_a_periodic_graph():
    """Max-degree weights on an even cycle: periodic (eigenvalue -1); the bound still holds."""
    W = gossip_matrix(nx.cycle_graph(16), scheme="max-degree")
    for T in (7, 8, 100):
        s = rw.random_walk_rdp(W, 0, T, SIGMA, ALPHA, contributions=1, clip=False,
                               method="series")
        b = rw.random_walk_rdp(W, 0, T, SIGMA, ALPHA, contributions=1, clip=False,
                               method="log-green", column_method="quadrature")
        assert np.all(b.rdp >= s.rdp - 1e-15)


def test_bad_input():
    with pytest.raises(GossipMatrixError, match="symmetric"):
        rw.random_walk_rdp(gossip_matrix(nx.star_graph(4), scheme="row-normalised"), 0, 5,
                           SIGMA, ALPHA)
    W = gossip_matrix(nx.cycle_graph(5))
    with pytest.raises(GraphError, match="unknown node"):
        rw.random_walk_rdp(W, 9, 5, SIGMA, ALPHA)
    with pytest.raises(ParameterError, match="T"):
        rw.random_walk_rdp(W, 0, 0, SIGMA, ALPHA)
    with pytest.raises(ParameterError, match="alpha"):
        rw.random_walk_rdp(W, 0, 5, SIGMA, 1.0)
    with pytest.raises(ParameterError, match="own data"):
        rw.random_walk_rdp(W, 0, 5, SIGMA, ALPHA, receivers=[0, 1])
    with pytest.raises(ParameterError, match="unknown random-walk method"):
        rw.random_walk_rdp(W, 0, 5, SIGMA, ALPHA, method="magic")
