"""Privacy accounting of random-walk decentralized learning (Cyffers, Bellet & Upadhyay).

A token walks on the graph with a symmetric, doubly stochastic transition matrix W
(Assumption 2 of the paper; checked by
:func:`sparsedp.randomwalk.log_green.check_random_walk_matrix`).  The node holding it adds its
(clipped, sensitivity-1) gradient plus ``N(0, sigma^2)`` noise and forwards it.  A node sees
the token only when it holds it.  ``sigma`` is the noise standard deviation in units of the
l2 sensitivity.  All losses are Renyi-DP of order alpha.

* One contribution of u, seen by v within T steps (Lemma 2 of the paper, with the privacy
  amplification by iteration bound ``beta(t) = alpha / (2 sigma^2 t)`` and the weak-convexity
  factor 2)::

      eps_single(u -> v) <= (alpha / sigma^2) sum_{t=1}^T (W^t)_uv / t          (the series)

  computed exactly by T sparse products (:func:`walk_series`).
* Main bound (Theorem 3 and eq. (16), made explicit): with ``L = -log(I - W + J/n)``
  (:mod:`sparsedp.randomwalk.log_green`),
  ``sum_{t<=T} (W^t)_uv / t = H_T / n + L_uv - R_T(u, v)`` where
  ``R_T = sum_{t>T} (W^t - J/n)_uv / t`` and ``|R_T| <= tail_T`` (:func:`truncation_tail`), so::

      eps(u -> v) <= (alpha N_u / sigma^2) (H_T / n + L_uv + tail_T)

  ``H_T`` is the harmonic number (the paper writes ``ln T``, which is smaller and so does
  not bound the sum).  ``N_u`` is the number of contributions of u: a cap enforced by the
  protocol (Remark 5: after its cap a node only forwards noise) gives an upper bound; the
  expectation ``T / n`` gives an estimate only.
* Requirement: ``sigma^2 >= 2 alpha (alpha - 1)`` (Theorem 3); refused otherwise.
* Every single contribution is also a Gaussian mechanism seen directly, so
  ``eps_single <= alpha / (2 sigma^2)`` (local DP); ``clip=True`` takes the minimum.
* Sender known (Section B.1): the last step is post-processing of reaching a neighbour::

      eps~(u -> v) <= max_{w in N(v)} eps(u -> w),   with eps(u -> u) := alpha / (2 sigma^2)

  (v may receive the token straight from u: then only the local-DP bound applies).
* Collusion of a set F (Appendix D, eqs. (17)-(18)): ``eps(u -> F) <= sum_{v in F} eps(u -> v)``
  (the series is linear in the indicator of F, so this is (17) itself).
* Mean over ordered pairs ``u != v``: ``sum_{u != v} L_uv = ln det'(I - W)``
  (:func:`sparsedp.randomwalk.log_green.log_pseudo_determinant`).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.special import digamma

from sparsedp import defaults, validation
from sparsedp.errors import ParameterError
from sparsedp.progress import progress_bar
from sparsedp.randomwalk.log_green import (
    SpectralInterval,
    check_random_walk_matrix,
    log_green_columns,
    log_pseudo_determinant,
    spectral_interval,
)
from sparsedp.randomwalk.pairwise import PairwiseLoss, renyi_order
from sparsedp.reprs import short_repr

__all__ = [
    "METHODS",
    "MeanLoss",
    "harmonic_number",
    "max_renyi_order",
    "random_walk_mean_rdp",
    "random_walk_rdp",
    "require_noise_condition",
    "truncation_tail",
    "walk_series",
]

METHODS = ("auto", "series", "log-green")
SERIES_MAX_WORK = 300_000_000  # "auto" uses the series when T * nnz(W) is at most this
_EPS = float(np.finfo(float).eps)


def harmonic_number(T: int) -> float:
    """``H_T = sum_{t=1}^T 1/t`` (direct sum up to 10^6 terms, then ``psi(T + 1) + gamma``)."""
    T = validation.rounds(T)
    if T <= 1_000_000:
        return float(np.sum(1.0 / np.arange(T, 0, -1, dtype=np.float64)))
    return float(digamma(T + 1.0) + np.euler_gamma)


def max_renyi_order(sigma: float) -> float:
    """Largest alpha with ``sigma^2 >= 2 alpha (alpha - 1)``: ``(1 + sqrt(1 + 2 sigma^2)) / 2``."""
    s = validation.sigma(sigma)
    return (1.0 + math.sqrt(1.0 + 2.0 * s * s)) / 2.0


def require_noise_condition(sigma: float, alpha: float) -> None:
    """Raise ``ParameterError`` unless ``sigma^2 >= 2 alpha (alpha - 1)`` (Theorem 3)."""
    s, a = validation.sigma(sigma), renyi_order(alpha)
    need = 2.0 * a * (a - 1.0)
    if s * s < need:
        raise ParameterError(
            f"the random-walk bound needs sigma^2 >= 2 alpha (alpha - 1) = {need:.6g} at "
            f"alpha = {a:g}, got sigma^2 = {s * s:.6g}; use alpha <= {max_renyi_order(s):.6g} "
            f"or sigma >= {math.sqrt(need):.6g}")


def walk_series(W: Any, source: int, T: int, progress: bool | str | None = None) -> np.ndarray:
    """``s_v = sum_{t=1}^T (W^t)_{source, v} / t`` for every node v (exact, T sparse products).

    W symmetric, so ``(W^t)_{uv} = (W^t e_u)_v``.  ``progress``: a bar over the T products
    (:mod:`sparsedp.progress`).
    """
    M = check_random_walk_matrix(W)
    u = validation.node_index(source, M.shape[0], "source")
    T = validation.rounds(T)
    x = np.zeros(M.shape[0])
    x[u] = 1.0
    total = np.zeros_like(x)
    bar = progress_bar(progress, total=T, desc="walk steps", unit="product")
    for t in range(1, T + 1):
        x = M @ x
        total += x / t
        if bar is not None:
            bar.update()
    if bar is not None:
        bar.close()
    return total


def truncation_tail(T: int, interval: SpectralInterval) -> float:
    """Bound on ``|sum_{t>T} (W^t - J/n)_uv / t|`` for every pair.

    ``(W^t - J/n)_uv = sum_{i>=2} lambda_i^t phi_i(u) phi_i(v)`` and
    ``sum_i |phi_i(u) phi_i(v)| <= 1``, so the remainder is at most
    ``max_{lambda in [a, c]} |sum_{t>T} lambda^t / t|``: for ``lambda in [0, c]`` at most
    ``c^(T+1) / ((T+1)(1 - c))``; for ``lambda in [a, 0)`` an alternating series with
    decreasing terms, at most ``|a|^(T+1) / (T+1)`` (also for ``a = -1``, periodic W).
    """
    T = validation.rounds(T)
    a, c = interval.lower, interval.upper
    pos = math.exp((T + 1) * math.log(c)) / ((T + 1) * (1.0 - c)) if c > 0 else 0.0
    neg = math.exp((T + 1) * math.log(-a)) / (T + 1) if a < 0 else 0.0
    return max(pos, neg)


def _contributions(contributions: Any, T: int, n: int) -> tuple[float, str, str]:
    """``(N_u, kind, note)``: a cap gives an upper bound, ``None`` the expectation T/n."""
    if contributions is None:
        return (T / n, "estimate",
                f"N_u = T/n = {T / n:.6g} expected contributions (not a cap): an estimate")
    if isinstance(contributions, bool) or not isinstance(contributions, numbers.Real):
        raise ParameterError(f"contributions must be a number >= 1, got {contributions!r}")
    N = float(contributions)
    if not (math.isfinite(N) and N >= 1.0):
        raise ParameterError(f"contributions must be a finite number >= 1, got {N!r}")
    return N, "upper", f"N_u = {N:g} contributions (a cap enforced by the protocol)"


def check_options(contributions: Any, receivers: Any, coalition: Any, sender_known: bool,
                  T: int, n: int) -> None:
    """ParameterError for :func:`random_walk_rdp`'s invalid ``contributions`` or a coalition
    combined with ``receivers`` or ``sender_known`` (the nodes are checked by
    :func:`series_loss`)."""
    if coalition is not None and (sender_known or receivers is not None):
        raise ParameterError("coalition cannot be combined with receivers or sender_known")
    _contributions(contributions, T, n)


def _certify(certify: bool | str, contributions: Any) -> bool | str:
    """``certify`` for the spectral interval: ``"auto"`` does not pay for a certificate when
    the result is an estimate anyway (no cap on the contributions)."""
    return False if certify == "auto" and contributions is None else certify


def _neighbour_max(M: sp.csr_matrix, values: np.ndarray) -> np.ndarray:
    """``max_{w ~ v, w != v} values[w]`` for every v (every node has a neighbour: W is
    irreducible with n >= 2)."""
    A = M.copy()
    A.setdiag(0.0)
    A.eliminate_zeros()
    return np.maximum.reduceat(values[A.indices], A.indptr[:-1])


def _per_contribution(M: sp.csr_matrix, u: int, T: int, sigma: float, alpha: float,
                      method: str, column_method: str, tol: float,
                      interval: SpectralInterval | None, certify: bool | str,
                      progress: bool | str | None) -> tuple[np.ndarray, float, str, bool]:
    """``(alpha / sigma^2) x`` for every node, where x is the series or its log-Green bound;
    also the numerical error bound included, a description of the method and whether the
    bound rests on an estimated spectral interval (:attr:`SpectralInterval.estimate`)."""
    scale = alpha / (sigma * sigma)
    n = M.shape[0]
    if method == "auto":
        method = "series" if T * M.nnz <= SERIES_MAX_WORK else "log-green"
    if method == "series":
        return (scale * walk_series(M, u, T, progress), 0.0, f"exact series over t = 1..{T}",
                False)
    iv = spectral_interval(M, certify=certify) if interval is None else interval
    col = log_green_columns(M, [u], method=column_method, tol=tol, interval=iv,
                            progress=progress)
    tail = truncation_tail(T, iv)
    err = float(col.error_bound[0])
    x = harmonic_number(T) / n + col.columns[:, 0] + tail + err
    how = (f"H_T/n + L_uv + tail ({tail:.3g}); L by {col.method}, column error <= {err:.3g}; "
           f"spectrum on 1^perp in [{iv.lower:.6g}, {iv.upper:.6g}] ({iv.how})")
    return scale * x, scale * (err + tail), how, iv.estimate


def random_walk_rdp(W: Any, source: int, T: int, sigma: float, alpha: float = defaults.ALPHA,
                    *,
                    contributions: float | None = None, receivers: Any = None,
                    coalition: Any = None, sender_known: bool = False, clip: bool = True,
                    method: str = defaults.METHOD,
                    column_method: str = defaults.COLUMN_METHOD, tol: float = defaults.WALK_TOL,
                    interval: SpectralInterval | None = None,
                    certify: bool | str = "auto",
                    progress: bool | str | None = None) -> PairwiseLoss:
    """Renyi-DP loss of ``source`` towards each receiver (or a coalition) after T walk steps.

    ``method``: ``"series"`` (the exact finite-T sum, T sparse products), ``"log-green"``
    (the main bound ``H_T / n + L_uv + tail_T`` with one column of L by ``column_method``
    to ``tol``, its error bound added) or ``"auto"`` (series when ``T nnz(W) <=
    SERIES_MAX_WORK``).  ``contributions``: the cap ``N_u`` (default: the expectation T/n,
    which makes the result an estimate).  ``receivers`` defaults to every other node.
    ``coalition``: a set F of colluding receivers; the result then has one loss, for F.
    ``sender_known``: the variant of Section B.1.  ``clip``: also apply the local-DP bound
    ``alpha / (2 sigma^2)`` per contribution.  See the module docstring for the formulas.
    Nodes (``source``, ``receivers``, ``coalition`` and the result's) are rows of W,
    ``0..n-1``; for a graph's labels see :meth:`sparsedp.graphs.Graph.index_of`.
    ``progress``: a bar over the walk steps or Chebyshev terms (:mod:`sparsedp.progress`).

    Parameters
    ----------
    W : array_like or scipy.sparse matrix
        Symmetric, doubly stochastic transition matrix of the walk.
    source : int
        The node u whose data is protected (a row of W).
    T : int
        Number of walk steps (>= 1).
    sigma : float
        Noise standard deviation, with ``sigma^2 >= 2 alpha (alpha - 1)``.
    alpha : float
        Renyi order (> 1).
    contributions : float, optional
        Cap ``N_u >= 1`` on u's contributions (default: the expectation ``T/n``, an
        estimate).
    receivers : sequence of int, optional
        Receivers (default: every other node).
    coalition : sequence of int, optional
        A set of colluding receivers: one loss for the set.
    sender_known : bool, default False
        The variant of Section B.1.
    clip : bool, default True
        Also apply the local-DP bound per contribution.
    method : {"auto", "series", "log-green"}, default "auto"
    column_method : str, default "chebyshev"
        Method of the log-Green column (:func:`sparsedp.log_green_columns`).
    tol : float, default 1e-10
        Target error of the log-Green column.
    interval : SpectralInterval, optional
        Eigenvalue enclosure of W on ``1^perp`` (computed when not given).
    certify : {"auto", True, False}, default "auto"
        Whether the computed interval's upper end is certified (``certify`` of
        :func:`sparsedp.randomwalk.log_green.spectral_interval`; log-Green only): without a
        certificate the result is an estimate; ``"auto"`` skips it without a cap on the
        contributions (the result is then an estimate anyway).
    progress : bool or str, optional
        Progress bar (:mod:`sparsedp.progress`).

    Returns
    -------
    PairwiseLoss
        RDP loss towards each receiver (or the coalition) at order ``alpha``.

    Raises
    ------
    GossipMatrixError
        If W is not symmetric, doubly stochastic and nonnegative (or is 1 x 1).
    GraphError
        If a node is not a row of W.
    ParameterError
        For an unknown method, ``sigma^2 < 2 alpha (alpha - 1)``, an invalid ``T``,
        ``alpha`` or ``contributions``, the source among the receivers or the coalition,
        or a coalition combined with ``receivers`` or ``sender_known``.

    Examples
    --------
    >>> import networkx as nx, sparsedp
    >>> W = sparsedp.gossip_matrix(nx.cycle_graph(8))
    >>> loss = sparsedp.random_walk_rdp(W, source=0, T=40, sigma=10.0, alpha=4.0,
    ...                                 contributions=5)
    >>> loss.kind, loss.rdp.round(6).tolist()
    ('upper', [0.1, 0.079498, 0.051834, 0.044842, 0.051834, 0.079498, 0.1])
    >>> loss = sparsedp.random_walk_rdp(W, source=0, T=40, sigma=10.0, alpha=4.0,
    ...                                 contributions=5, method="log-green")
    >>> loss.rdp.round(4).tolist()  # the main bound, slightly above the exact series
    [0.1, 0.0795, 0.0518, 0.0448, 0.0518, 0.0795, 0.1]
    >>> sparsedp.random_walk_rdp(W, source=0, T=40, sigma=10.0, alpha=4.0,
    ...                          contributions=5, coalition=[3, 4, 5]).rdp.tolist()
    [0.1]
    >>> sparsedp.random_walk_rdp(W, source=0, T=40, sigma=10.0, alpha=4.0).kind
    'estimate'
    """
    if method not in METHODS:
        raise ParameterError(f"unknown random-walk method {method!r}; valid methods: "
                             + ", ".join(METHODS))
    M = check_random_walk_matrix(W)
    n = M.shape[0]
    u = validation.node_index(source, n, "source")
    T = validation.rounds(T)
    sigma = validation.sigma(sigma)
    alpha = renyi_order(alpha)
    require_noise_condition(sigma, alpha)
    check_options(contributions, receivers, coalition, sender_known, T, n)  # before the walk
    values, err, how, estimated = _per_contribution(M, u, T, sigma, alpha, method,
                                                    column_method, tol, interval,
                                                    _certify(certify, contributions), progress)
    return series_loss(M, u, T, sigma, alpha, values, err, how, contributions=contributions,
                       receivers=receivers, coalition=coalition, sender_known=sender_known,
                       clip=clip, spectrum_estimated=estimated)


def series_loss(M: sp.csr_matrix, u: int, T: int, sigma: float, alpha: float,
                values: np.ndarray, err: float, how: str, *, contributions: Any = None,
                receivers: Any = None, coalition: Any = None, sender_known: bool = False,
                clip: bool = True, spectrum_estimated: bool = False) -> PairwiseLoss:
    """The :class:`PairwiseLoss` of :func:`random_walk_rdp` from the per-contribution loss
    ``values`` of every node (``(alpha / sigma^2)`` times the series or its log-Green bound,
    ``err`` its numerical error bound, ``how`` its description): the contributions, the
    sender-known variant, the coalition or receivers and the local-DP clip.  Shared with the
    online accountant (:mod:`sparsedp.accountant.randomwalk`), which extends the series one
    step per round; arguments as :func:`random_walk_rdp`'s, already checked except the
    options (``contributions``, ``receivers``, ``coalition``: :func:`check_options`).
    ``spectrum_estimated``: ``values`` rest on an uncertified upper end of W's spectrum, so
    the result is an estimate whatever the contributions."""
    n = M.shape[0]
    N, kind, note = _contributions(contributions, T, n)
    ldp = alpha / (2.0 * sigma * sigma)
    notes = [note]
    if spectrum_estimated:
        kind = "estimate"
        notes.append("estimate: the log-Green bound rests on an uncertified upper end of W's "
                     "spectrum (see method)")
    mechanism = "random walk"
    if sender_known:
        values = values.copy()
        values[u] = ldp
        values = _neighbour_max(M, values)
        mechanism = "random walk, sender known"
        notes.append("sender known: max over the receiver's neighbours, eps(u -> u) := "
                     "local DP")
    if coalition is not None:
        members = validation.node_set(coalition, n, "coalition")
        validation.not_among(u, members, "source", "coalition")
        values = np.array([values[members].sum()])
        err *= len(members)
        targets = members
        mechanism = "random walk, coalition"
        notes.append(f"coalition of {len(members)} nodes: sum of the pairwise losses")
    else:
        targets = (np.delete(np.arange(n), u) if receivers is None
                   else validation.node_set(receivers, n, "receiver"))
        validation.not_among(u, None if receivers is None else targets, "source", "receivers")
        values = values[targets]
    clipped = values > ldp if clip else np.zeros(values.shape, dtype=bool)
    if clip:
        values = np.minimum(values, ldp)
        notes.append("clipped at the local-DP loss alpha / (2 sigma^2) per contribution")
    return PairwiseLoss(
        mechanism=mechanism, source=u, receivers=np.asarray(targets, dtype=np.int64),
        alpha=alpha, sigma=sigma, rdp=N * values, local_dp=N * ldp, clipped=clipped,
        kind=kind, alpha_max=max_renyi_order(sigma), numerical_error=N * err,
        method=how, notes=tuple(notes))


@dataclass(frozen=True)
class MeanLoss:
    """Mean over ordered pairs ``u != v`` of the main bound (unclipped), RDP at ``alpha``::

        (alpha N / sigma^2) (H_T / n + ln det'(I - W) / (n (n - 1)) + tail_T)

    ``error`` is the log-determinant's error scaled the same way; ``kind`` is ``"upper"``
    (capped contributions, exact log-determinant: ``value`` includes ``error``) or
    ``"estimate"`` (expected contributions or a stochastic log-determinant).
    """

    value: float
    error: float
    kind: str
    logdet: float
    method: str
    notes: tuple[str, ...] = field(default_factory=tuple)

    __repr__ = short_repr


def random_walk_mean_rdp(W: Any, T: int, sigma: float, alpha: float, *,
                         contributions: float | None = None, logdet_method: str = "auto",
                         probes: int = 64, seed: int = 0,
                         certify: bool | str = "auto") -> MeanLoss:
    """Mean of the main bound over all ordered pairs, from ``ln det'(I - W)`` (see
    :class:`MeanLoss` and :func:`sparsedp.randomwalk.log_green.log_pseudo_determinant`).

    Parameters
    ----------
    W : array_like or scipy.sparse matrix
        Symmetric, doubly stochastic transition matrix of the walk.
    T : int
        Number of walk steps (>= 1).
    sigma : float
        Noise standard deviation, with ``sigma^2 >= 2 alpha (alpha - 1)``.
    alpha : float
        Renyi order (> 1).
    contributions : float, optional
        Cap ``N_u >= 1`` on each node's contributions (default ``T/n``, an estimate).
    logdet_method : {"auto", "dense", "sparse-lu", "slq"}, default "auto"
        Method of :func:`sparsedp.log_pseudo_determinant`.
    probes : int, default 64
        Probe vectors of the stochastic estimate (``"slq"``).
    seed : int, default 0
        Seed of the probes.
    certify : {"auto", True, False}, default "auto"
        Whether the spectral interval's upper end (in the truncation tail) is certified
        (:func:`sparsedp.randomwalk.log_green.spectral_interval`); without a certificate
        the result is an estimate; ``"auto"`` skips it without a cap on the contributions.

    Returns
    -------
    MeanLoss
        ``value`` (RDP at ``alpha``), ``error``, ``kind`` and the log-determinant.

    Raises
    ------
    GossipMatrixError
        If W is not a valid random-walk matrix.
    ParameterError
        For ``sigma^2 < 2 alpha (alpha - 1)``, an invalid parameter or method.

    Examples
    --------
    >>> import networkx as nx, sparsedp
    >>> W = sparsedp.gossip_matrix(nx.cycle_graph(8))
    >>> mean = sparsedp.random_walk_mean_rdp(W, T=40, sigma=10.0, alpha=4.0, contributions=5)
    >>> round(mean.value, 6), mean.kind, round(mean.logdet, 6)
    (0.094355, 'upper', -3.531403)
    """
    M = check_random_walk_matrix(W)
    n = M.shape[0]
    T = validation.rounds(T)
    sigma = validation.sigma(sigma)
    alpha = renyi_order(alpha)
    require_noise_condition(sigma, alpha)
    N, kind, note = _contributions(contributions, T, n)
    iv = spectral_interval(M, certify=_certify(certify, contributions))
    ld = log_pseudo_determinant(M, method=logdet_method, probes=probes, seed=seed,
                                interval=iv)
    scale = alpha * N / (sigma * sigma)
    pairs = n * (n - 1)
    error = scale * ld.error / pairs
    core = harmonic_number(T) / n + ld.value / pairs + truncation_tail(T, iv)
    notes = [note, f"ln det'(I - W) = {ld.value:.10g} +- {ld.error:.3g} ({ld.kind})"]
    if ld.kind == "estimate":
        kind = "estimate"
        value = scale * core
    else:
        value = scale * core + error
    if iv.estimate:
        kind = "estimate"
        notes.append(f"estimate: the truncation tail rests on an uncertified upper end of W's "
                     f"spectrum ({iv.how})")
    return MeanLoss(value, error, kind, ld.value, ld.method, tuple(notes))
