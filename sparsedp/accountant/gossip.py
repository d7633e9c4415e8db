"""An online accountant for gossip averaging: one (target, observers) pair, stepped every
round, answering at any time with certified bounds (issue 34).

:class:`Accountant` keeps what round T computed and extends it to round T + 1: one sparse
product for the new lags (:class:`sparsedp.accountant.lags.LagStream`; none once a chain long
enough for the one-shot query to truncate has mixed, the truncation's error then charged to
the running bound and to the interval) and, when an answer needs them, the block rows of the
Cholesky factor of ``K_T`` and of ``Y_T = L^{-1} G_T`` of every round recorded since the last
answer, in one block (:class:`sparsedp.accountant.bordered.BorderedFactor`, level-3 BLAS),
whose running sums give a certified upper bound on ``Delta_T^2`` after every round.  The tight
interval (the one-shot query's own
bounds: c = 1, local search, multistart, the exhaustive search for small T, the spectral,
diagonal-shift and entrywise upper bounds) is computed lazily, on request, from the same lags
through the engine's certified sandwich (:mod:`sparsedp.gossip.certified_solve`), so its lower
bound is the one of :func:`sparsedp.squared_sensitivity` with ``method="structured"``.

What each answer costs (T rounds, m observed rows, nnz(W) non-zeros, b rounds recorded since
the last answer):

=========================  =================================================================
``step(k)``                k sparse products with the n x m block until the chain has mixed
                           (then none)
``upper``, ``epsilon``,    the b pending block rows of the factor and of Y, ``O(m^2 T^2 b)``
``rdp``, ``to_dp_event``   flops reading L once (then ``O(1)``): the running bound (or the
                           interval's upper bound, when :meth:`interval` was asked at this
                           round)
``interval()``             lazy, ``O((m T)^3)``: the engine's sandwich and bound search at this
                           round (about one one-shot query without its propagation); cached
``rounds_within``          ``O(1)`` per round already computed; rounds beyond are computed
                           ahead, 16 at a time (as ``step``, without recording them)
``state_dict``             the pending rows first (a restored copy continues identically)
=========================  =================================================================

Supported: one constant, exactly symmetric W (the structured form) and the views whose
``lambda_min(K_T)`` has the analytic bound (every view of
:mod:`sparsedp.gossip.views` except ``local-dp``, without ``noise_removed``; the v1 forms when W
is diagonally dominant).  Every node's worst case over the graph:
:class:`sparsedp.GraphAccountant`.

**Removed noise** (``noise_removed=True``: the attacker knows, and subtracts, the noise its own
nodes drew, the engine's ``known_noise``) has no analytic ``lambda_min(K_T)`` bound
(:func:`~sparsedp.gossip.certified_solve.analytic_lambda_min_lower_bound` gives none), so no
bordered factor certifies a running bound: the route is lazy, as the one-shot route of
:class:`sparsedp.MFAccountant`.  ``step(k)`` only records rounds (one constant W, symmetric or
not; time-varying gossip is refused); :meth:`~Accountant.interval`, and :attr:`~Accountant.upper`,
``epsilon``, ``rdp``, ``to_dp_event`` once asked, are the one-shot query
``squared_sensitivity(W, target, observers, T, view=view, noise_removed=True, ...)`` at the
recorded T, cached per T, plus the cap T (``"noise_cap"``): the target's own noise columns
are in K and never among the known noise (a target among the observers is refused, and so are
the views whose known rows contain the target), so ``K >= G G^T``, ``M_T = G^T K^{-1} G <= I``
and ``c^T M_T c <= ||c||^2 <= T`` for scalar and vector contributions alike.  Costs (Q(T) one
one-shot query at T):

=========================  =================================================================
``step(k)``                ``O(1)``: the rounds recorded
``upper``, ``epsilon``,    Q(T), cached per T (capped by T)
``rdp``, ``to_dp_event``,
``interval()``
``rounds_within``          ``O(1)`` for the rounds whose cap T is within the budget, else Q(t)
                           at ``O(log T*)`` rounds up to ``2 T*`` (exponential search and
                           bisection: the attacker's knowledge only grows with T)
``state_dict``             ``O(1)``: W, the options and T (the queries are recomputed)
=========================  =================================================================

**Time-varying gossip** (``Accountant(None, target, observers, sigma=..., n=n)``, then
``step(W_t)`` with the matrix of each round) **and one constant non-symmetric W** have no lag
structure: round t's block rows of ``K_T`` and ``G_T`` come from the matrix-free operator
(:mod:`sparsedp.accountant.operator_rows`, their ``gamma_N`` rounding charged) and are bordered
into the same factor, whose ``lambda_min`` bound is the least per-matrix analytic bound of the
matrices recorded (as the one-shot query bounds a sequence).  The interval is the one-shot
query itself on the recorded matrices (:func:`sparsedp.squared_sensitivity`, the matrix-free
path for a sequence, ``gram`` for a constant W), computed lazily, plus the running bound.  The
views that read their observers from W's pattern (``neighbourhood``, ``adaptive-v1``) are
refused for time-varying gossip (the union of the patterns is not known in advance);
``rounds_within`` needs the planned matrices (``schedule=``).  Costs (m observed rows, T rounds,
p the view's power offset):

=========================  =================================================================
``step(W_t)``              the matrix checked, its transpose and ``lambda_min`` bound:
                           ``O(nnz(W_t))``
``upper``, ``epsilon``,    per pending round t: ``2 (t + p)`` sparse products of an n x m
``rdp``, ``to_dp_event``   block (``O(nnz m t)``, ``O(nnz m T^2)`` over T rounds) and the
                           factor's block rows as above
``interval()``             lazy: one one-shot query at T (matrix-free PCG), cached
``rounds_within``          as above; rounds beyond are computed ahead with the schedule's
                           matrices, then forgotten (the factor rewound)
``state_dict``             the recorded matrices (stacked CSR) and the factor
=========================  =================================================================
"""

from __future__ import annotations

import bisect
import dataclasses

import numpy as np
import scipy.sparse as sp

from sparsedp import defaults, validation
from sparsedp.accountant.bordered import BLOCK_ROUNDS, BorderedFactor
from sparsedp.accountant.lags import LagStream, worth_truncating
from sparsedp.accountant.operator_rows import OperatorRows
from sparsedp.accountant.state import (
    exact_from_state,
    gradients_from_state,
    matrix_from_state,
    matrix_state,
)
from sparsedp.errors import ParameterError
from sparsedp.gossip.certified_solve import (
    _lag_sandwich,
    analytic_lambda_min_lower_bound,
    doubly_stochastic_to_rounding,
)
from sparsedp.gossip.inputs import _resolve_exact, gossip_sequence
from sparsedp.gossip.sensitivity import (
    SensitivityResult,
    _assemble,
    _refuse_target_among_observers,
    squared_sensitivity,
)
from sparsedp.gossip.views import VIEW_NOTES, resolve_view
from sparsedp.linalg.certified import gamma
from sparsedp.linalg.moments import LagSequence
from sparsedp.linalg.operators import GossipSystem
from sparsedp.linalg.sign_bounds import Bound, evaluate_bounds
from sparsedp.linalg.stochastic import matrix_facts
from sparsedp.linalg.threads import limit_blas_threads
from sparsedp.linalg.vector_bounds import for_vector_gradients
from sparsedp.privacy import gaussian_epsilon
from sparsedp.privacy.interop import gaussian_dp_event
from sparsedp.reprs import short_repr

# views whose observed rows are read from W's pattern (unknown ahead for time-varying gossip)
PATTERN_VIEWS = ("neighbourhood", "adaptive-v1")
ROUNDS_WITHIN_LIMIT = 4096  # default horizon of rounds_within
LOOKAHEAD_BLOCK = 16  # rounds factored at once when rounds_within computes ahead


class Accountant:
    """Privacy of one target against one attacker, tracked round by round.

    Parameters
    ----------
    W : square sparse matrix or array, or None
        The gossip matrix of every round: non-negative and row-stochastic (e.g.
        :func:`sparsedp.gossip_matrix` with Metropolis weights); exactly symmetric W take
        the lag path, others the operator's rows (module docstring).  ``None``: time-varying
        gossip, each round's matrix given to :meth:`step`.
    target : int
        Row of W whose data is protected.
    observers : int or iterable of int or None
        The attacker's rows (``None`` for the views that fix their own, as in
        :func:`sparsedp.squared_sensitivity`).
    sigma : float
        Noise standard deviation per round, in units of the per-round sensitivity.
    view : str
        The threat model (:data:`sparsedp.gossip.views.VIEWS`, default secure summation).
    exact : {"auto", True, False}
        Exhaustive sign search in :meth:`interval` (as :func:`sparsedp.squared_sensitivity`).
    gradients : ``"scalar"`` or ``"vector"``
        The target's per-round contribution, as :func:`sparsedp.squared_sensitivity`'s
        ``gradients``: a value in [-1, 1] (default) or a vector clipped in norm (the SDP
        value; the running bounds hold for both, the interval adds the SDP bounds).
    backend : str
        Kernel backend, ``"auto" | "numba" | "numpy"``.
    n : int or None
        The number of nodes, for time-varying gossip (``W=None``) only.
    noise_removed : bool
        The attacker knows the noise its own nodes drew (as
        :func:`sparsedp.squared_sensitivity`'s ``noise_removed``): the lazy route of the
        module docstring, one constant W only.

    Raises
    ------
    ParameterError
        bad input, or a W / view the accountant does not offer (module docstring), or
        ``noise_removed`` with time-varying gossip or with a view whose known noise contains
        the target's.

    Examples
    --------
    >>> import networkx as nx, sparsedp
    >>> W = sparsedp.gossip_matrix(nx.cycle_graph(8), scheme="metropolis")
    >>> acc = sparsedp.Accountant(W, target=0, observers=[4], sigma=5.0)
    >>> acc.step(50)
    >>> r = acc.interval()
    >>> one_shot = sparsedp.squared_sensitivity(W, 0, [4], 50)
    >>> abs(r.lower - one_shot.lower) <= 1e-9 * one_shot.lower
    True
    >>> acc.upper >= one_shot.lower
    True
    >>> round(acc.epsilon(1e-5), 4)
    1.5783
    >>> acc.rounds_within(2.0, 1e-5)
    67

    Time-varying gossip: randomized pairwise averaging on the 8-cycle, one edge a round, the
    matrix of each round recorded as it is used:

    >>> import numpy as np
    >>> def pair(t):  # nodes t and t + 1 (mod 8) average, the others keep their value
    ...     i, j = t % 8, (t + 1) % 8
    ...     W = np.eye(8)
    ...     W[[i, i, j, j], [i, j, i, j]] = 0.5
    ...     return W
    >>> acc = sparsedp.Accountant(None, target=0, observers=[4], sigma=1.0, n=8)
    >>> for t in range(24):
    ...     acc.step(pair(t))
    >>> one_shot = sparsedp.squared_sensitivity([pair(t) for t in range(24)], 0, [4], 24)
    >>> acc.interval().lower == one_shot.lower, acc.upper >= one_shot.lower
    (True, True)
    >>> acc.rounds_within(3.0, 1e-5, schedule=pair, limit=200)
    29

    Removed noise (the observer subtracts its own noise), answered by the one-shot query:

    >>> acc = sparsedp.Accountant(W, target=0, observers=[4], sigma=5.0, noise_removed=True)
    >>> acc.step(12)
    >>> one_shot = sparsedp.squared_sensitivity(W, 0, [4], 12, noise_removed=True)
    >>> acc.interval().lower == one_shot.lower, one_shot.lower <= acc.upper <= 12
    (True, True)
    """

    __repr__ = short_repr

    def __init__(self, W, target: int, observers, *, sigma: float,
                 view: str = defaults.VIEW, exact="auto",
                 gradients: str = defaults.GOSSIP_GRADIENTS, backend: str = "auto",
                 n: int | None = None, noise_removed: bool = False):
        self.time_varying = W is None
        if self.time_varying:
            if n is None or isinstance(n, bool) or not isinstance(n, (int, np.integer)) \
                    or n < 1:
                raise ParameterError("time-varying gossip (W=None) needs the number of nodes "
                                     f"n >= 1, got n={n!r}")
            n = int(n)
            if view in PATTERN_VIEWS:
                raise ParameterError(
                    f"view {view!r} reads its observers from the pattern of every round's W, "
                    "which is not known in advance: not offered for time-varying gossip "
                    "(use one of the other views, or squared_sensitivity per round)")
            self.precision_notes: list[str] = []
            self.W = None
            pattern = sp.csr_matrix((n, n))
        else:
            if n is not None:
                raise ParameterError("n is for time-varying gossip (W=None); a W gives its own")
            Ws, self.precision_notes = gossip_sequence(W, 1)
            if len(Ws) != 1:
                raise ParameterError(
                    "the accountant takes one constant gossip matrix W, or W=None and n for "
                    "time-varying gossip recorded with step(W_t) every round")
            self.W = pattern = Ws[0]
            n = pattern.shape[0]
        self.n = n
        self.target = validation.node_index(target, n, "target")
        _refuse_target_among_observers(self.target, observers)
        self.observers = None if observers is None else validation.node_set(observers, n,
                                                                             "observers")
        self.sigma = validation.sigma(sigma)
        self.view, self.exact, self.backend = view, exact, backend
        self.gradients = gradients
        _resolve_exact(exact, 1, gradients)  # checks both values
        self.model = resolve_view(view, pattern, self.target, self.observers, noise_removed)
        if self.model.observes_everything:
            raise ParameterError("view 'local-dp' needs no accountant: Delta_T^2 = T exactly")
        self.noise_removed = self.model.noise_removed
        if self.noise_removed and self.time_varying:
            raise ParameterError(
                "noise_removed is offered for one constant W (the one-shot query at the "
                "recorded T); for time-varying gossip call squared_sensitivity(Ws, ..., "
                "noise_removed=True) on the recorded matrices")
        if self.target in self.model.known_noise:
            raise ParameterError(
                f"view {view!r} with noise_removed: the known noise is that of the observed "
                "rows, the target among them, so the target is seen without noise and "
                "Delta_T^2 is unbounded (squared_sensitivity answers inf): not offered")
        self.offset = self.model.power_offset
        self.rounds = 0
        self._interval: SensitivityResult | None = None
        self._queries: dict[int, SensitivityResult] = {}  # the lazy route's, per T
        if self.noise_removed:
            return  # the lazy route streams nothing (module docstring)
        self._G_ones2 = 0.0  # ||G^ 1||^2 of the operator rows factored (their G charge)
        if self.W is not None and matrix_facts(self.W).symmetric:  # the lag structure
            self._operator: OperatorRows | None = None
            self.lambda_lb = view_lambda_min(self.W, self.model)
            self._lags = LagStream(self.W, self.model.observers, self.target, backend,
                                   truncate=doubly_stochastic_to_rounding(self.W)
                                   and worth_truncating(self.W, self.model.observers.size))
        else:  # time-varying or non-symmetric: the operator's rows
            self._operator = OperatorRows(self.model.observers, self.target, self.offset,
                                          constant=self.W)
            # the least per-matrix analytic bound of the matrices so far (as the one-shot
            # query bounds a sequence); set by the first step(W_t) when time-varying
            self.lambda_lb = (np.inf if self.W is None
                              else view_lambda_min(self.W, self.model))
        self._factor = BorderedFactor(self.model.observers.size, self.lambda_lb)

    # -- recording rounds ------------------------------------------------------------------

    @limit_blas_threads
    def step(self, k=1) -> None:
        """Record rounds: ``step(k)`` records ``k >= 1`` rounds of the constant W (their lags
        now, the factor's rows when an answer needs them, several rounds at once,
        :meth:`_compute_to`); ``step(W_t)``, on a time-varying accountant (``W=None``),
        records one round mixed with the gossip matrix ``W_t`` (checked as
        :func:`sparsedp.squared_sensitivity` checks its matrices).  Mixing the two is refused
        (ParameterError): a constant-W accountant takes no matrix, a time-varying one no
        count."""
        if sp.issparse(k) or np.ndim(k) == 2:
            self._record(k)
            return
        if self.time_varying:
            raise ParameterError("a time-varying accountant (W=None) records a round with "
                                 "step(W_t), the gossip matrix of that round, not a count")
        k = validation.rounds(k)
        if not self.noise_removed and self._operator is None:
            self._lags.extend_to(self.rounds + k + self.offset - 1)
        self.rounds += k
        self._interval = None

    def _record(self, W) -> None:
        """``step(W_t)``: one round of time-varying gossip."""
        if not self.time_varying:
            raise ParameterError(
                "this accountant was created for one constant W: step(k) records k rounds "
                "of it; for time-varying gossip create Accountant(None, ..., n=n) and call "
                "step(W_t) every round")
        Ws, _ = gossip_sequence(W, 1)  # the interval's one-shot query gives the notes
        if len(Ws) != 1:
            raise ParameterError("step(W_t) takes one gossip matrix (the round's)")
        if Ws[0].shape != (self.n, self.n):
            raise ParameterError(f"W_{self.rounds} has shape {Ws[0].shape}, the accountant's "
                                 f"n = {self.n}")
        self.lambda_lb = min(self.lambda_lb, view_lambda_min(Ws[0], self.model))
        self._rows.record(Ws[0])
        self.rounds += 1
        self._interval = None

    @property
    def _rows(self) -> OperatorRows:
        """The operator's rows (time-varying or non-symmetric W only)."""
        if self._operator is None:
            raise TypeError("a constant symmetric W takes the lag path: no operator rows")
        return self._operator

    def _compute_to(self, T: int) -> None:
        """Lags (or operator rows) and factor for T rounds (computed ahead of the recorded
        rounds if need be), the rounds not yet factored bordered in blocks of up to
        ``BLOCK_ROUNDS``."""
        if T <= self._factor.rounds:
            return
        if self._operator is not None:
            self._factor_operator_rows(T)
            return
        self._lags.extend_to(T + self.offset - 1)
        mu, a = self._lags.mu, self._lags.a
        for first in range(self._factor.rounds, T, BLOCK_ROUNDS):
            last = min(T, first + BLOCK_ROUNDS)
            truncations = [self._lags.truncation_error(t, self.offset)
                           for t in range(first + 1, last + 1)]
            self._factor.extend(mu, a, self.offset, last - first, truncations)

    def _factor_operator_rows(self, T: int) -> None:
        """:meth:`_compute_to` from the operator's rows: their rounding ``gamma_N`` charged to
        K by the factor and to G here, ``|| |G - G^| 1 ||_2 <= r / (1 - r) ||G^ 1||_2``
        (``G >= 0``; the rows of G never change, so ``||G^ 1||^2`` is a running sum)."""
        operator = self._rows
        self._factor.lambda_lb = self.lambda_lb
        for first in range(self._factor.rounds, T, BLOCK_ROUNDS):
            rows = [operator.rows(t) for t in range(first, min(T, first + BLOCK_ROUNDS))]
            rounding = max(r for _, _, r in rows)
            last = first + len(rows)
            charge = rounding / (1.0 - rounding) * (1 + gamma((self._factor.m + 2) * last + 4))
            G_errors = []
            for _, G_row, _ in rows:
                self._G_ones2 += float((G_row.sum(axis=1) ** 2).sum())
                G_errors.append(charge * np.sqrt(self._G_ones2))
            self._factor.extend_rows([K for K, _, _ in rows], [G for _, G, _ in rows],
                                     rounding, np.array(G_errors))

    # -- answers ---------------------------------------------------------------------------

    @property
    def upper(self) -> float:
        """The best certified upper bound on ``Delta_T^2`` at the recorded T (0 at T = 0)."""
        if self.rounds == 0:
            return 0.0
        if self.noise_removed:
            return self._noise_removed_query(self.rounds).upper
        self._compute_to(self.rounds)
        bound = float(self._factor.history[self.rounds - 1])
        if self._interval is not None:
            bound = min(bound, self._interval.upper)
        return bound

    def epsilon(self, delta: float) -> float:
        """Tight epsilon of the T rounds recorded at this ``delta`` (one Gaussian mechanism
        with squared sensitivity :attr:`upper` and noise ``sigma``)."""
        return gaussian_epsilon(self.upper, self.sigma, validation.probability_delta(delta))

    def rdp(self, alpha: float) -> float:
        """Renyi DP of order ``alpha > 1``: ``alpha upper / (2 sigma^2)``."""
        alpha = validation.real("alpha", alpha)
        if not alpha > 1:
            raise ParameterError(f"the Renyi order alpha must be > 1, got {alpha!r}")
        return alpha * self.upper / (2.0 * self.sigma**2)

    def to_dp_event(self):
        """The T rounds so far as one ``dp_accounting`` event (certified upper bound;
        :func:`sparsedp.privacy.interop.gaussian_dp_event`): compose it with other events.

        Examples
        --------
        A gossip phase of 40 rounds, then a second, independent run of it, then a release
        by a Gaussian mechanism of noise multiplier 8 (e.g. a public-data fine-tuning step
        that reads the private data once), composed by ``dp_accounting``'s PLD accountant:

        >>> import dp_accounting, networkx as nx, sparsedp
        >>> from dp_accounting.pld import pld_privacy_accountant
        >>> W = sparsedp.gossip_matrix(nx.cycle_graph(8))
        >>> acc = sparsedp.Accountant(W, target=0, observers=[3], sigma=4.0)
        >>> acc.step(40)
        >>> pld = pld_privacy_accountant.PLDAccountant()
        >>> _ = pld.compose(dp_accounting.SelfComposedDpEvent(acc.to_dp_event(), 2))
        >>> _ = pld.compose(dp_accounting.GaussianDpEvent(noise_multiplier=8.0))
        >>> round(pld.get_epsilon(1e-5), 2)
        2.6
        """
        return gaussian_dp_event(self.upper, self.sigma)

    @limit_blas_threads
    def interval(self) -> SensitivityResult:
        """Every bound on ``Delta_T^2`` at the recorded T, with kinds, as
        :func:`sparsedp.squared_sensitivity` (``method="structured"``; for time-varying or
        non-symmetric W the query itself on the recorded matrices) gives them, plus the
        running bound (``"incremental_rows"``); lazy and cached until the next step."""
        if self.rounds == 0:
            raise ParameterError("no rounds recorded yet: call step() first")
        if self.noise_removed:
            return self._noise_removed_query(self.rounds)
        if self._interval is None:
            self._interval = self._evaluate(self.rounds)
        return self._interval

    @limit_blas_threads
    def rounds_within(self, epsilon: float, delta: float, *,
                      limit: int = ROUNDS_WITHIN_LIMIT, schedule=None) -> int:
        """The largest number of rounds T (counted from the start, at most ``limit``) whose
        running certified bound keeps epsilon at ``delta`` within ``epsilon``; rounds beyond
        those recorded are computed ahead (with removed noise: the lazy route's certified
        answers, :meth:`_rounds_within_by_queries`).  ``limit`` is returned when the budget
        lasts that long.

        Time-varying gossip needs the planned matrices of the rounds ahead: ``schedule``, a
        sequence whose item i is the matrix of round ``rounds + i``, or a callable ``t ->
        W_t`` (t counted from the start); the answer is then at most ``rounds +
        len(schedule)``.  They are not recorded (the next ``step(W_t)`` may differ).  A
        constant W takes no schedule (ParameterError either way)."""
        epsilon = validation.nonnegative("epsilon", epsilon)
        delta = validation.probability_delta(delta)
        limit = validation.rounds(limit)
        if self.time_varying and schedule is None:
            raise ParameterError("time-varying gossip: rounds_within needs the planned "
                                 "matrices of the rounds ahead (schedule=[W_T, W_(T+1), ...] "
                                 "or a callable t -> W_t)")
        if not self.time_varying and schedule is not None:
            raise ParameterError("schedule is for time-varying gossip (W=None); this "
                                 "accountant's W is constant")
        if self.noise_removed:
            return self._rounds_within_by_queries(epsilon, delta, limit)

        def within(t: int) -> bool:
            return gaussian_epsilon(float(self._factor.history[t - 1]), self.sigma,
                                    delta) <= epsilon

        self._compute_to(min(self.rounds, limit))
        ahead = self._planned_rounds(schedule) if self.time_varying else None
        mark = (self._factor.snapshot(), self.lambda_lb, self._G_ones2)
        try:
            while self._factor.rounds < limit and (self._factor.rounds == 0
                                                   or within(self._factor.rounds)):
                last = min(limit, self._factor.rounds + LOOKAHEAD_BLOCK)
                if ahead is not None:
                    last = ahead(last)
                    if last <= self._factor.rounds:
                        break  # the schedule ends
                self._compute_to(last)
            horizon = min(self._factor.rounds, limit)
            # the bound is non-decreasing in T: the first round over budget
            first_over = bisect.bisect_left(range(1, horizon + 1), True,
                                            key=lambda t: not within(t))
        finally:
            if ahead is not None:  # forget the planned rounds
                self._factor.rewind(mark[0])
                self.lambda_lb, self._G_ones2 = mark[1], mark[2]
                self._rows.forget(self.rounds)
        return first_over

    def _rounds_within_by_queries(self, epsilon: float, delta: float, limit: int) -> int:
        """:meth:`rounds_within` on the lazy route (removed noise): exponential search and
        bisection over the certified answers, the cap T deciding without a query where it is
        within the budget (the attacker's knowledge only grows with T)."""

        def within(t: int) -> bool:
            return (gaussian_epsilon(float(t), self.sigma, delta) <= epsilon
                    or gaussian_epsilon(self._noise_removed_query(t).upper, self.sigma,
                                        delta) <= epsilon)

        good, bad = 0, 1  # within(good) (0: vacuously), not within(bad) unless bad > limit
        while bad <= limit and within(bad):
            good, bad = bad, 2 * bad
        bad = min(bad, limit + 1)
        return good + bisect.bisect_left(range(good + 1, bad), True,
                                         key=lambda t: not within(t))

    def _noise_removed_query(self, T: int) -> SensitivityResult:
        """The lazy route's answer at T: the one-shot ``noise_removed=True`` query, plus the cap
        ``Delta_T^2 <= T`` (module docstring); cached per T."""
        if T not in self._queries:
            one_shot = squared_sensitivity(self.W, self.target, self.observers, T,
                                           view=self.view, noise_removed=True,
                                           exact=self.exact, gradients=self.gradients,
                                           backend=self.backend)
            cap = Bound("noise_cap", float(T), "certified upper",
                        "c^T M_T c <= ||c||^2 <= T: the target's noise is in K, M_T <= I")
            self._queries[T] = _with_upper_bound(one_shot, cap)
        return self._queries[T]

    def _planned_rounds(self, schedule):
        """``ahead(T)``: the planned matrices of rounds up to T recorded (checked, their
        lambda bound taken), and how many rounds then have one (fewer at the schedule's
        end)."""
        planned = schedule if callable(schedule) else list(schedule)

        def ahead(T: int) -> int:
            operator = self._rows
            while len(operator.matrices) < T:
                t = len(operator.matrices)
                if callable(planned):
                    W = planned(t)
                elif t - self.rounds < len(planned):
                    W = planned[t - self.rounds]
                else:
                    return t
                Ws, _ = gossip_sequence(W, 1)
                if Ws[0].shape != (self.n, self.n):
                    raise ParameterError(f"the planned W_{t} has shape {Ws[0].shape}, the "
                                         f"accountant's n = {self.n}")
                self.lambda_lb = min(self.lambda_lb, view_lambda_min(Ws[0], self.model))
                operator.record(Ws[0])
            return T

        return ahead

    def _evaluate(self, T: int) -> SensitivityResult:
        self._compute_to(T)
        running = Bound("incremental_rows", float(self._factor.history[T - 1]),
                        "certified upper", "sum_r ||(L^{-1} G_T)_r||_1^2 with the "
                        "factorisation's rounding charged (sparsedp.accountant.bordered)")
        if self._operator is not None:  # the one-shot query at T, plus the running bound
            one_shot = squared_sensitivity(self._rows.sequence(T), self.target,
                                           self.observers, T, view=self.view,
                                           exact=self.exact, gradients=self.gradients,
                                           backend=self.backend)
            return _with_upper_bound(one_shot, running)
        return lag_interval(self._lags.sequence(T, self.offset), T, self.target, self.model,
                            self.lambda_lb, exact=self.exact, gradients=self.gradients,
                            backend=self.backend,
                            notes=self.precision_notes, extra=(running,))

    # -- checkpoints -----------------------------------------------------------------------

    def state_dict(self) -> dict:
        """Everything needed to continue, as numpy arrays, numbers and strings (no pickle;
        :func:`sparsedp.accountant.checkpoint.save` writes it to an ``.npz`` file); for
        time-varying gossip the matrices recorded so far, stacked (``n rounds x n``)."""
        if self.time_varying:
            recorded = self._rows.matrices
            W = sp.vstack(recorded, format="csr") if recorded else sp.csr_matrix((0, self.n))
        else:
            W = sp.csr_matrix(self.W)
        state = {
            **matrix_state(W), "target": self.target,
            "observers": (np.zeros(0, dtype=np.int64) if self.observers is None
                          else self.observers),
            "observers_given": self.observers is not None, "sigma": self.sigma,
            "view": self.view, "exact": str(self.exact), "gradients": self.gradients,
            "backend": self.backend,
            "rounds": self.rounds, "noise_removed": self.noise_removed,
        }
        if self.noise_removed:
            return state  # the lazy route: the queries are recomputed
        self._compute_to(self.rounds)  # no pending rows: the copy continues as the original
        if self._operator is None:
            state.update(self._lags.state())
        else:
            state.update(time_varying=self.time_varying, n=self.n, G_ones2=self._G_ones2)
        state.update(self._factor.state())
        return state

    @classmethod
    def from_state(cls, state: dict) -> Accountant:
        """The accountant of :meth:`state_dict` (plain arrays, e.g. loaded from ``.npz``):
        it continues with answers identical to the original's."""
        W = matrix_from_state(state)
        exact = exact_from_state(state)
        observers = (np.asarray(state["observers"]).tolist()
                     if bool(state["observers_given"]) else None)
        time_varying = bool(state.get("time_varying", False))
        n = int(state["n"]) if time_varying else W.shape[0]
        accountant = cls(None if time_varying else W, int(state["target"]), observers,
                         sigma=float(state["sigma"]), view=str(state["view"]), exact=exact,
                         gradients=gradients_from_state(state), backend=str(state["backend"]),
                         n=n if time_varying else None,
                         noise_removed=bool(state.get("noise_removed", False)))
        if accountant.noise_removed:
            accountant.rounds = int(state["rounds"])
            return accountant
        if time_varying:
            for t in range(int(state["rounds"])):
                accountant.step(W[t * n:(t + 1) * n])
        accountant._factor.restore(state)
        if accountant._operator is None:
            accountant._lags.restore(state)
        else:
            accountant._G_ones2 = float(state["G_ones2"])
        accountant.rounds = int(state["rounds"])
        return accountant


def _with_upper_bound(result: SensitivityResult, bound: Bound) -> SensitivityResult:
    """``result`` with one more certified upper bound (its upper bound the least of both)."""
    upper = min(result.upper, bound.value)
    return dataclasses.replace(
        result, bounds=result.bounds + (bound,), upper=upper,
        exact_error=None if result.exact is None else float(upper - result.exact))


def view_lambda_min(W, model) -> float:
    """The analytic lower bound on ``lambda_min(K_T)`` of a view's observed rows (every T),
    which the accountants' running bounds need; ParameterError where the view has none."""
    system = GossipSystem([W], model.observers, 1, power_offset=model.power_offset)
    lambda_lb = analytic_lambda_min_lower_bound(system)
    if not lambda_lb:
        raise ParameterError(f"view {model.view!r} has no analytic lambda_min(K_T) bound for "
                             "this W (not diagonally dominant): not offered by the accountant")
    return float(lambda_lb)


def lag_interval(lags: LagSequence, T: int, target: int, model, lambda_lb: float,
                 *, exact="auto", gradients: str = defaults.GOSSIP_GRADIENTS,
                 backend: str = "auto", notes=(), extra=()) -> SensitivityResult:
    """Every bound on ``Delta_T^2`` of one (target, view) pair from its unshifted lags
    (``T + p`` rounds, p the view's power offset; truncated ones carry their error bounds), as
    :func:`sparsedp.squared_sensitivity` (``method="structured"``) gives them: the engine's
    certified sandwich and bound search, plus the ``extra`` certified bounds
    (:class:`sparsedp.linalg.sign_bounds.Bound`; bounds on the vector value too, as the
    running bounds are), read for ``gradients`` as the one-shot query reads them.  Shared by
    the accountants of a pair and of the tracked sets (:mod:`sparsedp.accountant.targets`)."""
    p = model.power_offset
    if p:
        lags = lags.shifted(p, T)
    sandwich, _ = _lag_sandwich(lags, T, lambda_lb, progress=False)  # inside training loops
    bounds, signs = evaluate_bounds(sandwich, _resolve_exact(exact, T, gradients), backend)
    if gradients == "vector":
        bounds = for_vector_gradients(bounds, sandwich, backend)
    bounds.extend(extra)
    notes = ([VIEW_NOTES[model.view]] if model.view in VIEW_NOTES else []) + list(notes)
    info = {"solver": "block-bordered Cholesky of K_T from the lags (incremental); "
                      "interval from the engine's dense sandwich",
            "lambda_min_lower_bound": lambda_lb, "sparse_products": lags.products,
            "upper_certified": True}
    return _assemble(target, model, T, "accountant", sandwich, bounds, signs, info, notes)
