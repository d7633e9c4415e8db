"""Certified bounds on high moments from low ones (sparsedp.linalg.tail_moments) and the
decayed truncation errors of the gossip lags they give (sparsedp.linalg.moments)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sparsedp
from sparsedp.linalg.moments import LagPropagator
from sparsedp.linalg.tail_moments import moment_tail_bounds


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 10**6), atoms=st.integers(1, 30), q=st.integers(1, 4),
       at_end=st.booleans(), b=st.sampled_from([1.0, 1.0 + 1e-9, 0.5]),
       rel=st.sampled_from([0.0, 1e-12, 1e-9]))
def test_bounds_hold_for_discrete_measures(seed, atoms, q, at_end, b, rel):
    """For positive measures on [0, b] (atoms anywhere, one at b or not), moments 0 .. 2q
    known to a relative ``rel``: every bound is >= the true moment of every order up to
    2000, and never above the trivial bound ``b^(j - 2q) m_2q`` (of the box's top)."""
    rng = np.random.default_rng(seed)
    x = b * rng.random(atoms) ** rng.uniform(0.1, 3.0)
    if at_end:
        x[0] = b
    w = rng.random(atoms) ** 3 * 10.0 ** rng.uniform(-20, 0)
    m = np.array([w @ x**i for i in range(2 * q + 1)])
    orders = np.unique(np.concatenate([np.arange(2 * q, 2 * q + 60), [100, 500, 2000]]))
    B = moment_tail_bounds(m * (1 - rel), m * (1 + rel), b, orders)
    true = np.array([w @ x**j for j in orders])
    assert np.all(B >= true)
    trivial = b ** (orders - 2 * q) * m[-1] * (1 + rel) * (1 + 1e-9)
    assert np.all(B <= trivial + np.finfo(np.float64).tiny)


def test_a_geometric_measure_has_a_vanishing_tail_and_mass_at_b_none():
    """One atom at 0.3 (moments 0.3^i): the higher moments are bounded by their true values
    plus 1e-9 of the last known one (the trivial bound: that one itself); an atom at b = 1
    keeps every moment at m_0 (no decay to use)."""
    orders = np.array([7, 20, 200])
    m = 0.3 ** np.arange(7)
    B = moment_tail_bounds(m * (1 - 1e-12), m * (1 + 1e-12), 1.0, orders)
    assert np.all(B >= 0.3**orders)
    assert np.all(B <= 0.3**orders + 1e-9 * m[-1])
    m = np.ones(7)
    B = moment_tail_bounds(m, m, 1.0, orders)
    np.testing.assert_allclose(B, 1.0, rtol=1e-9)


@pytest.mark.parametrize("kind, n, T, level, observers", [
    ("er", 3000, 150, 1e-3, [0]),
    ("er", 3000, 150, 1e-6, [0, 5]),
    ("chung-lu", 3000, 200, 1e-2, [0]),
    ("ring", 100, 300, 1e-2, [3]),
])
def test_truncated_lags_are_within_their_decayed_errors(kind, n, T, level, observers):
    """Every truncated lag of mu and of a, compared with the lags propagated to the end:
    ``|mu_l - mu_hat_l| <= mu_decay_l eps eps^T + drift`` and ``|a_l - a_hat_l| <= a_decay_l
    eps eps_target + drift`` (the reference's own rounding allowed: 1e-15 / n); and the
    decay is used (some weight below 1/2)."""
    import networkx as nx

    from sparsedp.graphs import large

    if kind == "er":
        graph = large.largest_component(large.erdos_renyi_large(n, 10, seed=3))
    elif kind == "chung-lu":
        graph = large.largest_component(large.chung_lu_large(n, 10, seed=3))
    else:
        graph = nx.circulant_graph(n, [1, 2, 7])
    W = sparsedp.gossip_matrix(graph)
    n = W.shape[0]
    target = n // 2
    cut = LagPropagator(W, observers, target, T, frontier=False).advance(level).result()
    full = LagPropagator(W, observers, target, T, frontier=False).advance(None).result()
    assert cut.truncated
    tolerance = 1e-15 / n
    eps = cut.eps
    mu_bound = cut.mu_weights[:, None, None] * np.outer(eps, eps)[None] + cut.drift
    mu_gap = np.abs(full.mu - cut.mu)[cut.mu_truncated]
    assert np.all(mu_gap <= mu_bound[cut.mu_truncated] + tolerance)
    a_bound = cut.a_weights[:, None] * (eps * cut.eps_target)[None] + cut.drift
    a_gap = np.abs(full.a - cut.a)[cut.a_truncated]
    assert np.all(a_gap <= a_bound[cut.a_truncated] + tolerance)
    assert cut.mu_weights[cut.mu_truncated].min() < 0.5


@pytest.mark.parametrize("view, observers, T, laziness", [
    ("secure-summation", [0], 300, 0.0),
    ("secure-summation-v1", [0], 200, 0.5),  # lazy: the v1 form's lambda_min bound, shifted lags
    ("secure-summation", [0, 1, 2], 150, 0.0),
])
def test_decayed_truncation_intervals_contain_the_untruncated_value(view, observers, T,
                                                                   laziness):
    """ER(2 x 10^4): the certified interval with the decayed truncation contains the value
    computed from every lag (the Gram path, which truncates nothing)."""
    from sparsedp.graphs import large

    graph = large.largest_component(large.erdos_renyi_large(20_000, 20, seed=7))
    W = sparsedp.gossip_matrix(graph, laziness=laziness)
    target = graph.n // 3
    truncated = sparsedp.squared_sensitivity(W, target, observers, T, view=view, exact=False,
                                             truncation_rtol=1e-6)
    assert truncated.solver["truncated"]
    reference = sparsedp.squared_sensitivity(W, target, observers, T, view=view, exact=False,
                                             method="gram")
    value = 0.5 * (reference.lower + reference.upper)
    assert truncated.lower <= value <= truncated.upper
    assert truncated.relative_gap <= 3e-6


def test_underflow_and_overflow_give_bounds_not_zero_or_nan():
    """A power below the smallest double still gets a positive bound (the reviewer's
    reproducer: 2^-1080 > 0), and b > 1 with an order whose power overflows gives +inf
    rather than NaN."""
    assert moment_tail_bounds([1, .5, .25], [1, .5, .25], 0.5, [1080])[0] > 0
    m = 0.3 ** np.arange(7)
    assert moment_tail_bounds(m, m, 1.1, [8000])[0] == np.inf
