"""Numerical kernels on the small T x T matrix M_T, in numba with a plain-numpy twin.

Every kernel has two implementations with the same algorithm and the same tie-breaking:

* ``backend="numba"``: compiled on first use (numba is imported lazily, so ``import sparsedp``
  stays fast) and cached on disk;
* ``backend="numpy"``: the reference the tests compare against, and the fallback used when
  numba is unavailable or ``SPARSEDP_DISABLE_NUMBA=1`` is set.

``backend="auto"`` picks numba when it can be imported.

Kernels
-------
``max_sign_quadratic(M)``
    max over c in {-1, +1}^T of c^T M c by exhaustive enumeration of the 2^(T-1) classes
    {c, -c}, in exact int64 arithmetic on an integer grid ``Mi ~ 2 s sym(M)``
    (:func:`integer_grid`), meeting in the middle: ``c = (p, q)`` with a head ``p`` of
    ``ceil(T / 2)`` coordinates (``c_1 = +1``) and a tail ``q``, ``c^T Mi c = p^T A p +
    q^T C q + 2 (B p)^T q``.  numba: the tails' ``q^T C q`` once, by a Gray-code walk
    (flipping coordinate k changes it by ``4 Mi_kk - 4 q_k (C q)_k``), then per head (in
    parallel) ``p^T A p`` and ``B p`` once and a Gray-code walk over the tails in which the
    cross term changes by ``-4 q_k (B p)_k``: O(1) a sign vector instead of the O(T) of a
    walk over whole vectors, and, being exact, without drift.  numpy: the same split, every
    head-tail pair's value by integer matrix products, in binary order (the maximum value
    is the same; on ties the maximising vector may differ).  Measured (2-core machine at
    load 2.7, one numba thread): T = 20 in 0.7 ms and T = 24 in 12 ms, against 6.2 ms and
    112 ms for the former walk over whole vectors.
``local_sign_search(M, c0)``
    best-improvement single-flip ascent of c^T M c from ``c0`` (a lower bound on the maximum).
``spmm(W, X)`` / ``spmm_fused(W, X, shift)`` / ``spmm_rows(W, X, Y, rows)``
    CSR sparse times dense block (n x b), parallel over row chunks; the fused variant also
    returns ``X^T Y``, ``Y^T Y`` and the centred norms ``sum_r (Y[r] - shift)^2`` from the same
    pass over ``Y``; the row variant updates only the listed rows (a frontier).
``k_from_moments(mu, T)`` / ``toeplitz_blocks(a)``
    the dense ``K`` and ``G`` of the structured path from the lags.
``csr_line_sums(W)``
    row and column sums of a CSR matrix (or of its absolute values) in one pass.
``is_symmetric(W)`` / ``symmetry_defect(W)``
    whether a canonical CSR matrix equals its transpose, matching each entry above the
    diagonal to its mirror with one cursor per row (no transpose is formed, no search); then
    ``max |W - W^T|`` and the row-major first entry attaining it (a binary search per entry).
``mlp_mean_losses(theta, X, y, h)``
    mean squared error of many one-hidden-layer ReLU MLPs on one data set (the learning
    simulator's test loss): numba goes hidden unit by hidden unit, vectorised over the points,
    so no points x models x h array is formed (3700 models of width 64, d = 8, on 1000 points
    in about 0.1 s; the numpy twin, 32 models at a time, about 0.5 s).
``mlp_clipped_mean(theta, X, y, clip, h)``
    per MLP, the mean over its batch of the per-example gradients clipped to a norm, without
    storing the per-example gradients (the learning simulator's step).
``top_eigenpair(M)``
    restarted Lanczos with full reorthogonalisation for the largest eigenvalue of a symmetric
    M: ``(v^T M v, v)`` for the final Ritz vector; the value never exceeds lambda_max (certified
    upper bounds live in :mod:`sparsedp.linalg.certified`).  Each cycle builds a Krylov basis of at
    most ``krylov_dim`` vectors, takes the top Ritz pair of the tridiagonal ``Q^T M Q`` and
    restarts from its Ritz vector until ``||M v - theta v|| <= tol |theta|`` or a restart
    improves the Ritz value by less than ``1e-15`` relative (a cluster at the top: the value is
    then accurate although the vector is not).
"""

from __future__ import annotations

import functools
import math
import os

import numpy as np

from sparsedp.linalg.threads import PARALLEL_MIN_WORK, kernel_thread_cap, numba_threads_for

BACKENDS = ("auto", "numba", "numpy")
_STAGNATION = 1e-15
FUSED_MAX_WIDTH = 8  # wider blocks: plain product, then chunked BLAS Gram products
FUSED_CHUNKS = 64  # row chunks of the fused kernels' Gram sums, whatever the thread count
GRAM_PARALLEL_MIN_COLUMNS = 128  # columns below which "auto" gram_abs_sums uses numpy (BLAS)


def numba_enabled() -> bool:
    """True when numba can be imported and ``SPARSEDP_DISABLE_NUMBA`` is not set."""
    if os.environ.get("SPARSEDP_DISABLE_NUMBA", "") not in ("", "0"):
        return False
    return _numba_importable()


@functools.lru_cache(maxsize=1)
def _numba_importable() -> bool:
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


def _resolve(backend: str) -> str:
    if backend not in BACKENDS:
        raise ValueError(f"unknown kernel backend {backend!r}; choose one of {BACKENDS}")
    if backend == "auto":
        return "numba" if numba_enabled() else "numpy"
    return backend


# --------------------------------------------------------------------------------------------
# numpy implementations (the reference)
# --------------------------------------------------------------------------------------------


def integer_grid(M: np.ndarray) -> tuple[np.ndarray, float]:
    """``(Mi, s)``: int64 symmetric ``Mi`` with ``|sym(M)_ij - Mi_ij / (2 s)| <= 1 / s``.

    ``s`` is a power of two, so ``M s`` is exact; ``R = rint(M s)`` is off by at most 1/2 per
    entry and ``Mi = R + R^T`` (formed in int64, exactly) represents ``M + M^T`` on the grid
    ``1 / s``: ``|sym(M)_ij - Mi_ij / (2 s)| <= 1 / (2 s)``; the stated ``1 / s`` leaves room
    for underflow in ``M s`` when ``s < 1``.  ``s`` is the largest power of two with
    ``(T + 2)^2 max|Mi| <= 2^61``: every intermediate of the Gray-code update
    (``|q| + 4 |y_k| + 4 |Mi_kk| <= (T + 2)^2 max|Mi|``) fits in int64 with room to spare.
    """
    T = M.shape[0]
    magnitude = float(np.abs(M).max())
    if not np.isfinite(magnitude):
        raise ValueError("matrix has non-finite entries")
    if magnitude == 0.0:
        return np.zeros((T, T), dtype=np.int64), float("inf")  # exact: no grid error
    budget = 2.0**61 / float((T + 2) ** 2)  # allowed max|Mi| (>= 2^61 / 32^2 for T <= 30)
    exponent = int(np.floor(np.log2((budget - 2.0) / (2.0 * magnitude))))
    s = float(np.ldexp(1.0, int(np.clip(exponent, -1000, 1000))))
    R = np.rint(M * s).astype(np.int64)
    return R + R.T, s


def _sign_patterns(bits: int) -> np.ndarray:
    """Every sign vector of length ``bits`` in binary order (bit b of the row index set:
    coordinate b is -1), int64, one per row."""
    return 1 - 2 * ((np.arange(2**bits)[:, None] >> np.arange(bits)) & 1)


def _max_sign_quadratic_numpy(Mi: np.ndarray) -> tuple[int, np.ndarray]:
    """Meet in the middle on ``c = (p, q)`` (:func:`_sign_search_split`), ``c_1 = +1``: the
    heads' ``p^T A p``, the tails' ``q^T C q`` and the cross terms ``2 p^T B q`` (int64,
    exact) of every pair, a block of heads at a time, in binary order."""
    T = Mi.shape[0]
    head = _sign_search_split(T)
    tails = _sign_patterns(T - head)
    tail_values = ((tails @ Mi[head:, head:]) * tails).sum(axis=1)
    best_value, best_signs = None, None
    block_bits = max(0, min(head - 1, 20 - (T - head)))  # <= 2^20 pairs a block
    within = _sign_patterns(block_bits)
    for high in range(2 ** (head - 1 - block_bits)):
        P = np.ones((2**block_bits, head), dtype=np.int64)
        P[:, 1:1 + block_bits] = within
        P[:, 1 + block_bits:] = 1 - 2 * ((high >> np.arange(head - 1 - block_bits)) & 1)
        head_values = ((P @ Mi[:head, :head]) * P).sum(axis=1)
        values = (head_values[:, None] + tail_values[None, :]
                  + 2 * (P @ Mi[:head, head:]) @ tails.T)
        i, j = np.unravel_index(int(np.argmax(values)), values.shape)
        if best_value is None or values[i, j] > best_value:
            best_value, best_signs = int(values[i, j]), np.concatenate([P[i], tails[j]])
    return best_value, best_signs


def _local_sign_search_numpy(M: np.ndarray, c0: np.ndarray) -> np.ndarray:
    """The ascent of :func:`local_sign_search` from one start; the final sign vector."""
    c = c0.astype(np.float64).copy()
    y = M @ c
    diag = np.diag(M).copy()
    for _ in range(4 * M.shape[0] * M.shape[0] + 4):
        gains = 4.0 * (diag - c * y)
        k = int(np.argmax(gains))
        if gains[k] <= 1e-14 * (1.0 + abs(c @ y)):
            break
        y -= 2.0 * c[k] * M[:, k]
        c[k] = -c[k]
    return c


def _top_eigenpair_numpy(
    M: np.ndarray, krylov_dim: int, tol: float, max_restarts: int
) -> np.ndarray:
    T = M.shape[0]
    k = min(krylov_dim, T)
    v = _start_vector(T)
    theta_prev = -np.inf
    for _ in range(max_restarts):
        Q = np.zeros((k, T))
        alpha = np.zeros(k)
        beta = np.zeros(k)
        Q[0] = v
        size = k
        for j in range(k):
            w = M @ Q[j]
            alpha[j] = w @ Q[j]
            for _rep in range(2):
                w -= (Q[: j + 1] @ w) @ Q[: j + 1]
            if j + 1 < k:
                b = np.linalg.norm(w)
                if b <= 1e-14 * (abs(alpha[j]) + 1e-300):
                    size = j + 1
                    break
                beta[j] = b
                Q[j + 1] = w / b
        tri = np.diag(alpha[:size]) + np.diag(beta[: size - 1], 1) + np.diag(beta[: size - 1], -1)
        y = np.linalg.eigh(tri)[1][:, -1]
        v = y @ Q[:size]
        v /= np.linalg.norm(v)
        Mv = M @ v
        theta = v @ Mv
        if size < k or np.linalg.norm(Mv - theta * v) <= tol * abs(theta):
            break
        if theta - theta_prev <= _STAGNATION * abs(theta):
            break
        theta_prev = theta
    return v


def _k_from_moments_numpy(mu: np.ndarray, T: int) -> np.ndarray:
    m = mu.shape[1]
    K = np.empty((T, m, T, m))
    idx = np.arange(T)
    for d in range(T):
        blocks = np.cumsum(mu[d : d + 2 * (T - d) : 2], axis=0)  # K[t, t+d] for t < T - d
        K[idx[: T - d], :, idx[d:], :] = blocks
        K[idx[d:], :, idx[: T - d], :] = blocks.transpose(0, 2, 1)
    return K.reshape(T * m, T * m)


def _toeplitz_blocks_numpy(blocks: np.ndarray) -> np.ndarray:
    T, m, r = blocks.shape
    # Q[i] = a[T-1-i] (i < T), 0 after; block (t, k) = Q[T-1-t+k], a window of Q
    Q = np.concatenate([blocks[::-1], np.zeros((T - 1, m, r))])
    windows = np.lib.stride_tricks.sliding_window_view(Q, T, axis=0)  # [s, :, :, k] = Q[s+k]
    G = windows[::-1].transpose(0, 1, 3, 2).reshape(T * m, T * r)
    return G if G.flags.writeable else G.copy()  # a view of the (overlapping) windows: copy


def _start_vector(T: int) -> np.ndarray:
    v = 1.0 + 0.01 * np.sin(np.arange(1, T + 1))
    return v / np.linalg.norm(v)


# --------------------------------------------------------------------------------------------
# numba implementations (same algorithms), compiled on first use
# --------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _numba_module():
    """Import (and so compile lazily, with an on-disk cache outside the package that heals
    itself: :mod:`sparsedp.linalg.numba_cache`) the numba implementations."""
    from sparsedp.linalg import numba_cache

    numba_cache.configure()
    from sparsedp.linalg import _numba_kernels

    return _numba_kernels


# --------------------------------------------------------------------------------------------
# public dispatchers
# --------------------------------------------------------------------------------------------


def _as_square(M: np.ndarray) -> np.ndarray:
    M = np.ascontiguousarray(M, dtype=np.float64)
    if M.ndim != 2 or M.shape[0] != M.shape[1] or M.shape[0] == 0:
        raise ValueError(f"expected a non-empty square matrix, got shape {M.shape}")
    return M


def _sign_search_split(T: int) -> int:
    """Coordinates in the head of the meet-in-the-middle search of
    :func:`max_sign_quadratic` (``c_1`` among them, fixed to +1): ``ceil(T / 2)``, so
    that the ``2^(head - 1)`` heads and the ``2^(T - head)`` tails are about as many."""
    return (T + 1) // 2


def max_sign_quadratic(M: np.ndarray, backend: str = "auto") -> tuple[float, np.ndarray]:
    """Exhaustive ``max_{c in {-1,1}^T} c^T M c`` and a maximising ``c`` (with ``c_1 = +1``).

    Cost O(2^(T-1)) (a few integer operations per sign vector) plus O(2^(T/2) T^2).  The
    search runs exactly on the integer grid of :func:`integer_grid`, so ``c`` maximises
    ``c^T sym(M) c`` up to :func:`max_sign_quadratic_drift`.  The returned value is
    recomputed as ``c^T M c`` for the returned vector, so it is exactly the value of a
    feasible point (up to the rounding of that one evaluation).
    """
    M = _as_square(M)
    Mi, _ = integer_grid(M)
    T = M.shape[0]
    if _resolve(backend) == "numpy":
        _, c = _max_sign_quadratic_numpy(Mi)
    else:
        head = _sign_search_split(T)
        with numba_threads_for(2.0 ** (T - 1)):
            best_q, best_step = _numba_module().max_sign_quadratic(Mi, head)
        k = int(np.argmax(best_q))
        gray = int(best_step[k]) ^ (int(best_step[k]) >> 1)
        c = np.concatenate([[1], 1 - 2 * ((k >> np.arange(head - 1)) & 1),
                            1 - 2 * ((gray >> np.arange(T - head)) & 1)])
    c = c.astype(np.float64)
    return float(c @ (M @ c)), c


def max_sign_quadratic_drift(M: np.ndarray) -> float:
    """``max_c c^T M c <= c*^T M c* + drift`` for the ``c*`` that :func:`max_sign_quadratic`
    returns (either backend); add it to an upper bound derived from the returned value.

    The search is exact on the grid ``Mi / (2 s)`` (:func:`integer_grid`), whose entries are
    within ``1 / s`` of ``sym(M)``, so every ``c^T M c`` is within ``T^2 / s`` of its grid
    value: ``max_c c^T M c <= grid(c*) + T^2 / s <= c*^T M c* + 2 T^2 / s``.  (The rounding
    of evaluating ``c*^T M c*`` itself is the caller's, as for any sign vector.)  About
    ``2^-58 T^2 (T + 2)^2 max|M_ij|``: 5e-13 for T = 24 and ``max|M_ij| = 1``.
    """
    M = _as_square(M)
    _, s = integer_grid(M)
    T = M.shape[0]
    return 2.0 * T * T / s * (1.0 + 4 * np.finfo(np.float64).eps)


def local_sign_search(
    M: np.ndarray, c0: np.ndarray | None = None, backend: str = "auto"
) -> tuple[float, np.ndarray]:
    """Best-improvement single-flip ascent of ``c^T M c`` over sign vectors.

    Flip gains are ``4 (M_kk - c_k (Mc)_k)``; the largest positive gain is taken until none is
    left.  ``c0``: one start (T,) or several, one per row (k x T), run in one kernel call;
    default the all-ones vector.  Returns the best final ``c`` over the starts (the first on
    ties) and its value ``c^T M c``: a feasible point, so a lower bound on the maximum.
    """
    M = _as_square(M)
    T = M.shape[0]
    c0 = np.ones(T) if c0 is None else np.asarray(c0, dtype=np.float64)
    starts = np.where(c0.reshape(-1, T) < 0, -1.0, 1.0)  # signs, +1 for 0
    if _resolve(backend) == "numpy":
        finals = np.array([_local_sign_search_numpy(M, c) for c in starts])
    else:
        finals = _numba_module().local_sign_search(M, starts)
    values = ((finals @ M) * finals).sum(axis=1)
    best = int(np.argmax(values))
    return float(values[best]), finals[best]


def _mixing_sweeps_numpy(M, Mt, V, MV, sweeps: int, rtol: float) -> int:
    """The numba kernel's twin: the same operations in the same order (sequential sums, the
    zero entries of ``Mt[i]`` skipped), so the results agree bit for bit."""
    T = V.shape[0]
    previous = -np.inf
    for sweep in range(sweeps):
        for i in range(T):
            g = MV[i] - M[i, i] * V[i]
            norm = math.sqrt(sum((g * g).tolist()))
            if norm == 0.0:
                continue
            delta = g / norm - V[i]
            V[i] += delta
            rows = np.flatnonzero(Mt[i])
            MV[rows] += np.outer(Mt[i, rows], delta)
        value = sum((MV * V).ravel().tolist())
        if value - previous <= rtol * abs(value):
            return sweep + 1
        previous = value
    return sweeps


def mixing_sweeps(M: np.ndarray, V: np.ndarray, sweeps: int, rtol: float = 1e-13,
                  backend: str = "auto") -> tuple[np.ndarray, np.ndarray, int]:
    """The mixing method for ``max <M, V V^T>`` over V with unit rows (Wang, Chang and
    Kolter 2017; Burer-Monteiro rank ``r = V.shape[1]``): row by row
    ``v_i <- g_i / ||g_i||``, ``g_i = sum_(j != i) M_ij v_j``, which never lowers the
    objective.  Returns the final V, ``M V`` and the number of sweeps (at most ``sweeps``;
    fewer once a sweep gains at most ``rtol`` relative)."""
    M = _as_square(M)
    V = np.array(V, dtype=np.float64, order="C")
    MV = np.ascontiguousarray(M @ V)
    Mt = np.ascontiguousarray(M.T)  # column i of M as a contiguous row
    if _resolve(backend) == "numpy":
        done = _mixing_sweeps_numpy(M, Mt, V, MV, int(sweeps), float(rtol))
    else:
        done = _numba_module().mixing_sweeps(M, Mt, V, MV, int(sweeps), float(rtol))
    return V, MV, int(done)


def top_eigenpair(
    M: np.ndarray,
    tol: float = 1e-12,
    krylov_dim: int = 64,
    max_restarts: int = 200,
    backend: str = "auto",
) -> tuple[float, np.ndarray]:
    """Largest eigenpair of a symmetric ``M`` by restarted Lanczos: ``(v^T M v, v)``, ``||v|| = 1``.

    The Rayleigh quotient never exceeds lambda_max(M) (up to rounding).
    """
    M = _as_square(M)
    if _resolve(backend) == "numpy":
        v = _top_eigenpair_numpy(M, krylov_dim, tol, max_restarts)
    else:
        v = _numba_module().top_eigenpair(
            M, _start_vector(M.shape[0]), krylov_dim, tol, max_restarts
        )
    return float(v @ (M @ v)), v


def toeplitz_blocks(a: np.ndarray, backend: str = "auto") -> np.ndarray:
    """Block lower-triangular Toeplitz matrix, block ``(t, k) = a[t-k]`` for ``k <= t``
    (:func:`sparsedp.linalg.operators.toeplitz_blocks`); copies only, so both backends agree bit
    for bit."""
    T, m = a.shape[:2]
    blocks = np.ascontiguousarray(a, dtype=np.float64).reshape(T, m, -1)
    if _resolve(backend) == "numpy":
        return _toeplitz_blocks_numpy(blocks)
    return _numba_module().toeplitz_blocks(blocks)


def gram_abs_sums(Y: np.ndarray, backend: str = "auto") -> tuple[np.ndarray, np.ndarray]:
    """For ``Y`` (S, T, n) and every column j, the Gram ``M_j[s, s'] = sum_t Y[s,t,j]
    Y[s',t,j]`` reduced to ``sum_ss' |M_j[s, s']|`` (n,) and its diagonal (n, S), without
    storing the n Gram matrices (numba: blocks of 64 columns, parallel).  Every entry is a sum
    of T products (``|fl - exact| <= gamma_T |Y_s|.|Y_s'|``, any order).  ``auto`` takes the
    numpy twin below :data:`GRAM_PARALLEL_MIN_COLUMNS` columns (18 columns, S = T = 100: 2 ms
    against 17 ms for one single-threaded numba block of 64, on the 2-core machine)."""
    Y = np.ascontiguousarray(Y, dtype=np.float64)
    if backend == "auto" and Y.shape[2] < GRAM_PARALLEL_MIN_COLUMNS:
        backend = "numpy"  # a few columns: one BLAS product each beats one numba block
    if _resolve(backend) == "numpy":
        Yj = Y.transpose(2, 0, 1)
        M = np.matmul(Yj, Yj.transpose(0, 2, 1))
        return np.abs(M).sum(axis=(1, 2)), np.diagonal(M, axis1=1, axis2=2).copy()
    with numba_threads_for(Y.size * Y.shape[0]):
        return _numba_module().gram_abs_sums(Y, 64)


def _mlp_mean_losses_numpy(theta, X, y, h: int, chunk: int = 32) -> np.ndarray:
    d = X.shape[1]
    out = np.empty(theta.shape[0])
    for lo in range(0, theta.shape[0], chunk):
        th = theta[lo:lo + chunk]
        W1 = th[:, : d * h].reshape(-1, d, h)
        a = np.maximum(np.matmul(X[None], W1) + th[:, None, d * h: d * h + h], 0.0)
        p = np.matmul(a, th[:, d * h + h: d * h + 2 * h, None])[..., 0] + th[:, -1:]
        out[lo:lo + chunk] = ((p - y[None]) ** 2).mean(axis=1)
    return out


def mlp_mean_losses(theta: np.ndarray, X: np.ndarray, y: np.ndarray, h: int,
                    backend: str = "auto") -> np.ndarray:
    """Mean squared error of each row of ``theta`` (an MLP ``[vec(W1) (d h, row-major), b1,
    w2, b2]``, :func:`sparsedp.learning.models.mlp`) on ``(X, y)`` (X: N x d):
    ``mean_p (relu(x_p W1 + b1) . w2 + b2 - y_p)^2``.  numba: one hidden unit at a time over
    all points (X transposed, features padded to a multiple of 8); numpy: the hidden layer of
    32 models at a time.  They agree to rounding (the sums are ordered differently)."""
    theta = np.ascontiguousarray(theta, dtype=np.float64)
    X = np.ascontiguousarray(X, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    d = X.shape[1]
    if theta.ndim != 2 or theta.shape[1] != d * h + 2 * h + 1 or y.shape != (X.shape[0],):
        raise ValueError(f"theta {theta.shape}, X {X.shape}, y {y.shape} do not fit an MLP "
                         f"of width {h}")
    if _resolve(backend) == "numpy":
        return _mlp_mean_losses_numpy(theta, X, y, int(h))
    XT = np.zeros((-(-d // 8) * 8, X.shape[0]))
    XT[:d] = X.T
    return _numba_module().mlp_mean_losses(theta, XT, y, int(h), d)


def clip_weights(sq_norms: np.ndarray, clip: float | None) -> np.ndarray:
    """``w_e = min(1, clip / ||g_e||) / B`` from the squared per-example gradient norms
    (``... x B``); ``clip=None``: ``1 / B`` (no clipping).  ValueError for ``clip <= 0``."""
    B = sq_norms.shape[-1]
    if clip is None:
        return np.full(sq_norms.shape, 1.0 / B)
    if not clip > 0:
        raise ValueError(f"clip must be > 0 (or None: no clipping), got {clip!r}")
    return np.minimum(1.0, clip / np.maximum(np.sqrt(sq_norms), 1e-300)) / B


def _mlp_clipped_mean_numpy(theta, X, y, clip: float, h: int) -> np.ndarray:
    R, B, d = X.shape
    W1 = theta[:, : d * h].reshape(R, d, h)
    w2 = theta[:, d * h + h: d * h + 2 * h]
    a = np.matmul(X, W1) + theta[:, None, d * h: d * h + h]
    hid = np.maximum(a, 0.0)
    r = 2.0 * (np.matmul(hid, w2[:, :, None])[..., 0] + theta[:, -1:] - y)
    da = r[..., None] * w2[:, None, :] * (a > 0)
    w = np.full(r.shape, 1.0 / B)
    if clip > 0:
        sq = ((np.einsum("nbd,nbd->nb", X, X) + 1.0) * np.einsum("nbh,nbh->nb", da, da)
              + r * r * (np.einsum("nbh,nbh->nb", hid, hid) + 1.0))
        w = clip_weights(sq, clip)
    wda = da * w[..., None]
    wr = w * r
    return np.concatenate([np.matmul(X.transpose(0, 2, 1), wda).reshape(R, d * h),
                           wda.sum(axis=1), np.matmul(wr[:, None, :], hid)[:, 0],
                           wr.sum(axis=1)[:, None]], axis=1)


def mlp_clipped_mean(theta: np.ndarray, X: np.ndarray, y: np.ndarray, clip: float | None,
                     h: int, backend: str = "auto") -> np.ndarray:
    """For each row of ``theta`` (an MLP of width h, :func:`mlp_mean_losses`' layout) and its
    batch ``X[m]`` (B x d), ``y[m]``: ``sum_e w_e g_e`` with ``g_e`` the per-example gradient
    of ``(p - y)^2`` and ``w_e = min(1, clip / ||g_e||) / B`` (``clip=None``: ``1 / B``),
    from ``||g_e||^2 = (||x_e||^2 + 1) ||da_e||^2 + r_e^2 (||h_e||^2 + 1)`` (the per-example
    gradient is a sum of outer products; :mod:`sparsedp.learning.models`).  The backends agree
    to rounding."""
    theta = np.ascontiguousarray(theta, dtype=np.float64)
    X = np.ascontiguousarray(X, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    R, B, d = X.shape
    if theta.shape != (R, d * h + 2 * h + 1) or y.shape != (R, B):
        raise ValueError(f"theta {theta.shape}, X {X.shape}, y {y.shape} do not fit an MLP "
                         f"of width {h}")
    if clip is not None and not clip > 0:
        raise ValueError(f"clip must be > 0 (or None: no clipping), got {clip!r}")
    c = 0.0 if clip is None else float(clip)  # the kernels read 0 as "no clipping"
    if _resolve(backend) == "numpy":
        return _mlp_clipped_mean_numpy(theta, X, y, c, int(h))
    return _numba_module().mlp_clipped_mean(theta, X, y, c, int(h))


def k_from_moments(mu: np.ndarray, T: int, backend: str = "auto") -> np.ndarray:
    """Dense ``K`` (Tm x Tm) from the lags ``mu`` (2T-1, m, m): block ``(t, s)`` for
    ``t <= s`` is ``sum_{i=0}^{t} mu_(s-t+2i)``, summed in that order, and block ``(s, t)``
    its transpose (:func:`sparsedp.linalg.operators.k_from_moments`).  Both backends do the same
    additions in the same order, so they agree bit for bit."""
    mu = np.ascontiguousarray(mu, dtype=np.float64)
    if mu.ndim != 3 or mu.shape[0] < 2 * T - 1 or mu.shape[1] != mu.shape[2]:
        raise ValueError(f"expected lags of shape (>= {2 * T - 1}, m, m), got {mu.shape}")
    if _resolve(backend) == "numpy":
        return _k_from_moments_numpy(mu, T)
    return _numba_module().k_from_moments(mu, T)


def _csr_parts(W):
    return W.indptr, W.indices, W.data


def _product_parts(W):
    """``W``'s CSR arrays for the product kernels, the column indices viewed as unsigned
    (no copy).  With a signed index numba wraps negative values around (a sign test and a
    conditional add in the address of every load); the kernels therefore also count their
    entry positions ``k`` as unsigned 64-bit integers.  Both together make a numba CSR
    product as fast as scipy's C++ loop (about 2.3x faster than with signed indices at
    n = 3 x 10^6, ``docs/performance.md``); same additions in the same order:
    bit-identical."""
    unsigned = np.uint32 if W.indices.dtype.itemsize == 4 else np.uint64
    return W.indptr, W.indices.view(unsigned), W.data


def _chunks(n: int, count: int) -> int:
    """Row chunks of a kernel's partial Gram sums: ``count`` (at most n), never the thread
    count, which follows the machine's load (:mod:`sparsedp.linalg.threads`), so the sums
    (added chunk by chunk) are the same bit for bit busy or quiet."""
    return max(1, min(n, count))


def _sparse_backend(W, X: np.ndarray, backend: str) -> str:
    """``auto`` keeps small products in scipy: a parallel region costs more than it saves."""
    if backend == "auto" and W.nnz * X.shape[1] < PARALLEL_MIN_WORK:
        return "numpy"
    return _resolve(backend)


def spmm(W, X: np.ndarray, backend: str = "auto", out: np.ndarray | None = None) -> np.ndarray:
    """``Y = W X`` for a CSR matrix ``W`` (k x n, square or not) and a C-contiguous float64
    block ``X`` (n x b), written into ``out`` (k x b, C-contiguous) when given."""
    if _sparse_backend(W, X, backend) == "numpy":
        if out is None:
            return np.asarray(W @ X)
        out[...] = W @ X
        return out
    Y = np.empty((W.shape[0], X.shape[1])) if out is None else out
    with numba_threads_for(W.nnz * X.shape[1]):
        _numba_module().csr_spmm(*_product_parts(W), X, Y)
    return Y


def spmm_fused(
    W, X: np.ndarray, shift: float, backend: str = "auto"
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``Y = W X`` and ``X^T Y``, ``Y^T Y``, ``sum_r (Y[r] - shift)^2``.

    Fused into the pass over W for narrow blocks; for blocks wider than ``FUSED_MAX_WIDTH``
    the b^2 per-row work is better done by BLAS after a plain product: one single-threaded
    product per row chunk and numba thread (multi-threaded OpenBLAS stalls under load here).
    """
    if _sparse_backend(W, X, backend) == "numpy":
        Y = spmm(W, X, backend=backend)
        return Y, X.T @ Y, Y.T @ Y, ((Y - shift) ** 2).sum(axis=0)
    if X.shape[1] > FUSED_MAX_WIDTH:
        Y = spmm(W, X, backend=backend)
        with numba_threads_for(X.shape[0] * X.shape[1] ** 2):  # b^2 doubles a chunk:
            cross, gram, centred = _numba_module().block_grams(  # one per possible thread
                X, Y, float(shift), _chunks(X.shape[0], kernel_thread_cap())
            )
        return Y, cross, gram, centred
    Y = np.empty_like(X)
    module = _numba_module()
    fused = {1: module.csr_spmm_fused_one, 2: module.csr_spmm_fused_pair}.get(
        X.shape[1], module.csr_spmm_fused
    )
    with numba_threads_for(W.nnz * X.shape[1]):
        cross, gram, centred = fused(*_product_parts(W), X, Y, float(shift),
                                     _chunks(X.shape[0], FUSED_CHUNKS))
    return Y, cross, gram, centred


def propagate_fused(
    W, X: np.ndarray, shift: float, steps: int, watch: int = 0, backend: str = "auto"
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`spmm_fused` ``steps`` times in a row: ``V_0 = X``, ``V_(s+1) = W V_s``.

    Returns ``V_steps`` and the per-step ``V_s^T V_(s+1)``, ``V_(s+1)^T V_(s+1)``,
    ``sum_r (V_(s+1)[r] - shift)^2`` and row ``V_(s+1)[watch]``, stacked along a first axis
    of length ``steps``.  Small chains (below ``PARALLEL_MIN_WORK`` per product) run in one
    serial numba call; larger ones product by product with :func:`spmm_fused`.
    """
    small = W.nnz * X.shape[1] < PARALLEL_MIN_WORK
    if small and _resolve(backend) == "numba":
        return _numba_module().csr_propagate_fused(
            *_product_parts(W), X, int(steps), float(shift), int(watch)
        )
    b = X.shape[1]
    cross, gram, centred = np.empty((steps, b, b)), np.empty((steps, b, b)), np.empty((steps, b))
    watched = np.empty((steps, b))
    for s in range(steps):
        X, cross[s], gram[s], centred[s] = spmm_fused(W, X, shift, backend=backend)
        watched[s] = X[watch]
    return X, cross, gram, centred, watched


def spmm_rows(W, X: np.ndarray, Y: np.ndarray, rows: np.ndarray, backend: str = "auto") -> None:
    """In place: ``Y[rows] = (W X)[rows]`` (rows sorted, int64)."""
    if _sparse_backend(W, X, backend) == "numpy":
        Y[rows] = W[rows] @ X
        return
    with numba_threads_for(W.nnz * X.shape[1]):  # the frontier's share is not known here
        _numba_module().csr_spmm_rows(*_product_parts(W), X, Y, rows)


def csr_line_sums(
    W, absolute: bool = False, backend: str = "auto"
) -> tuple[np.ndarray, np.ndarray]:
    """Row and column sums of the stored entries of a CSR matrix (of their absolute values
    with ``absolute``), each a plain running sum in storage order (rounding within
    ``gamma_k`` of the k entries summed).  numba: one serial pass; numpy: ``reduceat`` and
    ``bincount``."""
    n_rows, n_cols = W.shape
    if _resolve(backend) == "numba":
        return _numba_module().csr_line_sums(*_csr_parts(W), n_cols, absolute)
    data = np.abs(W.data) if absolute else W.data
    columns = np.bincount(W.indices, weights=data, minlength=n_cols).astype(np.float64)
    starts = W.indptr[:-1]
    filled = starts < W.indptr[1:]  # reduceat cannot sum an empty segment: non-empty rows only
    rows = np.zeros(n_rows)
    rows[filled] = np.add.reduceat(data, starts[filled]) if data.size else 0.0
    return rows, columns


def is_symmetric(W, backend: str = "auto") -> bool:
    """Whether ``W == W^T`` entry for entry (square CSR, put in canonical form first when it
    is not; an explicit zero without a stored mirror counts as asymmetric).  numpy: the
    arrays of ``W`` and of its transpose converted back to CSR are equal; numba: every entry
    above the diagonal is matched to its mirror by one cursor per row, in one serial pass."""
    if W.shape[0] != W.shape[1]:
        raise ValueError(f"a symmetric matrix must be square, got shape {W.shape}")
    if not W.has_canonical_format:  # the cursors need sorted rows without duplicates
        W = W.copy()
        W.sum_duplicates()
    if _resolve(backend) == "numpy":
        Wt = W.T.tocsr()  # sorted like W: equal arrays iff W == W^T entry for entry
        return (np.array_equal(W.indptr, Wt.indptr) and np.array_equal(W.indices, Wt.indices)
                and np.array_equal(W.data, Wt.data))
    return bool(_numba_module().csr_upper_mirrors_match(*_csr_parts(W)))


def symmetry_defect(W, backend: str = "auto") -> tuple[float, tuple[int, int]]:
    """``max |W - W^T|`` and the row-major first entry ``(i, j)`` attaining it (``(0, 0)`` for a
    symmetric W).  ``W``: CSR with sorted indices and no duplicates.  :func:`is_symmetric`
    first; the defect itself with numpy below ``PARALLEL_MIN_WORK`` stored entries under
    ``auto`` (a parallel region costs more than it saves)."""
    if is_symmetric(W, backend):
        return 0.0, (0, 0)
    if backend == "auto" and W.nnz < PARALLEL_MIN_WORK:
        backend = "numpy"
    if _resolve(backend) == "numpy":
        D = (W - W.T).tocsr()
        D.sum_duplicates()
        D.eliminate_zeros()
        if D.nnz == 0:
            return 0.0, (0, 0)
        k = int(np.argmax(np.abs(D.data)))
        i = int(np.searchsorted(D.indptr, k, side="right") - 1)
        return float(abs(D.data[k])), (i, int(D.indices[k]))
    with numba_threads_for(W.nnz):
        best, rows, cols = _numba_module().csr_symmetry_defect(*_csr_parts(W))
    value = float(best.max()) if best.size else 0.0
    if value == 0.0:
        return 0.0, (0, 0)
    hits = np.flatnonzero(best == value)
    first = min(zip(rows[hits].tolist(), cols[hits].tolist(), strict=True))
    return value, (int(first[0]), int(first[1]))
