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
``P_j(t)`` for ``t <= D`` is computed once, at construction (:func:`first_passage_maxima`:
the walks ``x_s = W^T P_a x_(s-1)``, ``x_0 = e_a``, of every a, by blocks of
``BLOCK_COLUMNS``, each block until its walks have faded, ``n ||x_s||_inf <=
mixing_tolerance``, or ``max_depth`` products; their running sums and, per j, their
off-diagonal maxima), D the largest depth.  After a walk stops, at ``D_a``, ``||W^T y||_inf
<= kappa ||y||_inf`` (``kappa`` the largest column sum of W; ``1 + rho`` for a symmetric W
with row sums within ``rho`` of 1) gives ``L_(aj)(l) <= tail kappa^(l - D_a)``, ``tail >=
max_a ||x_(D_a)||_inf``, added to ``P_j`` for the later lags.
So a round costs two length-n updates, whatever T.  The
box bound of :mod:`sparsedp.gossip.batched_box` (``||b||^2 / lambda_min(K_a)``, ``b[t] =
sum_(l <= t) (W^l)_(aj)``) is never below it: ``phi_(ja)(t) <= b[t]`` (``L <= W^l``
entrywise) and ``lambda <= 1 / 4``.

Certification: the computed walks are within ``gamma(l (d + 1))`` relative of the
exact ones (non-negative products, d the longest row of W^T: the batched engine's
rounding model), the running sums of the walks within ``gamma(l)`` more, so each maximum is
divided by ``1 - gamma(l (d + 2))``; the running sums of non-negative terms are charged
``1 / (1 - gamma_(T+1))^3`` as in :func:`sparsedp.gossip.batched_box.box_upper`.

The bound is still loose, much less so.  Against the engine's tight per-target worst case
(its certified upper bound per node): on ER(20, 0.25) (n = 20, D = 24) median 1.09, 1.31,
1.75, 2.91 and 5.46 times at T = 2, 5, 10, 20, 40 (the box bound before: 4.4, 10.9, 14.0,
13.3, 12.7), and at T = 80 it is the cap T for the worst nodes as their hitting
probabilities approach 1; on ER(10^4, average degree 10) at T = 10 median 1.11, max 1.42
(worst node 3.13 against 2.21; the box bound: the cap 10, median bound 1.80 against
0.12).  **The tight
answer** (:meth:`GraphAccountant.worst_case`) is computed lazily, on request: the engine's
per-target worst case at the current T (:func:`sparsedp.maps.worst_case.
per_target_worst_case`, certified lower and upper bounds per node); its upper bounds then
replace the running ones until the next step.

What each answer costs (n nodes, nnz(W) non-zeros, T rounds, D the depth reached):

==========================  ===============================================================
construction                ``D_a`` sparse products with every walk, ``O(D nnz(W) n)``
                            flops, in blocks of ``BLOCK_COLUMNS`` walks (``O(n D)`` memory)
``step(k)``                 ``O(k n)``
``upper``, ``epsilon``,     ``O(n)`` (``epsilon``: one Gaussian epsilon per distinct value
``worst``, ``rdp``          asked)
``worst_case()``            lazy: one :func:`sparsedp.per_target_worst_case` at T (every
                            observer against every target; cached until the next step)
``rounds_within``           ``O(n)`` per round, computed ahead
``state_dict``,             ``O(n D)``: plain arrays (the walks' maxima included, so that a
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
    stochastic_growth,
)
from sparsedp.linalg.stochastic import matrix_facts
from sparsedp.linalg.threads import limit_blas_threads
from sparsedp.maps.worst_case import WorstCase, per_target_worst_case
from sparsedp.privacy import gaussian_epsilon
from sparsedp.privacy.interop import gaussian_dp_event
from sparsedp.reprs import short_repr

BLOCK_COLUMNS = 512  # walks propagated together at construction
MIXING_TOLERANCE = 0.05  # stop a block once n ||x_s||_inf <= this for its walks (the tail
# then adds at most this / n a round; MAX_DEPTH may stop it first: 0.42 / n on ER(20, 0.25))
MAX_DEPTH = 24  # the most products per block (the tail bound covers the later lags)


def column_growth(W: sp.csr_matrix) -> float:
    """``kappa - 1 >= 0`` with ``kappa >= ||W^T||_inf``, the largest column sum of W (``W >=
    0``), the sums' rounding charged as in
    :func:`sparsedp.linalg.certified.gossip_lambda_min_lower_bound`: ``||W^T x||_inf <=
    kappa ||x||_inf``."""
    column_sums = matrix_facts(W).absolute_line_sums[1]
    kappa = float(column_sums.max()) * (1 + gamma(W.shape[0] + 1))
    return max(kappa - 1.0, 0.0) * (1 + 4 * UNIT_ROUNDOFF)


def tail_bound(tail: float, growth: float, lag: int) -> float:
    """``tail kappa^lag >= L_(aj)(lag)`` for every pair and every lag beyond the depth of
    a's walk (module docstring; ``growth = kappa - 1``, :func:`column_growth`)."""
    return tail * (1 + stochastic_growth(growth, lag))


def first_passage_maxima(W: sp.csr_matrix, tolerance: float = MIXING_TOLERANCE,
                         max_depth: int = MAX_DEPTH) -> tuple[np.ndarray, float]:
    """``P[j, t] >= max_(a != j) phi_(ja)(t)`` for ``t = 0 .. D`` and ``tail`` (module
    docstring), both certified: the walks ``x_s = W^T P_a x_(s-1)``, ``x_0 = e_a``, of every a
    in blocks of ``BLOCK_COLUMNS``, each block until ``n ||x_s||_inf <= tolerance`` or
    ``max_depth`` products (its depth); ``phi`` is the running sum of row j of a's walk.
    ``tail >= ||x_(D_a)||_inf`` bounds every later ``L_(aj)(l) <= tail kappa^(l - D_a)``, by
    which a walk that stopped before ``D``, the largest depth, is continued."""
    n = W.shape[0]
    WT = W.T.tocsr()
    longest = int(np.diff(WT.indptr).max())  # the terms of one entry of W^T x
    by_depth: dict[int, np.ndarray] = {}  # depth -> the largest fl(phi) of those blocks
    tail = 0.0
    for start in range(0, n, BLOCK_COLUMNS):
        walkers = np.arange(start, min(n, start + BLOCK_COLUMNS))
        own = (walkers, np.arange(walkers.size))  # entry a of walk a
        X = np.zeros((n, walkers.size))
        X[own] = 1.0
        sums = np.zeros((n, walkers.size))
        maxima, largest = [np.zeros(n)], 1.0
        while len(maxima) <= max_depth and not n * largest <= tolerance:
            X = np.asarray(WT @ X)
            X[own] = 0.0  # P_a: the paths do not return to a (entries >= 0: 0 hides (a, a))
            sums += X
            maxima.append(sums.max(axis=1))
            largest = float(X.max())
        depth = len(maxima) - 1
        kept = by_depth.get(depth)
        by_depth[depth] = np.array(maxima) if kept is None else np.maximum(kept, maxima)
        # fl(x_D) within gamma(D (d + 1)) relative of the exact walk (non-negative products)
        tail = max(tail, largest / (1 - gamma(max(depth, 1) * (longest + 1)))
                   * (1 + 4 * UNIT_ROUNDOFF))
    growth = column_growth(W)
    deepest = max(by_depth)
    P = np.zeros((n, deepest + 1))
    for depth, kept_maxima in by_depth.items():
        steps = np.arange(depth + 1)
        # the running sums of s steps within gamma(s (d + 2)) of the exact ones
        errors = np.array([gamma(max(s * (longest + 2), 1)) for s in steps])
        certified = kept_maxima.T / (1 - errors) * (1 + 4 * UNIT_ROUNDOFF)
        later = np.cumsum([tail_bound(tail, growth, lag - depth)
                           for lag in range(depth + 1, deepest + 1)])
        continued = certified[:, -1:] + later  # its rounding: the running sums' (_bound)
        P = np.maximum(P, np.hstack([certified, continued]))
    return P, tail


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
        the running bound holds for both (``M <= F^T F`` with F >= 0, F the first-passage
        Toeplitz matrix: ``<M, X> <= sum_t (sum_k F_tk)^2`` for a Gram matrix X of vectors
        of norm at most 1); :meth:`worst_case` runs the
        exhaustive sign search (small T) for scalar contributions only, so that its upper
        bounds (box, entrywise, diagonal shift) hold for vectors clipped in norm too.
    mixing_tolerance : float
        Construction: a walk of a stops once ``n ||x_s||_inf <= mixing_tolerance``
        (module docstring; smaller: a tighter tail, more products).
    max_depth : int
        Construction: the most products per block of walks.

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
               maxima: tuple[np.ndarray, float] | None) -> None:
        """Check the input and start at T = 0; ``maxima``: :func:`first_passage_maxima`'s
        answer when already known (a checkpoint)."""
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
            self.hitting, self.tail = first_passage_maxima(W, self.mixing_tolerance,
                                                           self.max_depth)
        else:
            self.hitting, self.tail = maxima
        self.growth = column_growth(W)
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

    def _advance(self, t: int, partial: np.ndarray, squares: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
        """The running sums after round ``t + 1``: ``P_j(t)`` added (module docstring), the
        walks' certified maxima up to the depth D, then the tail bound added to them."""
        if t < self.hitting.shape[1]:
            partial = self.hitting[:, t]
        else:
            partial = partial + tail_bound(self.tail, self.growth, t)
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

    STATE_ARRAYS = ("hitting", "tail", "_partial", "_squares")

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
        maxima = (np.array(state["hitting"], dtype=np.float64), float(state["tail"]))
        accountant._setup(W, float(state["sigma"]), gradients_from_state(state),
                          float(state["mixing_tolerance"]),
                          int(state["max_depth"]), maxima)
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
