"""The Muffliato gossip bound (Cyffers, Even, Bellet & Massoulie 2022), the baseline the
random-walk paper compares against.

Muffliato averaging: every node u releases ``x_u + eta_u``, ``eta_u ~ N(0, sigma^2)``
(``sigma`` in units of the l2 sensitivity), then the nodes gossip:
``x^t = P_t(W) x^0``, ``t = 0, 1, ...``, with

* plain gossip: ``P_t(W) = W^t``;
* Chebyshev-accelerated gossip: ``P_0 = I``, ``P_1 = W``,
  ``P_{t+1} = gamma W P_t + (1 - gamma) P_{t-1}``, with
  ``gamma = 2 (1 - sqrt(g (1 - g/4))) / (1 - g/2)^2`` (:func:`chebyshev_gamma`) and, by
  default, ``g = min(1 - lambda_2, 2 (1 - max(|lambda_2|, |lambda_n|)))``
  (:func:`acceleration_gap`; Muffliato's ``1 - lambda_2`` unless the most negative eigenvalue
  needs a smaller g, see there).  ``P_t(1) = 1`` for both.

At round t node v receives ``x^t_w = e_w^T P_t (x + eta)`` from each neighbour w; each is a
Gaussian mechanism with sensitivity ``|(P_t)_wu|`` to ``x_u`` and noise standard deviation
``sigma ||P_t e_w||`` (W symmetric).  Composing the messages of rounds ``t = 0..T-1``::

    eps(u -> v) <= (alpha / (2 sigma^2)) sum_{t=0}^{T-1} sum_{w in N(v)} (P_t)_wu^2 / ||P_t e_w||^2

and, since everything is post-processing of ``x_u + eta_u``, also
``eps(u -> v) <= alpha / (2 sigma^2)`` (local DP): the result is the minimum.

**Not a certified bound.**  The sum composes the messages as if each carried fresh noise;
they all carry the same initial noise ``eta``, and the receiver sees them jointly, a Gaussian
mechanism with squared sensitivity ``a^T (H H^T)^+ a`` (``H`` the rows ``e_w^T P_t``,
``a = H e_u``), which can exceed the sum: ER(20) seed 307 with max-degree weights, receiver 5,
source 0, T = 2, alpha = 2, sigma = 1 gives 0.4717 by the sum and 1.0 (full recovery of
``x_u + eta_u``) jointly (``tests/test_mf.py``, found by the matrix-factorisation engine).  So
the result has kind ``"estimate"``: it reproduces the published Muffliato accounting, the
baseline of the random-walk paper's Fig. 1; the only certified value here is the local-DP
loss ``alpha / (2 sigma^2)`` (``local_dp``).  N(v) is the
open neighbourhood of v.  (The published code of the random-walk paper sums over
``t = 1..T`` and uses ``W^t`` also for the accelerated variant; here the round-0 messages are
counted, as they are sent, and the accelerated variant uses its own polynomials.)

Computation, without any n x n matrix unless ``method="dense"``:

* numerators: the propagation ``P_t e_u`` (T sparse products);
* row norms ``||P_t e_w||^2``: ``row_norms="exact"`` propagates the indicator block of the
  needed w (the neighbours of the receivers), in chunks, each with ``e_u``;
  ``row_norms="bound"`` uses the
  cheap valid lower bound ``||P_t e_w||^2 >= 1/n`` (Cauchy-Schwarz with ``1^T P_t e_w = 1``)
  for ``t >= 2`` and the exact values ``1`` (t = 0) and ``sum_j W_wj^2`` (t = 1), which
  gives an upper bound on the loss;
* ``method="dense"`` (``n <= DENSE_MAX_N``): ``W = V diag(lambda) V^T``,
  ``(P_t)_wu = sum_i V_wi P_t(lambda_i) V_ui`` and ``||P_t e_w||^2 = sum_i V_wi^2 P_t(lambda_i)^2``.

The sums are accumulated round by round, never stored per round, and stop early once they
reach the clip: every term is nonnegative, so a receiver whose partial sum reaches 1 (the
local-DP loss) keeps that value at any larger T.  Once mixed, each term is about ``1/n``
(``P_t e_w -> 1/n``), so every sum reaches 1 within about ``n / deg`` rounds after mixing:
a huge T (10^9) costs about that many rounds, not T.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsedp import defaults, resources, validation
from sparsedp.errors import ParameterError
from sparsedp.linalg.spectral import spectral_info
from sparsedp.linalg.stochastic import as_square_sparse, check_gossip_matrix
from sparsedp.progress import progress_bar
from sparsedp.randomwalk.pairwise import PairwiseLoss, renyi_order

__all__ = [
    "DENSE_MAX_N",
    "EXACT_ROW_NORMS_MAX",
    "acceleration_gap",
    "chebyshev_gamma",
    "gossip_polynomial",
    "muffliato_memory",
    "muffliato_rdp",
    "muffliato_rounds",
]

DENSE_MAX_N = 4000
EXACT_ROW_NORMS_MAX = 50_000  # exact row norms for at most this many distinct w
_CHUNK = 256
NOT_CERTIFIED = ("kind estimate: the published Muffliato accounting composes the messages as if "
                 "their noise were independent; they share each node's initial noise, so the "
                 "value is not a certified upper bound (the certified one is local_dp)")


def _gap(gap: float) -> float:
    g = validation.real("gap", gap)
    if not 0.0 < g <= 2.0:
        raise ParameterError(f"gap must be in (0, 2], got {g!r}")
    return g


def chebyshev_gamma(gap: float) -> float:
    """``gamma = 2 (1 - sqrt(g (1 - g/4))) / (1 - g/2)^2 = 2 / (1 + sqrt(g (1 - g/4)))`` for
    ``g`` in (0, 2] (Muffliato's accelerated gossip; the second form has no 0/0 at g = 2).

    On an eigenvalue lambda of W the recurrence is ``p_{t+1} = gamma lambda p_t - (gamma - 1)
    p_{t-1}``; with ``rho* = 1 - g/2`` this gamma is ``2 / (1 + sqrt(1 - rho*^2))``, the
    optimal parameter for eigenvalues in ``[-rho*, rho*]``: there the characteristic roots
    are complex with modulus ``sqrt(gamma - 1)`` and ``|P_t(lambda)| <= (t + 1) (gamma -
    1)^(t/2)``.  So g must satisfy ``max(|lambda_2|, |lambda_n|) <= 1 - g/2`` to give that
    rate on every eigenvalue but 1; :func:`acceleration_gap` computes such a g from W.  A g
    above 1 (``rho* < 1/2``) is legitimate: W with a negative second eigenvalue, such as
    ``(J - I)/(n - 1)``.  ``g = 2`` gives ``gamma = 1`` (plain gossip, ``rho* = 0``)."""
    g = _gap(gap)
    return 2.0 / (1.0 + math.sqrt(g * (1.0 - g / 4.0)))


def acceleration_gap(W: Any) -> tuple[float, str]:
    """``(g, note)``: the gap used for the accelerated gossip of a symmetric stochastic W.

    ``g = min(1 - lambda_2, 2 (1 - rho))``, ``rho = max(|lambda_2|, |lambda_n|)``: Muffliato's
    ``1 - lambda_2`` whenever it covers the whole spectrum (``rho <= 1 - g/2``, i.e.
    ``lambda_n >= -(1 + lambda_2)/2``, the usual case), else the largest g that does (see
    :func:`chebyshev_gamma`).  ``g`` lies in (0, 2]; it exceeds 1 when ``lambda_2 < 0``.  A
    periodic W (``rho = 1``: eigenvalue -1, bipartite graph without self-loops) has no
    accelerating gamma (nor does plain gossip converge on the eigenvalue -1): then
    ``g = 1 - lambda_2``, as in Muffliato, and the note says so."""
    info = spectral_info(W)
    muffliato = 1.0 - info.lambda_2
    radius = 2.0 * (1.0 - info.rho)
    if radius <= 1e-12:
        return muffliato, (f"W is periodic (eigenvalue -1): gossip does not converge on that "
                           f"eigenvector; gap 1 - lambda_2 = {muffliato:.10g} as in Muffliato")
    if radius < muffliato:
        return radius, (f"gap 2 (1 - max|lambda_i|) = {radius:.10g} (below 1 - lambda_2 = "
                        f"{muffliato:.10g}: lambda_n = {info.lambda_n:.6g} is the binding "
                        "eigenvalue)")
    return muffliato, f"gap 1 - lambda_2 = {muffliato:.10g}"


def muffliato_rounds(n: int, gap: float, sigma: float, accelerated: bool = True) -> int:
    """Rounds to reach the noise level, as in the published code of both papers:
    ``ceil(log(n max(1/4, sigma^2) / sigma^2) / s)`` with ``s = sqrt(gap)`` (accelerated)
    or ``s = gap`` (plain), ``gap = 1 - lambda_2(W)`` in (0, 2]."""
    s = validation.sigma(sigma)
    g = _gap(gap)
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


def muffliato_memory(n: int, nnz: int, method: str) -> float:
    """Estimated peak bytes of :func:`muffliato_rdp`: ``40 n^2`` for ``"dense"`` (W as a
    dense array, its eigenvectors, their squares and LAPACK's workspace), else
    ``32 n (CHUNK + 1)`` for the propagated blocks (four of them) plus ``48 nnz`` for the
    copies of W."""
    if method == "dense":
        return 40.0 * n * n + 48.0 * nnz
    return 32.0 * n * (_CHUNK + 1) + 48.0 * nnz


def _row_norm_bound(M: sp.csr_matrix, t: int) -> np.ndarray | float:
    """Lower bound on ``||P_t e_w||^2`` for every w: 1 (t = 0), ``sum_j W_wj^2`` (t = 1),
    ``1/n`` after (Cauchy-Schwarz with ``1^T P_t e_w = 1``)."""
    if t == 0:
        return 1.0
    if t == 1:
        return np.asarray(M.multiply(M).sum(axis=1)).ravel()
    return 1.0 / M.shape[0]


def _dense_sums(M: sp.csr_matrix, u: int, T: int, gamma: float | None, exact_norms: bool,
                done, progress=None) -> tuple[np.ndarray, int]:
    """``(S, rounds)``: ``S[w] = sum_t (P_t)_wu^2 / ||P_t e_w||^2`` by eigendecomposition,
    ``W = V diag(lambda) V^T``, ``(P_t)_wu = sum_i V_wi P_t(lambda_i) V_ui`` and
    ``||P_t e_w||^2 = sum_i V_wi^2 P_t(lambda_i)^2``; summed round by round until T or until
    ``done(S)`` (then ``rounds < T``)."""
    lam, V = np.linalg.eigh(M.toarray())
    Vu, V2 = V[u], V * V
    S = np.zeros(len(lam))
    bar = progress_bar(progress, total=T, desc="Muffliato rounds", unit="round")
    try:
        for t, p in enumerate(gossip_polynomial(sp.diags(lam).tocsr(), np.ones(len(lam)), T,
                                                gamma)):
            c = V @ (p * Vu)
            S += c * c / (V2 @ (p * p) if exact_norms else _row_norm_bound(M, t))
            if done(S):
                return S, t + 1
            if bar is not None:
                bar.update()
        return S, T
    finally:
        if bar is not None:
            bar.close()


def _propagated_sums(M: sp.csr_matrix, u: int, T: int, gamma: float | None,
                     needed: np.ndarray, exact_norms: bool,
                     progress=None) -> tuple[np.ndarray, int]:
    """``(S, rounds)`` as :func:`_dense_sums` for the nodes ``needed``, matrix-free.

    With exact row norms the indicator block of ``needed`` is propagated in chunks of
    ``_CHUNK`` columns, together with ``e_u`` (the numerators); a chunk stops once every one
    of its ``S[w]`` reaches 1 (any receiver next to such a w is at the local-DP loss, and
    later rounds only add).  With the bound only ``e_u`` is propagated.  ``rounds``: the
    most rounds any chunk ran.
    """
    n = M.shape[0]
    S = np.zeros(n)
    most = 0
    chunks = ([needed[k:k + _CHUNK] for k in range(0, len(needed), _CHUNK)] if exact_norms
              else [needed])
    bar = progress_bar(progress, total=T * len(chunks), desc="Muffliato rounds x chunks",
                       unit="round")
    try:
        for cols in chunks:
            width = len(cols) if exact_norms else 0
            E = np.zeros((n, width + 1))
            E[cols[:width], np.arange(width)] = 1.0
            E[u, width] = 1.0
            rounds = T
            for t, Y in enumerate(gossip_polynomial(M, E, T, gamma)):
                c = Y[cols, width]
                if exact_norms:
                    norms = np.einsum("ij,ij->j", Y[:, :width], Y[:, :width])
                else:
                    norms = _row_norm_bound(M, t)
                    norms = norms[cols] if isinstance(norms, np.ndarray) else norms
                S[cols] += c * c / norms
                if bar is not None:
                    bar.update()
                if np.all(S[cols] >= 1.0):
                    rounds = t + 1
                    break
            most = max(most, rounds)
        return S, most
    finally:
        if bar is not None:
            bar.close()


def muffliato_rdp(W: Any, source: int, T: int, sigma: float, alpha: float = defaults.ALPHA,
                  *, receivers: Any = None, accelerated: bool = False,
                  gamma: float | None = None, row_norms: str = defaults.ROW_NORMS,
                  method: str = defaults.METHOD,
                  progress: bool | str | None = None, max_memory: Any = None
                  ) -> PairwiseLoss:
    """Muffliato RDP loss of ``source`` towards each receiver after T gossip rounds.

    ``accelerated``: Chebyshev-accelerated gossip (``gamma`` from :func:`acceleration_gap`
    and :func:`chebyshev_gamma` unless given; any gamma gives a valid privacy bound, the
    choice only sets how fast the gossip mixes).  ``row_norms``: ``"exact"`` or ``"bound"``
    (see the module docstring).
    ``method``: ``"dense"`` (eigendecomposition), ``"propagation"`` (matrix-free) or
    ``"auto"`` (dense for ``n <= DENSE_MAX_N`` with exact row norms).  W must be symmetric,
    stochastic and nonnegative.  ``source``, ``receivers`` and the result's nodes are rows of
    W (``0..n-1``); for a graph's labels see :meth:`sparsedp.graphs.Graph.index_of`.
    ``progress``: a bar over the rounds, see :mod:`sparsedp.progress`.  ``max_memory``: the
    budget (:func:`sparsedp.resources.memory_budget`) that :func:`muffliato_memory` is checked
    against before any work ("auto" takes the matrix-free path when dense does not fit).

    Parameters
    ----------
    W : array_like or scipy.sparse matrix
        Symmetric, row-stochastic, nonnegative gossip matrix.
    source : int
        The node whose data is protected (a row of W).
    T : int
        Number of gossip rounds (>= 1).
    sigma : float
        Noise standard deviation (> 0).
    alpha : float
        Renyi order (> 1).
    receivers : sequence of int, optional
        Receivers (default: every other node).
    accelerated : bool, default False
        Chebyshev-accelerated gossip.
    gamma : float, optional
        The acceleration parameter (computed when not given).
    row_norms : {"exact", "bound"}, default "exact"
    method : {"auto", "dense", "propagation"}, default "auto"
    progress : bool or str, optional
        Progress bar (:mod:`sparsedp.progress`).
    max_memory : int or str, optional
        Memory budget.

    Returns
    -------
    PairwiseLoss
        The published per-message composition towards each receiver (kind ``"estimate"``:
        not a certified bound, see the module docstring; ``local_dp`` is certified).

    Raises
    ------
    GossipMatrixError
        If W is not symmetric, row-stochastic and nonnegative.
    GraphError
        If a node is not a row of W.
    ParameterError
        For an unknown method or ``row_norms``, an invalid parameter, the source among the
        receivers, or a request too large for the chosen method.
    ResourceLimitError
        If the method's memory estimate exceeds the budget.

    Examples
    --------
    >>> import networkx as nx, sparsedp
    >>> W = sparsedp.gossip_matrix(nx.cycle_graph(8))
    >>> loss = sparsedp.muffliato_rdp(W, source=0, T=10, sigma=10.0, alpha=4.0)
    >>> loss.rdp.round(5).tolist(), loss.local_dp
    ([0.02, 0.02, 0.01903, 0.01155, 0.01903, 0.02, 0.02], 0.02)
    >>> fast = sparsedp.muffliato_rdp(W, source=0, T=10, sigma=10.0, alpha=4.0,
    ...                               accelerated=True)
    >>> fast.rdp.round(5).tolist()  # faster mixing: every receiver at the local-DP loss
    [0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02]
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
        gap, gap_note = acceleration_gap(M)
        gamma = chebyshev_gamma(gap)
        notes.append(f"Chebyshev gamma = {gamma:.10g} from the {gap_note}")
    elif accelerated:
        gamma = validation.real("gamma", gamma)
    else:
        gamma = None
    targets = (np.delete(np.arange(n), u) if receivers is None
               else validation.node_set(receivers, n, "receiver"))
    validation.not_among(u, None if receivers is None else targets, "source", "receivers")
    A = M.copy()
    A.setdiag(0.0)
    A.eliminate_zeros()
    A.data[:] = 1.0
    budget = resources.memory_budget(max_memory)
    if method == "auto":
        method = ("dense" if n <= DENSE_MAX_N and row_norms == "exact"
                  and muffliato_memory(n, M.nnz, "dense") <= budget else "propagation")
    resources.require_within(muffliato_memory(n, M.nnz, method), budget,
                             f"Muffliato ({method}, n = {n})",
                             "use method='propagation'" if method == "dense" else "")
    target_rows = A[targets]
    exact_norms = row_norms == "exact"
    if method == "dense":
        if n > DENSE_MAX_N:
            raise ParameterError(f"dense Muffliato needs n <= {DENSE_MAX_N}, got {n}")
        per_w, rounds = _dense_sums(M, u, T, gamma, exact_norms,
                                    done=lambda S: bool(np.all(target_rows @ S >= 1.0)),
                                    progress=progress)
    else:
        needed = np.unique(target_rows.indices)
        if exact_norms and len(needed) > EXACT_ROW_NORMS_MAX:
            raise ParameterError(
                f"exact row norms for {len(needed)} nodes exceed EXACT_ROW_NORMS_MAX = "
                f"{EXACT_ROW_NORMS_MAX}: choose fewer receivers or row_norms='bound'")
        per_w, rounds = _propagated_sums(M, u, T, gamma, needed, exact_norms, progress)
    if rounds < T:
        notes.append(f"rounds summed up to t = {rounds - 1} only: by then every receiver's sum "
                     "reached the local-DP loss, and later rounds add nonnegative terms, so "
                     f"the values at T = {T} are the same")
    ldp = alpha / (2.0 * sigma * sigma)
    values = ldp * (target_rows @ per_w)
    clipped = values > ldp
    kind_note = ("row norms exact" if row_norms == "exact"
                 else "row norms replaced by the lower bound 1/n for t >= 2")
    notes.append(kind_note)
    notes.append("clipped at the local-DP loss alpha / (2 sigma^2)")
    notes.append(NOT_CERTIFIED)
    name = "muffliato (Chebyshev-accelerated)" if gamma is not None else "muffliato (plain)"
    return PairwiseLoss(
        mechanism=name, source=u, receivers=np.asarray(targets, dtype=np.int64), alpha=alpha,
        sigma=sigma, rdp=np.minimum(values, ldp), local_dp=ldp, clipped=clipped, kind="estimate",
        alpha_max=math.inf, numerical_error=0.0, method=f"{method}, T = {T} rounds",
        notes=tuple(notes))
