"""Every node's worst case over single observers, tracked round by round (issue 34, "the
worst case over the whole graph").

Setting: the secure-summation single-observer view of gossip averaging (as
:mod:`sparsedp.maps.worst_case`): for target j and observer a != j,
``Delta_T^2(j -> a) = max_c c^T G^T K_a^{-1} G c`` with ``G[t, k] = r_(t-k)[j]``,
``r_l = e_a^T W^l`` (:mod:`sparsedp.gossip.batched`).  The accountant answers, per node j,
a certified upper bound on ``worst_T(j) = max_(a != j) Delta_T^2(j -> a)`` after every round,
and the worst over the graph.

**The running bound** (every round, ``O(n)``).  Observer a's view is ``y = sum_b H_b z_b``
over the nodes b (independent unit noise), so ``K_a >= H_a H_a^T`` with ``H_a[t, k] =
(W^(t-k))_(aa)``, lower-triangular Toeplitz with unit diagonal: a's own noise alone.  Hence
``Delta^2(j -> a) <= ||H_a^{-1} G c||^2``, and ``H_a^{-1} G`` is Toeplitz too: splitting
every path from a to j at its last visit to a gives ``(W^l)_(aj) = sum_s (W^(l-s))_(aa)
L_(aj)(s)``, ``L_(aj)(s) = e_a^T W (P_a W)^(s-1) e_j >= 0`` (``P_a`` deletes coordinate a:
the paths that do not return to a; for symmetric stochastic W, the probability that the walk
from j first hits a at step s).  With W >= 0, ``|(L c)_t| <= phi_(ja)(t) = sum_(s <= t)
L_(aj)(s)`` for ``|c| <= 1``, so

    worst_T(j) <= sum_(t < T) P_j(t)^2,     P_j(t) >= max_(a != j) phi_(ja)(t),

capped at T (``M <= I``): no ``lambda_min`` and no ``1 / lambda`` factor (for symmetric
stochastic W, ``phi`` is a hitting probability, at most 1, where the box bound's ``sum_l
(W^l)_(aj)`` keeps growing by about ``1 / n`` a round).
``P_j(t)`` for ``t <= D`` is computed once, at construction (:func:`hitting_maxima`: the
walks ``x_s = W^T P_a x_(s-1)`` of every a, by blocks of ``BLOCK_COLUMNS``, their running sums
and their off-diagonal maxima per j), ``D = max_j D_j``, ``D_j`` the products after which
column j of ``W^l`` has mixed (:func:`mixing_columns`: columns propagated by blocks until
``n ||W^l e_j||_inf <= 1 + mixing_tolerance`` or ``max_depth``).  Beyond, ``L_(aj)(l) <=
(W^l)_(aj) <= h_j(l) = ||W^(D_j) e_j||_inf (1 + rho)^l`` (``||W x||_inf <= (1 + rho)
||x||_inf``, W >= 0 with row sums within ``rho`` of 1), added to ``P_j(D)``.
So a round costs two length-n updates, whatever T.  The
box bound of :mod:`sparsedp.gossip.batched_box` (``||b||^2 / lambda_min(K_a)``, ``b[t] =
sum_(l <= t) (W^l)_(aj)``) is never below it: ``phi_(ja)(t) <= b[t]`` (``L <= W^l``
entrywise) and ``lambda <= 1 / 4``.

Certification: the computed walks and columns are within ``gamma(l (d + 1))`` relative of the
exact ones (non-negative products, d the longest row of W or of W^T: the batched engine's
rounding model), the running sums of the walks within ``gamma(l)`` more, so each maximum is
divided by ``1 - gamma(l (d + 2))``; the running sums of non-negative terms are charged
``1 / (1 - gamma_(T+1))^3`` as in :func:`sparsedp.gossip.batched_box.box_upper`.

The bound is still loose, less so: against the engine's tight per-target worst case on a
20-node ER graph (docs/accountant.md) it is 1.3 to 2 times the truth at T <= 10 (the box bound:
4 to 29 times), and on small graphs it approaches the cap T as the hitting probabilities
approach 1 (7 to 12 times the truth at T = 80, the box bound 20 times).  **The tight
answer** (:meth:`GraphAccountant.worst_case`) is computed lazily, on request: the engine's
per-target worst case at the current T (:func:`sparsedp.maps.worst_case.
per_target_worst_case`, certified lower and upper bounds per node); its upper bounds then
replace the running ones until the next step.

What each answer costs (n nodes, nnz(W) non-zeros, T rounds, D the depth reached):

==========================  ===============================================================
construction                ``D_j`` sparse products with every column and ``D`` with every
                            walk, ``O(D nnz(W) n)`` flops, in blocks of ``BLOCK_COLUMNS``
                            columns (``O(n D)`` memory)
``step(k)``                 ``O(k n)``
``upper``, ``epsilon``,     ``O(n)`` (``epsilon``: one Gaussian epsilon per distinct value
``worst``, ``rdp``          asked)
``worst_case()``            lazy: one :func:`sparsedp.per_target_worst_case` at T (every
                            observer against every target; cached until the next step)
``rounds_within``           ``O(n)`` per round, computed ahead
``state_dict``,             ``O(n D)``: plain arrays (the column and walk maxima included, so
``from_state``              that a restored accountant propagates nothing)
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


def mixing_columns(W: sp.csr_matrix, tolerance: float = MIXING_TOLERANCE,
                   max_depth: int = MAX_DEPTH) -> tuple[np.ndarray, np.ndarray]:
    """Per node j: ``depth[j] = D_j``, the products after which column j of the computed
    ``W^l`` has mixed (``n ||fl(W^l e_j)||_inf <= 1 + tolerance``, or ``max_depth``), and
    ``tail[j] = ||fl(W^(D_j) e_j)||_inf`` (module docstring), the columns propagated in
    blocks of ``BLOCK_COLUMNS``."""
    n = W.shape[0]
    depth, tail = np.zeros(n, dtype=np.int64), np.zeros(n)
    for start in range(0, n, BLOCK_COLUMNS):
        columns = np.arange(start, min(n, start + BLOCK_COLUMNS))
        X = np.zeros((n, columns.size))
        X[columns, np.arange(columns.size)] = 1.0
        products, largest = 0, np.ones(columns.size)
        while products < max_depth and not (n * largest.max() <= 1 + tolerance):
            X = np.asarray(W @ X)
            products, largest = products + 1, X.max(axis=0)
        depth[columns] = products
        tail[columns] = largest
    return depth, tail


def hitting_maxima(W: sp.csr_matrix, depth: int) -> np.ndarray:
    """Per node j and ``s = 0 .. depth``: the largest ``fl(phi_(ja)(s))`` over ``a != j``
    (module docstring: the running sums of ``x_s = W^T P_a x_(s-1)``, ``x_0 = e_a``, row j
    of the walk of a), every a's walk propagated in blocks of ``BLOCK_COLUMNS``."""
    n = W.shape[0]
    WT = W.T.tocsr()
    maxima = np.zeros((n, depth + 1))
    for start in range(0, n, BLOCK_COLUMNS):
        walkers = np.arange(start, min(n, start + BLOCK_COLUMNS))
        own = (walkers, np.arange(walkers.size))  # entry a of walk a
        X = np.zeros((n, walkers.size))
        X[own] = 1.0
        sums = np.zeros((n, walkers.size))
        for step in range(1, depth + 1):
            X = np.asarray(WT @ X)
            X[own] = 0.0  # P_a: the paths do not return to a (entries >= 0: 0 hides (a, a))
            sums += X
            maxima[:, step] = np.maximum(maxima[:, step], sums.max(axis=1))
    return maxima


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
               maxima: tuple[np.ndarray, ...] | None) -> None:
        """Check the input and start at T = 0; ``maxima``: :func:`mixing_columns`'s arrays
        and :func:`hitting_maxima`'s when already known (a checkpoint)."""
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
        if maxima is None:
            self.depth, self.tail = mixing_columns(W, self.mixing_tolerance, self.max_depth)
            self.hitting = hitting_maxima(W, int(self.depth.max()))
        else:
            self.depth, self.tail, self.hitting = maxima
        self.longest_row = max(matrix_facts(W).longest_row,
                               int(np.bincount(W.indices, minlength=n).max()))  # or column
        self.rho = row_sum_deviation(W)
        self.rounds = 0
        self._partial = np.zeros(n)  # fl(P_j(t)) at t = rounds - 1
        self._squares = np.zeros(n)  # fl(sum_(t < rounds) P_j(t)^2)
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
        """Certified ``h_j(lag) >= max_a (W^lag)_(aj)`` for every j, for ``lag`` beyond
        every column's mixing depth (module docstring)."""
        error = gamma(int(self.depth.max()) * (self.longest_row + 1))
        tail = self.tail / (1 - error) * (1 + 4 * UNIT_ROUNDOFF)
        return tail * (1 + stochastic_growth(self.rho, lag))

    def _advance(self, t: int, partial: np.ndarray, squares: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
        """The running sums after round ``t + 1``: ``P_j(t)`` added (module docstring), the
        walks' certified maxima up to their depth, then the lag bounds added to them."""
        if t < self.hitting.shape[1]:
            error = gamma(t * (self.longest_row + 2))
            partial = self.hitting[:, t] / (1 - error) * (1 + 4 * UNIT_ROUNDOFF)
        else:
            partial = partial + self._lag_bound(t)
        return partial, squares + partial * partial

    def _bound(self, T: int, squares: np.ndarray) -> np.ndarray:
        """The certified running bound at T from ``fl(sum_t P(t)^2)`` (module docstring)."""
        factor = 1.0 / (1 - gamma(T + 1)) ** 3 * (1 + 8 * UNIT_ROUNDOFF)
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

    STATE_ARRAYS = ("depth", "tail", "hitting", "_partial", "_squares")

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
        maxima = tuple(np.array(state[name]) for name in ("depth", "tail", "hitting"))
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
