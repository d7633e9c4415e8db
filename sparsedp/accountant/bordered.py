"""``K_T = L L^T`` and ``Y_T = L^{-1} G_T`` one block row per round, with a certified bound on
``Delta_T^2`` that costs ``O(m T)`` to update.

Both ``K_T`` and ``G_T`` of the gossip view (m observed rows, block (t, s) of K is
``sum_(k <= min(t, s)) mu_(t+s-2k)``, block (t, k) of G is ``a_(t-k)``, lags shifted by the
view's power offset) are the leading blocks of ``K_(T+1)`` and ``G_(T+1)``, and the new column
of G is zero above its last block.  So round T + 1 borders the Cholesky factor with one
block row (``l = K[T, :T] L_T^{-T}``, ``L_TT = chol(K[T, T] - l l^T)``) and appends one block
row to ``Y = L^{-1} G`` (``y = L_TT^{-1} (G[T] - l Y_T)``, the old rows gaining a zero), at
``O(m^2 T^2)`` work, the same total as one Cholesky of ``K_T``.  Since the rows of Y never
change afterwards and ``M_T = Y^T Y``,

    c^T M_T c = sum_r (Y_r c)^2 <= sum_r ||Y_r||_1^2 =: S_T     (every sign vector c)

is a running sum over the rows.  It is at least the entrywise bound ``sum |M_T|`` (equal when
every row of Y has one sign, the usual case far from the observers).

**Certification.**  ``A = L^ L^T`` (the computed factor) satisfies ``K = A - E`` with
``||E||_2 <= e = gamma_c ||L^||_F^2 + dK``: the Cholesky backward error ``|L^ L^T - K^| <=
gamma_(N+1) |L^| |L^T|`` (Higham, Thm 10.3; any order of the inner products; ``gamma_c``,
``c = 2 N + 4``, ``N = m T``, leaves room for BLAS's blocked triangular solves that multiply by
reciprocals) plus the rounding of the sums forming ``K^`` (``dK = gamma_(T+2) ||K^||_inf``, as
the engine's structured path).  With ``lambda_min(K) >= lambda`` (the analytic bound),
``lambda_min(A) >= lambda - e`` and ``K >= (1 - e / (lambda - e)) A``, so ``M <= f G^T A^{-1} G``,
``f = (lambda - e) / (lambda - 2 e)`` (needs ``lambda > 2 e``).  Each column of the computed
``Y^`` solves ``(L^ + D_c) y = g_c`` with ``|D_c| <= gamma_c |L^|``, so it is within
``delta ||y_c||``, ``delta = gamma_c ||L^||_F / sqrt(lambda - e)``, of ``L^^{-1} g_c``; hence

    Delta_T^2 <= f (sqrt(S_T) + delta sqrt(T) ||Y^||_F)^2,

with the rounding of the running sums charged.  ``T`` (``M_T <= I``) caps it.

**Truncated lags** (:mod:`sparsedp.accountant.lags`, a mixed chain): ``K^`` and ``G^`` are
then formed from lags within known errors of the exact ones, with ``||K - K^||_2 <= e_K`` and
``|| |G - G^| 1 ||_2 <= e_G``.  ``e_K`` joins ``dK`` in ``e`` (the argument above holds for
any ``||K - A|| <= e``), and since ``|(G - G^) c| <= |G - G^| 1`` entrywise for every sign
vector c, ``||A^{-1/2} (G - G^) c|| <= e_G / sqrt(lambda - e)`` is added to the root.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg

from sparsedp.errors import ParameterError
from sparsedp.linalg.certified import UNIT_ROUNDOFF, gamma

PANEL = 256  # rows per panel of the forward substitution (_forward_solve)


def _forward_solve(L: np.ndarray, N: int, B: np.ndarray, blocks: dict) -> np.ndarray:
    """``L[:N, :N]^{-1} B`` by panels of ``PANEL`` rows: a matrix product with the rows
    already solved (BLAS reads the strided panel of the capacity-sized L in place) and a
    triangular solve of the panel's diagonal block (``blocks``: Fortran-ordered copies of
    the complete diagonal blocks, which never change, made once).  Every entry is still the
    substitution formula, its inner product split in parts (the backward error of the module
    docstring); no ``N x N`` copy, which ``solve_triangular`` makes of a non-contiguous
    block."""
    X = np.array(B, dtype=np.float64)
    for start in range(0, N, PANEL):
        stop = min(N, start + PANEL)
        if start:
            X[start:stop] -= L[start:stop, :start] @ X[:start]
        block = blocks.get(start)
        if block is None or block.shape[0] != stop - start:
            block = np.asfortranarray(L[start:stop, start:stop])
            if stop - start == PANEL:
                blocks[start] = block
        X[start:stop] = scipy.linalg.solve_triangular(block, X[start:stop], lower=True,
                                                      check_finite=False)
    return X


def _lower_product(l_row: np.ndarray, Y: np.ndarray, N: int, t: int, m: int) -> np.ndarray:
    """``l_row @ Y[:N, :t]`` reading only the non-zero part of Y (rows of round r are zero
    beyond column r), one panel of ``PANEL`` rows at a time; Y may carry leading batch axes
    (every tight target of :class:`sparsedp.accountant.targets.TightRows`)."""
    out = np.zeros(Y.shape[:-2] + (l_row.shape[0], t))
    for start in range(0, N, PANEL):
        stop = min(N, start + PANEL)
        columns = min(t, (stop - 1) // m + 1)
        out[..., :columns] += l_row[:, start:stop] @ Y[..., start:stop, :columns]
    return out


class BorderedFactor:
    """The block-bordered factorisation of one view and its running sums (module docstring).

    Parameters
    ----------
    m : int
        Observed rows per round.
    lambda_lb : float
        Certified lower bound on ``lambda_min(K_T)`` for every T.
    """

    def __init__(self, m: int, lambda_lb: float):
        self.m, self.lambda_lb = int(m), float(lambda_lb)
        self.rounds = 0
        self.L = np.zeros((0, 0))
        self.Y = np.zeros((0, 0))
        self.K_row = np.zeros((m, 0))  # the last block row of K^ (for the lag recursion)
        self.K_row_sums = np.zeros(0)  # row sums of K^ (K^ >= 0 entrywise)
        self.L_frobenius2 = 0.0  # ||L^||_F^2
        self.rows_l1 = 0.0  # S_T = sum_r ||Y_r||_1^2
        self.Y_frobenius2 = 0.0  # ||Y^||_F^2 = trace(M^)
        self.ones = 0.0  # ||Y^ 1||^2 = 1^T M^ 1 (the c = 1 value, uncertified)
        self.history = np.zeros(0)  # certified upper bound on Delta_t^2, t = 1..rounds
        self._blocks: dict = {}  # complete diagonal blocks of L (_forward_solve)

    def append(self, mu: np.ndarray, a: np.ndarray, offset: int,
               truncation: tuple[float, float] = (0.0, 0.0)) -> None:
        """Border with round ``rounds + 1``; ``mu``, ``a``: the unshifted lags, at least
        ``2 (T + offset) - 1`` and ``T + offset`` of them for the new T; ``truncation``:
        ``(e_K, e_G)`` for the new T when some of them are truncated (module docstring)."""
        t, m = self.rounds, self.m
        N = m * t
        self._grow(N + m, t + 1)
        # block row t of K^: K[t, 0] = mu_t, K[t, s] = K[t-1, s-1] + mu_(t+s) (shifted lags)
        first = t + 2 * offset
        row = np.array(mu[first:first + t + 1].transpose(1, 0, 2).reshape(m, N + m))  # mu_(t+s)
        row[:, m:] += self.K_row
        self.K_row = row
        self.K_row_sums[:N] += row[:, :N].sum(axis=0)
        self.K_row_sums[N:N + m] = row.sum(axis=1)
        l_row = _forward_solve(self.L, N, row[:, :N].T, self._blocks).T
        pivot = row[:, N:] - l_row @ l_row.T
        try:
            diagonal = np.linalg.cholesky(0.5 * (pivot + pivot.T))
        except np.linalg.LinAlgError as exc:
            raise ParameterError(
                f"K_T is not numerically positive definite at round {t + 1}: the incremental "
                "factorisation cannot continue (use sparsedp.squared_sensitivity)") from exc
        self.L[N:N + m, :N] = l_row
        self.L[N:N + m, N:N + m] = diagonal
        self.L_frobenius2 += float((l_row**2).sum() + (diagonal**2).sum())
        # block row t of G: G[t, k] = a_(t-k) (shifted), k = 0..t
        g = a[offset:t + offset + 1][::-1].T.copy()
        if t:
            g[:, :t] -= _lower_product(l_row, self.Y, N, t, m)
        y = scipy.linalg.solve_triangular(diagonal, g, lower=True, check_finite=False)
        self.Y[N:N + m, :t + 1] = y
        self.rows_l1 += float((np.abs(y).sum(axis=1) ** 2).sum())
        self.Y_frobenius2 += float((y**2).sum())
        self.ones += float((y.sum(axis=1) ** 2).sum())
        self.rounds = t + 1
        # Delta_t^2 is non-decreasing in t, so the running maximum is still a bound (and
        # rounds_within may bisect)
        previous = float(self.history[-1]) if self.history.size else 0.0
        self.history = np.append(self.history, max(previous, self.certified_upper(*truncation)))

    def certified_upper(self, e_K: float = 0.0, e_G: float = 0.0) -> float:
        """The certified upper bound on ``Delta_T^2`` at ``T = rounds`` (module docstring),
        ``e_K``, ``e_G`` the truncation's errors; ``T`` when the rounding leaves no room
        (``lambda <= 2 e``)."""
        return float(self.certified_rows_upper(np.array([self.rows_l1]),
                                               np.array([self.Y_frobenius2]), e_K, e_G)[0])

    def certified_rows_upper(self, rows_l1: np.ndarray, Y_frobenius2: np.ndarray,
                             e_K: float = 0.0, e_G: float = 0.0) -> np.ndarray:
        """The certified bound of the module docstring for any right-hand sides G solved
        against this factor (every target of one attacker,
        :mod:`sparsedp.accountant.targets`): from their running sums ``S_T`` (``rows_l1``)
        and ``||Y^||_F^2`` (``Y_frobenius2``), arrays, and the truncation's errors ``e_K``,
        ``e_G``; ``T`` when the rounding leaves no room."""
        T, N = self.rounds, self.m * self.rounds
        g_c = gamma(2 * N + 4)
        sums = 1 + gamma(N * (T + 2) + 4)  # the running sums of non-negative terms
        L_norm2 = self.L_frobenius2 * sums
        dK = gamma(T + 2) * float(self.K_row_sums.max()) * sums
        e = (g_c * L_norm2 + dK + e_K) * (1 + 4 * UNIT_ROUNDOFF)
        lam = self.lambda_lb
        if lam <= 2 * e:
            return np.full(np.shape(rows_l1), float(T))
        f = (lam - e) / (lam - 2 * e)
        delta = g_c * math.sqrt(L_norm2) / math.sqrt(lam - e)
        root = (np.sqrt(rows_l1 * sums) + delta * np.sqrt(T * Y_frobenius2 * sums)
                + e_G / math.sqrt(lam - e)) * (1 + 4 * UNIT_ROUNDOFF)
        return np.minimum(f * root**2 * (1 + 16 * UNIT_ROUNDOFF), float(T))

    def _grow(self, rows: int, columns: int) -> None:
        """Room for ``rows`` rows of L and Y and ``columns`` columns of Y (capacity doubles)."""
        if rows > self.L.shape[0]:
            size = max(rows, 2 * self.L.shape[0])
            L = np.zeros((size, size))
            L[:self.L.shape[0], :self.L.shape[0]] = self.L
            self.L = L
            sums = np.zeros(size)
            sums[:self.K_row_sums.size] = self.K_row_sums
            self.K_row_sums = sums
        if rows > self.Y.shape[0] or columns > self.Y.shape[1]:
            Y = np.zeros((max(rows, 2 * self.Y.shape[0]), max(columns, 2 * self.Y.shape[1])))
            Y[:self.Y.shape[0], :self.Y.shape[1]] = self.Y
            self.Y = Y

    STATE = ("L", "Y", "K_row", "K_row_sums", "history")
    SCALARS = ("rounds", "L_frobenius2", "rows_l1", "Y_frobenius2", "ones")

    def state(self) -> dict:
        """The factorisation as plain arrays and numbers (used part only)."""
        N, T = self.m * self.rounds, self.rounds
        out = {"factor_L": self.L[:N, :N], "factor_Y": self.Y[:N, :T],
               "factor_K_row": self.K_row, "factor_K_row_sums": self.K_row_sums[:N],
               "factor_history": self.history}
        out.update({f"factor_{name}": getattr(self, name) for name in self.SCALARS})
        return out

    def restore(self, state: dict) -> None:
        """Continue from :meth:`state` (bit for bit)."""
        for name in self.STATE:
            setattr(self, name, np.array(state[f"factor_{name}"], dtype=np.float64))
        self.rounds = int(state["factor_rounds"])
        for name in self.SCALARS[1:]:
            setattr(self, name, float(state[f"factor_{name}"]))
