"""What the accountants of tracked sets share: the running box bound of many pairs at once
and the per-node answer of a lazy interval (issue 34).

**The running box bound.**  For one pair (target j, observed rows S, the view's lags shifted
by its power offset p) and any sign vector c, the lags ``a_l = S W^l e_j`` are non-negative
(W is), so ``|G_T c| <= G_T 1 = b`` entrywise, ``b_t = sum_(l <= t) a_(l+p)``, and

    c^T M_T c = (G_T c)^T K_T^{-1} (G_T c) <= ||b||^2 / lambda_min(K_T) <= ||b||^2 / lambda,

with ``lambda`` the analytic bound of the view (valid for every T).  ``||b||^2`` is a
running sum: round T adds one lag row per pair (an n x m block ``V_l = W^l S^T`` gives every
target's at once, the vector ``W^l e_j`` every single observer's), so every pair's bound
after every round costs ``O(m)`` a pair.  It is certified as the map's box bound
(:func:`sparsedp.gossip.batched_box.certified_box`: the lags' rounding ``gamma((T + p - 1)
(d + 1))`` relative, d the longest row of W, and the sums' rounding), capped at T
(``M_T <= I``), and non-decreasing in T.  It is loose: the c = 1 value divided by
``lambda_min(K_T)`` (itself 1.5 to 5 times the c = 1 value on the map's benchmark graph),
with the analytic ``lambda`` in place of ``lambda_min(K_T)``; the lazy ``interval()`` gives
the tight bounds of the pairs asked.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from sparsedp.errors import ParameterError
from sparsedp.gossip.batched_box import certified_box
from sparsedp.gossip.inputs import gossip_sequence
from sparsedp.gossip.sensitivity import SensitivityResult
from sparsedp.gossip.views import VIEWS, VIEWS_WITHOUT_OBSERVERS
from sparsedp.linalg.certified import UNIT_ROUNDOFF, gamma
from sparsedp.linalg.stochastic import matrix_facts
from sparsedp.privacy import gaussian_epsilon
from sparsedp.reprs import short_repr

ATTACKER_VIEWS = ("secure-summation", "neighbourhood", "secure-summation-v1")  # the views of
# an attacker set whose observed rows do not depend on the target


def attacker_view(view: str, accountant: str) -> str:
    """``view`` when it is one of :data:`ATTACKER_VIEWS` (the tracked sets' views: an attacker
    node or set, observed rows that do not depend on the target); otherwise a ParameterError
    naming the view and why ``accountant`` does not track it."""
    if view in ATTACKER_VIEWS:
        return view
    if view == "local-dp":
        raise ParameterError(f"{accountant}: view 'local-dp' needs no accountant: the attacker "
                             "sees every message and Delta_T^2 = T exactly for every pair")
    if view in VIEWS_WITHOUT_OBSERVERS:
        raise ParameterError(
            f"{accountant}: view {view!r} has no attacker to track: its observed rows are "
            f"fixed by the target (sparsedp.gossip.views), not by an attacker node; track "
            f"each target with sparsedp.Accountant(W, target, None, view={view!r})")
    raise ParameterError(f"unknown view {view!r}; choose one of {VIEWS}")


class RunningBox:
    """Running box bounds of ``k`` pairs whose lag rows arrive one round at a time (module
    docstring).

    Parameters
    ----------
    pairs : int
        Number of pairs k.
    rows : int
        Observed rows m of each pair.
    lambda_lb : float
        Certified lower bound on ``lambda_min(K_T)`` for every T.
    depth : int
        ``d + 1``, d the longest row of W: a lag after l products is within
        ``gamma(l (d + 1))`` of the exact one, relative.
    offset : int
        The view's power offset p (round t reads the lags after ``t - 1 + p`` products).
    """

    def __init__(self, pairs: int, rows: int, lambda_lb: float, depth: int, offset: int):
        self.rows, self.depth, self.offset = int(rows), int(depth), int(offset)
        self.radius = 1.0 / float(lambda_lb) * (1 + 4 * UNIT_ROUNDOFF)  # >= 1 / lambda
        self.rounds = 0
        self.partial = np.zeros((pairs, self.rows))  # fl(b_t) per pair and observed row
        self.squares: list[np.ndarray] = []  # fl(||b||^2) after each round, summed in order

    def add(self, lag_rows: np.ndarray) -> None:
        """Round ``rounds + 1``: each pair's lag row (k x m), read after ``rounds + p``
        products."""
        self.partial += lag_rows
        squares = np.einsum("km,km->k", self.partial, self.partial)
        if self.squares:
            squares += self.squares[-1]
        self.squares.append(squares)
        self.rounds += 1

    def bound(self, T: int | None = None, groups: sp.csr_matrix | None = None) -> np.ndarray:
        """The certified upper bound on every pair's ``Delta_T^2`` at T (default
        :attr:`rounds`; any T computed, as the sums of every round are kept).  ``groups``: a
        0/1 matrix whose row i sums the pairs whose observed rows pair i observes together
        (the neighbourhood view of every attacker node from one observed row per node:
        ``||b||^2`` is a sum over the observed rows); its bounds instead, one per row."""
        T = self.rounds if T is None else T
        lag_error = gamma(max((T - 1 + self.offset) * self.depth, 1))
        squares, terms = self.squares[T - 1], T * self.rows
        if groups is not None:  # every sum of squares is one of more terms
            squares, terms = groups @ squares, terms * int(np.diff(groups.indptr).max())
        return certified_box(squares, T, lag_error, self.radius, terms=terms)

    def state(self) -> dict:
        """The running sums as plain arrays and numbers."""
        squares = np.array(self.squares).reshape(-1, self.partial.shape[0])
        return {"box_partial": self.partial, "box_squares": squares, "box_rounds": self.rounds}

    def restore(self, state: dict) -> None:
        """Continue from :meth:`state` (bit for bit)."""
        self.partial = np.array(state["box_partial"], dtype=np.float64)
        self.squares = list(np.array(state["box_squares"], dtype=np.float64))
        self.rounds = int(state["box_rounds"])


@dataclass(frozen=True)
class SetInterval:
    """The tight bounds of some pairs of a tracked set at one round.

    Attributes
    ----------
    nodes : numpy.ndarray
        The targets (or observers) asked, as rows of W.
    lower, upper : numpy.ndarray
        Per node: a certified lower bound and a certified upper bound on ``Delta_T^2``
        (the pair's :class:`sparsedp.gossip.sensitivity.SensitivityResult` bounds; the upper
        also at most the running box bound).
    results : tuple of SensitivityResult
        Per node, every bound with its kind, as :func:`sparsedp.squared_sensitivity` gives
        them.
    T : int
        The round.
    """

    nodes: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    results: tuple[SensitivityResult, ...]
    T: int

    __repr__ = short_repr

    @property
    def worst_lower(self) -> float:
        """A certified lower bound on the worst ``Delta_T^2`` over the nodes asked."""
        return float(self.lower.max()) if self.lower.size else 0.0

    @property
    def worst_upper(self) -> float:
        """A certified upper bound on the worst ``Delta_T^2`` over the nodes asked."""
        return float(self.upper.max()) if self.upper.size else 0.0


def checked_symmetric(W) -> tuple[sp.csr_matrix, tuple]:
    """One constant, exactly symmetric, checked gossip matrix and its precision notes
    (``ParameterError`` otherwise), as the pair accountant requires."""
    Ws, notes = gossip_sequence(W, 1)
    if len(Ws) != 1:
        raise ParameterError("the accountant needs one constant gossip matrix W")
    if not matrix_facts(Ws[0]).symmetric:
        raise ParameterError("the accountant needs an exactly symmetric W (the structured "
                             "form of K_T); use sparsedp.squared_sensitivity per round")
    return Ws[0], tuple(notes)


def lag_depth(W: sp.csr_matrix) -> int:
    """``d + 1``, d the longest row of W (the lags' rounding model, :class:`RunningBox`)."""
    return int(np.diff(W.indptr).max()) + 1


def epsilons_of(uppers: np.ndarray, sigma: float, delta: float) -> np.ndarray:
    """``gaussian_epsilon`` of each squared sensitivity (NaN kept), each distinct value
    converted once."""
    out = np.full(uppers.shape, np.nan)
    known = ~np.isnan(uppers)
    values, inverse = np.unique(uppers[known], return_inverse=True)
    out[known] = np.array([gaussian_epsilon(float(v), sigma, delta) for v in values])[inverse]
    return out


def budget_rounds(worst, compute_to, sigma: float, epsilon: float, delta: float,
                  limit: int) -> int:
    """The largest T <= ``limit`` whose worst running bound (``worst()``: one per round
    computed, non-decreasing) keeps epsilon within the budget, computing rounds ahead with
    ``compute_to(T)`` while it does; the first round over budget is bisected."""

    def within(t: int) -> bool:
        return gaussian_epsilon(float(worst()[t - 1]), sigma, delta) <= epsilon

    while worst().size < limit and (worst().size == 0 or within(worst().size)):
        compute_to(worst().size + 1)
    horizon = min(worst().size, limit)
    return bisect.bisect_left(range(1, horizon + 1), True, key=lambda t: not within(t))
