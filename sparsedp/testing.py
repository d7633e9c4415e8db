"""Dense reference computations for tests (small n and T only).

Independent of the engine: it builds ``H_T`` explicitly (mT x nT) for every view (power
offset of the v1 form, observers' noise removed, time-varying ``W_t``), forms
``M_T = (H^+ G)^T (H^+ G)`` with a pseudo-inverse (SVD) and evaluates every bound by brute
force over all sign vectors with plain numpy.  Also the inputs that tests and benches share:
:func:`metropolis_round`, one round of time-varying gossip.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import scipy.optimize
import scipy.sparse as sp

from sparsedp.linalg.kernels import _local_sign_search_numpy


def metropolis_round(graph, n: int) -> sp.csr_matrix:
    """Metropolis weights ``W_ij = 1 / (1 + max(d_i, d_j))`` of a graph on nodes ``0..n-1``,
    diagonal ``1 - sum_j W_ij``: one round of time-varying gossip, whose graph may be
    disconnected (isolated nodes keep their value), which :func:`sparsedp.gossip_matrix`
    refuses for a single W."""
    import networkx as nx

    A = nx.to_scipy_sparse_array(graph, nodelist=range(n), format="coo")
    degree = np.asarray(A.sum(axis=1)).ravel()
    weights = 1.0 / (1.0 + np.maximum(degree[A.row], degree[A.col]))
    W = sp.csr_matrix((weights, (A.row, A.col)), shape=(n, n))
    return sp.csr_matrix(W + sp.diags(1.0 - np.asarray(W.sum(axis=1)).ravel()))


def dense_gossip_matrices(W, T: int) -> list[np.ndarray]:
    """``[W_0 .. W_(T-1)]`` (dense) from one matrix, a list of T or a callable t -> W_t."""
    if callable(W):
        W = [W(t) for t in range(T)]
    if isinstance(W, (list, tuple)):
        if len(W) != T:
            raise ValueError(f"need T = {T} gossip matrices, got {len(W)}")
        return [np.asarray(w.toarray() if hasattr(w, "toarray") else w, dtype=float) for w in W]
    W = np.asarray(W.toarray() if hasattr(W, "toarray") else W, dtype=float)
    return [W] * T


def dense_H(W, observers, T: int, *, power_offset: int = 0) -> np.ndarray:
    """Explicit ``H_T`` (mT x nT) of the rounds ``theta_(t+1) = W_t (theta_t + x_t + u_t)``.

    ``power_offset = 0`` (v2 Lemma 10, the observers see the messages ``s_t = theta_t + z_t``):
    block (t, k) = ``S W_(t-1) ... W_k`` for k <= t (``S`` when k = t).
    ``power_offset = 1`` (v1 eq. 3.2, the observers see ``theta_(t+1) = W_t s_t``):
    block (t, k) = ``S W_t W_(t-1) ... W_k``.  ``W``: one matrix, a list of T or a callable.
    """
    Ws = dense_gossip_matrices(W, T)
    n = Ws[0].shape[0]
    S = np.eye(n)[list(observers)]
    m = S.shape[0]
    H = np.zeros((T * m, T * n))
    for k in range(T):
        block = np.eye(n)  # W_(t-1) ... W_k, built up as t grows
        for t in range(k, T):
            if t > k:
                block = Ws[t - 1] @ block
            shown = Ws[t] @ block if power_offset else block
            H[t * m : (t + 1) * m, k * n : (k + 1) * n] = S @ shown
    return H


def dense_M(
    W, target: int, observers, T: int, *, power_offset: int = 0, noise_removed: bool = False,
    known_noise=None,
) -> np.ndarray:
    """``M_T = (H^+ G)^T (H^+ G)`` with ``G = H (. kron e_j)`` the target's columns of ``H``.

    Without noise removal this is the (target, target) slice of the projector ``H^+ H``.
    ``noise_removed`` (v2 Sec. 3.3): the noise columns of the nodes in ``known_noise``
    (default: every observer) are deleted from the ``H`` that is pseudo-inverted (the
    target's columns of G stay); the result is the sensitivity matrix only when ``G`` lies in
    the range of that ``H`` (:func:`dense_in_range`), otherwise the sensitivity is infinite.
    """
    H = dense_H(W, observers, T, power_offset=power_offset)
    n = H.shape[1] // T
    G = H[:, np.arange(T) * n + target]
    X = np.linalg.pinv(_noise_columns(H, observers, T, noise_removed, known_noise)) @ G
    M = X.T @ X
    return 0.5 * (M + M.T)


def published_style_M(W, target: int, observers, T: int) -> np.ndarray:
    """``M_T`` the way the papers write it, ``||H^+ H (c kron e_j)||^2`` with ``nT x nT`` matrices.

    Forms the unrolled system of every node (``nT x nT``, block (t, k) = ``W^(t-k)``), takes
    the observers' rows as ``H``, the projector ``P = H^+ H`` (``nT x nT``) and
    ``M = (P E)^T (P E)`` with ``E`` the target's columns.  Two ``nT x nT`` arrays: 6.3 GB and
    14 s at n = 500, T = 40 on the reference machine, the footprint the issue quotes for the
    published code (6.7 GB, 17 s).  Benchmarks only (secure-summation view, constant W).
    """
    Wd = dense_gossip_matrices(W, 1)[0]
    n = Wd.shape[0]
    powers = [np.eye(n)]
    for _ in range(T - 1):
        powers.append(Wd @ powers[-1])
    system = np.zeros((n * T, n * T))
    for t in range(T):
        for k in range(t + 1):
            system[t * n : (t + 1) * n, k * n : (k + 1) * n] = powers[t - k]
    rows = (np.arange(T)[:, None] * n + np.asarray(list(observers))[None, :]).ravel()
    H = system[rows]
    P = np.linalg.pinv(H) @ H
    E = P[:, np.arange(T) * n + target]
    M = E.T @ E
    return 0.5 * (M + M.T)


def dense_in_range(
    W, target: int, observers, T: int, *, power_offset: int = 0, noise_removed: bool = False,
    known_noise=None, rtol: float = 1e-8,
) -> bool:
    """Whether every ``b = G c`` lies in the range of the (noise-removed) ``H``."""
    H = dense_H(W, observers, T, power_offset=power_offset)
    n = H.shape[1] // T
    G = H[:, np.arange(T) * n + target]
    Hbar = _noise_columns(H, observers, T, noise_removed, known_noise)
    residual = G - Hbar @ (np.linalg.pinv(Hbar) @ G)
    return bool(np.linalg.norm(residual) <= rtol * max(np.linalg.norm(G), 1.0))


def _noise_columns(
    H: np.ndarray, observers, T: int, noise_removed: bool, known_noise=None
) -> np.ndarray:
    """``H`` without the noise columns of ``known_noise`` (default: the observers) in every
    block when ``noise_removed``."""
    if not noise_removed:
        return H
    n = H.shape[1] // T
    keep = np.ones(n, dtype=bool)
    keep[list(observers if known_noise is None else known_noise)] = False
    return H[:, np.tile(keep, T)]


def random_psd(T: int, seed: int, rank: int | None = None) -> np.ndarray:
    """A random symmetric ``0 <= M <= I`` with ``lambda_max = 1`` (rank ``rank`` or T)."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((T, rank or T))
    M = A @ A.T
    return M / np.linalg.eigvalsh(M)[-1]


def sdp_max(M: np.ndarray, starts: int = 3) -> tuple[float, float]:
    """``max <M, X>`` over PSD X with unit diagonal (the vector maximum, M PSD), bracketed
    independently of :mod:`sparsedp.linalg.vector_bounds`: a lower bound from L-BFGS on the
    full-rank factor ``X = N N^T`` (N: the rows of a T x T matrix normalised), best of
    ``starts`` seeded starts, and an upper bound ``T lambda_max(M - diag l) + sum l`` with
    ``l_i = (M X)_ii`` its multipliers (valid for any l; plain numpy rounding)."""
    T = M.shape[0]
    if T == 1:
        return float(M[0, 0]), float(M[0, 0])

    def negative(flat):
        V = flat.reshape(T, T)
        norms = np.linalg.norm(V, axis=1, keepdims=True)
        N = V / norms
        MN = M @ N
        grad_N = -2.0 * MN
        grad_V = (grad_N - N * (grad_N * N).sum(axis=1, keepdims=True)) / norms
        return -float((MN * N).sum()), grad_V.ravel()

    best, best_N = -np.inf, None
    for seed in range(starts):
        start = np.random.default_rng(seed).standard_normal((T, T)).ravel()
        result = scipy.optimize.minimize(negative, start, jac=True, method="L-BFGS-B",
                                         options={"maxiter": 20000, "ftol": 1e-15,
                                                  "gtol": 1e-12})
        if -result.fun > best:
            V = result.x.reshape(T, T)
            best, best_N = -result.fun, V / np.linalg.norm(V, axis=1, keepdims=True)
    multipliers = ((M @ best_N) * best_N).sum(axis=1)
    upper = T * float(np.linalg.eigvalsh(M - np.diag(multipliers))[-1]) + float(multipliers.sum())
    return float(best), max(upper, float(best))


def brute_force_max(M: np.ndarray) -> float:
    """``max_c c^T M c`` over every sign vector (T <= 16)."""
    T = M.shape[0]
    C = np.array(list(itertools.product((1.0, -1.0), repeat=T)))
    return float(np.max(np.einsum("ij,jk,ik->i", C, M, C)))


@dataclass(frozen=True)
class DenseReference:
    M: np.ndarray
    ones: float
    local_search: float
    exact: float
    spectral: float
    entrywise: float

    @property
    def lower(self) -> float:
        return max(self.ones, self.local_search, self.exact)

    @property
    def upper(self) -> float:
        return min(self.spectral, self.entrywise, float(self.M.shape[0]), self.exact)


def dense_reference(W, target: int, observers, T: int, **view) -> DenseReference:
    """Every quantity the engine reports, computed densely from ``H^+ H``.

    ``view``: ``power_offset``, ``noise_removed`` and ``known_noise`` as in :func:`dense_M`.
    """
    M = dense_M(W, target, observers, T, **view)
    ones = np.ones(T)
    c = _local_sign_search_numpy(M, ones)
    ls_ones = float(c @ M @ c)
    top = np.linalg.eigh(M)[1][:, -1]
    top_signs = np.where(top >= 0, 1.0, -1.0)
    c = _local_sign_search_numpy(M, top_signs)
    ls_top = float(c @ M @ c)
    return DenseReference(
        M=M,
        ones=float(ones @ M @ ones),
        local_search=max(ls_ones, ls_top),
        exact=brute_force_max(M),
        spectral=float(T * np.linalg.eigvalsh(M)[-1]),
        entrywise=float(np.abs(M).sum()),
    )


# -- matrix-factorisation accounting (Bellet et al.): explicit A, B, C -------------------------


def _dense_observed_nodes(W: np.ndarray, trust: str, attackers: list) -> list:
    """Rows of the messages the attackers see: ``"pndp"`` their closed neighbourhood,
    ``"pndp-eq12"`` what they receive (neighbours, themselves when ``W[a, a] != 0``)."""
    adjacent = (W + W.T) != 0
    if trust == "pndp":
        return sorted({int(v) for a in attackers for v in np.flatnonzero(adjacent[a])}
                      | set(attackers))
    return sorted({int(v) for a in attackers for v in np.flatnonzero(adjacent[a]) if v != a}
                  | {a for a in attackers if W[a, a] != 0})


def dense_mf_matrices(W, T: int, *, K: int = 1, noise=None, trust: str = "ldp",
                      attackers=()) -> dict:
    """Explicit attacker knowledge ``O = A G + B Z`` of Bellet et al. App. A (time-major
    indices ``t n + u``), before and after Lemma 11's reduction.

    ``F = W_R (I_T kron E_K)`` with ``W_R`` block (r, r') = ``W^(r - r')`` (R = K T) and
    ``E_K = [I_n; 0]``; ``L`` = ``noise`` (T x T, default I; or n x T x T, one per node).
    ``"ldp"``: ``A = F``, ``B = F (L kron I)``.  ``"pndp"`` (App. A.2): rows ``P F`` of the
    closed neighbourhood of the attackers, then the attackers' own gradients (``A`` rows
    ``[I 0]``, ``B`` rows 0) and own noise (``A`` rows 0, ``B`` rows ``[I 0]``); ``A`` is then
    reduced, ``A~ = A (I - K^+ K)`` with ``K`` the own-gradient rows.  ``"pndp-eq12"``:
    ``A = P_a F``, ``B = P_a F (L kron I)`` with ``P_a`` the received messages (neighbours,
    and the attacker itself when ``W[a, a] > 0``).  Returns A (reduced), B, C (``L^+ kron I``)
    and the observed nodes.
    """
    W = np.asarray(W.toarray() if hasattr(W, "toarray") else W, dtype=float)
    n, R = W.shape[0], K * T
    L = np.eye(T) if noise is None else np.asarray(noise, dtype=float)
    powers = [np.linalg.matrix_power(W, k) for k in range(R)]
    F = np.zeros((n * R, n * T))
    for r in range(R):
        for t in range(r // K + 1):
            F[r * n:(r + 1) * n, t * n:(t + 1) * n] = powers[r - t * K]
    if L.ndim == 3:  # one correlation per node: block (t, s) = diag_i(L_i[t, s])
        Lbig = np.einsum("its,ij->tisj", L, np.eye(n)).reshape(n * T, n * T)
    else:
        Lbig = np.kron(L, np.eye(n))
    C = np.linalg.pinv(Lbig)
    if trust == "ldp":
        return {"A": F, "B": F @ Lbig, "C": C, "observed": list(range(n))}
    attackers = sorted(int(a) for a in attackers)
    observed = _dense_observed_nodes(W, trust, attackers)
    P = np.zeros((R * len(observed), R * n))
    for r in range(R):
        for k, v in enumerate(observed):
            P[r * len(observed) + k, r * n + v] = 1.0
    A, B = P @ F, P @ F @ Lbig
    if trust == "pndp":
        own = np.zeros((T * len(attackers), T * n))
        for t in range(T):
            for k, a in enumerate(attackers):
                own[t * len(attackers) + k, t * n + a] = 1.0
        zeros = np.zeros_like(own)
        A = np.vstack([A, own, zeros])
        B = np.vstack([B, zeros, own])
        A = A @ (np.eye(T * n) - np.linalg.pinv(own) @ own)  # Lemma 11
    return {"A": A, "B": B, "C": C, "observed": observed}


def dense_mf_sensitivity(W, target: int, T: int, patterns, *, K: int = 1, noise=None,
                         trust: str = "ldp", attackers=(), tol: float = 1e-9) -> dict:
    """Reference ``M = A_u^T (B B^T)^+ A_u`` (SVD of B, singular values below ``tol``
    relative dropped) and, maximised over the patterns: Theorem 7's ``sum |M_pi|``, the
    brute-force sign maximum, and the range condition (``A_u[:, pi]`` in range(B) to 1e-8;
    infinite values when it fails)."""
    mats = dense_mf_matrices(W, T, K=K, noise=noise, trust=trust, attackers=attackers)
    n = np.asarray(W.toarray() if hasattr(W, "toarray") else W).shape[0]
    out = _dense_sensitivity(mats["A"], mats["B"], [t * n + target for t in range(T)],
                             patterns, tol)
    return {**out, "observed": mats["observed"]}


def _dense_sensitivity(A: np.ndarray, B: np.ndarray, columns: list, patterns,
                       tol: float = 1e-9) -> dict:
    """``M = A_u^T (B B^T)^+ A_u`` (``A_u`` the given columns of A; SVD of B, singular values
    below ``tol`` relative dropped) and, over the patterns, Theorem 7's sum, the brute-force
    sign maximum and the range condition (infinite values when it fails)."""
    Au = A[:, columns]
    U, s, _ = np.linalg.svd(B, full_matrices=False)
    r = int((s > tol * s[0]).sum()) if s.size else 0
    U, s = U[:, :r], s[:r]
    Y = (U.T @ Au) / s[:, None]
    M = Y.T @ Y
    residual = Au - U @ (U.T @ Au)
    thm7 = exact = 0.0
    vector = [0.0, 0.0]
    in_range = True
    for p in patterns:
        p = np.asarray(p)
        scale = max(1.0, float(np.abs(Au[:, p]).max()))
        if np.abs(residual[:, p]).max() > 1e-8 * scale:
            in_range = False
            continue
        Mp = M[np.ix_(p, p)]
        thm7 = max(thm7, float(np.abs(Mp).sum()))
        exact = max(exact, brute_force_max(Mp) if p.size > 1 else float(Mp[0, 0]))
        vector = [max(v, w) for v, w in zip(vector, sdp_max(Mp), strict=True)]
    if not in_range:
        thm7 = exact = float("inf")
        vector = [float("inf")] * 2
    return {"M": M, "thm7": thm7, "exact": exact, "vector": tuple(vector),
            "range_condition": in_range}


def dense_decor_sensitivity(W, target: int, T: int, patterns, *, secret_scale: float,
                            attackers=(), trust: str | None = None) -> dict:
    """DECOR as in App. A.5: ``A = W_T``, ``B = W_T [I_nT, I_T kron s Inc]`` (orientation
    i < j, +1 at i); ``trust`` (default ``"ldp"`` without attackers, else ``"secldp"``):
    ``"ldp"``/``"secldp"`` every message row, ``"pndp"`` the rows of the attackers' closed
    neighbourhood, ``"pndp-eq12"`` their received rows.  Under ``"secldp"`` and ``"pndp"`` the
    attackers' own gradients (A rows, Lemma 11), own noise and the secrets of their edges
    (B rows ``[0 I]``, not column deletion) are added; ``M = A_u^T (B B^T)^+ A_u`` by SVD and,
    over the patterns, Theorem 7's sum and the sign maximum."""
    W = np.asarray(W.toarray() if hasattr(W, "toarray") else W, dtype=float)
    n = W.shape[0]
    F = dense_mf_matrices(W, T)["A"]
    adjacency = (W + W.T) != 0
    edges = [(i, j) for i in range(n) for j in range(i + 1, n) if adjacency[i, j]]
    inc = np.zeros((n, len(edges)))
    for e, (i, j) in enumerate(edges):
        inc[i, e], inc[j, e] = secret_scale, -secret_scale
    noise = np.hstack([np.eye(n * T), np.kron(np.eye(T), inc)])
    attackers = sorted(int(a) for a in attackers)
    trust = trust or ("secldp" if attackers else "ldp")
    if trust in ("pndp", "pndp-eq12"):
        observed = _dense_observed_nodes(W, trust, attackers)
        F = F[[t * n + v for t in range(T) for v in observed]]
    A, B = F, F @ noise
    if trust in ("secldp", "pndp"):
        q = noise.shape[1]
        known = [t * n + a for t in range(T) for a in attackers]
        known += [n * T + t * len(edges) + e for t in range(T)
                  for e, (i, j) in enumerate(edges) if i in attackers or j in attackers]
        rows_z = np.zeros((len(known), q))
        rows_z[np.arange(len(known)), known] = 1.0
        own = np.zeros((T * len(attackers), n * T))
        for k, idx in enumerate(t * n + a for t in range(T) for a in attackers):
            own[k, idx] = 1.0
        A = np.vstack([A, own, np.zeros((len(known), n * T))])
        B = np.vstack([B, np.zeros((own.shape[0], q)), rows_z])
        A = A @ (np.eye(n * T) - np.linalg.pinv(own) @ own)
    return _dense_sensitivity(A, B, [t * n + target for t in range(T)], patterns)


def dense_zip_dl_sensitivity(W, target: int, T: int, patterns, *, trust: str = "ldp",
                             attackers=(), own_copy_noise: bool = False) -> dict:
    """Zip-DL with the paper's ``n^2`` virtual nodes (App. A.6), simulated directly: slot
    ``n i + j`` carries the message ``i -> j`` (``W[j, i] != 0``, ``i != j``),
    ``m = x_i + zeta_(n i + j)`` with ``x = theta + g``, and
    ``theta_j <- W[j, j] x_j + sum_i W[j, i] m_(i -> j)``; each quantity is tracked as its
    coefficient rows over the variables ``(g: T n, zeta: T n^2)``.  Observed: every message
    (``"ldp"``, ``"secldp"``) or those received by the attackers (``"pndp"``,
    ``"pndp-eq12"``); under ``"pndp"`` and ``"secldp"`` the rows of the attackers' own
    gradients (A, then Lemma 11) and of the noise of every message they send (B, ``[0 I]``)
    are added.  ``own_copy_noise``: the self slot ``n j + j`` gets noise too (known to j).
    Returns what :func:`dense_mf_sensitivity` returns and the number of non-zero noise
    columns (``2|E|`` on a symmetric pattern without own-copy noise)."""
    W = np.asarray(W.toarray() if hasattr(W, "toarray") else W, dtype=float)
    n = W.shape[0]
    ng, nz = T * n, T * n * n
    attackers = sorted(int(a) for a in attackers)
    edges = [(i, j) for j in range(n) for i in range(n) if i != j and W[j, i] != 0]
    theta = np.zeros((n, ng + nz))
    rows = []
    for t in range(T):
        x = theta.copy()
        x[np.arange(n), t * n + np.arange(n)] += 1.0
        messages = {}
        for i, j in edges:
            row = x[i].copy()
            row[ng + t * n * n + n * i + j] += 1.0
            messages[(i, j)] = row
        theta = np.diag(np.diag(W)) @ x
        if own_copy_noise:
            for j in range(n):
                theta[j, ng + t * n * n + n * j + j] += W[j, j]
        for (i, j), row in messages.items():
            theta[j] += W[j, i] * row
        for (_i, j), row in messages.items():
            if trust in ("ldp", "secldp") or j in attackers:
                rows.append(row)
    observed = np.array(rows)
    A, B = observed[:, :ng], observed[:, ng:]
    if trust in ("pndp", "secldp"):
        own = np.zeros((T * len(attackers), ng))
        for k, (t, a) in enumerate((t, a) for t in range(T) for a in attackers):
            own[k, t * n + a] = 1.0
        known = [t * n * n + n * i + j for t in range(T) for i, j in edges if i in attackers]
        if own_copy_noise:
            known += [t * n * n + n * a + a for t in range(T) for a in attackers]
        noise_rows = np.zeros((len(known), nz))
        noise_rows[np.arange(len(known)), known] = 1.0
        A = np.vstack([A, own, np.zeros((len(known), ng))])
        B = np.vstack([B, np.zeros((own.shape[0], nz)), noise_rows])
        A = A @ (np.eye(ng) - np.linalg.pinv(own) @ own)  # Lemma 11
    used = np.abs(B).sum(axis=0) > 0  # the n^2 - 2|E| unused slots: zero columns
    out = _dense_sensitivity(A, B[:, used], [t * n + target for t in range(T)], patterns)
    return {**out, "noise_sources": int(used.sum()) // T, "A": A, "B": B}
