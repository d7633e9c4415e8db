"""Every node's worst case over single observers, tracked round by round (issue 34, "the
worst case over the whole graph").

Setting: the secure-summation single-observer view of gossip averaging (as
:mod:`sparsedp.maps.worst_case`): for target j and observer a != j,
``Delta_T^2(j -> a) = max_c c^T G^T K_a^{-1} G c`` with ``G[t, k] = r_(t-k)[j]``,
``r_l = e_a^T W^l`` (:mod:`sparsedp.gossip.batched`).  The accountant answers, per node j,
a certified upper bound on ``worst_T(j) = max_(a != j) Delta_T^2(j -> a)`` after every round,
and the worst over the graph.

**The running bound** (every round, ``O(n)``).  The box bound of
:mod:`sparsedp.gossip.batched_box`, ``Delta^2(j -> a) <= ||b||^2 / lambda_min(K_a)`` with
``b[t] = sum_(l <= t) (W^l)_(aj)`` (W >= 0), is taken over every observer at once: with
``h_j(l) >= max_(a != j) (W^l)_(aj)`` (``h_j(0) = 0``),

    worst_T(j) <= (1 / lambda) sum_(t < T) H_j(t)^2,     H_j(t) = sum_(l <= t) h_j(l),

``lambda = 1 / (1 + ||W||_2)^2`` the analytic ``lambda_min(K_a)`` bound, the same for every
observer (:func:`sparsedp.linalg.certified.gossip_lambda_min_lower_bound`), capped at T
(``M <= I``).  ``h_j(l)`` is the largest off-diagonal entry of column j of ``W^l``, computed
for ``l <= D_j`` once, at construction (columns propagated by blocks, ``W^l e_j = W W^(l-1)
e_j``, until ``n ||W^l e_j||_inf <= 1 + mixing_tolerance`` or ``max_depth``); beyond that,
``||W x||_inf <= (1 + rho) ||x||_inf`` (W >= 0 with row sums within ``rho`` of 1) gives
``h_j(l) <= ||W^(D_j) e_j||_inf (1 + rho)^(l - D_j)`` for every later lag.  So a round costs
two length-n updates, whatever T.

Certification: the computed columns are within ``gamma(l (d + 1))`` relative of the exact
ones (non-negative products, d the longest row: the batched engine's rounding model), so each
``h`` is divided by ``1 - gamma(l (d + 1))``; the running sums of non-negative terms are
charged ``1 / (1 - gamma_(T+1))^3`` as in :func:`sparsedp.gossip.batched_box.box_upper`.

The bound is loose: the box bound is 1.5 to 5 times the c = 1 value at T = 100 on the map
benchmark graph, and far from the mixing time its ``t / n`` drift grows like
``T^3 / (3 n^2 lambda)``, so on a 10^4-node graph it exceeds the truth by orders of
magnitude once T reaches a few hundred.  **The tight answer** (:meth:`GraphAccountant.
worst_case`) is computed lazily, on request: the engine's per-target worst case at the
current T (:func:`sparsedp.maps.worst_case.per_target_worst_case`, certified lower and upper
bounds per node); its upper bounds then replace the running ones until the next step.

What each answer costs (n nodes, nnz(W) non-zeros, T rounds, D the depth reached):

==========================  ===============================================================
construction                ``D`` sparse products with every column, ``O(D nnz(W) n)``
                            flops, in blocks of ``BLOCK_COLUMNS`` columns (``O(n D)`` memory)
``step(k)``                 ``O(k n)``
``upper``, ``epsilon``,     ``O(n)`` (``epsilon``: one Gaussian epsilon per distinct value
``worst``, ``rdp``          asked)
``worst_case()``            lazy: one :func:`sparsedp.per_target_worst_case` at T (every
                            observer against every target; cached until the next step)
``rounds_within``           ``O(n)`` per round, computed ahead
``state_dict``,             ``O(n D)``: plain arrays (the column maxima included, so that a
``from_state``              restored accountant propagates nothing)
==========================  ===============================================================
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from sparsedp import defaults, validation
from sparsedp.accountant.gossip import ROUNDS_WITHIN_LIMIT
from sparsedp.accountant.state import gradients_from_state, matrix_from_state, matrix_state
from sparsedp.errors import ParameterError
from sparsedp.gossip.inputs import _resolve_exact, gossip_sequence
from sparsedp.linalg.certified import (
    UNIT_ROUNDOFF,
    gamma,
    gossip_lambda_min_lower_bound,
    row_sum_deviation,
    stochastic_growth,
)
from sparsedp.linalg.stochastic import matrix_facts
from sparsedp.linalg.threads import limit_blas_threads
from sparsedp.maps.worst_case import WorstCase, per_target_worst_case
from sparsedp.privacy import gaussian_epsilon
from sparsedp.privacy.interop import gaussian_dp_event
from sparsedp.reprs import short_repr

BLOCK_COLUMNS = 512  # columns of W^l propagated together at construction
MIXING_TOLERANCE = 1.0  # stop a block once n ||W^l e_j||_inf <= 1 + this for its columns
MAX_DEPTH = 24  # the most products per block (the tail bound covers the later lags)


def column_maxima(W: sp.csr_matrix, tolerance: float = MIXING_TOLERANCE,
                  max_depth: int = MAX_DEPTH) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per node j: ``h[j, l]``, the largest off-diagonal entry of column j of the computed
    ``W^l`` (``l = 0 .. D_j``, 0 beyond ``D_j``), ``depth[j] = D_j`` and ``tail[j] =
    ||fl(W^(D_j) e_j)||_inf`` (module docstring)."""
    n = W.shape[0]
    depth, tail = np.zeros(n, dtype=np.int64), np.zeros(n)
    maxima = []
    for start in range(0, n, BLOCK_COLUMNS):
        columns = np.arange(start, min(n, start + BLOCK_COLUMNS))
        X = np.zeros((n, columns.size))
        X[columns, np.arange(columns.size)] = 1.0
        block = [np.zeros(columns.size)]
        largest = np.ones(columns.size)
        while len(block) <= max_depth and not (n * largest.max() <= 1 + tolerance):
            X = np.asarray(W @ X)
            diagonal = X[columns, np.arange(columns.size)].copy()
            X[columns, np.arange(columns.size)] = 0.0  # entries are >= 0: 0 hides the diagonal
            off = X.max(axis=0)
            X[columns, np.arange(columns.size)] = diagonal
            block.append(off)
            largest = np.maximum(off, diagonal)
        depth[columns] = len(block) - 1
        tail[columns] = largest
        maxima.append(np.array(block).T)
    width = max(block.shape[1] for block in maxima)
    h = np.zeros((n, width))
    for start, block in zip(range(0, n, BLOCK_COLUMNS), maxima, strict=True):
        h[start:start + block.shape[0], :block.shape[1]] = block
    return h, depth, tail


class GraphAccountant:
    """Every node's worst case over single observers, tracked round by round.

    Parameters
    ----------
    W : square sparse matrix or array
        The gossip matrix: non-negative and row-stochastic (e.g. :func:`sparsedp.gossip_matrix`).
    sigma : float
        Noise standard deviation per round, in units of the per-round sensitivity.
    gradients : ``"scalar"`` or ``"vector"``
        The per-round contribution, as :func:`sparsedp.squared_sensitivity`'s ``gradients``:
        the running bound (a box bound) holds for both; :meth:`worst_case` runs the
        exhaustive sign search (small T) for scalar contributions only, so that its upper
        bounds (box, entrywise, diagonal shift) hold for vectors clipped in norm too.
    mixing_tolerance : float
        Construction: a column of ``W^l`` counts as mixed once ``n ||W^l e_j||_inf <= 1 +
        mixing_tolerance`` (module docstring; smaller: a tighter tail, more products).
    max_depth : int
        Construction: the most products per block of columns.

    Raises
    ------
    ParameterError
        bad input, or a time-varying W.

    Examples
    --------
    >>> import networkx as nx, sparsedp
    >>> W = sparsedp.gossip_matrix(nx.cycle_graph(8), scheme="metropolis")
    >>> acc = sparsedp.GraphAccountant(W, sigma=5.0)
    >>> acc.step(6)
    >>> tight = sparsedp.per_target_worst_case(W, T=6)
    >>> bool((acc.upper >= tight.columns["lower"]).all())
    True
    >>> lower, upper = acc.worst_case()
    >>> bool((lower <= upper).all() and (acc.upper <= acc.running_upper).all())
    True
    >>> acc.worst_node() in range(8)
    True
    """

    __repr__ = short_repr

    def __init__(self, W, *, sigma: float, gradients: str = defaults.GOSSIP_GRADIENTS,
                 mixing_tolerance: float = MIXING_TOLERANCE, max_depth: int = MAX_DEPTH):
        self._setup(W, sigma, gradients, mixing_tolerance, max_depth, None)

    def _setup(self, W, sigma: float, gradients: str, mixing_tolerance: float, max_depth: int,
               maxima: tuple[np.ndarray, np.ndarray, np.ndarray] | None) -> None:
        """Check the input and start at T = 0; ``maxima``: :func:`column_maxima`'s arrays
        when already known (a checkpoint)."""
        Ws, self.precision_notes = gossip_sequence(W, 1)
        if len(Ws) != 1:
            raise ParameterError("the graph accountant needs one constant gossip matrix W")
        self.W = W = Ws[0]
        self.sigma = validation.sigma(sigma)
        _resolve_exact("auto", 1, gradients)  # checks the value
        self.gradients = gradients
        self.mixing_tolerance = validation.nonnegative("mixing_tolerance", mixing_tolerance)
        self.max_depth = validation.rounds(max_depth)
        self.n = n = W.shape[0]
        self.lambda_lb = gossip_lambda_min_lower_bound(W)
        self.h, self.depth, self.tail = (column_maxima(W, self.mixing_tolerance, self.max_depth)
                                         if maxima is None else maxima)
        self.longest_row = matrix_facts(W).longest_row
        self.rho = row_sum_deviation(W)
        self.rounds = 0
        self._partial = np.zeros(n)  # fl(H_j(t)) at t = rounds - 1
        self._squares = np.zeros(n)  # fl(sum_(t < rounds) H_j(t)^2)
        self._worst_case: tuple[np.ndarray, np.ndarray] | None = None

    # -- recording rounds ------------------------------------------------------------------

    def step(self, k: int = 1) -> None:
        """Record ``k`` more rounds (``k >= 1``): ``O(k n)``."""
        k = validation.rounds(k)
        for _ in range(k):
            self._partial, self._squares = self._advance(self.rounds, self._partial,
                                                         self._squares)
            self.rounds += 1
        self._worst_case = None

    def _lag_bound(self, lag: int) -> np.ndarray:
        """Certified ``h_j(lag) >= max_(a != j) (W^lag)_(aj)`` for every j."""
        if lag == 0:
            return np.zeros(self.n)
        known = np.where(lag <= self.depth, self.h[:, min(lag, self.h.shape[1] - 1)], 0.0)
        error = gamma(lag * (self.longest_row + 1))
        beyond = self.tail * (1 + stochastic_growth(self.rho, max(lag - 1, 0)))
        value = np.where(lag <= self.depth, known, beyond)
        return value / (1 - error) * (1 + 4 * UNIT_ROUNDOFF)

    def _advance(self, t: int, partial: np.ndarray, squares: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
        """The running sums after round ``t + 1`` (lag t added)."""
        partial = partial + self._lag_bound(t)
        return partial, squares + partial * partial

    def _bound(self, T: int, squares: np.ndarray) -> np.ndarray:
        """The certified running bound at T from ``fl(sum_t H(t)^2)`` (module docstring)."""
        g = gamma(T + 1)
        factor = 1.0 / ((1 - g) ** 3 * self.lambda_lb) * (1 + 8 * UNIT_ROUNDOFF)
        return np.minimum(squares * factor, float(T))

    # -- answers ---------------------------------------------------------------------------

    @property
    def running_upper(self) -> np.ndarray:
        """Per node, the running certified upper bound on ``worst_T(j)`` (0 at T = 0)."""
        return self._bound(self.rounds, self._squares)

    @property
    def upper(self) -> np.ndarray:
        """Per node, the best certified upper bound on ``worst_T(j)``: the running one, or
        :meth:`worst_case`'s where it was asked at this round and is smaller."""
        if self._worst_case is None:
            return self.running_upper
        return np.minimum(self.running_upper, self._worst_case[1])

    def worst_node(self) -> int:
        """The node of the largest :attr:`upper` (the first one on ties)."""
        return int(np.argmax(self.upper))

    @property
    def worst_upper(self) -> float:
        """The largest :attr:`upper`: a certified bound on every pair's ``Delta_T^2``."""
        return float(self.upper.max())

    def epsilon(self, delta: float) -> float:
        """The worst node's epsilon at ``delta`` (of :attr:`worst_upper`), as the tracked
        sets' ``epsilon`` (:class:`sparsedp.TargetsAccountant`)."""
        return gaussian_epsilon(self.worst_upper, self.sigma, validation.probability_delta(delta))

    def epsilons(self, delta: float, nodes=None) -> np.ndarray:
        """Per node (``nodes``: those rows only), the Gaussian epsilon at ``delta`` of
        :attr:`upper` (tight for one Gaussian mechanism of that squared sensitivity)."""
        delta = validation.probability_delta(delta)
        upper = self.upper if nodes is None else self.upper[np.asarray(nodes, dtype=np.int64)]
        values, inverse = np.unique(upper, return_inverse=True)
        epsilons = np.array([gaussian_epsilon(float(v), self.sigma, delta) for v in values])
        return epsilons[inverse.reshape(upper.shape)]

    def rdp(self, alpha: float) -> np.ndarray:
        """Per node, Renyi DP of order ``alpha > 1``: ``alpha upper / (2 sigma^2)``."""
        alpha = validation.real("alpha", alpha)
        if not alpha > 1:
            raise ParameterError(f"the Renyi order alpha must be > 1, got {alpha!r}")
        return alpha * self.upper / (2.0 * self.sigma**2)

    def to_dp_event(self):
        """The worst node's T rounds so far as one ``dp_accounting`` event (certified upper
        bound; :func:`sparsedp.privacy.interop.gaussian_dp_event`)."""
        return gaussian_dp_event(self.worst_upper, self.sigma)

    @limit_blas_threads
    def worst_case(self) -> tuple[np.ndarray, np.ndarray]:
        """``(lower, upper)`` per node at the recorded T: the engine's per-target worst case
        (:func:`sparsedp.per_target_worst_case`, every observer; nodes without an observer
        get 0, 0); lazy and cached until the next step."""
        if self.rounds == 0:
            raise ParameterError("no rounds recorded yet: call step() first")
        if self._worst_case is None:
            table = self.worst_case_table()
            lower, upper = np.zeros(self.n), np.zeros(self.n)
            rows = np.asarray(table.columns["target"], dtype=np.int64)
            lower[rows] = table.columns["lower"]
            upper[rows] = table.columns["upper"]
            self._worst_case = (lower, upper)
        return self._worst_case

    def worst_case_table(self) -> WorstCase:
        """The engine's :class:`~sparsedp.maps.worst_case.WorstCase` table at the recorded T
        (not cached: :meth:`worst_case` caches its bounds)."""
        exact = False if self.gradients == "vector" else defaults.EXACT
        return per_target_worst_case(self.W, T=self.rounds, sigma=None, delta=None,
                                     exact=exact, progress=False)

    # -- checkpoints -----------------------------------------------------------------------

    STATE_ARRAYS = ("h", "depth", "tail", "_partial", "_squares")

    def state_dict(self) -> dict:
        """Everything needed to continue, as numpy arrays and numbers (no pickle; the column
        maxima included, so that restoring costs no propagation)."""
        W = sp.csr_matrix(self.W)
        state = {**matrix_state(W), "sigma": self.sigma,
                 "gradients": self.gradients,
                 "mixing_tolerance": self.mixing_tolerance, "max_depth": self.max_depth,
                 "rounds": self.rounds}
        state.update({name.lstrip("_"): getattr(self, name) for name in self.STATE_ARRAYS})
        return state

    @classmethod
    def from_state(cls, state: dict) -> GraphAccountant:
        """The accountant of :meth:`state_dict`: it continues with identical answers."""
        W = matrix_from_state(state)
        accountant = cls.__new__(cls)
        maxima = tuple(np.array(state[name]) for name in ("h", "depth", "tail"))
        accountant._setup(W, float(state["sigma"]), gradients_from_state(state),
                          float(state["mixing_tolerance"]),
                          int(state["max_depth"]), maxima)  # type: ignore[arg-type]
        accountant._partial = np.array(state["partial"], dtype=np.float64)
        accountant._squares = np.array(state["squares"], dtype=np.float64)
        accountant.rounds = int(state["rounds"])
        return accountant

    def rounds_within(self, epsilon: float, delta: float, *,
                      limit: int = ROUNDS_WITHIN_LIMIT) -> int:
        """The largest number of rounds T (from the start, at most ``limit``) whose running
        bound keeps every node's epsilon at ``delta`` within ``epsilon``: ``O(n)`` per round
        (rounds beyond those recorded are computed ahead, without recording them)."""
        epsilon = validation.nonnegative("epsilon", epsilon)
        delta = validation.probability_delta(delta)
        limit = validation.rounds(limit)
        partial, squares = np.zeros(self.n), np.zeros(self.n)
        for T in range(1, limit + 1):
            partial, squares = self._advance(T - 1, partial, squares)
            worst = float(self._bound(T, squares).max())
            if gaussian_epsilon(worst, self.sigma, delta) > epsilon:
                return T - 1
        return limit
