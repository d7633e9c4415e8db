"""Closed forms of the random-walk series for the complete graph, the ring and the star.

Each function returns ``sum_{t=1}^T (W^t)_uv / t`` for a pair ``u != v`` (multiply by
``alpha / sigma^2`` for the single-contribution RDP loss), with ``T = None`` meaning the
limit without the divergent ``H_T / n`` part, i.e. the log-Green entry ``L_uv``.  They use
``S_T(mu) = sum_{t=1}^T mu^t / t`` (:func:`partial_log_series`, ``S_inf(mu) = -log(1 - mu)``)
and the spectral decomposition of W; derivations are in the docstrings.  The paper's printed
ring (Theorem 5) and star (Theorem 4) formulas are wrong; ``tests/test_randomwalk_closed_forms``
shows the disagreement, and ``docs/randomwalk.md`` lists the errors.
"""

from __future__ import annotations

import numpy as np

from sparsedp import validation
from sparsedp.errors import ParameterError

__all__ = [
    "complete_graph_series",
    "partial_log_series",
    "ring_series",
    "star_series",
]


def partial_log_series(mu: np.ndarray | float, T: int | None) -> np.ndarray:
    """``S_T(mu) = sum_{t=1}^T mu^t / t`` elementwise (``|mu| <= 1``); ``T = None`` gives the
    limit ``-log(1 - mu)`` (``|mu| < 1``, or ``mu = -1``)."""
    x = np.asarray(mu, dtype=float)
    if T is None:
        return -np.log1p(-x)
    T = validation.rounds(T)
    total = np.zeros_like(x)
    power = np.ones_like(x)
    for t in range(1, T + 1):
        power = power * x
        total = total + power / t
    return total


def _harmonic_part(n: int, T: int | None) -> float:
    """``H_T / n`` (0 for the log-Green limit)."""
    if T is None:
        return 0.0
    T = validation.rounds(T)
    return float(np.sum(1.0 / np.arange(T, 0, -1))) / n


def _size(n: int, minimum: int) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < minimum:
        raise ParameterError(f"n must be an integer >= {minimum}, got {n!r}")
    return n


def complete_graph_series(n: int, T: int | None, self_loops: bool = True) -> float:
    """Complete graph on n nodes, u != v.

    * ``self_loops=True``: ``W = J/n`` (Metropolis weights of ``K_n``: ``1/n`` everywhere), so
      ``W^t = J/n`` and the series is ``H_T / n`` exactly; ``L = 0``.  (The paper writes
      ``ln(T) / n``, which is smaller than ``H_T / n`` and therefore not a bound.)
    * ``self_loops=False``: ``W = (J - I)/(n - 1) = J/n - (I - J/n)/(n - 1)``, so
      ``(W^t)_uv = (1 - (-1/(n-1))^t) / n`` and the series is
      ``(H_T - S_T(-1/(n-1))) / n``; ``L_uv = log(n / (n - 1)) / n``.
    """
    n = _size(n, 2)
    if not self_loops and n == 2:
        raise ParameterError("K_2 without self-loops is periodic with eigenvalue -1 only; "
                             "use n >= 3")
    if self_loops:
        return _harmonic_part(n, T)
    return _harmonic_part(n, T) - float(partial_log_series(-1.0 / (n - 1), T)) / n


def ring_series(n: int, T: int | None, distance: int, laziness: float = 1.0 / 3.0) -> float:
    """Ring (cycle) on n nodes with ``W = kappa I + (1 - kappa)(P + P^T)/2``, u, v at ring
    distance ``d = (u - v) mod n`` (``kappa = 1/3``: left, right and stay equally likely, the
    Metropolis weights; ``kappa = 0``: max-degree weights).

    W is circulant: eigenvalues ``mu_k = kappa + (1 - kappa) cos(2 pi k / n)`` with Fourier
    eigenvectors, so ``(W^t)_uv = (1/n) sum_{k=0}^{n-1} mu_k^t cos(2 pi k d / n)`` (it depends
    on ``u - v``, not on ``u + v`` as the paper's Theorem 5 has it), and::

        series = H_T / n + (1/n) sum_{k=1}^{n-1} cos(2 pi k d / n) S_T(mu_k)

    For ``T -> inf``, ``1 - mu_k = 2 (1 - kappa) sin^2(pi k / n)``::

        L_uv = -(1/n) sum_{k=1}^{n-1} cos(2 pi k d / n) log(2 (1 - kappa) sin^2(pi k / n))

    (for ``kappa = 1/3``: ``(1/n) sum_k cos(2 pi k d / n) log(3 / (4 sin^2(pi k / n)))``).
    """
    n = _size(n, 3)
    kappa = validation.real("laziness", laziness)
    if not 0.0 <= kappa < 1.0:
        raise ParameterError(f"laziness must be in [0, 1), got {kappa!r}")
    if isinstance(distance, bool) or not isinstance(distance, int):
        raise ParameterError(f"distance must be an integer, got {distance!r}")
    d = distance % n
    if d == 0:
        raise ParameterError("u and v must differ (distance 0 mod n)")
    k = np.arange(1, n)
    cosines = np.cos(2.0 * np.pi * k * d / n)
    if T is None:
        terms = -np.log(2.0 * (1.0 - kappa) * np.sin(np.pi * k / n) ** 2)
    else:
        terms = partial_log_series(kappa + (1.0 - kappa) * np.cos(2.0 * np.pi * k / n), T)
    return _harmonic_part(n, T) + float(np.sum(cosines * terms)) / n


def star_series(n: int, T: int | None, pair: str, weight: float | None = None) -> float:
    """Star with centre c and ``n - 1`` leaves, ``W_{c,i} = w`` (``0 < w <= 1/(n-1)``),
    ``W_cc = 1 - (n - 1) w``, ``W_ii = 1 - w`` (Metropolis: ``w = 1/n``, the default;
    max-degree: ``w = 1/(n-1)``).  ``pair`` is ``"centre-leaf"`` or ``"leaf-leaf"``.

    Spectrum: 1 (constant vector); ``1 - w`` on the vectors supported on the leaves with zero
    sum (multiplicity ``n - 2``, projector ``P``); ``1 - n w`` on
    ``q = ((n - 1) e_c - 1_leaves) / sqrt(n (n - 1))``.  Hence
    ``W^t = J/n + (1 - w)^t P + (1 - n w)^t q q^T`` and, with ``P_ij = -1/(n-1)`` (leaves
    ``i != j``), ``q_c q_i = -1/n``, ``q_i q_j = 1/(n (n - 1))``::

        centre-leaf:  H_T/n - S_T(1 - n w) / n
        leaf-leaf:    H_T/n - S_T(1 - w) / (n - 1) + S_T(1 - n w) / (n (n - 1))

    The limits give ``L_ci = log(n w) / n`` (0 for Metropolis) and
    ``L_ij = (n log w - log(n w)) / (n (n - 1))``.
    """
    n = _size(n, 3)
    w = 1.0 / n if weight is None else validation.real("weight", weight)
    if not 0.0 < w <= 1.0 / (n - 1) + 1e-15:
        raise ParameterError(f"weight must be in (0, 1/(n-1)] = (0, {1 / (n - 1):.6g}], "
                             f"got {w!r}")
    if pair not in ("centre-leaf", "leaf-leaf"):
        raise ParameterError(f"pair must be 'centre-leaf' or 'leaf-leaf', got {pair!r}")
    base = _harmonic_part(n, T)
    s_centre = float(partial_log_series(1.0 - n * w, T))
    if pair == "centre-leaf":
        return base - s_centre / n
    s_leaf = float(partial_log_series(1.0 - w, T))
    return base - s_leaf / (n - 1) + s_centre / (n * (n - 1))

