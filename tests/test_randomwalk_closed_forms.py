"""Closed forms for the complete graph, ring and star against the exact series, and the
paper's printed formulas against both (they disagree)."""

import math

import networkx as nx
import numpy as np
import pytest

from sparsedp.errors import ParameterError
from sparsedp.graphs.generators import ring
from sparsedp.graphs.weights import gossip_matrix
from sparsedp.randomwalk import closed_forms as cf
from sparsedp.randomwalk.accounting import harmonic_number, walk_series
from sparsedp.randomwalk.log_green import log_green_matrix


@pytest.mark.parametrize("n", [3, 8, 13])
@pytest.mark.parametrize("T", [1, 2, 17, 200])
@pytest.mark.parametrize("laziness", [0.0, 0.5])
def test_ring_series(n, T, laziness):
    """gossip_matrix(ring, max-degree) has kappa = 0 (1/3 for n = 3, a triangle); laziness a
    gives kappa = a + (1 - a) kappa_0."""
    W = gossip_matrix(ring(n), scheme="max-degree", laziness=laziness)
    kappa = float(W[0, 0])
    s = walk_series(W, 0, T)
    for v in range(1, n):
        assert cf.ring_series(n, T, v, kappa) == pytest.approx(s[v], rel=1e-12, abs=1e-13)
        # the formula depends on u - v only: any other pair at the same offset
        assert cf.ring_series(n, T, -v, kappa) == pytest.approx(s[n - v], rel=1e-12,
                                                                abs=1e-13)


@pytest.mark.parametrize("n", [5, 10, 31])
def test_ring_log_green_limit(n):
    W = gossip_matrix(ring(n))  # Metropolis: kappa = 1/3
    L = log_green_matrix(W)
    for d in range(1, n):
        assert cf.ring_series(n, None, d) == pytest.approx(L[0, d], rel=1e-10, abs=1e-13)
        # kappa = 1/3: (1/n) sum_k cos(2 pi k d / n) log(3 / (4 sin^2(pi k / n)))
        k = np.arange(1, n)
        explicit = np.sum(np.cos(2 * np.pi * k * d / n)
                          * np.log(3 / (4 * np.sin(np.pi * k / n) ** 2))) / n
        assert explicit == pytest.approx(L[0, d], rel=1e-10, abs=1e-13)


@pytest.mark.parametrize("n", [3, 6, 20])
@pytest.mark.parametrize("scheme,weight", [("metropolis", None), ("max-degree", "1/(n-1)")])
@pytest.mark.parametrize("T", [1, 4, 150])
def test_star_series(n, scheme, weight, T):
    W = gossip_matrix(nx.star_graph(n - 1), scheme=scheme)  # centre 0
    w = None if weight is None else 1.0 / (n - 1)
    centre = walk_series(W, 0, T)
    leaf = walk_series(W, 1, T)
    assert cf.star_series(n, T, "centre-leaf", w) == pytest.approx(centre[1], rel=1e-12)
    assert cf.star_series(n, T, "leaf-leaf", w) == pytest.approx(leaf[2], rel=1e-12)
    L = log_green_matrix(W)
    assert cf.star_series(n, None, "centre-leaf", w) == pytest.approx(L[0, 1], abs=1e-13)
    assert cf.star_series(n, None, "leaf-leaf", w) == pytest.approx(L[1, 2], rel=1e-10)


@pytest.mark.parametrize("n", [3, 7, 40])
@pytest.mark.parametrize("T", [1, 9, 300])
def test_complete_graph(n, T):
    W = gossip_matrix(nx.complete_graph(n))  # Metropolis: J/n
    assert cf.complete_graph_series(n, T) == pytest.approx(walk_series(W, 0, T)[1], rel=1e-12)
    assert cf.complete_graph_series(n, T) == pytest.approx(harmonic_number(T) / n, rel=1e-14)
    W0 = gossip_matrix(nx.complete_graph(n), scheme="max-degree")  # (J - I)/(n - 1)
    assert cf.complete_graph_series(n, T, self_loops=False) == pytest.approx(
        walk_series(W0, 0, T)[1], rel=1e-12)
    assert cf.complete_graph_series(n, None, self_loops=False) == pytest.approx(
        log_green_matrix(W0)[0, 1], rel=1e-10)
    assert cf.complete_graph_series(n, None, self_loops=False) == pytest.approx(
        math.log(n / (n - 1)) / n, rel=1e-14)


# --------------------------------------------------------------------------------------------
# The paper's printed formulas (Cyffers, Bellet & Upadhyay), for comparison only.  They are
# stated for alpha / sigma^2 = 1 here (both sides scale the same way).
# --------------------------------------------------------------------------------------------

def paper_ring_theorem5(n, T, u, v):
    """Theorem 5, equal probabilities (kappa = 1/3), nodes numbered 1..n:
    alpha' log(T) cos(2 pi a / n) / n + (2 / n) sum_{k=1}^{n-1} cos(pi a k / n)
    ln(3 csc^2(pi k / n) / 4), a = (u + v - 2) mod n, alpha' = 1{|u - v| = 1}."""
    a = (u + v - 2) % n
    first = (1.0 if abs(u - v) == 1 else 0.0) * math.log(T) * math.cos(2 * math.pi * a / n) / n
    k = np.arange(1, n)
    second = (2.0 / n) * np.sum(np.cos(np.pi * a * k / n)
                                * np.log(3.0 / (4.0 * np.sin(np.pi * k / n) ** 2)))
    return first + float(second)


def paper_star_theorem4(n, pair, kappa=0.0):
    """Theorem 4 (kappa -> 0 is the most favourable case for the paper)."""
    if pair == "centre-leaf":
        r = math.sqrt(n - 1)
        return (1 - kappa) / (2 * r) * math.log((r + 1) / (r - 1))
    return -(1 - kappa) / (n - 1) * math.log(1 - 1 / (n - 1))


def test_paper_ring_formula_disagrees_with_the_exact_series():
    n, T = 12, 500
    W = gossip_matrix(ring(n))  # kappa = 1/3, the theorem's setting
    s = walk_series(W, 0, T)  # node 1 in the paper's numbering is our node 0
    disagreements = 0
    for v in range(1, n):
        paper = paper_ring_theorem5(n, T, 1, v + 1)
        exact = s[v]
        assert cf.ring_series(n, T, v) == pytest.approx(exact, rel=1e-12)
        if abs(paper - exact) > 0.5 * exact:
            disagreements += 1
    assert disagreements == n - 1
    # e.g. opposite nodes: the paper's value is even negative, the series is positive
    assert paper_ring_theorem5(n, T, 1, 1 + n // 2) < 0 < s[n // 2]


def test_paper_star_formula_disagrees_with_the_exact_series():
    """With the paper's own (non-stochastic) normalisation W = A/(n-1) removed, the true
    series grows like H_T / n; the printed bound does not depend on T and falls below it."""
    n, T = 10, 1000
    for scheme, w in (("metropolis", None), ("max-degree", 1.0 / (n - 1))):
        W = gossip_matrix(nx.star_graph(n - 1), scheme=scheme)
        centre, leaf = walk_series(W, 0, T), walk_series(W, 1, T)
        assert paper_star_theorem4(n, "centre-leaf") < 0.5 * centre[1]
        assert paper_star_theorem4(n, "leaf-leaf") < 0.5 * leaf[2]
        assert cf.star_series(n, T, "leaf-leaf", w) == pytest.approx(leaf[2], rel=1e-12)


def test_paper_complete_graph_log_T_under_reports():
    n, T = 20, 100
    W = gossip_matrix(nx.complete_graph(n))
    exact = walk_series(W, 0, T)[1]
    assert math.log(T) / n < exact
    assert exact - math.log(T) / n == pytest.approx((harmonic_number(T) - math.log(T)) / n)


def test_bad_arguments():
    with pytest.raises(ParameterError):
        cf.ring_series(10, 5, 0)
    with pytest.raises(ParameterError):
        cf.ring_series(10, 5, 1, laziness=1.0)
    with pytest.raises(ParameterError):
        cf.star_series(10, 5, "leaf-centre")
    with pytest.raises(ParameterError):
        cf.star_series(10, 5, "leaf-leaf", weight=0.5)
    with pytest.raises(ParameterError):
        cf.complete_graph_series(2, 5, self_loops=False)
