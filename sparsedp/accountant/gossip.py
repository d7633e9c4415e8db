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
is diagonally dominant).  Time-varying or non-symmetric W and removed noise are not offered:
ParameterError.  Every node's worst case over the graph: :class:`sparsedp.GraphAccountant`.
"""

from __future__ import annotations

import bisect

import numpy as np
import scipy.sparse as sp

from sparsedp import defaults, validation
from sparsedp.accountant.bordered import BLOCK_ROUNDS, BorderedFactor
from sparsedp.accountant.lags import LagStream, worth_truncating
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
)
from sparsedp.gossip.views import VIEW_NOTES, resolve_view
from sparsedp.linalg.moments import LagSequence
from sparsedp.linalg.operators import GossipSystem
from sparsedp.linalg.sign_bounds import Bound, evaluate_bounds
from sparsedp.linalg.stochastic import matrix_facts
from sparsedp.linalg.threads import limit_blas_threads
from sparsedp.linalg.vector_bounds import for_vector_gradients
from sparsedp.privacy import gaussian_epsilon
from sparsedp.privacy.interop import gaussian_dp_event
from sparsedp.reprs import short_repr

ROUNDS_WITHIN_LIMIT = 4096  # default horizon of rounds_within
LOOKAHEAD_BLOCK = 16  # rounds factored at once when rounds_within computes ahead


class Accountant:
    """Privacy of one target against one attacker, tracked round by round.

    Parameters
    ----------
    W : square sparse matrix or array
        The gossip matrix: non-negative, row-stochastic and exactly symmetric (e.g.
        :func:`sparsedp.gossip_matrix` with Metropolis weights).
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

    Raises
    ------
    ParameterError
        bad input, or a W / view the accountant does not offer (module docstring).

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
    """

    __repr__ = short_repr

    def __init__(self, W, target: int, observers, *, sigma: float,
                 view: str = defaults.VIEW, exact="auto",
                 gradients: str = defaults.GOSSIP_GRADIENTS, backend: str = "auto"):
        Ws, self.precision_notes = gossip_sequence(W, 1)
        if len(Ws) != 1:
            raise ParameterError("the accountant needs one constant gossip matrix W")
        self.W = W = Ws[0]
        if not matrix_facts(W).symmetric:
            raise ParameterError("the accountant needs an exactly symmetric W (the structured "
                                 "form of K_T); use sparsedp.squared_sensitivity per round")
        n = W.shape[0]
        self.target = validation.node_index(target, n, "target")
        _refuse_target_among_observers(self.target, observers)
        self.observers = None if observers is None else validation.node_set(observers, n,
                                                                             "observers")
        self.sigma = validation.sigma(sigma)
        self.view, self.exact, self.backend = view, exact, backend
        self.gradients = gradients
        _resolve_exact(exact, 1, gradients)  # checks both values
        self.model = resolve_view(view, W, self.target, self.observers, False)
        if self.model.observes_everything:
            raise ParameterError("view 'local-dp' needs no accountant: Delta_T^2 = T exactly")
        self.lambda_lb = view_lambda_min(W, self.model)
        self.offset = self.model.power_offset
        self.rounds = 0
        self._lags = LagStream(W, self.model.observers, self.target, backend,
                               truncate=doubly_stochastic_to_rounding(W)
                               and worth_truncating(W, self.model.observers.size))
        self._factor = BorderedFactor(self.model.observers.size, self.lambda_lb)
        self._interval: SensitivityResult | None = None

    # -- recording rounds ------------------------------------------------------------------

    @limit_blas_threads
    def step(self, k: int = 1) -> None:
        """Record ``k`` more rounds (``k >= 1``): their lags now, the factor's rows when an
        answer needs them (several rounds at once, :meth:`_compute_to`)."""
        k = validation.rounds(k)
        self._lags.extend_to(self.rounds + k + self.offset - 1)
        self.rounds += k
        self._interval = None

    def _compute_to(self, T: int) -> None:
        """Lags and factor for T rounds (computed ahead of the recorded rounds if need be),
        the rounds not yet factored bordered in blocks of up to ``BLOCK_ROUNDS``."""
        if T <= self._factor.rounds:
            return
        self._lags.extend_to(T + self.offset - 1)
        mu, a = self._lags.mu, self._lags.a
        for first in range(self._factor.rounds, T, BLOCK_ROUNDS):
            last = min(T, first + BLOCK_ROUNDS)
            truncations = [self._lags.truncation_error(t, self.offset)
                           for t in range(first + 1, last + 1)]
            self._factor.extend(mu, a, self.offset, last - first, truncations)

    # -- answers ---------------------------------------------------------------------------

    @property
    def upper(self) -> float:
        """The best certified upper bound on ``Delta_T^2`` at the recorded T (0 at T = 0)."""
        if self.rounds == 0:
            return 0.0
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
        :func:`sparsedp.squared_sensitivity` (``method="structured"``) gives them, plus the
        running bound (``"incremental_rows"``); lazy and cached until the next step."""
        if self.rounds == 0:
            raise ParameterError("no rounds recorded yet: call step() first")
        if self._interval is None:
            self._interval = self._evaluate(self.rounds)
        return self._interval

    @limit_blas_threads
    def rounds_within(self, epsilon: float, delta: float, *,
                      limit: int = ROUNDS_WITHIN_LIMIT) -> int:
        """The largest number of rounds T (counted from the start, at most ``limit``) whose
        running certified bound keeps epsilon at ``delta`` within ``epsilon``; rounds beyond
        those recorded are computed ahead.  ``limit`` is returned when the budget lasts that
        long."""
        epsilon = validation.nonnegative("epsilon", epsilon)
        delta = validation.probability_delta(delta)
        limit = validation.rounds(limit)

        def within(t: int) -> bool:
            return gaussian_epsilon(float(self._factor.history[t - 1]), self.sigma,
                                    delta) <= epsilon

        self._compute_to(min(self.rounds, limit))
        while self._factor.rounds < limit and (self._factor.rounds == 0
                                               or within(self._factor.rounds)):
            self._compute_to(min(limit, self._factor.rounds + LOOKAHEAD_BLOCK))
        horizon = min(self._factor.rounds, limit)
        # the bound is non-decreasing in T: the first round over budget
        first_over = bisect.bisect_left(range(1, horizon + 1), True,
                                        key=lambda t: not within(t))
        return first_over

    def _evaluate(self, T: int) -> SensitivityResult:
        self._compute_to(T)
        running = Bound("incremental_rows", float(self._factor.history[T - 1]),
                        "certified upper", "sum_r ||(L^{-1} G_T)_r||_1^2 with the "
                        "factorisation's rounding charged (sparsedp.accountant.bordered)")
        return lag_interval(self._lags.sequence(T, self.offset), T, self.target, self.model,
                            self.lambda_lb, exact=self.exact, gradients=self.gradients,
                            backend=self.backend,
                            notes=self.precision_notes, extra=(running,))

    # -- checkpoints -----------------------------------------------------------------------

    def state_dict(self) -> dict:
        """Everything needed to continue, as numpy arrays, numbers and strings (no pickle;
        :func:`sparsedp.accountant.checkpoint.save` writes it to an ``.npz`` file)."""
        W = sp.csr_matrix(self.W)
        state = {
            **matrix_state(W), "target": self.target,
            "observers": (np.zeros(0, dtype=np.int64) if self.observers is None
                          else self.observers),
            "observers_given": self.observers is not None, "sigma": self.sigma,
            "view": self.view, "exact": str(self.exact), "gradients": self.gradients,
            "backend": self.backend,
            "rounds": self.rounds,
        }
        self._compute_to(self.rounds)  # no pending rows: the copy continues as the original
        state.update(self._lags.state())
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
        accountant = cls(W, int(state["target"]), observers, sigma=float(state["sigma"]),
                         view=str(state["view"]), exact=exact,
                         gradients=gradients_from_state(state), backend=str(state["backend"]))
        accountant._lags.restore(state)
        accountant._factor.restore(state)
        accountant.rounds = int(state["rounds"])
        return accountant


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
    sandwich, _ = _lag_sandwich(lags, T, lambda_lb)
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
