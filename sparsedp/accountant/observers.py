"""An online accountant for gossip averaging: one target against every single-node attacker,
stepped every round (issue 34): the target's worst-case epsilon.

For target j and attacker node a, the observed rows are ``S = e_a^T`` (``secure-summation``,
and ``secure-summation-v1`` one power of W later) or the rows of a's closed neighbourhood
N(a) (``neighbourhood``), and the lags of the pair are ``a_l = S W^l e_j`` (W symmetric):
entries of one vector ``x_l = W^l e_j``, one sparse product per round for every attacker at
once.  So every attacker's running box bound (:class:`sparsedp.accountant.sets.RunningBox`,
as the one-shot worst case prunes with it, :mod:`sparsedp.maps.worst_case`) costs ``O(n)`` a
round: per node r the running sums of ``b_t[r] = sum_(l <= t) x_(l+p)[r]`` and of their
squares, summed over N(a) on request in the neighbourhood view (``O(nnz(W))``).  The
attackers' ``K_T`` differ, so the tight running bound of an attacker is the pair's own
accountant (:class:`sparsedp.accountant.gossip.Accountant`: its lags and bordered factor,
m = 1 or ``|N(a)|`` observed rows), stepped with this one for the ``tight_observers`` (by
default every attacker), and created on request for the others by
:meth:`ObserversAccountant.interval`.  In the neighbourhood view a neighbour a of the target
observes the target's own messages: its pair is answered as the one-shot query answers it
(finite; only ``a = j`` is refused), its box bound is then the cap T.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from sparsedp import defaults, validation
from sparsedp.accountant.gossip import (
    LOOKAHEAD_BLOCK,
    ROUNDS_WITHIN_LIMIT,
    Accountant,
    view_lambda_min,
)
from sparsedp.accountant.lags import LagStream
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
from sparsedp.linalg.threads import limit_blas_threads
from sparsedp.privacy import gaussian_epsilon
from sparsedp.privacy.interop import gaussian_dp_event
from sparsedp.reprs import short_repr


class ObserversAccountant:
    """Privacy of one target against every single-node attacker, tracked round by round.

    Parameters
    ----------
    W : square sparse matrix or array
        The gossip matrix: non-negative, row-stochastic and exactly symmetric.
    target : int
        Row of W whose data is protected.
    sigma : float
        Noise standard deviation per round, in units of the per-round sensitivity.
    view : str
        What an attacker node a observes, as :func:`sparsedp.squared_sensitivity` with
        ``observers=[a]``: ``"secure-summation"`` (default: its own aggregated messages, the
        view of the map and the worst case), ``"neighbourhood"`` (the plain messages of its
        closed neighbourhood) or ``"secure-summation-v1"`` (needs a diagonally dominant W).
    tight_observers : iterable of int or None
        Attackers whose pair accountant is stepped with this one (the tight running bound;
        memory ``16 (m T)^2`` bytes and ``O((m T)^2)`` flops a round each, m = 1 or, in the
        neighbourhood view, ``|N(a)|``); ``None``: every node but the target; ``[]``: none
        (the box bound only).
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
        Per attacker node (row of W): a certified upper bound on ``Delta_T^2``; NaN at the
        target.

    Raises
    ------
    ParameterError
        A W that is not one exactly symmetric gossip matrix, a tight observer that is the
        target, or a view without an attacker node (``adaptive-v1``, ``target-v1``:
        observed rows fixed by the target; ``local-dp``: ``Delta_T^2 = T``) or without an
        analytic ``lambda_min(K_T)`` bound for this W.

    Notes
    -----
    What each answer costs (T rounds, n nodes, m observed rows of an attacker: 1, or
    ``|N(a)|`` in the neighbourhood view):

    ============================  ==============================================================
    ``step(k)``                   per round one sparse product with a vector, ``O(n)`` for the
                                  box bounds, and each tight attacker's pair step (one sparse
                                  product with its n x m block)
    ``upper``, ``worst_upper``,   ``O(n)`` (neighbourhood view: ``O(nnz(W))``, the sums over
    ``epsilon``, ``epsilons``     N(a)); ``epsilons`` one ``gaussian_epsilon`` per distinct
                                  bound, ``epsilon`` (the worst attacker) one; first the b
                                  rounds recorded since the last answer (each tight pair's
                                  factor rows, ``O(m^2 T^2 b)`` in blocks, and ``O(n b)``)
    ``interval(observers)``       lazy, ``O((m T)^3)`` per attacker asked (plus, for one not
                                  tight, its pair's steps since it was last asked); cached
    ``rounds_within``             ``O(1)`` per round already computed; rounds beyond are computed
                                  ahead, 16 at a time (as ``step``, without recording them)
    ============================  ==============================================================

    Examples
    --------
    >>> import networkx as nx, numpy as np, sparsedp
    >>> W = sparsedp.gossip_matrix(nx.cycle_graph(8))
    >>> acc = sparsedp.ObserversAccountant(W, 0, sigma=4.0)
    >>> acc.step(20)
    >>> r = acc.interval([1, 4])
    >>> one_shot = sparsedp.squared_sensitivity(W, 0, [1], 20, method="structured")
    >>> bool(abs(r.lower[0] - one_shot.lower) <= 1e-9 * one_shot.lower <= acc.upper[1])
    True
    >>> int(np.nanargmax(acc.upper)) in (1, 7)  # a neighbour is the worst observer
    True

    The neighbourhood view: attacker 2 reads the messages of nodes 1, 2 and 3:

    >>> acc = sparsedp.ObserversAccountant(W, 0, sigma=4.0, view="neighbourhood",
    ...                                    tight_observers=[4])
    >>> acc.step(20)
    >>> r = acc.interval([2])
    >>> one_shot = sparsedp.squared_sensitivity(W, 0, [2], 20, view="neighbourhood")
    >>> bool(abs(r.lower[0] - one_shot.lower) <= 1e-9 * one_shot.lower <= acc.upper[2])
    True
    """

    __repr__ = short_repr

    def __init__(self, W, target: int, *, sigma: float, view: str = defaults.VIEW,
                 tight_observers=None, exact="auto",
                 gradients: str = defaults.GOSSIP_GRADIENTS, backend: str = "auto"):
        self.W, self.precision_notes = checked_symmetric(W)
        n = self.W.shape[0]
        self.view = attacker_view(view, "ObserversAccountant")
        self.target = validation.node_index(target, n, "target")
        self.sigma = validation.sigma(sigma)
        self.exact, self.backend, self.gradients = exact, backend, gradients
        _resolve_exact(exact, 1, gradients)  # checks both values
        if tight_observers is None:
            tight = np.setdiff1d(np.arange(n), [self.target])
        elif np.size(tight_observers) == 0:
            tight = np.zeros(0, dtype=np.int64)
        else:
            tight = validation.node_set(tight_observers, n, "tight_observers")
            if self.target in tight.tolist():
                raise ParameterError("a tight observer is the target itself")
        self.tight_observers = tight
        # the view's analytic lambda_min(K_T) bound holds for every observed set: one for all
        model = resolve_view(self.view, self.W, self.target, np.array([self.target]), False)
        self.lambda_lb = view_lambda_min(self.W, model)
        self.offset = model.power_offset
        self.rounds = 0
        self._lags = LagStream(self.W, np.array([self.target]), self.target, backend)
        self._box = RunningBox(n, 1, self.lambda_lb, lag_depth(self.W), self.offset)
        self._neighbourhoods = (closed_neighbourhoods(self.W) if self.view == "neighbourhood"
                                else None)
        self._pairs = {a: self._pair(a) for a in tight.tolist()}
        self._worst = np.zeros(0)  # the largest bound over the observers after each round
        self._intervals: dict[int, float] = {}  # observer -> interval upper at this round

    def _pair(self, observer: int) -> Accountant:
        return Accountant(self.W, self.target, [observer], sigma=self.sigma, view=self.view,
                          exact=self.exact, gradients=self.gradients, backend=self.backend)

    # -- recording rounds ------------------------------------------------------------------

    @limit_blas_threads
    def step(self, k: int = 1) -> None:
        """Record ``k`` more rounds (``k >= 1``): the target's vector and the box sums now,
        the tight observers' factor rows when an answer needs them (their pairs' blocks)."""
        k = validation.rounds(k)
        self._record_to(self.rounds + k)
        self.rounds += k
        for a in self.tight_observers.tolist():  # lags only: the pairs are lazy too
            self._pairs[a].step(self.rounds - self._pairs[a].rounds)
        self._intervals = {}

    def _compute_to(self, T: int) -> None:
        """The target's vector and the bounds for T rounds (ahead of the recorded rounds if
        need be)."""
        self._record_to(T)
        self._bound_to(T)

    def _record_to(self, T: int) -> None:
        """The target's vector and the box sums for T rounds: round t reads ``x_(t-1+p)``."""
        while self._box.rounds < T:
            if self._lags.products < self._box.rounds + self.offset:
                self._lags.extend_to(self._box.rounds + self.offset)  # one product
            self._box.add(self._lags.V)

    def _bound_to(self, T: int) -> None:
        """The worst bound of every round recorded but not yet bounded, up to T: the tight
        observers' pairs factor their pending rounds in blocks first."""
        first = self._worst.size
        if T <= first:
            return
        for a in self.tight_observers.tolist():
            self._pairs[a]._compute_to(T)
        for t in range(first + 1, T + 1):
            bound = self._box_bound(t)
            for a in self.tight_observers.tolist():
                bound[a] = min(bound[a], float(self._pairs[a]._factor.history[t - 1]))
            bound[self.target] = 0.0
            self._worst = np.append(self._worst, float(bound.max()))

    def _box_bound(self, T: int) -> np.ndarray:
        """Every attacker's running box bound at T (in the neighbourhood view the per-node
        sums summed over its closed neighbourhood)."""
        return self._box.bound(T, self._neighbourhoods)

    # -- answers ---------------------------------------------------------------------------

    @property
    def upper(self) -> np.ndarray:
        """Per observer: the best certified upper bound on ``Delta_T^2`` at the recorded T
        (the running box bound, the tight observers' pair bound, the interval's upper bound
        where :meth:`interval` was asked at this round); NaN at the target, 0 at T = 0."""
        T = self.rounds
        if T == 0:
            out = np.zeros(self.W.shape[0])
        else:
            self._bound_to(T)
            out = self._box_bound(T)
        if T:
            for a in self.tight_observers.tolist():
                out[a] = min(out[a], float(self._pairs[a]._factor.history[T - 1]))
        for a, bound in self._intervals.items():
            out[a] = min(out[a], bound)
        out[self.target] = np.nan
        return out

    @property
    def worst_upper(self) -> float:
        """A certified upper bound on ``max_a Delta_T^2(a)`` over the observers (the target
        excluded): the target's worst case."""
        return float(np.nanmax(self.upper)) if self.rounds else 0.0

    def epsilons(self, delta: float) -> np.ndarray:
        """Per observer: epsilon at ``delta`` of the T rounds recorded (from :attr:`upper`);
        NaN at the target."""
        return epsilons_of(self.upper, self.sigma, validation.probability_delta(delta))

    def epsilon(self, delta: float) -> float:
        """The target's worst-case epsilon at ``delta`` over every observer (from
        :attr:`worst_upper`)."""
        return gaussian_epsilon(self.worst_upper, self.sigma,
                                validation.probability_delta(delta))

    def to_dp_event(self, observer: int):
        """The T rounds so far as one ``dp_accounting`` event against ``observer``
        (certified upper bound, :func:`sparsedp.privacy.interop.gaussian_dp_event`)."""
        observer = validation.node_index(observer, self.W.shape[0], "observer")
        if observer == self.target:
            raise ParameterError(f"observer {observer} is the target")
        return gaussian_dp_event(float(self.upper[observer]), self.sigma)

    @limit_blas_threads
    def interval(self, observers=None) -> SetInterval:
        """Every bound on ``Delta_T^2`` of the observers asked (``None``: every node but the
        target) at the recorded T, with kinds: each pair accountant's
        :meth:`~sparsedp.accountant.gossip.Accountant.interval` (created and stepped to T
        for an observer not tight), its upper bound also at most the running box bound;
        lazy and cached until the next step."""
        if self.rounds == 0:
            raise ParameterError("no rounds recorded yet: call step() first")
        n = self.W.shape[0]
        if observers is None:
            nodes = np.setdiff1d(np.arange(n), [self.target])
        else:
            nodes = validation.node_set(observers, n, "observers")
            if self.target in nodes.tolist():
                raise ParameterError("an observer is the target itself")
        box = self._box_bound(self.rounds)
        results = []
        for a in nodes.tolist():
            if a not in self._pairs:
                self._pairs[a] = self._pair(a)
            if self._pairs[a].rounds < self.rounds:  # an observer not tight catches up
                self._pairs[a].step(self.rounds - self._pairs[a].rounds)
            results.append(self._pairs[a].interval())
            self._intervals[a] = min(results[-1].upper, float(box[a]))
        return SetInterval(nodes=nodes, lower=np.array([r.lower for r in results]),
                           upper=np.array([self._intervals[a] for a in nodes.tolist()]),
                           results=tuple(results), T=self.rounds)

    @limit_blas_threads
    def rounds_within(self, epsilon: float, delta: float, *,
                      limit: int = ROUNDS_WITHIN_LIMIT) -> int:
        """The largest number of rounds T (counted from the start, at most ``limit``) whose
        running certified bounds keep the target's epsilon against every observer at
        ``delta`` within ``epsilon``; rounds beyond those recorded are computed ahead.
        ``limit`` is returned when the budget lasts that long."""
        epsilon = validation.nonnegative("epsilon", epsilon)
        delta = validation.probability_delta(delta)
        limit = validation.rounds(limit)
        self._bound_to(min(self.rounds, limit))
        return budget_rounds(
            lambda: self._worst,
            lambda T: self._compute_to(min(limit, T + LOOKAHEAD_BLOCK - 1)),
            self.sigma, epsilon, delta, limit)

    # -- checkpoints -----------------------------------------------------------------------

    def state_dict(self) -> dict:
        """Everything needed to continue, as numpy arrays, numbers and strings (no pickle):
        the tight observers' pair states under the prefix ``pair<a>_``."""
        self._bound_to(self.rounds)  # no pending rows: the copy continues as the original
        state = matrix_state(self.W)
        state.update({"target": self.target, "sigma": self.sigma, "view": self.view,
                      "exact": str(self.exact),
                      "gradients": self.gradients,
                      "backend": self.backend, "rounds": self.rounds,
                      "tight_observers": self.tight_observers, "worst": self._worst})
        state.update(self._lags.state())
        state.update(self._box.state())
        for a in self.tight_observers.tolist():
            state.update({f"pair{a}_{key}": value
                          for key, value in self._pairs[a].state_dict().items()})
        return state

    @classmethod
    def from_state(cls, state: dict) -> ObserversAccountant:
        """The accountant of :meth:`state_dict` (plain arrays, e.g. loaded from ``.npz``):
        it continues with answers identical to the original's."""
        accountant = cls(matrix_from_state(state), int(state["target"]),
                         sigma=float(state["sigma"]), view=str(state["view"]),
                         tight_observers=np.asarray(state["tight_observers"]).tolist(),
                         exact=exact_from_state(state), gradients=gradients_from_state(state),
                         backend=str(state["backend"]))
        accountant._lags.restore(state)
        accountant._box.restore(state)
        for a in accountant.tight_observers.tolist():
            prefix = f"pair{a}_"
            accountant._pairs[a] = Accountant.from_state(
                {key[len(prefix):]: value for key, value in state.items()
                 if key.startswith(prefix)})
        accountant._worst = np.array(state["worst"], dtype=np.float64)
        accountant.rounds = int(state["rounds"])
        return accountant


def closed_neighbourhoods(W: sp.csr_matrix) -> sp.csr_matrix:
    """The 0/1 matrix whose row a marks a's closed neighbourhood N(a), read from the
    sparsity pattern of W in both directions as the neighbourhood view reads it
    (:func:`sparsedp.gossip.views.closed_neighbourhood`)."""
    pattern = sp.csr_matrix((np.ones(W.nnz), W.indices, W.indptr), shape=W.shape)
    marks = (pattern + pattern.T + sp.identity(W.shape[0], format="csr")).tocsr()
    marks.data[:] = 1.0
    return marks
