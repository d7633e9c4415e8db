"""An online accountant for gossip averaging: one attacker against every target, stepped
every round (issue 34).

The attacker's observed rows S (m of them) do not depend on the target, so one stream of
lags serves every target: ``V_l = W^l S^T`` (n x m, one sparse product per round,
:class:`sparsedp.accountant.lags.LagStream`) gives the shared ``mu_l = S W^l S^T`` and, in
its row j, target j's ``a_l``.  After every round each target has a certified upper bound,
the running box bound (:class:`sparsedp.accountant.sets.RunningBox`, ``O(n m)`` a round),
and on request the tight interval of the targets asked: the engine's certified sandwich and
bound search from the same lags (:func:`sparsedp.accountant.gossip.lag_interval`), whose
lower bound is the one-shot structured query's.

Why not one bordered Cholesky factor of the shared ``K_T`` and one block of
``Y = L^{-1} G_T`` per target (the pair's running bound,
:mod:`sparsedp.accountant.bordered`)?  Y has ``m T x T`` entries per target and its new block
row reads every old one: ``8 m T^2 n`` bytes and ``m T^3 n / 3`` flops over T rounds, 80 GB
and 3e12 flops for one observer of a 10^4-node graph at T = 1000, against ``O(T n m)`` here.
"""

from __future__ import annotations

import math

import numpy as np

from sparsedp import defaults, resources, validation
from sparsedp.accountant.bordered import (
    BLOCK_ROUNDS,
    BorderedFactor,
    RoundStats,
    block_rows_of_Y,
    per_round,
)
from sparsedp.accountant.gossip import (
    LOOKAHEAD_BLOCK,
    ROUNDS_WITHIN_LIMIT,
    lag_interval,
    view_lambda_min,
)
from sparsedp.accountant.lags import LagStream, computed_sequence
from sparsedp.accountant.sets import (
    RunningBox,
    SetInterval,
    attacker_view,
    budget_rounds,
    checked_symmetric,
    epsilons_of,
    lag_depth,
)
from sparsedp.accountant.state import (
    exact_from_state,
    gradients_from_state,
    matrix_from_state,
    matrix_state,
)
from sparsedp.errors import ParameterError
from sparsedp.gossip.inputs import _resolve_exact
from sparsedp.gossip.views import resolve_view
from sparsedp.linalg.sign_bounds import Bound
from sparsedp.linalg.threads import limit_blas_threads
from sparsedp.privacy import gaussian_epsilon
from sparsedp.privacy.interop import gaussian_dp_event
from sparsedp.reprs import short_repr


class TargetsAccountant:
    """Privacy of every target against one attacker, tracked round by round.

    Parameters
    ----------
    W : square sparse matrix or array
        The gossip matrix: non-negative, row-stochastic and exactly symmetric.
    observers : int or iterable of int
        The attacker's nodes.
    sigma : float
        Noise standard deviation per round, in units of the per-round sensitivity.
    view : str
        ``"secure-summation"`` (default), ``"neighbourhood"`` or ``"secure-summation-v1"``
        (the v1 form needs a diagonally dominant W): every view of
        :func:`sparsedp.squared_sensitivity` that has an attacker set.  The others are
        refused: ``adaptive-v1`` and ``target-v1`` have no attacker (the target fixes the
        observed rows: track each target with :class:`sparsedp.Accountant`), ``local-dp``
        needs no accountant (``Delta_T^2 = T`` for every target).
    tight_targets : iterable of int or None
        Targets that also get the pair's tight running bound (one block of Y per round
        against the shared factor; memory ``8 m T^2`` bytes and ``O(m^2 T^2)`` flops a round
        each); ``None``: every target but the attacker's nodes (small graphs); ``[]``: none
        (the box bound only, no factorisation).
    exact : {"auto", True, False}
        Exhaustive sign search in :meth:`interval`, as in :func:`sparsedp.squared_sensitivity`.
    gradients : ``"scalar"`` or ``"vector"``
        The target's per-round contribution, as :func:`sparsedp.squared_sensitivity`'s
        ``gradients``: a value in [-1, 1] (default) or a vector clipped in norm (the SDP
        value; the running bounds hold for both, the interval adds the SDP bounds).
    backend : str
        Kernel backend (``"auto" | "numba" | "numpy"``).

    Attributes
    ----------
    rounds : int
        Rounds recorded.
    upper : numpy.ndarray
        Per target (row of W): a certified upper bound on ``Delta_T^2``; NaN at the
        attacker's own nodes (it knows their data: nothing to protect).

    Raises
    ------
    ParameterError
        A W that is not one exactly symmetric gossip matrix, a view without an attacker
        set (``adaptive-v1``, ``target-v1``: observed rows fixed by the target;
        ``local-dp``: ``Delta_T^2 = T``) or without an analytic ``lambda_min(K_T)`` bound
        for this W.
    ResourceLimitError
        From :meth:`step`: the tight targets' rows would exceed the memory budget
        (:func:`sparsedp.resources.memory_budget`).

    Notes
    -----
    What each answer costs (T rounds, m observed rows, n nodes):

    ============================  ==============================================================
    ``step(k)``                   k sparse products with the n x m block and ``O(n m)`` for
                                  the running box bounds, each
    ``upper``, ``worst_upper``,   ``O(n)``; ``epsilons`` one ``gaussian_epsilon`` per distinct
    ``epsilon``, ``epsilons``     bound, ``epsilon`` (the worst target) one; with tight targets
                                  first the b rounds recorded since the last answer: the shared
                                  factor's and every tight target's block rows in blocks of up
                                  to 64 rounds (level-3 BLAS, ``O(m^2 T^2 b)`` each)
    ``interval(targets)``         lazy, ``O((m T)^3)`` per target asked (one one-shot query
                                  without its propagation); cached until the next step
    ``rounds_within``             ``O(1)`` per round already computed; rounds beyond are computed
                                  ahead, 16 at a time (as ``step``, without recording them)
    ``state_dict``                the pending rows first (a restored copy continues identically)
    ============================  ==============================================================

    Memory: the lags ``V_l`` of every round, ``8 n m T`` bytes (80 MB at n = 10^4, m = 1,
    T = 1000), kept for :meth:`interval`; ``8 m T^2`` bytes per tight target.

    The running box bound is loose (tens of times the c = 1 value for a neighbour of the
    attacker at T = 1000, where it reaches the cap T), the tight bound less so but still
    several times the one-shot lower bound for the attacker's neighbours; :meth:`interval`
    gives the tight bounds.

    Examples
    --------
    >>> import networkx as nx, numpy as np, sparsedp
    >>> W = sparsedp.gossip_matrix(nx.cycle_graph(10))
    >>> acc = sparsedp.TargetsAccountant(W, [0], sigma=4.0)
    >>> acc.step(30)
    >>> bool(np.isnan(acc.upper[0])), bool(np.all(acc.upper[1:] > 0))
    (True, True)
    >>> r = acc.interval([5])
    >>> one_shot = sparsedp.squared_sensitivity(W, 5, [0], 30, method="structured")
    >>> bool(abs(r.lower[0] - one_shot.lower) <= 1e-9 * one_shot.lower <= r.upper[0])
    True
    >>> acc.epsilon(1e-5) == sparsedp.gaussian_epsilon(acc.worst_upper, 4.0, 1e-5)
    True
    """

    __repr__ = short_repr

    def __init__(self, W, observers, *, sigma: float, view: str = defaults.VIEW,
                 tight_targets=None, exact="auto",
                 gradients: str = defaults.GOSSIP_GRADIENTS, backend: str = "auto"):
        self.W, self.precision_notes = checked_symmetric(W)
        n = self.W.shape[0]
        view = attacker_view(view, "TargetsAccountant")
        self.observers = validation.node_set(observers, n, "observers")
        self.sigma = validation.sigma(sigma)
        self.view, self.exact, self.backend = view, exact, backend
        self.gradients = gradients
        _resolve_exact(exact, 1, gradients)  # checks both values
        self.model = resolve_view(view, self.W, int(self.observers[0]), self.observers, False)
        self.lambda_lb = view_lambda_min(self.W, self.model)
        self.offset = self.model.power_offset
        self.rounds = 0
        observed = self.model.observers
        # the stream's own target is not read: every target's lags are the rows of V_l
        self._lags = LagStream(self.W, observed, int(observed[0]), backend)
        self._history: list[np.ndarray] = []  # V_l, l = 0 .. products
        self._box = RunningBox(n, observed.size, self.lambda_lb, lag_depth(self.W), self.offset)
        if tight_targets is None:
            tight = np.setdiff1d(np.arange(n), self.observers)
        elif np.size(tight_targets) == 0:
            tight = np.zeros(0, dtype=np.int64)
        else:
            tight = validation.node_set(tight_targets, n, "tight_targets")
            if np.isin(tight, self.observers).any():
                raise ParameterError("a tight target is one of the attacker's nodes")
        self.tight_targets = tight
        self._factor = BorderedFactor(observed.size, self.lambda_lb)  # shared by every target
        self._rows = TightRows(tight.size, observed.size)
        self._worst = np.zeros(0)  # the largest bound over the targets after each round
        self._tight_lags = np.zeros((0, tight.size, observed.size))  # V_l[tight], grown
        self._tight_history: list[np.ndarray] = []  # running max of the rows bound
        self._intervals: dict[int, float] = {}  # target -> interval upper at this round
        self._results: dict = {}

    # -- recording rounds ------------------------------------------------------------------

    @limit_blas_threads
    def step(self, k: int = 1) -> None:
        """Record ``k`` more rounds (``k >= 1``): their lags and running box bounds now, the
        tight targets' rows when an answer needs them (several rounds at once)."""
        k = validation.rounds(k)
        self._rows.check_room(self._factor.m * (self.rounds + k), self.rounds + k)
        self._record_to(self.rounds + k)
        self.rounds += k
        self._intervals, self._results = {}, {}

    def _compute_to(self, T: int) -> None:
        """Lags and running bounds for T rounds (ahead of the recorded rounds if need be)."""
        self._record_to(T)
        self._border_to(T)

    def _record_to(self, T: int) -> None:
        """Lags and box sums for T rounds: round t reads ``V_(t-1+p)``, each ``V_l`` kept as
        it is produced."""
        while self._box.rounds < T:
            needed = self._box.rounds + self.offset  # V_needed is this round's lag block
            while len(self._history) <= needed:
                if self._lags.products < len(self._history):
                    self._lags.extend_to(len(self._history))  # one product
                self._keep(self._lags.V)
            self._box.add(self._history[needed])

    def _border_to(self, T: int) -> None:
        """The block rows of the shared factor and of every tight target's Y of the rounds
        recorded but not yet bordered, up to T, in one block; each round's bounds."""
        first = len(self._tight_history)
        if T <= first:
            return
        if self.tight_targets.size:  # the shared factor serves the tight targets only
            bounds = np.concatenate([self._border_block(start, min(T, start + BLOCK_ROUNDS))
                                     for start in range(first, T, BLOCK_ROUNDS)])
        else:
            bounds = np.zeros((T - first, 0))
        for t, bound in zip(range(first + 1, T + 1), bounds, strict=True):
            if self._tight_history:
                bound = np.maximum(bound, self._tight_history[-1])  # Delta_t^2 grows with t
            self._tight_history.append(bound)
            both = self._box.bound(t)
            both[self.tight_targets] = np.minimum(both[self.tight_targets], bound)
            both[self.observers] = 0.0
            self._worst = np.append(self._worst, float(both.max()))

    def _border_block(self, first: int, last: int) -> np.ndarray:
        """Rounds ``first + 1 .. last`` of the shared factor and of every tight target's Y
        in one block; their bounds, (rounds, tight)."""
        m, p = self._factor.m, self.offset
        stats = self._factor.extend(self._lags.mu, None, p, last - first)
        N, B = m * first, m * (last - first)
        block = self._factor.L[N:N + B, :N + B]
        # G[t, k] = a_(t-k+p) for k = 0..t, every tight target: (tight, m, t + 1)
        g = np.zeros((self.tight_targets.size, B, last))
        for i, t in enumerate(range(first, last)):
            g[:, i * m:(i + 1) * m, :t + 1] = self._tight_lags[p:p + t + 1][::-1].transpose(1, 2, 0)
        return self._rows.extend(block, N, g, self._factor, stats)

    def _keep(self, V: np.ndarray) -> None:
        """Append ``V_l`` to the kept lags (capacity doubles)."""
        kept = len(self._history)
        self._history.append(V.copy())
        if kept == self._tight_lags.shape[0]:  # capacity doubles (k x m a round: small)
            grown = np.zeros((max(1, 2 * kept),) + self._tight_lags.shape[1:])
            grown[:kept] = self._tight_lags[:kept]
            self._tight_lags = grown
        self._tight_lags[kept] = V[self.tight_targets]

    # -- answers ---------------------------------------------------------------------------

    @property
    def upper(self) -> np.ndarray:
        """Per target: the best certified upper bound on ``Delta_T^2`` at the recorded T (the
        running box bound, or the interval's upper bound where :meth:`interval` was asked at
        this round); NaN at the attacker's nodes, 0 at T = 0."""
        n = self.W.shape[0]
        if self.rounds == 0:
            out = np.zeros(n)
        else:
            self._border_to(self.rounds)
            out = self._box.bound(self.rounds)
            out[self.tight_targets] = np.minimum(out[self.tight_targets],
                                                 self._tight_history[self.rounds - 1])
        for target, bound in self._intervals.items():
            out[target] = min(out[target], bound)
        out[self.observers] = np.nan
        return out

    @property
    def worst_upper(self) -> float:
        """A certified upper bound on ``max_j Delta_T^2(j)`` over the targets (the attacker's
        nodes excluded)."""
        return float(np.nanmax(self.upper)) if self.rounds else 0.0

    def epsilons(self, delta: float) -> np.ndarray:
        """Per target: epsilon at ``delta`` of the T rounds recorded (one Gaussian mechanism
        with squared sensitivity :attr:`upper`); NaN at the attacker's nodes."""
        return epsilons_of(self.upper, self.sigma, validation.probability_delta(delta))

    def epsilon(self, delta: float) -> float:
        """The worst target's epsilon at ``delta`` (from :attr:`worst_upper`)."""
        return gaussian_epsilon(self.worst_upper, self.sigma,
                                validation.probability_delta(delta))

    def to_dp_event(self, target: int):
        """The T rounds so far as one ``dp_accounting`` event for ``target`` (certified
        upper bound, :func:`sparsedp.privacy.interop.gaussian_dp_event`)."""
        target = validation.node_index(target, self.W.shape[0], "target")
        bound = float(self.upper[target])
        if np.isnan(bound):
            raise ParameterError(f"target {target} is one of the attacker's nodes")
        return gaussian_dp_event(bound, self.sigma)

    @limit_blas_threads
    def interval(self, targets=None) -> SetInterval:
        """Every bound on ``Delta_T^2`` of the targets asked (``None``: every target but the
        attacker's nodes) at the recorded T, with kinds, as
        :func:`sparsedp.squared_sensitivity` (``method="structured"``) gives them, plus the
        running box bound (``"running_box"``); lazy and cached per target until the next
        step."""
        if self.rounds == 0:
            raise ParameterError("no rounds recorded yet: call step() first")
        n = self.W.shape[0]
        if targets is None:
            nodes = np.setdiff1d(np.arange(n), self.observers)
        else:
            nodes = validation.node_set(targets, n, "targets")
            if np.isin(nodes, self.observers).any():
                raise ParameterError("a target is one of the attacker's nodes")
        box = self._box.bound(self.rounds)
        results = []
        for target in nodes.tolist():
            if target not in self._results:
                self._results[target] = self._evaluate(target, float(box[target]))
                self._intervals[target] = self._results[target].upper
            results.append(self._results[target])
        return SetInterval(nodes=nodes, lower=np.array([r.lower for r in results]),
                           upper=np.array([r.upper for r in results]),
                           results=tuple(results), T=self.rounds)

    def _evaluate(self, target: int, box: float):
        T, p = self.rounds, self.offset
        observed = self.model.observers.tolist()
        if target in observed:  # a neighbour of the attacker: as the engine reads it
            a = self._lags.mu[:T + p, :, observed.index(target)]
        else:
            a = np.stack([V[target] for V in self._history[:T + p]])
        model = resolve_view(self.view, self.W, target, self.observers, False)
        running = Bound("running_box", min(box, float(T)), "certified upper",
                        "||G_T 1||^2 / lambda (sparsedp.accountant.sets)")
        return lag_interval(computed_sequence(self._lags.mu, a, T + model.power_offset), T,
                            target, model, self.lambda_lb,
                            exact=self.exact, gradients=self.gradients, backend=self.backend,
                            notes=self.precision_notes, extra=(running,))

    @limit_blas_threads
    def rounds_within(self, epsilon: float, delta: float, *,
                      limit: int = ROUNDS_WITHIN_LIMIT) -> int:
        """The largest number of rounds T (counted from the start, at most ``limit``) whose
        running certified bounds keep every target's epsilon at ``delta`` within
        ``epsilon``; rounds beyond those recorded are computed ahead.  ``limit`` is returned
        when the budget lasts that long."""
        epsilon = validation.nonnegative("epsilon", epsilon)
        delta = validation.probability_delta(delta)
        limit = validation.rounds(limit)
        self._border_to(min(self.rounds, limit))
        return budget_rounds(
            lambda: self._worst,
            lambda T: self._compute_to(min(limit, T + LOOKAHEAD_BLOCK - 1)),
            self.sigma, epsilon, delta, limit)

    # -- checkpoints -----------------------------------------------------------------------

    def state_dict(self) -> dict:
        """Everything needed to continue, as numpy arrays, numbers and strings (no pickle)."""
        self._border_to(self.rounds)  # no pending rows: the copy continues as the original
        state = matrix_state(self.W)
        state.update({"observers": self.observers, "sigma": self.sigma, "view": self.view,
                      "exact": str(self.exact), "gradients": self.gradients,
                      "backend": self.backend,
                      "rounds": self.rounds, "kept_lags": np.stack(self._history),
                      "tight_targets": self.tight_targets, "worst": self._worst,
                      "tight_history": np.array(self._tight_history).reshape(
                          -1, self.tight_targets.size)})
        state.update(self._lags.state())
        state.update(self._box.state())
        state.update(self._factor.state())
        state.update(self._rows.state(self._factor.rounds))
        return state

    @classmethod
    def from_state(cls, state: dict) -> TargetsAccountant:
        """The accountant of :meth:`state_dict` (plain arrays, e.g. loaded from ``.npz``):
        it continues with answers identical to the original's."""
        accountant = cls(matrix_from_state(state), np.asarray(state["observers"]).tolist(),
                         sigma=float(state["sigma"]), view=str(state["view"]),
                         tight_targets=np.asarray(state["tight_targets"]).tolist(),
                         exact=exact_from_state(state), gradients=gradients_from_state(state),
                         backend=str(state["backend"]))
        accountant._lags.restore(state)
        accountant._box.restore(state)
        accountant._factor.restore(state)
        accountant._rows.restore(state)
        accountant._worst = np.array(state["worst"], dtype=np.float64)
        accountant._tight_history = list(np.array(state["tight_history"], dtype=np.float64))
        for V in np.array(state["kept_lags"], dtype=np.float64):
            accountant._keep(V)
        accountant.rounds = int(state["rounds"])
        return accountant


class TightRows:
    """``Y = L^{-1} G_T`` of k targets against one shared bordered factor, extended by the
    factor's blocks of rounds, and their running sums ``S_T = sum_r ||Y_r||_1^2`` and
    ``||Y||_F^2`` after each round: the pair's running bound
    (:mod:`sparsedp.accountant.bordered`) for every target at once, the new block rows of all
    k in one batched product with the non-zero part of the old rows and one triangular solve.
    Memory ``8 m T^2 k`` bytes; about ``m T^3 k / 6`` flops over T rounds.

    Parameters
    ----------
    targets : int
        Number of targets k.
    m : int
        Observed rows per round.
    """

    def __init__(self, targets: int, m: int):
        self.m = int(m)
        self.Y = np.zeros((targets, 0, 0))  # (k, m T, T) with spare capacity
        self.rows_l1 = np.zeros(targets)
        self.Y_frobenius2 = np.zeros(targets)

    def extend(self, block: np.ndarray, N: int, g: np.ndarray, factor: BorderedFactor,
               stats: RoundStats) -> np.ndarray:
        """The rounds of one extension of the shared factor: ``block`` its new rows ``[L21
        L22]`` (B x (N + B), N the rows before), ``g`` (k, B, C) each target's new block rows
        of G, ``stats`` what :meth:`BorderedFactor.extend` returned; each target's certified
        bound after each new round, (B / m, k)."""
        B, columns = g.shape[1], g.shape[2]
        self._grow(N + B, columns)
        y = block_rows_of_Y(block, N, self.m, self.Y, g)
        self.Y[:, N:N + B, :columns] = y
        rows_l1 = self.rows_l1 + np.cumsum(per_round(np.abs(y).sum(axis=2) ** 2, self.m),
                                           axis=1).T
        Y_frobenius2 = self.Y_frobenius2 + np.cumsum(per_round((y**2).sum(axis=2), self.m),
                                                     axis=1).T
        self.rows_l1, self.Y_frobenius2 = rows_l1[-1].copy(), Y_frobenius2[-1].copy()
        return factor.certified_rows_upper(rows_l1, Y_frobenius2, stats=stats)

    def _grow(self, rows: int, columns: int) -> None:
        k, R, C = self.Y.shape
        if rows > R or columns > C:
            shape = self.check_room(rows, columns)
            Y = np.zeros(shape)
            Y[:, :R, :C] = self.Y
            self.Y = Y

    def check_room(self, rows: int, columns: int) -> tuple[int, int, int]:
        """The shape Y grows to for ``rows`` rows and ``columns`` columns (capacity doubles);
        ResourceLimitError, before anything is allocated, when it exceeds the memory budget."""
        k, R, C = self.Y.shape
        shape = (k, max(rows, 2 * R), max(columns, 2 * C))
        if rows > R or columns > C:
            resources.require_within(
                8.0 * math.prod(shape), resources.memory_budget(),
                f"the running bounds of {k} tight targets at T = {columns}",
                "pass fewer tight_targets (the others keep the running box bound)")
        return shape

    def state(self, rounds: int) -> dict:
        """The rows (used part: ``rounds`` rounds) and sums as plain arrays."""
        return {"rows_Y": self.Y[:, :self.m * rounds, :rounds], "rows_l1": self.rows_l1,
                "rows_Y_frobenius2": self.Y_frobenius2}

    def restore(self, state: dict) -> None:
        """Continue from :meth:`state` (bit for bit)."""
        self.Y = np.array(state["rows_Y"], dtype=np.float64)
        self.rows_l1 = np.array(state["rows_l1"], dtype=np.float64)
        self.Y_frobenius2 = np.array(state["rows_Y_frobenius2"], dtype=np.float64)
