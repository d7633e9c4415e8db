"""The matrix-free certificate charges the rounding of the operator product fl(K X) and of
fl(G) (:func:`sparsedp.linalg.certified.charge_operator_rounding`).

The truth: ``max_c c^T M c`` over sign vectors (``c_0 = 1``) of the secure-summation view
(``H[t, k] = e_o^T W^(t-k)``, all noise), with ``M = G^T K^{-1} G`` in 50-digit arithmetic
from the float64 entries of W.  On lazy stars the uncharged rounding put the certified
upper (or lower) bound on the wrong side of it by a few 1e-15 relative (review of
2026-12).
"""

import itertools

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

import sparsedp
from sparsedp.linalg import certified

mp = pytest.importorskip("mpmath")


def exact_sign_maximum(W, target: int, observer: int, T: int):
    """``max_c c^T M c`` (mpmath, 50 digits): M exactly, the maximiser among the sign vectors
    whose float64 value is within 1e-10 relative of the float maximum (a margin far above
    the float evaluation's error), each evaluated exactly."""
    with mp.workdps(50):
        W = sp.csr_matrix(W)
        row = {observer: mp.mpf(1)}  # r_l = e_o^T W^l, sparse
        rows = [row]
        for _ in range(1, T):
            new = {}
            for j, value in row.items():
                entries = slice(W.indptr[j], W.indptr[j + 1])
                for k, w in zip(W.indices[entries], W.data[entries], strict=True):
                    new[int(k)] = new.get(int(k), mp.mpf(0)) + value * mp.mpf(float(w))
            rows.append(row := new)

        def dot(a, b):
            return mp.fsum(v * b[k] for k, v in a.items() if k in b)

        lag = [[dot(rows[a], rows[b]) for b in range(T)] for a in range(T)]
        K, G = mp.matrix(T, T), mp.matrix(T, T)
        for t in range(T):
            for s in range(T):
                K[t, s] = mp.fsum(lag[t - k][s - k] for k in range(min(t, s) + 1))
            for k in range(t + 1):
                G[t, k] = rows[t - k].get(target, mp.mpf(0))
        M = G.T * (mp.inverse(K) * G)
        M_float = np.array(M.tolist(), dtype=float)
        signs = np.array([(1,) + c for c in itertools.product((1, -1), repeat=T - 1)])
        values = np.einsum("ci,ij,cj->c", signs, M_float, signs)
        candidates = signs[values >= values.max() * (1 - 1e-10)]
        n_values = [mp.fsum(int(c[i]) * int(c[j]) * M[i, j] for i in range(T) for j in range(T))
                    for c in candidates]
        return max(n_values)


def lazy_star(leaves: int, scheme: str, alpha: float) -> sp.csr_matrix:
    W = sp.csr_matrix(sparsedp.gossip_matrix(nx.star_graph(leaves), scheme=scheme))
    return sp.csr_matrix((1 - alpha) * sp.eye(leaves + 1) + alpha * W)


@pytest.mark.parametrize(
    "scheme, alpha, target, observer",
    [
        ("row-normalised-self-loops", 0.3, 2, 1),  # the upper was 8.2e-15 relative below
        ("metropolis", 0.03, 0, 1),  # the lower was 2.7e-15 relative above
        ("row-normalised-self-loops", 0.03, 1, 0),  # the lower was 2.1e-15 above
    ],
)
def test_matrix_free_interval_contains_the_exact_value_on_lazy_stars(
        scheme, alpha, target, observer):
    W = lazy_star(150, scheme, alpha)
    T = 12
    r = sparsedp.squared_sensitivity(W, target, [observer], T, method="matrix-free")
    assert r.method == "matrix-free" and r.solver["upper_certified"]
    truth = exact_sign_maximum(W, target, observer, T)
    assert mp.mpf(r.lower) <= truth <= mp.mpf(r.upper)


def test_matrix_free_interval_contains_the_dense_reference_and_widens_modestly():
    """Ordinary instances: the matrix-free interval overlaps the dense path's and stays
    within 1e-9 relative of it."""
    for seed, (n, target, observers, T) in enumerate(
            [(60, 3, [0, 7], 10), (80, 10, [5], 15), (40, 2, [1, 9, 20], 8)]):
        graph = nx.connected_watts_strogatz_graph(n, 6, 0.3, seed=seed)
        W = sparsedp.gossip_matrix(graph, scheme="metropolis")
        free = sparsedp.squared_sensitivity(W, target, observers, T, method="matrix-free")
        dense = sparsedp.squared_sensitivity(W, target, observers, T, method="dense")
        assert free.method == "matrix-free" and dense.method == "dense"
        assert free.lower <= dense.upper and dense.lower <= free.upper
        assert free.upper - free.lower <= 1e-9 * free.lower


def test_matrix_free_interval_on_an_erdos_renyi_graph_stays_narrow():
    graph = nx.erdos_renyi_graph(200, 0.05, seed=3)
    graph = graph.subgraph(max(nx.connected_components(graph), key=len))
    graph = nx.convert_node_labels_to_integers(graph)
    W = sparsedp.gossip_matrix(graph, scheme="metropolis")
    r = sparsedp.squared_sensitivity(W, 0, [1, 2], 20, method="matrix-free")
    assert r.solver["upper_certified"]
    assert 0 < r.upper - r.lower <= 1e-9 * r.lower


def test_charge_operator_rounding_adds_the_perturbation_bounds():
    """The charges of the lower side (``||X|| (e + 2 f)``) and of the excess
    (``(2 (e + f) ||R|| + (e + f)^2) / lambda_lb``), and none on the excess without a
    certified upper side."""
    rng = np.random.default_rng(0)
    X, R = rng.standard_normal((6, 3)), rng.standard_normal((6, 3))
    base = certified.MatrixSandwich(low=np.eye(3), excess=np.zeros((3, 3)), eta_low=0.0,
                                    eta_excess=0.0)
    e, f, lam = 1e-10, 3e-10, 0.25
    charged = certified.charge_operator_rounding(base, X, R, e, f, lam)
    x, r = np.linalg.norm(X), np.linalg.norm(R)
    assert charged.eta_low == pytest.approx(x * (e + 2 * f), rel=1e-12)
    assert charged.eta_low >= x * (e + 2 * f)
    assert charged.eta_excess == pytest.approx((2 * (e + f) * r + (e + f) ** 2) / lam,
                                               rel=1e-12)
    unbounded = certified.charge_operator_rounding(base, X, R, e, f, np.inf)
    assert unbounded.eta_excess == 0.0 and unbounded.eta_low == charged.eta_low
