"""Lemma 10's utility Gram matrix H (sparsedp.mf.utility) against the dense construction
``(I_T kron W) W_T K^(T,n)`` and its column blocks A_i."""

import numpy as np
import pytest

from sparsedp.errors import ParameterError, ResourceLimitError
from sparsedp.graphs.weights import gossip_matrix
from sparsedp.mf.utility import gram_from_moments, gram_from_traces, utility_gram
from tests.conftest import connected_instance


def dense_lemma10_H(W, T):
    """H = sum_i A_i^T A_i with A = (I_T kron W) W_T K^(T,n) formed densely (Lemma 10)."""
    W = np.asarray(W.toarray() if hasattr(W, "toarray") else W)
    n = W.shape[0]
    powers = [np.eye(n)]
    for _ in range(T):
        powers.append(powers[-1] @ W)
    WT = np.zeros((n * T, n * T))
    for r in range(T):
        for s in range(r + 1):
            WT[r * n:(r + 1) * n, s * n:(s + 1) * n] = powers[r - s]
    big = np.kron(np.eye(T), W) @ WT
    # commutation K^(T,n): node-major column order (i T + s) <- time-major (s n + i)
    K = np.zeros((n * T, n * T))
    for i in range(n):
        for s in range(T):
            K[s * n + i, i * T + s] = 1.0
    A = big @ K
    return sum(A[:, i * T:(i + 1) * T].T @ A[:, i * T:(i + 1) * T] for i in range(n))


def _instances():
    kinds = ["er", "ba", "ring", "grid"]
    schemes = ["metropolis", "max-degree", "row-normalised-self-loops", "row-normalised"]
    for seed in range(20):
        G = connected_instance(kinds[seed % 4], 8 + seed % 7, seed)
        yield seed, gossip_matrix(G, scheme=schemes[seed % 4]), 3 + seed % 6


@pytest.mark.parametrize("seed,W,T", list(_instances()))
def test_exact_H_equals_dense_lemma10(seed, W, T):
    ref = dense_lemma10_H(W, T)
    got = utility_gram(W, T, method="exact")
    assert got.kind == "exact"
    np.testing.assert_allclose(got.H, ref, rtol=1e-10, atol=1e-10 * np.abs(ref).max())
    # the objective identity ||(I kron W) W_T (Y kron I)||_F^2 = tr(Y^T H Y) for a random Y
    Wd = W.toarray()
    n = Wd.shape[0]
    Y = np.tril(np.random.default_rng(seed).standard_normal((T, T)))
    powers = [np.linalg.matrix_power(Wd, k) for k in range(T + 1)]
    blocks = [[sum(powers[r - q + 1] * Y[q, s] for q in range(r + 1)) for s in range(T)]
              for r in range(T)]
    lhs = sum(np.sum(b ** 2) for row in blocks for b in row)
    assert np.isclose(lhs, np.trace(Y.T @ ref @ Y), rtol=1e-10)
    assert n == W.shape[0]


def test_moment_and_trace_forms_agree():
    G = connected_instance("er", 12, 3)
    W = gossip_matrix(G, scheme="metropolis").toarray()
    T = 7
    lam = np.linalg.eigvalsh(W)
    m = np.array([np.sum(lam ** k) for k in range(2 * T + 1)])
    t = np.array([[np.trace(np.linalg.matrix_power(W, a).T @ np.linalg.matrix_power(W, b))
                   for b in range(1, T + 1)] for a in range(1, T + 1)])
    np.testing.assert_allclose(gram_from_moments(m, T), gram_from_traces(t), rtol=1e-12)


@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("seed", range(4))
def test_estimate_error_covers_truth(seed, symmetric):
    G = connected_instance(["er", "ba"][seed % 2], 60 + 20 * seed, seed)
    W = gossip_matrix(G, scheme="metropolis" if symmetric else "row-normalised")
    T = 12
    truth = utility_gram(W, T, method="exact").H
    est = utility_gram(W, T, method="estimate", probes=24, seed=seed)
    assert est.kind == "estimate"
    assert np.all(np.abs(est.H - truth) <= est.error)
    # a useful estimate (24 probes, n <= 120): the eigenvalue 1 removed exactly for
    # doubly stochastic W makes it much tighter than for a row-normalised one
    rel = np.max(np.abs(est.H - truth).diagonal() / truth.diagonal())
    assert rel < (0.05 if symmetric else 0.3)


def test_bad_input():
    W = gossip_matrix(connected_instance("ring", 6, 0), scheme="metropolis")
    with pytest.raises(ParameterError, match="method"):
        utility_gram(W, 4, method="fast")
    with pytest.raises(ParameterError, match="probes"):
        utility_gram(W, 4, method="estimate", probes=1)
    big = gossip_matrix(connected_instance("ring", 10_001, 0), scheme="metropolis")
    with pytest.raises(ResourceLimitError, match="estimate"):
        utility_gram(big, 4, method="exact")


@pytest.mark.slow  # many Hutchinson estimates
def test_estimate_error_covers_truth_far_from_the_diagonal():
    """n = 3000, T = 200: far from the diagonal the powers have decayed, every probe gives the
    same value and the sample spread is below rounding; the stated error keeps a
    floating-point floor (without it 26 of the 40 000 entries were missed by ~1e-13)."""
    from sparsedp.graphs import erdos_renyi
    W = gossip_matrix(erdos_renyi(3000, 16 / 3000, seed=2), scheme="metropolis")
    exact = utility_gram(W, 200, method="exact").H
    est = utility_gram(W, 200, method="estimate", probes=16, seed=5, progress=False)
    assert np.all(np.abs(est.H - exact) <= est.error)
    assert np.max(np.abs(est.H - exact) / exact) < 0.02
