"""Moments of a symmetric gossip chain, with frontier-limited propagation and a certified
mixing truncation (the structured path's only contact with the graph).

For symmetric W, observers A (selector S) and target j, everything the structured path needs
is the lag sequence

    mu_l = S W^l S^T   (l = 0..2T-2, m x m)       a_l = S W^l e_j   (l = 0..T-1, m),

both entries of ``C_l = V_0^T W^l V_0`` for the block ``V_0 = [S^T, e_j]`` (b = m or m+1
columns).  Propagating ``V_{l+1} = W V_l`` gives two lags per product:
``C_{2l+1} = V_l^T V_{l+1}`` and ``C_{2l+2} = V_{l+1}^T V_{l+1}`` (fused into the sparse
product, :func:`sparsedp.linalg.kernels.spmm_fused`), so T-1 products give every lag.  When every
lag is propagated, the target needs no column of its own: ``a_l = (W^l S^T)[j]`` is the
target's row of the observers' block (W symmetric), which halves the work for one observer.

Frontier: ``W^l e_i`` is supported on the l-ball around i; while the support of the block is
small, only the rows of its closed neighbourhood are computed.

Mixing truncation (W symmetric and doubly stochastic, ``W = P + R`` with ``P = 11^T/n``,
``||R||_2 <= 1``): with ``eps_a(L) = ||W^L e_a - 1/n||_2 = ||R^L e_a||_2`` (non-increasing in
L), every lag ``l >= 2L`` satisfies

    |C_l[a, b] - 1/n| = |(R^{l1} e_a)^T (R^{l2} e_b)| <= eps_a(L) eps_b(L)   (l1, l2 >= L).

So once ``max_a eps_a(L)^2 <= tol / n`` the propagation stops, the remaining lags are set to
``1/n`` and the entrywise error bound ``eps_a eps_b`` is returned with them; the caller
carries it into the reported bounds.  ``eps`` is the computed centred norm (with its own
rounding) plus the rounding accumulated by the products, bounded in the worst case by
``gamma_(d+1) ||v_{l+1}||`` per product (``d`` the longest row; the columns ``v_l = W^l e_a``
are non-negative so ``|W| |v_l| = v_{l+1}``), each earlier error growing by at most
``||W||_2`` per later product: the truncation stays meaningful when the chain has mixed down
to rounding level.  A W doubly stochastic only to rounding adds the lag sequence's ``drift``
(:func:`sparsedp.linalg.certified.stochastic_drift`).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from sparsedp.linalg import kernels, tail_moments
from sparsedp.linalg.certified import (
    UNIT_ROUNDOFF,
    gamma,
    row_sum_deviation,
    stochastic_drift,
    stochastic_growth,
)
from sparsedp.linalg.stochastic import matrix_facts
from sparsedp.progress import progress_bar

FRONTIER_FRACTION = 0.125  # use row-restricted products while the frontier is below this


@dataclass(frozen=True)
class LagSequence:
    """``mu`` (2T-1, m, m), ``a`` (T, m) and entrywise error bounds for the truncated lags.

    ``mu[l] = mu_(l + 2 offset)`` and ``a[l] = a_(l + offset)`` (``offset`` = 1 for the v1
    views, :meth:`shifted`).  Lags below ``exact_lags`` (in the unshifted numbering) are
    computed (error 0 up to rounding); for larger lags ``|mu_l - mu[l]| <= mu_error =
    eps eps^T + drift`` and ``|a_l - a[l]| <= a_error = eps eps_target + drift`` entrywise,
    with ``eps`` (m,) the observers' and ``eps_target`` the target's mixing distance
    ``||W^L e - 1/n||`` at the truncation (zero when nothing is truncated) and ``drift`` what
    a W doubly stochastic only to rounding adds
    (:func:`sparsedp.linalg.certified.stochastic_drift`) plus ``u / n`` (the truncated lags
    are stored as ``fl(1/n)``).

    ``mu_decay`` (like ``mu``'s first axis) and ``a_decay`` (like ``a``'s), in ``[0, 1]``,
    shrink the mixing part of the truncated lags' errors: ``|mu_l - mu[l]| <= mu_decay[l]
    eps eps^T + drift`` and ``|a_l - a[l]| <= a_decay[l] eps eps_target + drift``
    (:meth:`LagPropagator.result`: the computed lags' decay bounds the far ones through
    :func:`sparsedp.linalg.tail_moments.moment_tail_bounds`); ``None``: 1 everywhere.
    """

    mu: np.ndarray
    a: np.ndarray
    eps: np.ndarray
    eps_target: float
    exact_lags: int
    products: int
    frontier_products: int
    offset: int = 0
    drift: float = 0.0
    mu_decay: np.ndarray | None = None
    a_decay: np.ndarray | None = None

    @property
    def mu_truncated(self) -> np.ndarray:
        """Boolean mask over ``mu``: which lags are the truncation's ``1/n``."""
        return np.arange(self.mu.shape[0]) + 2 * self.offset >= self.exact_lags

    @property
    def a_truncated(self) -> np.ndarray:
        """Boolean mask over ``a``: which lags are the truncation's ``1/n``."""
        return np.arange(self.a.shape[0]) + self.offset >= self.exact_lags

    @property
    def mu_weights(self) -> np.ndarray:
        """Per lag of ``mu``: 0 for a computed lag, ``mu_decay`` (or 1) for a truncated one."""
        weights = self.mu_truncated.astype(np.float64)
        return weights if self.mu_decay is None else weights * self.mu_decay

    @property
    def a_weights(self) -> np.ndarray:
        """Per lag of ``a``: 0 for a computed lag, ``a_decay`` (or 1) for a truncated one."""
        weights = self.a_truncated.astype(np.float64)
        return weights if self.a_decay is None else weights * self.a_decay

    @property
    def truncated(self) -> bool:
        """Whether any lag is truncated (the last one of ``mu`` is)."""
        return self.mu.shape[0] - 1 + 2 * self.offset >= self.exact_lags

    @property
    def mu_error(self) -> np.ndarray:
        return np.outer(self.eps, self.eps) + self.drift

    @property
    def a_error(self) -> np.ndarray:
        return self.eps * self.eps_target + self.drift

    def shifted(self, offset: int, T: int) -> LagSequence:
        """The lags ``mu_(l + 2 offset)``, ``a_(l + offset)`` for T rounds (from T + offset)."""
        if self.offset or self.a.shape[0] < T + offset:
            raise ValueError("shift an unshifted sequence of T + offset rounds")
        mu_slice, a_slice = slice(2 * offset, 2 * offset + 2 * T - 1), slice(offset, offset + T)
        return dataclasses.replace(
            self,
            mu=self.mu[mu_slice],
            a=self.a[a_slice],
            offset=offset,
            mu_decay=None if self.mu_decay is None else self.mu_decay[mu_slice],
            a_decay=None if self.a_decay is None else self.a_decay[a_slice],
        )


class ColumnStore:
    """Rows ``y_l`` (n-vectors) appended one at a time into blocks of ``BLOCK_ROWS`` rows, so
    that a row block is one strided matrix for BLAS without a final copy of the whole
    ``rows x n`` array (memory for the rows actually appended, rounded up to a block; numpy
    leaves a block's unused rows untouched).

    Rows of a mixing chain approach a constant ``centre`` (``1/n``): from the first row with
    ``max |y_l - centre| <= narrow`` on (``narrow = 0``: never), every row is kept as its
    float32 deviation ``d_l = fl32(fl(y_l - centre))``, half the memory.  The row it stands
    for, ``centre + d_l``, is within ``NARROW_ERROR |d_l| + NARROW_FLOOR`` of ``y_l`` entrywise
    (one rounding of the float64 subtraction, one of the float32 conversion, subnormals)."""

    BLOCK_ROWS = 128
    NARROW_ERROR = (2.0**-24 + 2.0 * UNIT_ROUNDOFF) * (1.0 + 2.0**-22)
    NARROW_FLOOR = 2.0**-148

    def __init__(self, n: int, centre: float = 0.0, narrow: float = 0.0):
        self.n, self.centre, self.narrow = n, float(centre), float(narrow)
        self.wide_rows = self.narrow_rows = 0
        self._wide, self._narrow = [], []

    @property
    def rows(self) -> int:
        return self.wide_rows + self.narrow_rows

    def append(self, row: np.ndarray) -> None:
        if self.narrow_rows == 0:
            deviation = np.abs(row - self.centre).max() if self.narrow > 0 else np.inf
            if not deviation <= self.narrow:
                self.wide_rows = self._put(self._wide, self.wide_rows, row, np.float64)
                return
        self.narrow_rows = self._put(self._narrow, self.narrow_rows, row, np.float32)

    def _put(self, blocks: list, count: int, row: np.ndarray, dtype) -> int:
        if count % self.BLOCK_ROWS == 0:
            blocks.append(np.empty((self.BLOCK_ROWS, self.n), dtype=dtype))
        if dtype is np.float64:
            blocks[-1][count % self.BLOCK_ROWS] = row
        else:  # fl(row - centre) in float64, then rounded to nearest float32
            np.subtract(row, self.centre, out=blocks[-1][count % self.BLOCK_ROWS],
                        casting="same_kind")
        return count + 1

    def wide_blocks(self):
        """``(first_row, block)`` for each float64 block of rows ``y_l``, ``block`` its
        filled rows (a view)."""
        return self._blocks(self._wide, self.wide_rows, 0)

    def narrow_blocks(self):
        """``(first_row, block)`` for each float32 block of deviations ``d_l``."""
        return self._blocks(self._narrow, self.narrow_rows, self.wide_rows)

    def _blocks(self, blocks: list, count: int, offset: int):
        for k, block in enumerate(blocks):
            first = k * self.BLOCK_ROWS
            yield offset + first, block[: min(self.BLOCK_ROWS, count - first)]


class LagPropagator:
    """Resumable propagation of ``V_l = W^l [S^T, e_j]`` producing the lag sequence.

    :meth:`advance` propagates until the chain has mixed to ``n eps^2 <= tol`` (or to the
    last lag, or to a given number of products); calling it again continues where it
    stopped, so a caller can tighten the truncation only when the bounds need it.
    :meth:`result` returns the current :class:`LagSequence`.  ``frontier=False`` propagates
    whole columns from the start (small chains, where finding the frontier costs more than
    it saves).
    ``target_column=False`` propagates only the observers' columns and reads ``a_l`` off
    their target rows: half the work for one observer, but ``a`` then reaches only the
    lags actually propagated, so the propagation must run through every lag.
    ``columns``: a :class:`ColumnStore` that receives every propagated column of the first
    observer, ``W^l e_a`` (what one observer against every target needs: its row of ``W^l``
    for symmetric W), one n-vector per product.
    """

    def __init__(
        self,
        W: sp.csr_matrix,
        observers,
        target: int,
        T: int,
        backend: str = "auto",
        progress: bool | None = None,
        frontier: bool = True,
        target_column: bool = True,
        columns: ColumnStore | None = None,
    ):
        self.W, self.T, self.backend = W, T, backend
        self.bar = progress_bar(progress, total=T - 1, desc="sparse products", unit="product")
        self.n = n = W.shape[0]
        observers = np.asarray(observers, dtype=np.int64)
        self.m = m = observers.size
        listed = observers.tolist()
        self.target = target
        if target in listed:
            self.tcol = listed.index(target)
        else:
            self.tcol = m if target_column else None
        b = m + 1 if self.tcol == m else m
        self.C = np.empty((2 * T - 1, b, b))
        self.V = np.zeros((n, b))
        self.V[observers, np.arange(m)] = 1.0
        if b > m:
            self.V[target, m] = 1.0
        self.C[0] = self.V.T @ self.V
        self.target_rows = np.empty((T, b))  # V_l[target]: a_l without a target column
        self.target_rows[0] = self.V[target]
        # [lower, upper] bounds on ||W^k e - 1/n|| (exact arithmetic) per column, k = 0, 1, ..
        start = np.sqrt(1.0 - 1.0 / n)  # ||e_a - 1/n||
        self.distances = [(np.full(b, start * (1 - 4 * UNIT_ROUNDOFF)),
                           np.full(b, start * (1 + 4 * UNIT_ROUNDOFF)))]
        self.support = np.unique(np.concatenate([observers, [target]])) if frontier else None
        self.products = self.frontier_products = 0
        self.exact = 1  # lags 0 .. exact-1 are computed
        # the columns are non-negative, so |W| |v| = W v: ||fl(W v) - W v||_2 <= gamma_(d+1)
        # ||W v||_2 <= gamma_(d+1) / (1 - gamma_(d+1)) ||fl(W v)||_2 (worst case, d the longest
        # row); an error made at one product grows by at most ||W||_2 <= sqrt(||W||_1
        # ||W||_inf) at each later one
        facts = matrix_facts(W)
        row_sums, column_sums = facts.absolute_line_sums
        self.norm_2 = (math.sqrt(float(row_sums.max()) * float(column_sums.max()))
                       * (1 + gamma(n + 2)))
        g = gamma(facts.longest_row + 1)
        self.step_rounding = g / (1 - g) * (1 + gamma(n + 2))  # times the computed ||fl(W v)||
        self.rounding_drift = 0.0  # accumulated rounding in the propagated columns (2-norm)
        self.columns = columns
        if columns is not None:
            columns.append(self.V[:, 0])

    @property
    def finished(self) -> bool:
        return self.exact == self.C.shape[0]

    @property
    def eps(self) -> np.ndarray:
        """Per column, the upper bound on the current mixing distance ``||W^P e - 1/n||``."""
        return self.distances[-1][1]

    @property
    def mixing_level(self) -> float:
        """``n max_a eps_a^2``: the quantity :meth:`advance` compares with ``tol``."""
        return self.n * float(self.eps.max()) ** 2

    def advance(self, tol: float | None = None, max_products: int | None = None
                ) -> LagPropagator:
        """Propagate until ``n max_a eps_a^2 <= tol`` (``None``: through every lag) or, when
        given, until ``max_products`` products have been done in all."""
        n, shift = self.n, 1.0 / self.n
        while not self.finished:
            if tol is not None and self.mixing_level <= tol:
                break
            if max_products is not None and self.products >= max_products:
                break
            if self.support is not None:
                rows = _closed_neighbourhood(self.W, self.support)
                if rows.size > FRONTIER_FRACTION * n:
                    self.support = None
            if (self.support is None and tol is None and max_products is None
                    and self.columns is None):
                # no stopping test and no columns to keep: every product at once
                steps = (self.C.shape[0] - self.exact) // 2
                self.V, cross, gram, centred, rows = kernels.propagate_fused(
                    self.W, self.V, shift, steps, self.target, backend=self.backend
                )
                self._record(cross, gram, centred, rows)
            elif self.support is None:
                self.V, cross, gram, centred = kernels.spmm_fused(
                    self.W, self.V, shift, backend=self.backend
                )
                self._record(cross[None], gram[None], centred[None], self.V[self.target][None])
                self._keep()
            else:
                V_next = np.zeros_like(self.V)
                kernels.spmm_rows(self.W, self.V, V_next, rows, backend=self.backend)
                Vr, Yr = self.V[rows], V_next[rows]
                centred = ((Yr - shift) ** 2).sum(axis=0) + (n - rows.size) * shift**2
                self.support = rows
                self.frontier_products += 1
                self.V = V_next
                self._record(
                    (Vr.T @ Yr)[None], (Yr.T @ Yr)[None], centred[None], V_next[self.target][None]
                )
                self._keep()
        return self

    def _keep(self) -> None:
        if self.columns is not None and self.columns.rows < self.T:
            self.columns.append(self.V[:, 0])

    def _record(
        self, cross: np.ndarray, gram: np.ndarray, centred: np.ndarray, rows: np.ndarray
    ) -> None:
        """Store the lags of ``k`` products just done (inputs stacked over the k steps):
        ``C_(2l+1) = V_l^T V_(l+1)`` (symmetrised), ``C_(2l+2) = V_(l+1)^T V_(l+1)``, the
        target's rows ``V_(l+1)[target]`` (while ``l + 1 < T``), and update the rounding drift
        and the mixing distances ``eps``."""
        k, first = cross.shape[0], 2 * self.products
        self.C[first + 1 : first + 2 * k : 2] = 0.5 * (cross + cross.transpose(0, 2, 1))
        self.C[first + 2 : first + 2 * k + 1 : 2] = gram
        kept = rows[: max(self.T - 1 - self.products, 0)]
        self.target_rows[self.products + 1 : self.products + 1 + kept.shape[0]] = kept
        self.products += k
        self.exact = 2 * (self.products - 1) + 3
        if self.bar is not None:
            self.bar.update(k)
        # the computed sum of fl(y - fl(1/n))^2: the subtraction, square and n-term sum
        # within gamma_(n+4) relative, and fl(1/n) within u/n of 1/n (u / sqrt(n) in 2-norm);
        # the computed y within rounding_drift of the exact one
        g, offset = gamma(self.n + 4), UNIT_ROUNDOFF / math.sqrt(self.n)
        for step, norm in enumerate(np.sqrt(np.diagonal(gram, axis1=1, axis2=2).max(axis=1))):
            self.rounding_drift = (self.rounding_drift * self.norm_2
                                   + self.step_rounding * float(norm)) * (1 + 4 * UNIT_ROUNDOFF)
            squares = np.maximum(centred[step], 0.0)
            upper = ((np.sqrt(squares * (1 + g)) + offset) * (1 + 4 * UNIT_ROUNDOFF)
                     + self.rounding_drift)
            lower = ((np.sqrt(squares * (1 - g)) - offset) * (1 - 4 * UNIT_ROUNDOFF)
                     - self.rounding_drift * (1 + 4 * UNIT_ROUNDOFF))
            self.distances.append((np.maximum(lower, 0.0), upper))

    def resize(self, T: int) -> None:
        """Room for the lags of ``T`` rounds (more than now; a smaller T changes nothing): the
        propagation continues where it stopped, with more lags to compute."""
        if T <= self.T:
            return
        C = np.empty((2 * T - 1,) + self.C.shape[1:])
        C[:self.exact] = self.C[:self.exact]
        rows = np.empty((T, self.target_rows.shape[1]))
        rows[:self.T] = self.target_rows
        self.C, self.target_rows, self.T = C, rows, T

    def truncation_drift(self, lags: int) -> float:
        """The drift of :class:`LagSequence` for ``lags`` lags truncated at the current mixing
        distances: W 1 = 1 only up to ``rho`` (:func:`sparsedp.linalg.certified.
        stochastic_drift`), and the truncated lags stored as ``fl(1/n)``, within ``u / n``."""
        return (stochastic_drift(row_sum_deviation(self.W), lags, self.n, float(self.eps.max()))
                + UNIT_ROUNDOFF / self.n) * (1 + 4 * UNIT_ROUNDOFF)

    def close(self) -> None:
        """Close the progress bar (the propagation may stop before the last lag)."""
        if self.bar is not None:
            self.bar.close()

    def result(self) -> LagSequence:
        """The lags so far; truncated lags are ``1/n`` with error ``eps_a eps_b``.

        Without a target column (``target_column=False``, target not an observer) ``a_l`` is
        read off ``V_l[target]`` (``a_l = (W^l e_i)_j`` for symmetric W), so every lag must
        have been propagated: ``ValueError`` otherwise.
        """
        C = self.C.copy()
        C[self.exact :] = 1.0 / self.n
        eps = np.zeros_like(self.eps) if self.finished else self.eps
        m = self.m  # the observers are the block's first m columns
        drift = 0.0
        if not self.finished:  # truncated lags compared with 1/n
            drift = self.truncation_drift(self.C.shape[0])
        if self.tcol is None:
            if not self.finished:
                raise ValueError("without a target column the propagation cannot be truncated")
            a, eps_target = self.target_rows[:, :m].copy(), 0.0
        else:
            a, eps_target = C[: self.T, :m, self.tcol], float(eps[self.tcol])
        mu_decay = a_decay = None
        if not self.finished:
            rho_columns, extra_drift = self._tail_decay()
            lags = np.arange(C.shape[0])
            mu_decay = rho_columns[:m].max(axis=0)[lags // 2]
            a_decay = rho_columns.max(axis=0)[lags[: self.T] // 2]
            drift += extra_drift
        return LagSequence(
            mu=np.ascontiguousarray(C[:, :m, :m]),
            a=a,
            eps=eps[:m].copy(),
            eps_target=eps_target,
            exact_lags=self.exact,
            products=self.products,
            frontier_products=self.frontier_products,
            drift=drift,
            mu_decay=mu_decay,
            a_decay=a_decay,
        )

    def _tail_decay(self) -> tuple[np.ndarray, float]:
        """Per column c and half-lag s (``s = floor(l / 2)``, ``0 <= s < T``): ``rho[c, s]``
        in [0, 1] with ``|<W^j d_c, d_c'>| <= max(rho[c, s], rho[c', s]) eps_c eps_c'`` for
        every truncated lag ``l = 2P + j`` (``d = W^P e - 1/n``, P the products), and the
        drift this representation adds.

        With ``K = P - 2q`` and ``r = W^K e - 1/n``: ``d = W^(P-K) r + delta``,
        ``||delta|| <= g / sqrt(n)`` (``g >= |W^i 1 - 1|``, :func:`stochastic_drift`), so
        ``<W^j d_c, d_c'> = <W^(l - 2K) r_c, r_c'>`` up to ``(1 + g) g (2 sqrt(n) max ||r||
        + g) / n`` (returned as the extra drift).  For symmetric W with ``||W||_2 <= nu``
        (``norm_2``), ``|<W^i r_c, r_c'>|^2 <= int |lambda|^i dsigma_c int |lambda|^i
        dsigma_c'`` (Cauchy-Schwarz over the eigenvectors; ``sigma`` the spectral measure of
        ``r``) and ``int |lambda|^i dsigma <= max(nu, 1) int x^floor(i/2) dtau``, ``tau`` the
        measure of ``x = lambda^2`` on ``[0, nu^2]``, whose moments ``int x^k dtau = ||W^k
        r||^2`` are known for ``k <= 2q`` to within the propagation's rounding and ``g /
        sqrt(n)`` (``self.distances``): :func:`moment_tail_bounds` bounds the higher ones.
        ``rho = min(1, nu B / eps^2)``; 1 for the lags not beyond the last computed one (the
        plain bound ``eps_c eps_c'``)."""
        P, T, n = self.products, self.T, self.n
        q = min(tail_moments.MAX_NODES, P // 2)
        columns = self.C.shape[1]
        rho = np.ones((columns, T))
        g = stochastic_growth(row_sum_deviation(self.W), 2 * T - 1)
        if q == 0 or P + 1 >= T:
            return rho, 0.0
        K = P - 2 * q
        shift = g / math.sqrt(n) * (1 + 4 * UNIT_ROUNDOFF)
        lower = np.array([self.distances[k][0] for k in range(K, P + 1)])  # (2q + 1, columns)
        upper = np.array([self.distances[k][1] for k in range(K, P + 1)])
        lo = np.maximum(lower - shift, 0.0) ** 2 * (1 - 4 * UNIT_ROUNDOFF)
        hi = (upper + shift) ** 2 * (1 + 4 * UNIT_ROUNDOFF)
        b = self.norm_2**2 * (1 + 4 * UNIT_ROUNDOFF)
        halves = np.arange(P + 1, T)
        nu = max(self.norm_2, 1.0)  # |lambda|^i <= nu x^floor(i/2) for |lambda| <= norm_2
        for c in range(columns):
            bound = tail_moments.moment_tail_bounds(lo[:, c], hi[:, c], b, halves - K)
            ratio = nu * bound / float(self.eps[c]) ** 2 * (1 + 4 * UNIT_ROUNDOFF)
            rho[c, P + 1:] = np.minimum(ratio, 1.0)
        extra = ((1 + g) * g * (2 * math.sqrt(n) * float(upper[0].max()) + g) / n
                 * (1 + 8 * UNIT_ROUNDOFF))
        return rho, extra


def gossip_lags(
    W: sp.csr_matrix,
    observers,
    target: int,
    T: int,
    *,
    truncate: bool = True,
    tol: float = 1e-20,
    backend: str = "auto",
) -> LagSequence:
    """The lag sequence for symmetric ``W`` (see the module docstring), in one call.

    ``truncate`` needs W doubly stochastic (checked by the caller); ``tol`` is the relative
    size ``n eps^2`` below which the chain counts as mixed.
    """
    propagator = LagPropagator(W, observers, target, T, backend=backend)
    return propagator.advance(tol if truncate else None).result()


def _closed_neighbourhood(W: sp.csr_matrix, nodes: np.ndarray) -> np.ndarray:
    """Sorted indices of ``nodes`` and all their neighbours in the pattern of W."""
    starts = W.indptr[nodes]
    lengths = W.indptr[nodes + 1] - starts
    total = int(lengths.sum())
    if total > FRONTIER_FRACTION * W.shape[0] * 4:
        return np.arange(W.shape[0], dtype=np.int64)
    # positions starts[k] .. starts[k] + lengths[k] - 1 for every k, without a Python loop
    offsets = np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    neighbours = W.indices[np.repeat(starts, lengths) + offsets]
    if total * 64 < W.shape[0]:  # small frontier: sorting beats a pass over n flags
        return np.unique(np.concatenate([neighbours, nodes])).astype(np.int64)
    member = np.zeros(W.shape[0], dtype=bool)
    member[neighbours] = True
    member[nodes] = True
    return np.flatnonzero(member).astype(np.int64)
