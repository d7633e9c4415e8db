"""``K_T = L L^T`` and ``Y_T = L^{-1} G_T`` extended by blocks of rounds, with a certified
bound on ``Delta_T^2`` after every round.

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

**Blocks** (:meth:`BorderedFactor.extend`).  The rows of b rounds (``B = m b`` rows after the
``N`` rows there) are appended at once, with level-3 BLAS: ``L21 = K21 L11^{-T}`` by a
forward substitution with the B rows as right-hand sides (by panels: a GEMM with the rows
already solved, then a triangular solve of the panel's diagonal block), the Schur complement
``K22 - L21 L21^T`` (one GEMM) and its Cholesky factor ``L22`` (LAPACK ``dpotrf``, itself
partitioned), then ``Y2 = L22^{-1} (G2 - L21 Y1)`` (one product, one triangular solve with
every column).  The answers of round-by-round bordering are unchanged in meaning: an entry of
L or Y depends on the earlier rows only, so the leading rows of every round of a block are by
themselves a computed factorisation of that round's ``K_T`` and a computed solve against its
``G_T``, and that round's bound is formed from its own sums (``||L^||_F^2``, ``S_T``,
``||Y^||_F^2``, the largest row sum of ``K^``, accumulated row by row within the block).

**Certification.**  ``A = L^ L^T`` (the computed factor) satisfies ``K = A - E`` with
``||E||_2 <= e = gamma_c ||L^||_F^2 + dK``, and each column of the computed ``Y^`` solves
``(L^ + D_c) y = g_c`` with ``|D_c| <= gamma_c |L^|``.  Unblocked, these are Higham's
componentwise backward errors of Cholesky (*Accuracy and Stability of Numerical Algorithms*,
2nd ed., Thm 10.3: ``|L^ L^T - K^| <= gamma_(N+1) |L^| |L^T|``) and of substitution (Thm 8.5:
``gamma_N``), both resting on Lemma 8.4, which holds for **any order of evaluation** of the
inner product ``c - sum_k a_k b_k``.  The blocked algorithm computes every entry by the same
formula, ``l_ij = (k_ij - sum_(k<j) l_ik l_jk) / l_jj`` and ``y_i = (g_i - sum_(k<i) l_ik
y_k) / l_ii``: its inner product of at most N terms is split into partial sums (the panels'
GEMMs, the Schur complement's GEMM, dpotrf's and dtrsm's inner blocks) and subtracted in some
order, which Lemma 8.4 covers, and the division may be a multiplication by the pivot's
reciprocal (dtrsm kernels), one rounding more: ``gamma_(N+2)`` for both.  This is the
argument of Higham's ch. 13 for partitioned factorisations (Section 13.2, partitioned LU:
with conventional matrix multiplication and diagonal blocks solved by substitution, the
partitioned algorithm has the unpartitioned bound; a triangular solve with several
right-hand sides is, column by column, a substitution whose inner products are split); it
assumes conventional (not Strassen-like) multiplication and no explicitly inverted diagonal
block, as reference LAPACK, OpenBLAS and MKL's ``dpotrf`` / ``dtrsm`` / ``dgemm`` do (an FMA only
removes roundings).  The constant used is generous: ``gamma_c``, ``c = 4 N + 8``
(``CHOLESKY_GAMMA``, ``CHOLESKY_GAMMA_OFFSET``), ``N = m T``, twice the ``gamma_(2 N + 4)`` of
the earlier round-by-round version and four times the ``gamma_(N+2)`` of the argument, at no
measurable cost.  ``dK = gamma_(T+2) ||K^||_inf`` is the rounding of the sums forming ``K^``
(as the engine's structured path).  With ``lambda_min(K) >= lambda`` (the analytic bound),
``lambda_min(A) >= lambda - e`` and ``K >= (1 - e / (lambda - e)) A``, so ``M <= f G^T A^{-1} G``,
``f = (lambda - e) / (lambda - 2 e)`` (needs ``lambda > 2 e``).  Each column of ``Y^`` is
within ``delta ||y_c||``, ``delta = gamma_c ||L^||_F / sqrt(lambda - e)``, of
``L^^{-1} g_c``; hence

    Delta_T^2 <= f (sqrt(S_T) + delta sqrt(T) ||Y^||_F)^2,

with the rounding of the running sums charged.  ``T`` (``M_T <= I``) caps it.

**Truncated lags** (:mod:`sparsedp.accountant.lags`, a mixed chain): ``K^`` and ``G^`` are
then formed from lags within known errors of the exact ones, with ``||K - K^||_2 <= e_K`` and
``|| |G - G^| 1 ||_2 <= e_G``.  ``e_K`` joins ``dK`` in ``e`` (the argument above holds for
any ``||K - A|| <= e``), and since ``|(G - G^) c| <= |G - G^| 1`` entrywise for every sign
vector c, ``||A^{-1/2} (G - G^) c|| <= e_G / sqrt(lambda - e)`` is added to the root.

**Rows without lags** (:meth:`BorderedFactor.extend_rows`: time-varying or non-symmetric W,
:mod:`sparsedp.accountant.operator_rows`): the block rows of ``K^`` and ``G^`` are given, each
entry within a relative ``r`` of the exact non-negative one, so ``e_K = r / (1 - r)
||K^||_inf`` and the caller's ``e_G`` enter as for truncated lags; the argument is otherwise
unchanged (it never used the lag structure, only that ``K_T``, ``G_T`` are leading blocks).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.linalg
import scipy.linalg.lapack

from sparsedp.errors import ParameterError
from sparsedp.linalg.certified import UNIT_ROUNDOFF, gamma

PANEL = 256  # rows per panel of the forward substitution (_forward_solve)
# gamma_c of the factorisation's backward error, c = CHOLESKY_GAMMA N + CHOLESKY_GAMMA_OFFSET
# (module docstring, "Certification")
CHOLESKY_GAMMA, CHOLESKY_GAMMA_OFFSET = 4, 8
BLOCK_ROUNDS = 64  # the most rounds bordered in one block (temporaries ~ its share of Y)


def _gammas(k: np.ndarray) -> np.ndarray:
    """:func:`sparsedp.linalg.certified.gamma` of each k."""
    return np.array([gamma(int(c)) for c in np.ravel(k)]).reshape(np.shape(k))


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


class RoundStats(NamedTuple):
    """What the certified bound of each round of one extension reads from the factor (the
    rounds ``T``, ``||L^||_F^2`` and the largest row sum of ``K^`` after each)."""

    rounds: np.ndarray
    L_frobenius2: np.ndarray
    K_max: np.ndarray


def block_rows_of_Y(block: np.ndarray, N: int, m: int, Y: np.ndarray,
                    G_new: np.ndarray) -> np.ndarray:
    """The new block rows ``L22^{-1} (G_new - L21 Y_old)`` of ``Y = L^{-1} G``: ``block`` is
    ``[L21 L22]`` (the factor's new rows, B x (N + B)), ``Y`` the old rows (``Y[..., :N, :]``,
    leading batch axes allowed: every tight target of
    :class:`sparsedp.accountant.targets.TightRows`), ``G_new`` (..., B, C) the new block rows
    of G (C columns, the old rows of Y zero beyond their first ``N / m``).  One product with
    the non-zero part of the old rows and one triangular solve with every right-hand side."""
    B, columns, old = block.shape[0], G_new.shape[-1], N // m
    rest = np.array(G_new, dtype=np.float64)
    if N:
        rest[..., :old] -= _lower_product(block[:, :N], Y, N, old, m)
    batch = rest.shape[:-2]
    flat = np.moveaxis(rest, -2, 0).reshape(B, -1)
    solved = scipy.linalg.solve_triangular(block[:, N:N + B], flat, lower=True,
                                           check_finite=False)
    return np.moveaxis(solved.reshape((B,) + batch + (columns,)), 0, -2)


def per_round(values: np.ndarray, m: int) -> np.ndarray:
    """Row values (..., B) summed per round of m rows: (..., B / m)."""
    return values.reshape(values.shape[:-1] + (-1, m)).sum(axis=-1)


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
        """Border with round ``rounds + 1`` (:meth:`extend` by one round)."""
        self.extend(mu, a, offset, 1, [truncation])

    def extend(self, mu: np.ndarray, a: np.ndarray | None, offset: int, rounds: int,
               truncations=None) -> RoundStats:
        """Border with rounds ``self.rounds + 1 .. self.rounds + rounds`` at once (module
        docstring, blocked): ``mu``, ``a`` the unshifted lags, at least ``2 (T + offset) -
        1`` and ``T + offset`` of them for the last new T (``a=None``: no Y, the factor
        only, for :class:`sparsedp.accountant.targets.TightRows`); ``truncations``: per new
        round ``(e_K, e_G)`` when some lags are truncated (module docstring).  The running
        bound of every new round goes into :attr:`history`; returns what each round's bound
        read (:class:`RoundStats`)."""
        t0, m = self.rounds, self.m
        self._grow(m * (t0 + rounds), t0 + rounds, with_Y=a is not None)
        K_new, K_max = self._block_rows_of_K(mu, offset, rounds)
        G_new = None
        if a is not None:  # block row t of G: G[t, k] = a_(t-k) (shifted), k = 0..t
            G_new = np.zeros((m * rounds, t0 + rounds))
            for i, t in enumerate(range(t0, t0 + rounds)):
                G_new[i * m:(i + 1) * m, :t + 1] = a[offset:t + offset + 1][::-1].T
        return self._border(K_new, K_max, G_new, truncations)

    def extend_rows(self, K_rows: list[np.ndarray], G_rows: list[np.ndarray],
                    entry_rounding: float, G_errors: np.ndarray) -> RoundStats:
        """Border with one round per entry of ``K_rows`` (round t: its block row ``K[t, :t+1]``,
        m x m (t + 1)) and ``G_rows`` (its row ``G[t, :t+1]``, m x (t + 1)), formed by any
        recursion whose every entry is within ``entry_rounding`` (relative) of the exact
        one, ``K, G >= 0`` (:mod:`sparsedp.accountant.operator_rows`: time-varying or
        non-symmetric W).  That rounding is charged as ``e_K = r / (1 - r) ||K^||_inf``
        (``||K - K^||_2 <= ||K - K^||_inf``, the largest row sum of ``K^`` after each round);
        ``G_errors`` (one per round) bounds ``|| |G - G^| 1 ||_2``, the caller's charge for G
        (module docstring, "Truncated lags").  Returns what each round's bound read."""
        t0, m, rounds = self.rounds, self.m, len(K_rows)
        self._grow(m * (t0 + rounds), t0 + rounds)
        K_new = np.zeros((m * rounds, m * (t0 + rounds)))
        G_new = np.zeros((m * rounds, t0 + rounds))
        for i, (K_row, G_row) in enumerate(zip(K_rows, G_rows, strict=True)):
            K_new[i * m:(i + 1) * m, :K_row.shape[1]] = K_row
            G_new[i * m:(i + 1) * m, :G_row.shape[1]] = G_row
        K_max = self._account_rows_of_K(K_new)
        relative = entry_rounding / (1.0 - entry_rounding)
        N = m * (t0 + np.arange(1, rounds + 1))
        e_K = relative * K_max * (1 + _gammas(N + 2))
        return self._border(K_new, K_max, G_new,
                            np.column_stack([e_K, np.asarray(G_errors, dtype=np.float64)]))

    def _border(self, K_new: np.ndarray, K_max: np.ndarray, G_new: np.ndarray | None,
                truncations) -> RoundStats:
        """Border with the new block rows ``K_new`` of ``K^`` (K_max: the largest row sum of
        ``K^`` after each new round) and ``G_new`` of ``G^`` (``None``: the factor only)."""
        t0, m = self.rounds, self.m
        rounds = K_new.shape[0] // m
        N = m * t0
        block = self._block_rows_of_L(K_new)
        L_frobenius2 = self.L_frobenius2 + np.cumsum(per_round((block**2).sum(axis=1), m))
        self.L_frobenius2 = float(L_frobenius2[-1])
        stats = RoundStats(np.arange(t0 + 1, t0 + rounds + 1), L_frobenius2, K_max)
        self.rounds = t0 + rounds
        if G_new is None:
            return stats
        y = block_rows_of_Y(block, N, m, self.Y, G_new)
        self.Y[N:N + m * rounds, :t0 + rounds] = y
        rows_l1 = self.rows_l1 + np.cumsum(per_round(np.abs(y).sum(axis=1) ** 2, m))
        Y_frobenius2 = self.Y_frobenius2 + np.cumsum(per_round((y**2).sum(axis=1), m))
        self.rows_l1, self.Y_frobenius2 = float(rows_l1[-1]), float(Y_frobenius2[-1])
        self.ones += float((y.sum(axis=1) ** 2).sum())
        errors = np.zeros((rounds, 2)) if truncations is None else np.asarray(truncations)
        bounds = self.certified_rows_upper(rows_l1, Y_frobenius2, errors[:, 0], errors[:, 1],
                                           stats)
        # Delta_t^2 is non-decreasing in t, so the running maximum is still a bound (and
        # rounds_within may bisect)
        previous = float(self.history[-1]) if self.history.size else 0.0
        self.history = np.append(self.history, np.maximum.accumulate(
            np.maximum(bounds, previous)))
        return stats

    def _block_rows_of_K(self, mu: np.ndarray, offset: int,
                         rounds: int) -> tuple[np.ndarray, np.ndarray]:
        """The new block rows of ``K^`` (B x (N + B), zero right of each round's own block)
        by the lag recursion, the row sums of ``K^`` brought up to date, and their largest
        after each new round."""
        t0, m = self.rounds, self.m
        K_new = np.zeros((m * rounds, m * (t0 + rounds)))
        for i, t in enumerate(range(t0, t0 + rounds)):
            N = m * t
            # block row t of K^: K[t, 0] = mu_t, K[t, s] = K[t-1, s-1] + mu_(t+s) (shifted)
            first = t + 2 * offset
            row = np.array(mu[first:first + t + 1].transpose(1, 0, 2).reshape(m, N + m))
            row[:, m:] += self.K_row
            self.K_row = row
            K_new[i * m:(i + 1) * m, :N + m] = row
        return K_new, self._account_rows_of_K(K_new)

    def _account_rows_of_K(self, K_new: np.ndarray) -> np.ndarray:
        """The row sums of ``K^`` (symmetric) brought up to date with the new block rows
        ``K_new`` (zero right of each round's own block), and their largest after each new
        round."""
        t0, m = self.rounds, self.m
        rounds = K_new.shape[0] // m
        K_max = np.zeros(rounds)
        for i, t in enumerate(range(t0, t0 + rounds)):
            N = m * t
            row = K_new[i * m:(i + 1) * m, :N + m]
            self.K_row_sums[:N] += row[:, :N].sum(axis=0)
            self.K_row_sums[N:N + m] = row.sum(axis=1)
            K_max[i] = self.K_row_sums[:N + m].max()
        return K_max

    def _block_rows_of_L(self, K_new: np.ndarray) -> np.ndarray:
        """The factor's new rows ``[L21 L22]`` (written into :attr:`L` and returned):
        ``L21 = K21 L11^{-T}`` by panels with every new row as a right-hand side, then the
        Cholesky factor of ``K22 - L21 L21^T`` (its lower triangle)."""
        B, N = K_new.shape[0], K_new.shape[1] - K_new.shape[0]
        L21 = _forward_solve(self.L, N, K_new[:, :N].T, self._blocks).T
        pivot = K_new[:, N:] - L21 @ L21.T
        L22, info = scipy.linalg.lapack.dpotrf(pivot, lower=1, clean=1, overwrite_a=1)
        if info:
            failed = self.rounds + (info - 1) // self.m + 1 if info > 0 else self.rounds + 1
            raise ParameterError(
                f"K_T is not numerically positive definite at round {failed}: the incremental "
                "factorisation cannot continue (use sparsedp.squared_sensitivity)")
        self.L[N:N + B, :N] = L21
        self.L[N:N + B, N:N + B] = L22
        return self.L[N:N + B, :N + B]

    def certified_upper(self, e_K: float = 0.0, e_G: float = 0.0) -> float:
        """The certified upper bound on ``Delta_T^2`` at ``T = rounds`` (module docstring),
        ``e_K``, ``e_G`` the truncation's errors; ``T`` when the rounding leaves no room
        (``lambda <= 2 e``)."""
        return float(self.certified_rows_upper(np.array([self.rows_l1]),
                                               np.array([self.Y_frobenius2]), e_K, e_G)[0])

    def certified_rows_upper(self, rows_l1: np.ndarray, Y_frobenius2: np.ndarray,
                             e_K=0.0, e_G=0.0, stats: RoundStats | None = None) -> np.ndarray:
        """The certified bound of the module docstring for any right-hand sides G solved
        against this factor (every target of one attacker,
        :mod:`sparsedp.accountant.targets`): from their running sums ``S_T`` (``rows_l1``)
        and ``||Y^||_F^2`` (``Y_frobenius2``), arrays, and the truncation's errors ``e_K``,
        ``e_G``; ``T`` when the rounding leaves no room.  At ``T = rounds`` by default; with
        ``stats`` (:meth:`extend`'s), at each of its rounds: the arrays then have one row per
        round (leading axis), the errors one value per round."""
        if stats is None:
            stats = RoundStats(np.array([self.rounds]), np.array([self.L_frobenius2]),
                               np.array([float(self.K_row_sums.max(initial=0.0))]))
            rows_l1, Y_frobenius2 = np.asarray(rows_l1)[None], np.asarray(Y_frobenius2)[None]
            return self._certified(stats, rows_l1, Y_frobenius2, e_K, e_G)[0]
        return self._certified(stats, np.asarray(rows_l1), np.asarray(Y_frobenius2), e_K, e_G)

    def _certified(self, stats: RoundStats, rows_l1: np.ndarray, Y_frobenius2: np.ndarray,
                   e_K, e_G) -> np.ndarray:
        """The bound at each round of ``stats``; rows_l1, Y_frobenius2 (rounds, ...)."""
        T = stats.rounds.astype(np.float64)
        N = self.m * stats.rounds
        g_c = _gammas(CHOLESKY_GAMMA * N + CHOLESKY_GAMMA_OFFSET)
        sums = 1 + _gammas(N * (stats.rounds + 2) + 4)  # the running sums of non-negative terms
        L_norm2 = stats.L_frobenius2 * sums
        dK = _gammas(stats.rounds + 2) * stats.K_max * sums
        e = (g_c * L_norm2 + dK + np.asarray(e_K)) * (1 + 4 * UNIT_ROUNDOFF)
        lam = self.lambda_lb
        room = lam > 2 * e
        e = np.where(room, e, 0.0)  # no division by zero where the bound is T anyway
        f = (lam - e) / (lam - 2 * e)
        delta = g_c * np.sqrt(L_norm2) / np.sqrt(lam - e)
        shape = (-1,) + (1,) * (rows_l1.ndim - 1)
        root = (np.sqrt(rows_l1 * sums.reshape(shape))
                + (delta * np.sqrt(T * sums)).reshape(shape) * np.sqrt(Y_frobenius2)
                + (np.asarray(e_G) / np.sqrt(lam - e)).reshape(shape)) * (1 + 4 * UNIT_ROUNDOFF)
        bound = f.reshape(shape) * root**2 * (1 + 16 * UNIT_ROUNDOFF)
        return np.where(room.reshape(shape), np.minimum(bound, T.reshape(shape)),
                        T.reshape(shape))

    def _grow(self, rows: int, columns: int, with_Y: bool = True) -> None:
        """Room for ``rows`` rows of L and (``with_Y``) Y and ``columns`` columns of Y
        (capacity doubles)."""
        if rows > self.L.shape[0]:
            size = max(rows, 2 * self.L.shape[0])
            L = np.zeros((size, size))
            L[:self.L.shape[0], :self.L.shape[0]] = self.L
            self.L = L
            sums = np.zeros(size)
            sums[:self.K_row_sums.size] = self.K_row_sums
            self.K_row_sums = sums
        if with_Y and (rows > self.Y.shape[0] or columns > self.Y.shape[1]):
            Y = np.zeros((max(rows, 2 * self.Y.shape[0]), max(columns, 2 * self.Y.shape[1])))
            Y[:self.Y.shape[0], :self.Y.shape[1]] = self.Y
            self.Y = Y

    def snapshot(self) -> dict:
        """What :meth:`rewind` needs to forget the rounds bordered after this call (the
        running sums and the row sums of ``K^``; the rows of L and Y beyond are overwritten
        when rounds are bordered again)."""
        N = self.m * self.rounds
        return {"rounds": self.rounds, "K_row": self.K_row.copy(),
                "K_row_sums": self.K_row_sums[:N].copy(), "history": self.history,
                "lambda_lb": self.lambda_lb,
                **{name: getattr(self, name) for name in self.SCALARS[1:]}}

    def rewind(self, snapshot: dict) -> None:
        """Back to the rounds of :meth:`snapshot` (rounds computed ahead with matrices that
        were only planned, :meth:`sparsedp.Accountant.rounds_within`)."""
        for name, value in snapshot.items():
            if name != "K_row_sums":
                setattr(self, name, value)
        N = self.m * self.rounds
        self.K_row_sums[:N] = snapshot["K_row_sums"]
        self.K_row_sums[N:] = 0.0
        self._blocks = {start: block for start, block in self._blocks.items()
                        if start + block.shape[0] <= N}

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
