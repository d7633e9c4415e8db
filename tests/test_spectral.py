"""Tests for sparsedp.linalg.spectral: eigenvalue summaries and stationary distributions."""

import contextlib
import dataclasses

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.linalg import ArpackNoConvergence

from sparsedp.errors import GossipMatrixError, ParameterError
from sparsedp.graphs.generators import barabasi_albert, grid, ring
from sparsedp.graphs.weights import gossip_matrix
from sparsedp.linalg.spectral import SpectralInfo, spectral_info, stationary_distribution
from tests.conftest import slow_after

try:  # dense references run single-threaded: BLAS threads thrash on a loaded machine
    from threadpoolctl import threadpool_limits
except ImportError:  # pragma: no cover
    def threadpool_limits(limits=None):
        return contextlib.nullcontext()


def ring_metropolis_eigenvalues(n: int) -> np.ndarray:
    """Metropolis on a ring: W = I/3 + (S + S^T)/3, eigenvalues 1/3 + 2/3 cos(2 pi k / n)."""
    return np.sort(1 / 3 + 2 / 3 * np.cos(2 * np.pi * np.arange(n) / n))


def dense_summary(W) -> tuple[float, float]:
    with threadpool_limits(1):
        ev = np.linalg.eigvalsh(W.toarray())
    return ev[-2], ev[0]


def assert_agrees(info: SpectralInfo, lambda_2: float, lambda_n: float, slack: float = 0.0):
    """The reported eigenvalues are within the reported tolerance of the true ones."""
    bound = info.tolerance + slack + 1e-13
    assert abs(info.lambda_2 - lambda_2) <= bound
    assert abs(info.lambda_n - lambda_n) <= bound
    assert info.rho == max(abs(info.lambda_2), abs(info.lambda_n))
    assert info.gap == 1 - info.rho


# ------------------------------------------------------------------------------ dense

@pytest.mark.parametrize("n", [5, 12, 13])
def test_ring_closed_form(n):
    ev = ring_metropolis_eigenvalues(n)
    info = spectral_info(gossip_matrix(ring(n)))
    assert info.method == "dense eigvalsh" and info.symmetric and info.moduli is None
    assert 0 < info.tolerance < 1e-12
    assert_agrees(info, ev[-2], ev[0])
    assert info.lambda_2 == pytest.approx(1 / 3 + 2 / 3 * np.cos(2 * np.pi / n), abs=1e-14)


@pytest.mark.parametrize("scheme", ["metropolis", "max-degree"])
@pytest.mark.parametrize("seed", [0, 1])
def test_dense_matches_eigvalsh(scheme, seed):
    W = gossip_matrix(nx.connected_watts_strogatz_graph(60, 4, 0.2, seed=seed), scheme,
                      laziness=0.1)
    assert_agrees(spectral_info(W), *dense_summary(W))


def test_periodic_chain_has_rho_one():
    info = spectral_info(gossip_matrix(ring(10), "max-degree"))
    assert info.lambda_n == pytest.approx(-1.0, abs=1e-12)
    assert info.rho == pytest.approx(1.0, abs=1e-12) and info.gap == pytest.approx(0, abs=1e-12)


def test_dense_nonsymmetric_moduli():
    W = gossip_matrix(nx.barabasi_albert_graph(80, 2, seed=3), "row-normalised-self-loops")
    info = spectral_info(W)
    ev = np.linalg.eigvals(W.toarray())
    moduli = np.sort(np.abs(ev))[::-1]
    assert not info.symmetric and info.method == "dense eigvals"
    np.testing.assert_allclose(info.moduli, moduli[:3], atol=1e-12)
    assert info.rho == info.moduli[1] and info.gap == 1 - info.rho
    assert info.lambda_n == pytest.approx(ev.real.min(), abs=1e-12)
    # D^-1 (A + I) is similar to a symmetric matrix: its spectrum is real.
    assert abs(info.lambda_2) == pytest.approx(info.rho, abs=1e-10)


def test_spectral_info_is_frozen():
    info = spectral_info(gossip_matrix(ring(6)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        info.rho = 0.0


# ------------------------------------------------------------------------------ sparse paths

@pytest.fixture(scope="module")
def ba_3000():
    W = gossip_matrix(barabasi_albert(3000, 2, seed=0, initial_clique=5))
    return W, dense_summary(W)


@pytest.mark.parametrize("method, label", slow_after([
    ("auto", "ARPACK eigsh"),
    ("eigsh", "ARPACK eigsh"),
    ("lobpcg", "LOBPCG + pyamg for lambda_2, ARPACK eigsh for lambda_n"),
], 1))
def test_sparse_paths_agree_with_dense(ba_3000, method, label):
    W, (lambda_2, lambda_n) = ba_3000
    info = spectral_info(W, method=method, tol=1e-9)
    assert info.method == label
    assert 0 < info.tolerance <= 1e-8
    assert_agrees(info, lambda_2, lambda_n)


@pytest.mark.parametrize("hub_factor", [20, 2], ids=["smoothed", "plain aggregation"])
def test_lobpcg_is_deterministic_and_robust(ba_3000, monkeypatch, hub_factor):
    # Global-RNG states under which the AMG setup used to produce a broken preconditioner.
    monkeypatch.setattr("sparsedp.linalg.spectral._HUB_FACTOR", hub_factor)
    W, (lambda_2, lambda_n) = ba_3000
    results = []
    for seed in (12, 57):
        np.random.seed(seed)
        results.append(spectral_info(W, method="lobpcg", tol=1e-9))
    assert results[0] == results[1]
    assert results[0].tolerance <= 1e-8
    assert_agrees(results[0], lambda_2, lambda_n)


def test_small_gap_falls_back_to_lobpcg():
    n = 3000  # gap ~ 1.5e-6: ARPACK exhausts its restarts on lambda_2
    ev = ring_metropolis_eigenvalues(n)
    W = gossip_matrix(ring(n))
    with pytest.raises(ArpackNoConvergence):
        spectral_info(W, method="eigsh")
    # lambda_n sits in a cluster around -1/3 that LOBPCG resolves only to ~1e-4.
    with pytest.warns(RuntimeWarning, match="achieved tolerance"):
        info = spectral_info(W, method="auto")
    assert info.method.startswith("LOBPCG + pyamg (ARPACK did not converge) for lambda_2")
    assert_agrees(info, ev[-2], ev[0])
    assert abs(info.lambda_2 - ev[-2]) < 1e-10  # lambda_2 itself is much better


def test_lobpcg_on_torus_closed_form():
    rows, cols = 40, 50  # 4-regular: Metropolis W = (I + A) / 5
    a = 2 * np.pi * np.arange(rows) / rows
    b = 2 * np.pi * np.arange(cols) / cols
    ev = np.sort((1 + 2 * np.cos(a)[:, None] + 2 * np.cos(b)[None, :]).ravel() / 5)
    info = spectral_info(gossip_matrix(grid(rows, cols, periodic=True)), method="lobpcg")
    assert info.tolerance <= 1e-7
    assert_agrees(info, ev[-2], ev[0])


def test_eigs_nonsymmetric():
    W = gossip_matrix(nx.barabasi_albert_graph(400, 3, seed=1), "row-normalised-self-loops")
    info = spectral_info(W, method="eigs", tol=1e-10)
    with threadpool_limits(1):
        moduli = np.sort(np.abs(np.linalg.eigvals(W.toarray())))[::-1][:3]
    assert info.method == "ARPACK eigs" and not info.symmetric and np.isnan(info.lambda_n)
    np.testing.assert_allclose(info.moduli, moduli, atol=1e-8)
    assert info.rho == info.moduli[1] and info.tolerance <= 1e-8


# ------------------------------------------------------------------------------ errors

def test_errors():
    W = gossip_matrix(ring(12))
    with pytest.raises(ParameterError, match="unknown spectral method 'power'"):
        spectral_info(W, method="power")
    with pytest.raises(ParameterError, match="needs a symmetric W"):
        spectral_info(gossip_matrix(nx.path_graph(12), "row-normalised"), method="lobpcg")
    with pytest.raises(ParameterError, match="needs n >= 10"):
        spectral_info(gossip_matrix(ring(5)), method="eigsh")
    with pytest.raises(GossipMatrixError, match=r"row 0 of W sums to 2, not 1"):
        spectral_info(2 * W)


# ------------------------------------------------------------------------------ stationary

def test_stationary_doubly_stochastic_is_uniform():
    pi = stationary_distribution(gossip_matrix(nx.barabasi_albert_graph(50, 2, seed=0)))
    np.testing.assert_array_equal(pi, np.full(50, 1 / 50))


@pytest.mark.parametrize("scheme, offset", [("row-normalised", 0),
                                            ("row-normalised-self-loops", 1)])
def test_stationary_random_walk(scheme, offset):
    G = nx.barabasi_albert_graph(200, 2, seed=5)
    W = gossip_matrix(G, scheme, laziness=0.2)
    pi = stationary_distribution(W)
    np.testing.assert_allclose(pi @ W, pi, rtol=0, atol=1e-15)
    degrees = np.array([d for _, d in G.degree()]) + offset
    np.testing.assert_allclose(pi, degrees / degrees.sum(), rtol=1e-12)


def test_stationary_power_iteration():
    rng = np.random.default_rng(0)
    P = sp.random(60, 60, density=0.2, random_state=1, format="csr") + sp.eye(60, k=1)
    P = sp.csr_matrix(P + sp.eye(60, k=-59))  # a Hamiltonian cycle: irreducible
    P.data = rng.random(P.nnz) + 0.1
    W = sp.diags(1 / np.asarray(P.sum(axis=1)).ravel()) @ P  # generic, not reversible
    pi = stationary_distribution(W, tol=1e-13)
    assert pi.sum() == pytest.approx(1.0) and pi.min() > 0
    np.testing.assert_allclose(pi @ W, pi, rtol=0, atol=1e-13)
    with pytest.warns(RuntimeWarning, match="power iteration stopped after 3 iterations"):
        stationary_distribution(W, maxiter=3)


def test_stationary_requires_irreducible():
    with pytest.raises(GossipMatrixError, match="reducible"):
        stationary_distribution(np.eye(3))
