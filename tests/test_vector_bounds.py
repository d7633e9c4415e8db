"""The SDP bounds on the vector quadratic maximum (sparsedp.linalg.vector_bounds): closed
forms, an independent primal-dual reference, the sign maximum below, the kernel twins, and
the gap they close in the matrix-factorisation accounting with vector gradients."""

import networkx as nx
import numpy as np
import pytest

import sparsedp
from sparsedp.linalg import kernels
from sparsedp.linalg.certified import MatrixSandwich
from sparsedp.linalg.vector_bounds import rank_for, vector_bounds
from sparsedp.mf import mf_sensitivity
from sparsedp.testing import brute_force_max, random_psd, sdp_max


def exact_sandwich(M):
    return MatrixSandwich(low=M, excess=np.zeros_like(M), eta_low=0.0, eta_excess=0.0)


def bracket(M):
    bounds = {b.name: b for b in vector_bounds(exact_sandwich(M))}
    assert bounds["sdp_primal"].kind == "lower"
    assert bounds["sdp_dual"].kind == "certified upper"
    return bounds["sdp_primal"].value, bounds["sdp_dual"].value


@pytest.mark.parametrize("seed", range(6))
def test_rank_one_closed_form(seed):
    """``M = a a^T``: ``max <M, X> = max ||sum_t a_t x_t||^2 = (sum_t |a_t|)^2``."""
    a = np.random.default_rng(seed).standard_normal(12)
    low, high = bracket(np.outer(a, a))
    truth = np.abs(a).sum() ** 2
    assert low <= truth * (1 + 1e-12) and high >= truth * (1 - 1e-12)
    assert (high - low) <= 1e-9 * truth


def test_two_by_two_and_identity_closed_forms():
    M = np.array([[2.0, -0.7], [-0.7, 1.0]])  # a + c + 2 |b|
    low, high = bracket(M)
    assert low <= 4.4 * (1 + 1e-12) and high >= 4.4 * (1 - 1e-12) and high - low < 1e-9
    low, high = bracket(np.eye(7))  # <I, X> = tr X = T for every feasible X
    assert low <= 7 * (1 + 1e-12) and high >= 7 * (1 - 1e-12) and high - low < 1e-9


@pytest.mark.parametrize("seed", range(12))
def test_random_psd_against_an_independent_reference(seed):
    T = [5, 8, 12, 20, 30, 40][seed % 6]
    M = random_psd(T, seed, rank=None if seed % 2 else max(1, T // 4))
    low, high = bracket(M)
    ref_low, ref_high = sdp_max(M)
    assert low <= ref_high * (1 + 1e-9) + 1e-13
    assert high >= ref_low * (1 - 1e-9) - 1e-13
    assert low <= high
    assert high - low <= 1e-6 * high  # the primal and the dual meet
    if T <= 12:  # the SDP is a relaxation of the sign problem
        assert low >= brute_force_max(M) * (1 - 1e-9)


def test_the_sandwich_errors_widen_the_bounds():
    M = random_psd(10, 3)
    eta = 1e-4
    wide = MatrixSandwich(low=M, excess=np.zeros_like(M), eta_low=eta, eta_excess=0.0)
    bounds = {b.name: b.value for b in vector_bounds(wide)}
    low, high = bracket(M)
    assert bounds["sdp_primal"] <= low - 10 * eta * (1 - 1e-9)
    assert bounds["sdp_dual"] >= high + 10 * eta * (1 - 1e-9)


@pytest.mark.parametrize("seed", range(3))
def test_mixing_kernel_twins_are_bit_identical(seed):
    rng = np.random.default_rng(seed)
    T = (25, 120, 300)[seed]  # r = 9, 17, 26
    M = random_psd(T, seed)
    M[3] = M[:, 3] = 0.0  # a zero row: that unit vector is kept as it is
    V = rng.standard_normal((T, rank_for(T)))
    V /= np.linalg.norm(V, axis=1, keepdims=True)
    a = kernels.mixing_sweeps(M, V, 40, backend="numba")
    b = kernels.mixing_sweeps(M, V, 40, backend="numpy")
    assert a[2] == b[2]
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    np.testing.assert_allclose(np.linalg.norm(a[0], axis=1), 1.0, rtol=1e-14)


def test_vector_gradients_gap_is_closed_in_the_mf_accounting():
    """A direct neighbour of the attacker: the sign bounds leave a gap for vector gradients
    (M has negative entries); the SDP pair closes it, inside the dense reference's bracket."""
    G = nx.connected_watts_strogatz_graph(30, 4, 0.3, seed=2)
    W = sparsedp.gossip_matrix(G, scheme="row-normalised-self-loops")
    target = next(iter(G[0]))
    r = mf_sensitivity(W, target, [0], 40, exact=False)
    names = {b.name: b.value for b in r.bounds}
    assert {"sdp_primal", "sdp_dual"} <= set(names)
    assert r.relative_gap <= 1e-6
    assert any("SDP primal" in note and "coordinates" in note for note in r.notes)
    scalar = mf_sensitivity(W, target, [0], 40, exact=False, gradients="scalar")
    assert r.lower >= scalar.lower * (1 - 1e-9)  # vectors leak at least as much as signs


@pytest.mark.parametrize("seed", range(6))
def test_both_solvers_bracket_the_reference(seed, monkeypatch):
    """The interior-point solve (T <= BARRIER_MAX_T) and the mixing method (forced here by
    BARRIER_MAX_T = 0, the path for large T) both give a certified bracket of the SDP value."""
    from sparsedp.linalg import vector_bounds as vb

    T = [6, 15, 30][seed % 3]
    M = random_psd(T, 100 + seed, rank=None if seed % 2 else 2)
    ref_low, ref_high = sdp_max(M)
    for limit in (vb.BARRIER_MAX_T, 0):
        monkeypatch.setattr(vb, "BARRIER_MAX_T", limit)
        bounds = {b.name: b for b in vb.vector_bounds(exact_sandwich(M))}
        low, high = bounds["sdp_primal"].value, bounds["sdp_dual"].value
        solver = "interior-point" if limit else "mixing"
        assert solver in bounds["sdp_primal"].description
        assert low <= ref_high * (1 + 1e-9) + 1e-13 and high >= ref_low * (1 - 1e-9) - 1e-13
        assert high - low <= 1e-6 * high
