"""One observer against every target of a large graph: the certified c = 1 values of the
secure-summation single-observer view for all n targets, from truncated lags.

:mod:`sparsedp.gossip.batched` keeps the observer's T lags ``r_l = e_a^T W^l`` (T x n: 8 GB at
n = 10^6, T = 1000).  For W symmetric and doubly stochastic the chain mixes: with
``W = 11^T / n + R`` (``||R||_2 <= 1``), ``r_l - 1/n = (R^l e_a)^T`` and

    |r_l[j] - 1/n| <= ||R^l e_a||_2 <= ||R^P e_a||_2 =: eps        (every target j, l >= P),

(for a W doubly stochastic only to rounding, row sums within rho of 1: ``r_l = W^(l-P) r_P``
with ``||W^k x||_2 <= (1 + rho)^k ||x||_2`` and ``|W^k 1 / n - 1 / n| <= ((1 + rho)^k - 1) / n``,
so eps grows to ``(1 + rho)^T eps + ((1 + rho)^T - 1) / n``, which is what is charged, and
K's truncated moments carry the lag sequence's ``drift``), so the
propagation stops at the lag P where the chain has mixed (the structured path's
criterion ``n eps^2 <= tol``, :class:`sparsedp.linalg.moments.LagPropagator`, which also gives
the moments of K with their truncation bound) and keeps only the columns ``W^l e_a``, l <= P
(``(P + 1) n`` floats).  The later lags are taken as ``fl(1/n)``: the lag vector of target j
is ``r_hat_j = [Y[0..P, j], 1/n, ..., 1/n]`` and, with ``P_C = L^{-1} C`` (T x T, K = L L^T as
in :mod:`sparsedp.gossip.batched`) and ``P_C = Q R`` (R upper triangular, ``R^T R = P_C^T
P_C``: R stands in for P_C, and ``||R r||^2 = r^T C^T K^{-1} C r``),

    ||R r_hat_j||^2 = ||R[:P+1, :P+1] Y_j + p||^2 + ||q||^2,
    p = R[:P+1, P+1:] (1/n) 1,   q = R[P+1:, P+1:] (1/n) 1,

one triangular (P+1) x (P+1) by (P+1) x n product over blocks of targets (BLAS trmm,
``(P + 1)^2 n / 2`` multiply-adds, a sixth of the ``T (P + 1) n`` that ``P_C`` itself would
cost at P = T/3).
The certification is
:func:`sparsedp.gossip.batched.certify_ones` (K's rounding and truncation ``dK``, the solve,
the products, the computed lags) plus the truncation of the target's lags:
``|(C (r_j - r_hat_j))[t]| <= (t - P) eps'`` for ``t > P`` (``eps' = eps + u / n`` covers
``fl(1/n)``), so ``sqrt(b^T K^{-1} b)`` moves by at most ``eps' ||tau||_2 / sqrt(lambda)``,
``tau[t] = max(0, t - P)``, ``||tau||_2^2 = sum_(k=1)^(T-1-P) k^2``.  The QR's rounding
needs no analysis of its own: ``certify_ones`` measures ``||R^T R - C^T K^{-1} C||`` against
the certified sandwich of ``C^T K^{-1} C``.

Memory: ``8 (P + 1) n`` bytes for the columns, about half that once the chain has mixed
(:class:`sparsedp.linalg.moments.ColumnStore` keeps the rows within ``min(10 / n, 1e-6)`` of
``1/n`` as float32 deviations, each lag then within ``6e-14 |d_l| + 2^-148`` of the computed
one: ``sqrt(v)`` moves by at most ``T ||that||_2 / sqrt(lambda)``, charged), plus one block
of targets.  Work: ``P`` sparse products, ``T^3`` for K, and ``(P + 1)^2 n / 2``
multiply-adds for the values.  Refused (ParameterError) for a W that is not symmetric and
doubly stochastic (no truncation bound then): use :func:`sparsedp.privacy_map` with
``upper="none"``, which keeps every lag.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import scipy.linalg
from scipy.linalg import blas

from sparsedp import validation
from sparsedp.errors import ParameterError
from sparsedp.gossip.batched import certify_ones, lambda_min_lower_bound
from sparsedp.gossip.certified_solve import doubly_stochastic_to_rounding, truncation_norm_bound
from sparsedp.linalg import gram
from sparsedp.linalg.certified import UNIT_ROUNDOFF, gamma, row_sum_deviation
from sparsedp.linalg.moments import ColumnStore, LagPropagator
from sparsedp.linalg.operators import k_from_moments
from sparsedp.linalg.stochastic import matrix_facts

TRUNCATION_TOL = 1e-20  # n eps^2 at which the chain counts as mixed (the structured path's)
TARGET_BLOCK = 1 << 15  # targets per block of the (P + 1) x block product
NARROW_LEVEL = 1e-6  # rows within min(10 / n, this) of 1/n are kept in float32 (ColumnStore):
# each of their lags then carries an error <= 6e-14, charged to the interval


@dataclass(frozen=True)
class OneToAll:
    """Certified ``low <= 1^T M_j 1 <= high`` for every target j (arrays of n), with the
    propagation's facts: ``products`` (sparse products), ``truncated_at`` (P: lags above it
    are ``1/n``; ``T - 1``: none truncated), ``eps`` (the truncation's mixing distance),
    ``lam`` (the analytic ``lambda_min(K)`` bound), ``dK`` (``||K_hat - K||_2``) and
    ``float32_lags`` (how many of the kept lags were stored as float32 deviations)."""

    low: np.ndarray
    high: np.ndarray
    products: int
    truncated_at: int
    eps: float
    lam: float
    dK: float
    float32_lags: int


def one_to_all(W, observer: int, T: int, *, tol: float = TRUNCATION_TOL,
               backend: str = "auto", progress=None) -> OneToAll:
    """The certified c = 1 interval of every target against ``observer`` (module
    docstring).  ``W``: a checked gossip matrix (canonical CSR, non-negative), symmetric and
    doubly stochastic; ``tol``: the mixing level ``n eps^2`` at which lags are truncated."""
    T = validation.rounds(T)
    observer = validation.node_index(observer, W.shape[0], "observer")
    facts = matrix_facts(W)
    if not (facts.symmetric and doubly_stochastic_to_rounding(W)):
        raise ParameterError("one observer against every target with truncated lags needs a "
                             "symmetric doubly stochastic W (e.g. Metropolis weights)")
    n = W.shape[0]
    lam = lambda_min_lower_bound(W)
    Y = ColumnStore(n, centre=1.0 / n, narrow=min(10.0 / n, NARROW_LEVEL))  # W^l e_a for l <= P
    propagator = LagPropagator(W, [observer], observer, T, backend=backend, progress=progress,
                               columns=Y)
    propagator.advance(tol)
    propagator.close()
    lags = propagator.result()
    del propagator
    P = Y.rows - 1
    K = k_from_moments(lags.mu, T)
    depth = 2 * lags.products * (facts.longest_row + 1) + n + T
    dK = gram.rounding_norm_bound(K, depth) + truncation_norm_bound(lags, T)
    if dK >= 0.25 * lam:
        raise ParameterError("the rounding and truncation of K are too large for the "
                             "analytic lambda_min bound (a smaller tol truncates later)")
    L = np.linalg.cholesky(K)
    C = np.tril(np.ones((T, T)))
    PC = scipy.linalg.solve_triangular(L, C, lower=True, check_finite=False)
    R = scipy.linalg.qr(PC, mode="r", check_finite=False)[0]
    centres = np.full(T - Y.wide_rows, Y.centre)  # the narrow rows' centre, then the tail
    p = R[: P + 1, Y.wide_rows:] @ centres
    R11 = np.ascontiguousarray(R[: P + 1, : P + 1])
    q = R[P + 1:, P + 1:] @ centres[Y.narrow_rows:]
    centres_sq, q_sq = float(centres @ centres), float(q @ q)
    z2, r2, d2 = np.empty(n), np.empty(n), np.empty(n)
    width = min(n, TARGET_BLOCK)
    buffer = np.empty((P + 1, width))  # the kept lags of a block of targets, one per column
    for start in range(0, n, width):
        stop = min(n, start + width)
        Yk = buffer[:, : stop - start]
        for first, rows in itertools.chain(Y.wide_blocks(), Y.narrow_blocks()):
            Yk[first:first + rows.shape[0]] = rows[:, start:stop]  # float32 -> 64: exact
        wide = np.einsum("tj,tj->j", Yk[: Y.wide_rows], Yk[: Y.wide_rows])
        d2[start:stop] = np.einsum("tj,tj->j", Yk[Y.wide_rows:], Yk[Y.wide_rows:])
        d2[start:stop] *= 1 + gamma(T + 1)
        # ||r_hat||^2 and ||(|r_hat_1| + |r_hat_2|)||^2 (narrow lags: centre + d) <= r2
        r2[start:stop] = wide + (math.sqrt(centres_sq) + np.sqrt(d2[start:stop])) ** 2
        # Z = R[:P+1, :P+1] Y_k in place (BLAS trmm on the transpose: Z^T = Y_k^T R^T)
        Z = blas.dtrmm(1.0, R11, Yk.T, side=1, lower=0, trans_a=1, overwrite_b=1).T
        Z += p[:, None]
        z2[start:stop] = np.einsum("tj,tj->j", Z, Z) + q_sq
    eps = float(lags.eps[0]) if lags.truncated else 0.0
    shift = 0.0
    if P < T - 1:
        # W doubly stochastic to rounding: row sums within rho of 1, ||W||_2 <= 1 + rho
        rho = row_sum_deviation(W)
        growth = math.exp(T * math.log1p(rho)) * (1 + 8 * UNIT_ROUNDOFF)  # >= (1 + rho)^T
        eps_all = (growth * (eps + UNIT_ROUNDOFF / n) + (growth - 1.0) / n) * (1 + gamma(4))
        k = np.arange(1, T - P, dtype=np.float64)
        tau_norm = math.sqrt(float(k @ k)) * (1 + gamma(T + 1))
        shift = eps_all * tau_norm / math.sqrt(lam) * (1 + 8 * UNIT_ROUNDOFF)
    # the narrow lags centre + d_l differ from the computed ones by <= NARROW_ERROR |d_l| +
    # NARROW_FLOOR: sqrt(v) moves by <= ||C||_2 ||that||_2 / sqrt(lambda), ||C||_2 <= T
    stored = (ColumnStore.NARROW_ERROR * np.sqrt(d2)
              + ColumnStore.NARROW_FLOOR * math.sqrt(Y.narrow_rows)) * (1 + 8 * UNIT_ROUNDOFF)
    shift = shift + T * stored / math.sqrt(lam) * (1 + 8 * UNIT_ROUNDOFF)
    r2 = (np.sqrt(r2) + stored) ** 2 * (1 + 8 * UNIT_ROUNDOFF)  # also >= the computed lags'
    low, high = certify_ones(K, L, dK, lam, PC, z2, r2,
                             gamma(max(P * (facts.longest_row + 1), 1)), shift, factor=R,
                             terms=2 * T)
    return OneToAll(low=low, high=high, products=lags.products, truncated_at=P, eps=eps,
                    lam=lam, dK=dK, float32_lags=Y.narrow_rows)
