"""The Muffliato gossip bound (Cyffers, Even, Bellet & Massoulie 2022), the baseline the
random-walk paper compares against.

Muffliato averaging: every node u releases ``x_u + eta_u``, ``eta_u ~ N(0, sigma^2)``
(``sigma`` in units of the l2 sensitivity), then the nodes gossip:
``x^t = P_t(W) x^0``, ``t = 0, 1, ...``, with

* plain gossip: ``P_t(W) = W^t``;
* Chebyshev-accelerated gossip: ``P_0 = I``, ``P_1 = W``,
  ``P_{t+1} = gamma W P_t + (1 - gamma) P_{t-1}``, with
  ``gamma = 2 (1 - sqrt(g (1 - g/4))) / (1 - g/2)^2`` and ``g = 1 - lambda_2(W)``
  (:func:`chebyshev_gamma`).  ``P_t(1) = 1`` for both.

At round t node v receives ``x^t_w = e_w^T P_t (x + eta)`` from each neighbour w; each is a
Gaussian mechanism with sensitivity ``|(P_t)_wu|`` to ``x_u`` and noise standard deviation
``sigma ||P_t e_w||`` (W symmetric).  Composing the messages of rounds ``t = 0..T-1``::

    eps(u -> v) <= (alpha / (2 sigma^2)) sum_{t=0}^{T-1} sum_{w in N(v)} (P_t)_wu^2 / ||P_t e_w||^2

and, since everything is post-processing of ``x_u + eta_u``, also
``eps(u -> v) <= alpha / (2 sigma^2)`` (local DP): the result is the minimum.  N(v) is the
open neighbourhood of v.  (The published code of the random-walk paper sums over
``t = 1..T`` and uses ``W^t`` also for the accelerated variant; here the round-0 messages are
counted, as they are sent, and the accelerated variant uses its own polynomials.)

Computation, without any n x n matrix unless ``method="dense"``:

* numerators: one propagation ``P_t e_u`` (T sparse products);
* row norms ``||P_t e_w||^2``: ``row_norms="exact"`` propagates the indicator block of the
  needed w (the neighbours of the receivers), in chunks; ``row_norms="bound"`` uses the
  cheap valid lower bound ``||P_t e_w||^2 >= 1/n`` (Cauchy-Schwarz with ``1^T P_t e_w = 1``)
  for ``t >= 2`` and the exact values ``1`` (t = 0) and ``sum_j W_wj^2`` (t = 1), which
  gives an upper bound on the loss;
* ``method="dense"`` (``n <= DENSE_MAX_N``): ``W = V diag(lambda) V^T``,
  ``(P_t)_wu = sum_i V_wi P_t(lambda_i) V_ui`` and ``||P_t e_w||^2 = sum_i V_wi^2 P_t(lambda_i)^2``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsedp import validation
from sparsedp.errors import ParameterError
from sparsedp.linalg.spectral import spectral_info
from sparsedp.linalg.stochastic import as_square_sparse, check_gossip_matrix
from sparsedp.randomwalk.pairwise import PairwiseLoss, renyi_order

__all__ = [
    "DENSE_MAX_N",
    "EXACT_ROW_NORMS_MAX",
    "chebyshev_gamma",
    "gossip_polynomial",
    "muffliato_rdp",
    "muffliato_rounds",
]

DENSE_MAX_N = 4000
EXACT_ROW_NORMS_MAX = 50_000  # exact row norms for at most this many distinct w
_CHUNK = 256


def chebyshev_gamma(gap: float) -> float:
    """``gamma = 2 (1 - sqrt(g (1 - g/4))) / (1 - g/2)^2`` for the spectral gap
    ``g = 1 - lambda_2(W)`` in (0, 1] (Muffliato's accelerated gossip)."""
    g = validation.real("gap", gap)
    if not 0.0 < g <= 1.0:
        raise ParameterError(f"gap must be in (0, 1], got {g!r}")
    return 2.0 * (1.0 - math.sqrt(g * (1.0 - g / 4.0))) / (1.0 - g / 2.0) ** 2


def muffliato_rounds(n: int, gap: float, sigma: float, accelerated: bool = True) -> int:
    """Rounds to reach the noise level, as in the published code of both papers:
    ``ceil(log(n max(1/4, sigma^2) / sigma^2) / s)`` with ``s = sqrt(gap)`` (accelerated)
    or ``s = gap`` (plain), ``gap = 1 - lambda_2(W)``."""
    s = validation.sigma(sigma)
    g = validation.real("gap", gap)
    if not 0.0 < g <= 1.0:
        raise ParameterError(f"gap must be in (0, 1], got {g!r}")
    rate = math.sqrt(g) if accelerated else g
    return max(1, math.ceil(math.log(n * max(0.25, s * s) / (s * s)) / rate))


def gossip_polynomial(W: sp.csr_matrix, X: np.ndarray, T: int,
                      gamma: float | None) -> Iterator[np.ndarray]:
    """Yield ``P_t(W) X`` for ``t = 0..T-1`` (plain when ``gamma is None``, else Chebyshev)."""
    prev, cur = None, X
    for t in range(T):
        yield cur
        if t + 1 == T:
            return
        nxt = W @ cur
        if gamma is not None and prev is not None:
            nxt = gamma * nxt + (1.0 - gamma) * prev
        prev, cur = cur, nxt


def _dense_terms(M: sp.csr_matrix, u: int, T: int, gamma: float | None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """``(C, N)``: ``C[t, w] = (P_t)_wu``, ``N[t, w] = ||P_t e_w||^2`` by eigendecomposition."""
    lam, V = np.linalg.eigh(M.toarray())
    P = np.stack(list(gossip_polynomial(sp.diags(lam).tocsr(), np.ones(len(lam)), T, gamma)))
    C = (P * V[u]) @ V.T
    N = (P * P) @ (V * V).T
    return C, N


def _row_norms_exact(M: sp.csr_matrix, needed: np.ndarray, T: int,
                     gamma: float | None) -> np.ndarray:
    """``N[t, j] = ||P_t e_{needed[j]}||^2`` by propagating indicator blocks in chunks."""
    n = M.shape[0]
    N = np.empty((T, len(needed)))
    for start in range(0, len(needed), _CHUNK):
        cols = needed[start:start + _CHUNK]
        E = np.zeros((n, len(cols)))
        E[cols, np.arange(len(cols))] = 1.0
        for t, Y in enumerate(gossip_polynomial(M, E, T, gamma)):
            N[t, start:start + len(cols)] = np.einsum("ij,ij->j", Y, Y)
    return N


def _row_norms_bound(M: sp.csr_matrix, needed: np.ndarray, T: int) -> np.ndarray:
    """Lower bounds on ``||P_t e_w||^2``: 1 (t = 0), ``sum_j W_wj^2`` (t = 1), 1/n after."""
    n = M.shape[0]
    N = np.full((T, len(needed)), 1.0 / n)
    N[0] = 1.0
    if T > 1:
        N[1] = np.asarray(M.multiply(M).sum(axis=1)).ravel()[needed]
    return N


def muffliato_rdp(W: Any, source: int, T: int, sigma: float, alpha: float, *,
                  receivers: Any = None, accelerated: bool = False, gamma: float | None = None,
                  row_norms: str = "exact", method: str = "auto") -> PairwiseLoss:
    """Muffliato RDP loss of ``source`` towards each receiver after T gossip rounds.

    ``accelerated``: Chebyshev-accelerated gossip (``gamma`` from the spectral gap unless
    given).  ``row_norms``: ``"exact"`` or ``"bound"`` (see the module docstring).
    ``method``: ``"dense"`` (eigendecomposition), ``"propagation"`` (matrix-free) or
    ``"auto"`` (dense for ``n <= DENSE_MAX_N`` with exact row norms).  W must be symmetric,
    stochastic and nonnegative.  ``source``, ``receivers`` and the result's nodes are rows of
    W (``0..n-1``); for a graph's labels see :meth:`sparsedp.graphs.Graph.index_of`.
    """
    if row_norms not in ("exact", "bound"):
        raise ParameterError(f"row_norms must be 'exact' or 'bound', got {row_norms!r}")
    if method not in ("auto", "dense", "propagation"):
        raise ParameterError(f"unknown Muffliato method {method!r}; valid methods: auto, "
                             "dense, propagation")
    M = as_square_sparse(W)
    check_gossip_matrix(M, require=("nonnegative", "row_stochastic", "symmetric"))
    n = M.shape[0]
    u = validation.node_index(source, n, "source")
    T = validation.rounds(T)
    sigma = validation.sigma(sigma)
    alpha = renyi_order(alpha)
    notes = []
    if accelerated and gamma is None:
        gamma = chebyshev_gamma(1.0 - spectral_info(M).lambda_2)
        notes.append(f"Chebyshev gamma = {gamma:.10g} from the spectral gap")
    elif accelerated:
        gamma = validation.real("gamma", gamma)
    else:
        gamma = None
    targets = (np.delete(np.arange(n), u) if receivers is None
               else validation.node_set(receivers, n, "receiver"))
    if receivers is not None and u in targets:
        raise ParameterError(f"the source {u} cannot be a receiver of its own data")
    A = M.copy()
    A.setdiag(0.0)
    A.eliminate_zeros()
    A.data[:] = 1.0
    if method == "auto":
        method = "dense" if n <= DENSE_MAX_N and row_norms == "exact" else "propagation"
    if method == "dense":
        if n > DENSE_MAX_N:
            raise ParameterError(f"dense Muffliato needs n <= {DENSE_MAX_N}, got {n}")
        C, N = _dense_terms(M, u, T, gamma)
        if row_norms == "bound":
            N = _row_norms_bound(M, np.arange(n), T)
        per_w = np.sum(C * C / N, axis=0)
    else:
        needed = np.unique(A[targets].indices)
        if row_norms == "exact" and len(needed) > EXACT_ROW_NORMS_MAX:
            raise ParameterError(
                f"exact row norms for {len(needed)} nodes exceed EXACT_ROW_NORMS_MAX = "
                f"{EXACT_ROW_NORMS_MAX}: choose fewer receivers or row_norms='bound'")
        N = (_row_norms_exact(M, needed, T, gamma) if row_norms == "exact"
             else _row_norms_bound(M, needed, T))
        e_u = np.zeros(n)
        e_u[u] = 1.0
        per_w = np.zeros(n)
        for t, c in enumerate(gossip_polynomial(M, e_u, T, gamma)):
            per_w[needed] += c[needed] ** 2 / N[t]
    ldp = alpha / (2.0 * sigma * sigma)
    values = ldp * (A[targets] @ per_w)
    clipped = values > ldp
    kind_note = ("row norms exact" if row_norms == "exact"
                 else "row norms replaced by the lower bound 1/n for t >= 2")
    notes.append(kind_note)
    notes.append("clipped at the local-DP loss alpha / (2 sigma^2)")
    name = "muffliato (Chebyshev-accelerated)" if gamma is not None else "muffliato (plain)"
    return PairwiseLoss(
        mechanism=name, source=u, receivers=np.asarray(targets, dtype=np.int64), alpha=alpha,
        sigma=sigma, rdp=np.minimum(values, ldp), local_dp=ldp, clipped=clipped, kind="upper",
        alpha_max=math.inf, numerical_error=0.0, method=f"{method}, T = {T} rounds",
        notes=tuple(notes))
