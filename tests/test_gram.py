"""The Gram assembly (sparsedp.linalg.gram) and the paths that use it: method="gram" and the Gram
preconditioner of the matrix-free PCG, against the explicit H_T of sparsedp.testing."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

import sparsedp
from sparsedp.errors import ParameterError, SparseDPError
from sparsedp.gossip import certified_solve
from sparsedp.linalg import exact_rank, gram
from sparsedp.linalg.certified import gamma
from sparsedp.testing import dense_H, dense_reference


def directed_W(n: int, seed: int, density: float = 0.25) -> sp.csr_matrix:
    """Random row-stochastic W of a strongly connected directed graph (a directed cycle plus
    random arcs and self-loops, random positive weights): not symmetric, not doubly
    stochastic."""
    rng = np.random.default_rng(seed)
    A = (rng.random((n, n)) < density).astype(float)
    A[np.arange(n), (np.arange(n) + 1) % n] = 1.0
    A[np.arange(n), np.arange(n)] = 1.0
    W = A * rng.uniform(0.1, 1.0, (n, n))
    return sp.csr_matrix(W / W.sum(axis=1, keepdims=True))


def symmetric_W(n: int, seed: int) -> sp.csr_matrix:
    G = nx.erdos_renyi_graph(n, 0.35, seed=seed)
    G.add_edges_from(nx.path_graph(n).edges)
    return sparsedp.gossip_matrix(G, scheme="metropolis")


W_KINDS = {"directed": lambda: directed_W(10, 3), "symmetric": lambda: symmetric_W(10, 4)}


def dense_K_G(W, observers, target, T, p, noise_removed):
    H = dense_H(W, observers, T, power_offset=p)
    n = W.shape[0]
    G = H[:, np.arange(T) * n + target]
    if noise_removed:
        keep = np.ones(n)
        keep[observers] = 0.0
        H = H * np.tile(keep, T)[None, :]
    return H @ H.T, G


@pytest.mark.parametrize("kind", W_KINDS)
@pytest.mark.parametrize("p", [0, 1])
@pytest.mark.parametrize("noise_removed", [False, True])
@pytest.mark.parametrize("observers", [[2], [1, 7, 4]])
def test_assembly_is_H_H_transpose(kind, p, noise_removed, observers):
    """K = H D H^T and G = H (. kron e_j) against the explicit H_T, for p = 0, 1 and D."""
    W = W_KINDS[kind]()
    T, target = 6, 5
    K_ref, G_ref = dense_K_G(W, observers, target, T, p, noise_removed)
    known = observers if noise_removed else ()
    a = gram.assemble(W, observers, target, T, power_offset=p, known_noise=known)
    assert a.products == T - 1 + p
    assert np.array_equal(a.K, a.K.T)
    assert np.allclose(a.K, K_ref, rtol=1e-13, atol=1e-15)
    assert np.allclose(a.G, G_ref, rtol=1e-13, atol=1e-15)


def test_rounding_model_covers_the_assembly():
    """|fl(K) - K| <= gamma_N K and |fl(G) - G| <= gamma G entrywise, against long double."""
    W = directed_W(40, 7, density=0.3)
    observers, target, T, p = [0, 9], 20, 25, 1
    a = gram.assemble(W, observers, target, T, power_offset=p, known_noise=observers)
    Wl = W.toarray().astype(np.longdouble)
    V = [np.eye(40, dtype=np.longdouble)[:, observers]]
    for _ in range(T - 1 + p):
        V.append(Wl.T @ V[-1])
    D = np.ones(40, dtype=np.longdouble)
    D[observers] = 0
    m = len(observers)
    K = np.zeros((T, m, T, m), dtype=np.longdouble)
    for t in range(T):
        for s in range(T):
            K[t, :, s, :] = V[t + p].T @ (D[:, None] * V[s + p])
            if t and s:
                K[t, :, s, :] += K[t - 1, :, s - 1, :]
    K = K.reshape(T * m, T * m)
    G = np.zeros((T, m, T), dtype=np.longdouble)
    for t in range(T):
        for tau in range(t + 1):
            G[t, :, tau] = V[t - tau + p][target]
    G = G.reshape(T * m, T)
    assert np.all(np.abs(a.K - K) <= gamma(a.K_depth) * K)
    assert np.all(np.abs(a.G - G) <= a.G_relative_error * G)
    E = (a.K - K).astype(np.float64)
    assert np.linalg.norm(E, 2) <= a.K_rounding()
    assert a.K_rounding() < 1e-11 * np.abs(a.K).sum(axis=1).max()


def test_memory_helpers(monkeypatch):
    assert gram.gram_memory(10**5, 1, 500) == (8 * 10**5 * 500, 8 * 500**2)
    assert gram.gram_fits(10**5, 1, 500)
    assert not gram.gram_fits(10**6, 1, 500)  # 4 GB of lags
    assert not gram.gram_fits(100, 1, gram.GRAM_MAX_DIM + 1)


def test_negative_entries_are_refused():
    W = directed_W(8, 1).toarray()
    W[0, 1] = -0.1
    W[0, 0] += 0.1
    with pytest.raises(ParameterError, match="non-negative"):
        gram.assemble(sp.csr_matrix(W), [2], 5, 4)
    with pytest.raises(SparseDPError, match="negative"):
        sparsedp.squared_sensitivity(W, 5, [2], 4, method="gram")


def _check(r, W, target, T, p, noise_removed):
    """lower <= dense exact <= upper; with a certified upper side, exact and c = 1 to 1e-8."""
    ref = dense_reference(W, target, list(r.observers), T, power_offset=p,
                          noise_removed=noise_removed, known_noise=list(r.known_noise))
    truth = ref.exact
    assert r.lower <= truth * (1 + 1e-12) + 1e-14
    assert r.upper >= truth * (1 - 1e-12) - 1e-14
    ones = next(b.value for b in r.bounds if b.name == "ones")
    assert ones == pytest.approx(ref.ones, rel=1e-8, abs=1e-12)
    if r.solver["upper_certified"]:
        assert r.exact == pytest.approx(truth, rel=1e-8, abs=1e-12)
        assert r.upper == pytest.approx(truth, rel=1e-8, abs=1e-12)
    else:
        assert r.lower == pytest.approx(truth, rel=1e-8, abs=1e-12)
    return ref


VIEWS = [
    ("secure-summation", [1], False),
    ("secure-summation", [1, 8], False),
    ("secure-summation-v1", [1], False),
    ("neighbourhood", [1], False),
    ("secure-summation", [1], True),
    ("secure-summation", [1, 8], True),
    ("secure-summation-v1", [1], True),
    ("neighbourhood", [1], True),
]


SOLVERS = {
    "gram": "dense Cholesky of K_T assembled from the Gram of the lags (W^T)^l S^T",
    "dense": "dense Cholesky of K_T assembled from the matrix-free operator",
}


@pytest.mark.parametrize("method", SOLVERS)
@pytest.mark.parametrize("kind", W_KINDS)
@pytest.mark.parametrize("view, observers, noise_removed", VIEWS)
def test_dense_assemblies_agree_with_dense_reference(method, kind, view, observers,
                                                     noise_removed):
    """method="gram" (lags) and method="dense" (the operator applied to unit vectors)."""
    W = W_KINDS[kind]()
    target, T = 5, 7
    r = sparsedp.squared_sensitivity(
        W, target, observers, T, view=view, noise_removed=noise_removed, method=method
    )
    if target in r.known_noise:
        assert r.upper == np.inf
        return
    assert r.method == method
    assert r.solver["solver"] == SOLVERS[method]
    if method == "gram":
        assert r.solver["sparse_products"] == T - 1 + (view == "secure-summation-v1")
    _check(r, W, target, T, 1 if view.endswith("v1") else 0, noise_removed)


@pytest.mark.parametrize("view, observers, noise_removed", VIEWS[:5])
def test_gram_and_structured_agree_on_symmetric_W(view, observers, noise_removed):
    W = symmetric_W(30, 9)
    args = (W, 12, observers, 40)
    kw = {"view": view, "noise_removed": noise_removed}
    g = sparsedp.squared_sensitivity(*args, method="gram", **kw)
    s = sparsedp.squared_sensitivity(*args, method="structured", **kw)
    assert g.lower <= s.upper and s.lower <= g.upper
    assert g.lower == pytest.approx(s.lower, rel=1e-8)
    assert g.upper == pytest.approx(s.upper, rel=1e-8)


def test_auto_chooses_gram_for_non_symmetric_W(monkeypatch):
    W = directed_W(30, 5)
    r = sparsedp.squared_sensitivity(W, 4, [0, 11], 30)
    assert r.method == "gram"
    assert any("not symmetric: using the Gram assembly" in note for note in r.notes)
    mf = sparsedp.squared_sensitivity(W, 4, [0, 11], 30, method="matrix-free",
                                      preconditioner="stationary")
    assert mf.solver["preconditioner"] == "stationary" and mf.solver["iterations"] > 2
    assert r.lower <= mf.upper and mf.lower <= r.upper
    assert r.lower == pytest.approx(mf.lower, rel=1e-8)
    # lags too large for the limit: matrix-free with the v2 views' innovation preconditioner
    monkeypatch.setattr(gram, "GRAM_MAX_LAG_BYTES", 1000)
    big = sparsedp.squared_sensitivity(W, 4, [0, 11], 30)
    assert big.method == "matrix-free" and big.solver["preconditioner"] == "innovation"
    assert any("GiB of lags" in note for note in big.notes)
    assert big.lower <= r.upper and r.lower <= big.upper


def test_gram_preconditioner_converges_in_one_iteration():
    """The Cholesky factor of the assembled K inverts the operator's K: one PCG iteration plus
    the final true-residual application; the certificate comes from the operator."""
    G = nx.erdos_renyi_graph(300, 0.02, seed=3)
    G.add_edges_from(nx.path_graph(300).edges)
    W = sparsedp.gossip_matrix(G, scheme="row-normalised")
    args = (W, 150, [0], 50)
    pcg = sparsedp.squared_sensitivity(*args, method="matrix-free", exact=False)
    assert pcg.solver["preconditioner"] == "gram"  # "auto"
    assert pcg.solver["iterations"] <= 2 and pcg.solver["converged"]
    assert pcg.solver["preconditioner_products"] == 49
    stationary = sparsedp.squared_sensitivity(*args, method="matrix-free", exact=False,
                                              preconditioner="stationary")
    assert stationary.solver["preconditioner"] == "stationary"
    assert stationary.solver["iterations"] > pcg.solver["iterations"]
    assembled = sparsedp.squared_sensitivity(*args, method="gram", exact=False)
    for r in (pcg, stationary):
        assert r.lower <= assembled.upper and assembled.lower <= r.upper
        assert r.lower == pytest.approx(assembled.lower, rel=1e-8)


def test_gram_preconditioner_with_noise_removed(monkeypatch):
    """No analytic lambda bound and the dense assembly switched off: PCG on the reduced K
    (redundant rows dropped); a singular reduced K (here: the exact rank decisions switched
    off, so a dependent row stays) falls back to the iterative preconditioner (the innovation
    one for the v2 views)."""
    monkeypatch.setattr(certified_solve, "OPERATOR_ASSEMBLY_MAX_DIM", 0)
    W = directed_W(12, 2)
    r = sparsedp.squared_sensitivity(W, 5, [1, 8], 7, noise_removed=True,
                                     method="matrix-free", preconditioner="gram")
    assert r.solver["preconditioner"] == "gram" and r.solver["iterations"] <= 2
    assert r.solver["redundant_rows_dropped"] >= 2
    _check(r, W, 5, 7, 0, True)
    # coalition {0, 1, 2}: 1 and 2 reach outside only through node 3, with equal weights,
    # so s_2(t) - s_1(t) is a function of the coalition's earlier messages
    Wn = sparsedp.gossip_matrix(nx.Graph([(0, 1), (0, 2), (1, 3), (2, 3), (3, 4)]))
    args = (Wn, 4, [0, 1, 2], 7)
    exact = dense_reference(*args, noise_removed=True).exact
    kw = {"noise_removed": True, "method": "matrix-free", "preconditioner": "gram"}
    s = sparsedp.squared_sensitivity(*args, **kw)
    assert s.solver["preconditioner"] == "gram" and s.solver["redundant_rows_dropped"] == 3 + 2 * 6
    assert s.lower == pytest.approx(exact, rel=1e-8)
    monkeypatch.setattr(exact_rank, "EXACT_WORK_LIMIT", 0)
    s = sparsedp.squared_sensitivity(*args, **kw)
    assert s.solver["exact_rank_skipped"]
    assert "singular" in s.solver["preconditioner_note"]
    assert s.solver["preconditioner"] == "innovation" and not s.solver["upper_certified"]
    assert s.lower == pytest.approx(exact, rel=1e-6) and s.upper == 7


def test_bad_arguments():
    W = directed_W(8, 1)
    with pytest.raises(ParameterError, match="unknown preconditioner"):
        sparsedp.squared_sensitivity(W, 5, [2], 4, preconditioner="jacobi")
    Ws = [W] * 4
    with pytest.raises(ParameterError, match="one constant W"):
        sparsedp.squared_sensitivity(Ws, 5, [2], 4, method="gram")
    with pytest.raises(ParameterError, match="one constant W"):
        sparsedp.squared_sensitivity(Ws, 5, [2], 4, method="matrix-free", preconditioner="gram")
    r = sparsedp.squared_sensitivity(Ws, 5, [2], 4)  # time-varying: matrix-free, innovation
    assert r.method == "matrix-free" and r.solver["preconditioner"] == "innovation"
    assert r.lower == pytest.approx(
        sparsedp.squared_sensitivity(W, 5, [2], 4, method="gram").lower, rel=1e-8
    )


def test_lags_too_large_for_the_gram_fall_back_to_the_operator_assembly(monkeypatch):
    """No analytic lambda bound and no room for the lags: K is assembled from the operator
    (unit vectors) so that the upper bound is still certified."""
    monkeypatch.setattr(gram, "GRAM_MAX_LAG_BYTES", 0)
    W = directed_W(12, 2)
    r = sparsedp.squared_sensitivity(W, 5, [1, 8], 7, noise_removed=True, method="matrix-free")
    assert "operator" in r.solver["solver"] and r.solver["upper_certified"]
    _check(r, W, 5, 7, 0, True)


def test_dense_method_time_varying_and_its_size_limit():
    Ws = [symmetric_W(25, seed) for seed in range(6)]
    d = sparsedp.squared_sensitivity(Ws, 3, [0, 7], 6, method="dense")
    m = sparsedp.squared_sensitivity(Ws, 3, [0, 7], 6, method="matrix-free")
    assert d.lower <= m.upper and m.lower <= d.upper
    assert d.upper == pytest.approx(m.upper, rel=1e-8)
    with pytest.raises(ParameterError, match="method='dense'"):
        sparsedp.squared_sensitivity(symmetric_W(30, 1), 3, [0, 1], 4001, method="dense")
