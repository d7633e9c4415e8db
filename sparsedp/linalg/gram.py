"""The Gram assembly: dense ``K_T`` and ``G_T`` of one constant gossip matrix, any W >= 0.

For one constant W (symmetric or not), observers ``S`` (m x n), power offset p and T rounds
the blocks of ``H_T`` are ``H[t, k] = S W^(t-k+p) D`` (k <= t), with ``D = I``, or the
diagonal with 0 on the rows of the nodes whose noise the attacker knows (its own nodes, a
subset of the observers; ``D^2 = D``).  With the
observer lags

    V_l = (W^T)^l S^T   (n x m),   l = p .. T-1+p          (T - 1 + p sparse products)

everything the solve needs is one Gram matrix of the stacked lags:

    Gamma(a, b) = V_a^T D V_b                                          (m x m blocks)
    K[t, t'] = sum_{k=0}^{min(t,t')} S W^(t-k+p) D (W^T)^(t'-k+p) S^T
             = sum_{k=0}^{min(t,t')} Gamma(t-k+p, t'-k+p)
             = Gamma(t+p, t'+p) + K[t-1, t'-1]      (block recursion along the diagonals)
    G[t, tau] = S W^(t-tau+p) e_j = V_(t-tau+p)[j, :]^T   for t >= tau, else 0.

``G`` holds the target's columns of the full ``H`` (the target's own noise is never among the
known; :func:`sparsedp.gossip.sensitivity.squared_sensitivity` settles that case before).
The formulas are checked against the explicit ``H_T`` of :func:`sparsedp.testing.dense_H`
in ``tests/test_gram.py`` for p = 0, 1 and both noise models.

Storage: the lags as one array ``(T, m, n)`` (lag-major, ``A = V.reshape(T m, n)``), so
``Gram = A D A^T`` is a single BLAS product (numpy's ``A @ A.T`` uses the symmetric rank-k
update) after the observers' columns of ``A`` are zeroed; the block (t, t') of ``Gram`` is
``Gamma(t+p, t'+p)`` and ``K`` is its cumulative sum along block diagonals, formed in place.
Memory ``8 n m T`` bytes for the lags plus ``8 (m T)^2`` for the Gram (:func:`gram_memory`).
Only G depends on the target: inside a :func:`sparsedp.linalg.matrix_facts.reuse_scope` (e.g. a
distance summary over every target of one attacker set) the lags and K of the same
(W, observers, T, p, known noise) are formed once (:func:`observer_key`,
:func:`sparsedp.linalg.matrix_facts.query_memo`).

Rounding (W >= 0, so every quantity is a sum of non-negative products): an inner product of
k non-negative terms whose inputs carry relative errors ``gamma_a``, ``gamma_b`` is within
``gamma_(k+a+b)`` relative (Higham, Lemma 3.3 and 3.4), in any summation order.  Each sparse
product with ``W^T`` sums at most ``d`` terms (``d`` the longest row of ``W^T``), so
``|fl(V_l) - V_l| <= gamma_(l (d+1)) V_l`` entrywise; the n-term inner products of the Gram
add ``gamma_n``; the at most T terms of each diagonal sum ``gamma_T``.  Hence

    |fl(K) - K| <= gamma_N K  entrywise,   N = 2 (T-1+p)(d+1) + n + T,
    |fl(G) - G| <= gamma_((T-1+p)(d+1)) G,

and, K being symmetric and entrywise non-negative, ``||fl(K) - K||_2 <= || |fl(K) - K| ||_2
<= gamma_N ||K||_2 <= gamma_N ||K||_inf`` — the same argument as for the operator assembly
(:func:`sparsedp.gossip.certified_solve._operator_system`), with a shorter depth.  The exact
``||K||_inf`` is bounded through the computed row sums (:func:`rounding_norm_bound`).  The
same holds for any principal submatrix of K (the kept rows), which is what gets certified.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from sparsedp.errors import ParameterError
from sparsedp.linalg import kernels
from sparsedp.linalg.certified import gamma
from sparsedp.linalg.matrix_facts import query_memo

GRAM_MAX_LAG_BYTES = 2 << 30  # the stacked lags V (n x m T float64) that "auto" allows
GRAM_MAX_DIM = 8000  # largest m T whose Gram (8 (m T)^2 bytes: 512 MB) "auto" assembles


@dataclass(frozen=True)
class GramSystem:
    """Dense ``K`` (mT x mT), ``G`` (mT x T) from the Gram assembly, and their rounding model.

    ``K_depth``: ``|fl(K) - K| <= gamma(K_depth) K`` entrywise; ``G_relative_error``:
    ``|fl(G) - G| <= G_relative_error G`` entrywise; ``products``: sparse (block) products
    with ``W^T``.
    """

    K: np.ndarray
    G: np.ndarray
    K_depth: int
    G_relative_error: float
    products: int

    def K_rounding(self, K: np.ndarray | None = None) -> float:
        """``||fl(K) - K||_2`` for ``K`` (default: the whole K; or a principal submatrix)."""
        return rounding_norm_bound(self.K if K is None else K, self.K_depth)


def gram_memory(n: int, m: int, T: int) -> tuple[int, int]:
    """Bytes of the stacked lags ``V`` (``8 n m T``) and of the Gram (``8 (m T)^2``)."""
    return 8 * n * m * T, 8 * (m * T) ** 2


def gram_fits(n: int, m: int, T: int) -> bool:
    """Whether the assembly stays within :data:`GRAM_MAX_LAG_BYTES` for the lags and
    :data:`GRAM_MAX_DIM` for the Gram (what ``method="auto"`` and ``preconditioner="auto"``
    check before choosing it)."""
    lag_bytes, _ = gram_memory(n, m, T)
    return lag_bytes <= GRAM_MAX_LAG_BYTES and m * T <= GRAM_MAX_DIM


def observer_lags(
    W: sp.spmatrix, observers, T: int, power_offset: int = 0, backend: str = "auto"
) -> tuple[np.ndarray, int]:
    """``V[l - p] = V_l^T = S W^l`` for l = p .. T-1+p, shape ``(T, m, n)``, and the number of
    sparse products (``T - 1 + p``, each with a CSR ``W^T`` on an n x m block)."""
    WT = sp.csr_matrix(W).T.tocsr()
    n = WT.shape[0]
    observers = np.asarray(observers, dtype=np.int64)
    m = observers.size
    V = np.empty((T, m, n))
    current = np.zeros((n, m))
    current[observers, np.arange(m)] = 1.0
    products = 0
    for lag in range(T + power_offset):
        if lag > 0:
            current = kernels.spmm(WT, current, backend=backend)
            products += 1
        if lag >= power_offset:
            V[lag - power_offset] = current.T
    return V, products


def assemble(
    W: sp.spmatrix,
    observers,
    target: int,
    T: int,
    *,
    power_offset: int = 0,
    known_noise=(),
    backend: str = "auto",
) -> GramSystem:
    """``K_T`` and ``G_T`` of one constant non-negative W by the Gram assembly (module
    docstring); W need not be symmetric.  ``known_noise``: the nodes whose noise columns are
    deleted (``D``'s zero rows; the attacker's own nodes).  Refuses (ParameterError) a W with
    negative entries, where the rounding model does not hold.  ``K`` may be shared with
    other targets in a reuse scope (read-only then)."""
    source = W
    W = sp.csr_matrix(W, dtype=np.float64)
    if W.nnz and not np.all(W.data >= 0):  # also refuses NaN
        raise ParameterError(
            "the Gram assembly needs a non-negative W (its rounding bound sums non-negative "
            "products only)"
        )
    observers = np.asarray(observers, dtype=np.int64)
    m, p = observers.size, int(power_offset)
    known_noise = np.asarray(known_noise, dtype=np.int64)
    if target in set(known_noise.tolist()):
        raise ParameterError("the target's own noise is removed: no finite K^+ G")
    V, K, products, d = query_memo(
        "gram", source, observer_key(observers, T, p, known_noise) + (backend,),
        lambda: _observer_gram(W, observers, T, p, known_noise, backend))
    # G[t, tau] = V_(t-tau+p)[j, :]: the impulse response a_(l+p) = S W^(l+p) e_j, l = 0..T-1
    # (V's known-noise columns are zeroed, but the target is never among them)
    impulse = V[:, :, target]
    G = np.zeros((T, m, T))
    for tau in range(T):
        G[tau:, :, tau] = impulse[: T - tau]
    depth = 2 * (T - 1 + p) * (d + 1) + W.shape[0] + T
    return GramSystem(
        K=K,
        G=G.reshape(T * m, T),
        K_depth=depth,
        G_relative_error=gamma(max((T - 1 + p) * (d + 1), 1)),
        products=products,
    )


def observer_key(observers: np.ndarray, T: int, power_offset: int, known_noise) -> tuple:
    """What the lags and K depend on besides W (the key of their reuse within a query)."""
    return (np.asarray(observers, dtype=np.int64).tobytes(), int(T), int(power_offset),
            np.asarray(known_noise, dtype=np.int64).tobytes())


def _observer_gram(W: sp.csr_matrix, observers: np.ndarray, T: int, p: int,
                   known_noise: np.ndarray, backend: str
                   ) -> tuple[np.ndarray, np.ndarray, int, int]:
    """The lags ``V`` (known-noise columns zeroed), ``K``, the number of sparse products and
    ``d``, the longest row of ``W^T`` (for the rounding depth)."""
    m = observers.size
    V, products = observer_lags(W, observers, T, p, backend)
    V[:, :, known_noise] = 0.0  # D: the known-noise rows of every V_l
    A = V.reshape(T * m, -1)
    K = A @ A.T  # Gram: block (t, t') = Gamma(t+p, t'+p)
    blocks = K.reshape(T, m, T, m)
    for t in range(1, T):  # K[t, t'] = Gamma(t+p, t'+p) + K[t-1, t'-1]
        blocks[t, :, 1:, :] += blocks[t - 1, :, :-1, :]
    # (exactly symmetric: the Gram is, and entries (t, t') and (t', t) add the same numbers
    # in the same order)
    return V, K, products, int(np.bincount(W.indices, minlength=W.shape[0]).max())


def rounding_norm_bound(K: np.ndarray, depth: int) -> float:
    """``||fl(K) - K||_2 <= gamma_N ||K||_inf`` for an entrywise non-negative symmetric K with
    ``|fl(K) - K| <= gamma_N K`` (``N = depth``), from the computed ``fl(K)``.

    The exact ``||K||_inf <= ||fl(K)||_inf / (1 - gamma_N)`` and the computed row sums of the
    non-negative ``fl(K)`` are within ``gamma_k`` (k the row length) of their exact values;
    ``1 / (1 - g) <= 1 + 2 g`` for ``g <= 1/2`` and ``(1 + 2 gamma_N)(1 + gamma_k) <=
    1 + gamma_(2N + k)``.
    """
    if K.size == 0:
        return 0.0
    g = gamma(depth)
    row_max = float(np.abs(K).sum(axis=1).max())
    return g * row_max * (1.0 + gamma(2 * depth + K.shape[1]))
