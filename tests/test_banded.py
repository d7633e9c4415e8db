"""The banded form of K_T once the chain has mixed (:mod:`sparsedp.gossip.banded`): the
algebra against dense matrices, the certified interval against the dense single-pair path,
refusals."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.linalg
import scipy.sparse.linalg

import sparsedp
from sparsedp.errors import ParameterError
from sparsedp.gossip import banded
from sparsedp.graphs import large as lg
from sparsedp.linalg.operators import k_from_moments
from tests.conftest import slow_after


def _band_to_dense(ab: np.ndarray) -> np.ndarray:
    p, T = ab.shape[0] - 1, ab.shape[1]
    F = np.zeros((T, T))
    for d in range(p + 1):
        idx = np.arange(T - d)
        F[idx, idx + d] = ab[p - d, d:]
        F[idx + d, idx] = ab[p - d, d:]
    return F


@pytest.mark.parametrize("T", [5, 12, 40])
def test_k_is_c_f_ct_and_m_is_bt_finv_b(T):
    """K = C F C^T and G^T K^{-1} G = B^T F^{-1} B for lags that are constant (c) beyond a
    band: the identities the banded path rests on, against dense matrices."""
    rng = np.random.default_rng(T)
    c, w, wa = 0.01, min(7, 2 * T - 2), min(4, T - 1)
    mu = np.full(2 * T - 1, c)
    mu[: w + 1] += rng.random(w + 1) * 0.2
    mu[0] = 1.0
    a = np.full(T, c)
    a[: wa + 1] += rng.random(wa + 1) * 0.1
    K = k_from_moments(mu.reshape(-1, 1, 1), T)
    F_band, _ = banded._f_band(mu[: w + 1] - c, c, T)
    F = _band_to_dense(F_band)
    C = np.tril(np.ones((T, T)))
    np.testing.assert_allclose(C @ F @ C.T, K, rtol=1e-12, atol=1e-13)
    G = scipy.linalg.toeplitz(a, np.zeros(T))
    B = banded._b_matrix(banded._b_coefficients(a[: wa + 1] - c, c, T), T).toarray()
    np.testing.assert_allclose(B, np.linalg.solve(C, G), atol=1e-14)
    M = G.T @ np.linalg.solve(K, G)
    np.testing.assert_allclose(B.T @ np.linalg.solve(F, B), M, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(("n", "T", "seed"), slow_after([(400, 500, 1), (1500, 700, 2),
                                                     (3000, 1500, 3)], 2))
def test_the_banded_interval_brackets_the_dense_single_pair_interval(n, T, seed):
    """The certified [lower, upper] of the banded form against the dense path on the same
    query: the intervals overlap (each side certified), the c = 1 lower bound within 1e-4
    of the dense one, the spectral upper bound within 1% of the dense spectral bound, and
    the reported upper bound, the diagonal shift's, within 2e-3 of the dense interval (M_T
    >= 0 entrywise here, so the dense interval is pinned at the c = 1 value)."""
    W = sparsedp.gossip_matrix(lg.largest_component(lg.erdos_renyi_large(n, 12, seed=seed)))
    for target in (5, 17):
        b = sparsedp.squared_sensitivity(W, target, [0], T, method="banded")
        d = sparsedp.squared_sensitivity(W, target, [0], T, exact=False)
        assert b.method == "banded"
        assert b.lower <= d.upper and d.lower <= b.upper
        dense = {x.name: x.value for x in d.bounds}
        mine = {x.name: x.value for x in b.bounds}
        assert b.lower == pytest.approx(dense["ones"], rel=1e-4)
        assert mine["spectral"] == pytest.approx(dense["spectral"], rel=1e-2)
        assert d.upper <= b.upper == mine["diagonal_shift"] <= d.upper * (1 + 2e-3)


def _band_of(M: np.ndarray, p: int) -> np.ndarray:
    """LAPACK upper band storage of the symmetric M (half-bandwidth p)."""
    T = M.shape[0]
    ab = np.zeros((p + 1, T))
    for d in range(p + 1):
        ab[p - d, d:] = np.diag(M, d)
    return ab


def _brute_force_maximum(M: np.ndarray) -> float:
    T = M.shape[0]
    signs = 1 - 2 * ((np.arange(2**T)[:, None] >> np.arange(T)) & 1)
    return float(np.einsum("si,ij,sj->s", signs, M, signs).max())


def _random_band(T: int, p: int, off: float, seed: int) -> np.ndarray:
    """A symmetric positive definite T x T matrix of half-bandwidth p (dense)."""
    rng = np.random.default_rng(seed)
    F = np.diag(1.0 + rng.random(T))
    for d in range(1, p + 1):
        F += off * (np.eye(T, k=d) + np.eye(T, k=-d))
    return F


@pytest.mark.parametrize(("T", "beta"), [(9, [0.4, -0.7, 0.2]), (30, [1.0, 0.3, -0.2, 0.5]),
                                         (3, [0.5, 0.25, 1.0, 2.0])])
def test_the_gram_band_is_b_diag_b_transpose(T, beta):
    """``_gram_band`` and ``_abs_gram_row_sums`` against the dense ``B D B^T``."""
    beta = np.array(beta)[:T]
    inverse = np.random.default_rng(T).random(T) + 0.1
    B = banded._b_matrix(beta, T).toarray()
    gram = B @ np.diag(inverse) @ B.T
    band = banded._gram_band(beta, inverse)
    for delta in range(beta.size):
        np.testing.assert_allclose(band[delta, : T - delta], np.diag(gram, -delta),
                                   rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(banded._abs_gram_row_sums(beta, inverse),
                               (np.abs(B) @ np.diag(inverse) @ np.abs(B).T).sum(axis=1),
                               rtol=1e-14)


def _brute_force_maximum(M: np.ndarray) -> float:
    T = M.shape[0]
    signs = 1 - 2 * ((np.arange(2**T)[:, None] >> np.arange(T)) & 1)
    return float(np.einsum("si,ij,sj->s", signs, M, signs).max())


@pytest.mark.parametrize("coupling", [0.6, -0.6, -0.9])
def test_the_banded_diagonal_shift_holds_for_every_sign_vector(coupling):
    """``M_T = B^T F^-1 B`` for a banded F (an M-matrix: ``F^-1 >= 0``) and a bidiagonal
    Toeplitz B, T = 12: the diagonal-shift bound is at least the brute-force maximum over all
    4096 sign vectors.  With ``B >= 0`` (so ``M >= 0``) it is the c = 1 value to 1e-3; with a
    negative coupling ``(M 1)_+`` is far below the maximum, so only the certificate stands
    between the candidates and an unsound bound."""
    T, p = 12, 1
    F = _random_band(T, p, -0.2, seed=7)
    beta = np.array([1.0, coupling])
    B = banded._b_matrix(beta, T)
    M = B.toarray().T @ np.linalg.solve(F, B.toarray())
    ab = _band_of(F, p)
    theta = float(np.linalg.eigvalsh(M)[-1])
    row_sums = np.maximum(M.sum(axis=1), 0.0)
    shift = banded._certified_diagonal_shift(ab, beta, p, 0.0, 0.0, row_sums, theta, np.inf)
    maximum = _brute_force_maximum(M)
    assert shift >= maximum
    if coupling > 0:
        assert M.min() >= 0
        assert shift == pytest.approx(float(M.sum()), rel=1e-3)
    else:
        assert np.maximum(M.sum(axis=1), 0).sum() < 0.5 * maximum


def test_dominance_is_certified_only_when_it_holds():
    """``_dominates(d)`` against the dense ``lambda_max(M - diag d) <= 0`` on random d around
    the row sums of ``|M|`` (Gershgorin: enough) for a mixed-sign M; it must say yes for
    some and no for others, and never yes when dominance fails."""
    T, p = 12, 2
    rng = np.random.default_rng(3)
    F = _random_band(T, p, 0.25, seed=3)
    beta = np.array([0.9, -0.5, 0.7])
    B = banded._b_matrix(beta, T).toarray()
    M = B.T @ np.linalg.solve(F, B)
    ab = _band_of(F, p)
    dominating = np.abs(M).sum(axis=1)
    answers = []
    for scale in np.linspace(0.2, 1.2, 41):
        d = dominating * scale * (1 + 0.2 * rng.random(T))
        certified = banded._dominates(ab, beta, p, 0.0, 0.0, d)
        holds = np.linalg.eigvalsh(M - np.diag(d))[-1] <= 0
        assert holds or not certified
        answers.append(certified)
    assert any(answers) and not all(answers)


def test_the_banded_upper_bound_survives_a_failed_spectral_certificate(monkeypatch):
    """Without a certified lambda_max the diagonal shift alone is the upper end (no
    "spectral" bound is reported); Lanczos failing to converge only changes the starting
    estimate; with neither certificate the query is refused."""
    W = sparsedp.gossip_matrix(lg.largest_component(lg.erdos_renyi_large(400, 12, seed=1)))
    reference = sparsedp.squared_sensitivity(W, 5, [0], 500, method="banded")

    def no_convergence(*args, **kwargs):
        raise scipy.sparse.linalg.ArpackNoConvergence("no", np.empty(0), np.empty((0, 0)))

    with monkeypatch.context() as patch:
        patch.setattr(scipy.sparse.linalg, "eigsh", no_convergence)
        fallback = sparsedp.squared_sensitivity(W, 5, [0], 500, method="banded")
    assert fallback.lower == reference.lower
    assert fallback.upper == pytest.approx(reference.upper, rel=1e-3)
    monkeypatch.setattr(banded, "_certified_lambda_max", lambda *args: None)
    shift_only = sparsedp.squared_sensitivity(W, 5, [0], 500, method="banded")
    names = {x.name for x in shift_only.bounds}
    assert "spectral" not in names and "diagonal_shift" in names
    assert shift_only.upper == reference.upper
    assert shift_only.solver["lambda_max_upper"] is None
    monkeypatch.setattr(banded, "_certified_diagonal_shift", lambda *args, **kwargs: np.inf)
    with pytest.raises(ParameterError, match="could not certify an upper bound"):
        sparsedp.squared_sensitivity(W, 5, [0], 500, method="banded")


def test_the_banded_path_refuses_what_it_cannot_certify():
    W = sparsedp.gossip_matrix(lg.largest_component(lg.erdos_renyi_large(400, 12, seed=1)))
    with pytest.raises(ParameterError, match="not constant beyond lag"):
        sparsedp.squared_sensitivity(W, 5, [0], 40, method="banded")
    with pytest.raises(ParameterError, match="one observer"):
        sparsedp.squared_sensitivity(W, 5, [0, 1], 500, method="banded")
    with pytest.raises(ParameterError, match="one observer"):
        sparsedp.squared_sensitivity(W, 5, [0], 500, method="banded", view="neighbourhood")
    R = sparsedp.gossip_matrix(nx.path_graph(30), scheme="row-normalised-self-loops")
    with pytest.raises(ParameterError, match="symmetric doubly stochastic"):
        sparsedp.squared_sensitivity(R, 5, [0], 200, method="banded")
    plan = sparsedp.estimate_cost(W, 5, [0], 10_000, method="banded")
    assert plan["method"] == "banded" and plan["fits"]


@pytest.mark.parametrize("level", [1e-2, 1e-6])
def test_truncation_norms_cover_the_true_truncation_with_the_decayed_tail(level):
    """ER(3000), T = 200: ``||K - K_hat||_2`` and ``||G - G_hat||_2`` of the truncated lags
    (against every lag propagated) are within the banded form's bounds, which use the
    decayed tail's weights, and these are below the plain ``T (T + 1) / 2 eps^2``."""
    from sparsedp.linalg.moments import LagPropagator
    from sparsedp.linalg.operators import toeplitz_blocks

    graph = lg.largest_component(lg.erdos_renyi_large(3000, 10, seed=5))
    W = sparsedp.gossip_matrix(graph)
    T, target = 200, graph.n // 2
    cut = LagPropagator(W, [0], target, T, frontier=False).advance(level).result()
    full = LagPropagator(W, [0], target, T, frontier=False).advance(None).result()
    assert cut.truncated
    dK, dG = banded._truncation_norms(cut, T)
    K_gap = k_from_moments(full.mu, T) - k_from_moments(cut.mu, T)
    G_gap = toeplitz_blocks(full.a) - toeplitz_blocks(cut.a)
    assert np.linalg.norm(K_gap, 2) <= dK
    assert np.linalg.norm(G_gap, 2) <= dG
    assert dK < T * (T + 1) / 2 * float(cut.eps[0]) ** 2
