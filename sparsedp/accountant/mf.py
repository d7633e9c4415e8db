"""An online accountant for matrix-factorisation decentralized learning (issue 34): one
target against one attacker set, stepped every gradient step, for every algorithm, trust
model, participation scheme and gradient model that :func:`sparsedp.mf.mf_sensitivity`
accepts (with its validation errors).

The one-shot reference is :func:`sparsedp.mf.mf_sensitivity`.  Three routes:

* **Bordered factor** (incremental).  DP-D-SGD (one gossip round per step, independent noise)
  under ``"pndp-eq12"`` and ``"pndp-eq12-no-own"`` with an exactly symmetric W that has an
  analytic ``lambda_min(K_T)`` bound: the attackers see the messages they receive and know no
  noise, so ``M_T`` is the gossip secure-summation view of those rows (the path
  :func:`sparsedp.mf.blocks.gossip_block` takes).  Round T + 1 appends the observed rows of
  round T + 1 (every row kept: no noise is known, so ``B_T B_T^T = K_T`` is positive definite
  with its analytic ``lambda_min`` bound) and the target's new column: one sparse product for
  the lags (:class:`sparsedp.accountant.lags.LagStream`) and one block row of the Cholesky
  factor of ``K_T`` and of ``Y_T = L^{-1} A_u`` (:class:`sparsedp.accountant.bordered.
  BorderedFactor`), whose certified running bound ``sum_r ||Y_r||_1^2`` (rounding charged)
  bounds ``x^T M_pi x`` for every pattern pi and every ``||x_t|| <= 1``, vector gradients
  included (``||sum_(t in pi) Y_rt x_t|| <= sum_t |Y_rt|``).  With independent noise
  ``M_T <= I``, so the longest pattern ``|pi|`` caps it.
* **Closed form.**  Independent node-local noise (DP-D-SGD, Muffliato-SGD(K), with or without
  resets) under ``"ldp"`` or ``"secldp"`` (every message public: local DP for every node but
  the attackers): ``M_T = I`` and ``sens^2 = |pi|`` exactly, nothing to factorise.
* **One-shot, lazily** (every other case: ``"pndp"``, correlated noise — AntiPGD, MF-D-SGD,
  SR, BSR, resets —, Muffliato-SGD(K) under PNDP, DECOR, Zip-DL, a non-symmetric W).
  ``step(k)`` only records; :attr:`~MFAccountant.upper`, :meth:`~MFAccountant.epsilon`,
  :meth:`~MFAccountant.interval` run :func:`~sparsedp.mf.mf_sensitivity` at the recorded T
  (one query per T, cached).  Why not incrementally: for DP-D-SGD under ``"pndp"`` the
  innovation form of :mod:`sparsedp.mf.innovations` is causal with ``lambda_min(K) >= 1``
  (``K = I + F F^T``), so a bordered factor would be sound, but its block rows are the
  identity plus the lag recursion of ``W_OU W_UU^l W_UO`` shifted by one round, which the
  recursion of :class:`~sparsedp.accountant.bordered.BorderedFactor` (first block column
  ``mu_t``) does not express: not built yet.  With correlated noise or K > 1 gossip rounds
  per step, the rows the attackers' known noise makes dependent are dropped by exact
  decisions (the gossip engine's for K = 1, :mod:`sparsedp.mf.exact_rows` for K > 1) and
  the kept rows' ``lambda_min`` is certified numerically, with no analytic bound to charge
  a running factor's rounding to.
  The running bound that holds for free: with independent noise ``M_T <= I`` (``B^+ B`` is
  a projection and the target's noise is never known), so ``sens^2 <= |pi|``, the longest
  pattern; with correlated noise none is claimed.  Before a whole participation pattern
  fits in T steps (the one-shot query refuses such a T), the upper bound is the user-level
  query's at T: every prefix of a pattern lies in ``{1..T}`` and ``M`` is PSD, so it
  dominates.

Monotonicity, which :meth:`~MFAccountant.rounds_within` relies on: when the noise of a step
uses no later draw (L lower triangular and the T-step L the leading block of the
(T + 1)-step one: every algorithm but the symmetric SR / BSR encoders and fixed-length
MF-D-SGD correlations), the attackers' knowledge after T steps is part of their knowledge
after T + 1 (the same observations, plus the new rows and, under ``"pndp"`` / ``"secldp"``,
the new known noise), and every participation pattern of T steps is one of T + 1's, so
``sens^2`` is non-decreasing in T and the budget is found by exponential search and
bisection.  Otherwise (a T-step run with future draws is another mechanism than the first T
steps of a longer one) the steps are scanned from 1 to the first over budget; a correlation
of fixed length N (``mf_d_sgd(L)``) is defined at T = N only (with resets: at the multiples
of the period), and every answer at another T raises the one-shot query's ParameterError
(:meth:`~MFAccountant.rounds_within`'s scan too).

What each answer costs (T steps, m observed rows, nnz(W) non-zeros; Q(T) is one
:func:`~sparsedp.mf.mf_sensitivity` query at T):

=========================  =================================================================
``step(k)``                bordered: k sparse products with the n x m block, ``O(m^2 T^2)``
                           flops each; closed form and one-shot: ``O(1)``
``upper``, ``epsilon``,    bordered and closed form: ``O(1)`` (the running bound, or the
``rdp``, ``to_dp_event``   interval's upper bound when :meth:`~MFAccountant.interval` was
                           asked at this T); one-shot: Q(T), cached per T
``interval()``             Q(T), cached (bordered: plus the running bound as the certified
                           upper bound ``"incremental_rows"``)
``rounds_within``          bordered and closed form: ``O(1)`` per step already computed,
                           steps beyond computed ahead; one-shot: Q(t) at ``O(log T*)``
                           steps up to ``2 T*`` (exponential search and bisection), or at
                           every step up to ``T* + 1`` for noise with future draws
=========================  =================================================================
"""

from __future__ import annotations

import bisect
import dataclasses
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsedp import defaults, validation
from sparsedp.accountant.bordered import BorderedFactor
from sparsedp.accountant.lags import LagStream
from sparsedp.accountant.state import exact_from_state, matrix_from_state, matrix_state
from sparsedp.errors import ParameterError
from sparsedp.gossip.certified_solve import analytic_lambda_min_lower_bound
from sparsedp.gossip.views import resolve_view
from sparsedp.linalg.operators import GossipSystem
from sparsedp.linalg.sign_bounds import Bound
from sparsedp.linalg.stochastic import check_gossip_matrix, matrix_facts
from sparsedp.linalg.threads import limit_blas_threads
from sparsedp.mf import algorithms, participation, trust
from sparsedp.mf.blocks import require_invertible
from sparsedp.mf.result import MFResult
from sparsedp.mf.sensitivity import GRADIENTS, mf_sensitivity
from sparsedp.mf.sensitivity import _resolve_exact as resolve_exact
from sparsedp.privacy import gaussian_epsilon, rdp_epsilon
from sparsedp.privacy.interop import gaussian_dp_event
from sparsedp.reprs import short_repr

ROUNDS_WITHIN_LIMIT = 4096  # default horizon of rounds_within
RECEIVED_ROWS = ("pndp-eq12", "pndp-eq12-no-own")  # trust models of the bordered factor


class MFAccountant:
    """Matrix-factorisation privacy of one target against one attacker set, tracked step by
    step (the offered cases: module docstring).

    Parameters
    ----------
    W : square sparse matrix or array
        The gossip matrix: non-negative, row-stochastic and, under the PNDP trust models,
        exactly symmetric (e.g. :func:`sparsedp.gossip_matrix` with Metropolis weights).
    target : int
        Row of W whose record is protected.
    attackers : iterable of int or None
        The colluding attackers (``None`` for ``trust_model="ldp"``).
    sigma : float
        Noise standard deviation per step, in units of the per-step sensitivity.
    algorithm : str or Algorithm
        Any algorithm of :func:`sparsedp.mf.mf_sensitivity` (``dp_d_sgd()``,
        ``muffliato_sgd(K)``, ``antipgd()``, ``mf_d_sgd(L)``, ``square_root()``,
        ``banded_square_root(b)``, ``with_resets(...)``, ``decor(s)``, ``zip_dl()``) or a
        name; the route each case takes: module docstring.
    trust_model : str
        ``"pndp"`` (the default, as :func:`~sparsedp.mf.mf_sensitivity`), ``"pndp-eq12"``,
        ``"pndp-eq12-no-own"``, ``"secldp"`` or
        ``"ldp"`` (:mod:`sparsedp.mf.trust`).
    participation_scheme : str, tuple or Participation
        As :func:`sparsedp.mf.mf_sensitivity` (default user level).
    gradients : {"vector", "scalar"}
        As :func:`sparsedp.mf.mf_sensitivity` (the running bound holds for both).
    exact : {"auto", True, False}
        Exhaustive sign search of :meth:`interval` (as :func:`~sparsedp.mf.mf_sensitivity`).
    method : str
        Solver path of :meth:`interval` (as :func:`~sparsedp.mf.mf_sensitivity`).
    backend : str
        Kernel backend of the sparse products, ``"auto" | "numba" | "numpy"``.

    Raises
    ------
    ParameterError
        Bad input, as :func:`sparsedp.mf.mf_sensitivity` (what depends on T — a participation
        scheme, a fixed-length noise correlation of another length than the steps — when an
        answer is asked at that T).
    GossipMatrixError
        W negative or not row-stochastic.

    Examples
    --------
    >>> import networkx as nx, sparsedp
    >>> from sparsedp.mf import mf_sensitivity
    >>> W = sparsedp.gossip_matrix(nx.cycle_graph(8), scheme="metropolis")
    >>> acc = sparsedp.MFAccountant(W, 0, [2], sigma=20.0, trust_model="pndp-eq12")
    >>> acc.step(20)
    >>> one_shot = mf_sensitivity(W, 0, [2], 20, trust_model="pndp-eq12")
    >>> abs(acc.interval().lower - one_shot.lower) <= 1e-9 * one_shot.lower
    True
    >>> acc.upper >= one_shot.lower
    True
    >>> round(acc.epsilon(1e-5), 4)
    0.3819
    >>> acc.rounds_within(1.0, 1e-5)
    102

    AntiPGD under PNDP (the one-shot route: ``epsilon`` runs one query at the recorded T):

    >>> from sparsedp.mf import antipgd
    >>> acc = sparsedp.MFAccountant(W, 0, [2], sigma=20.0, algorithm=antipgd(),
    ...                             trust_model="pndp")
    >>> acc.step(6)
    >>> one_shot = mf_sensitivity(W, 0, [2], 6, algorithm=antipgd())
    >>> acc.interval().lower == one_shot.lower and acc.upper == one_shot.upper
    True
    """

    __repr__ = short_repr

    def __init__(self, W: Any, target: int, attackers: Any, *, sigma: float,
                 algorithm: str | algorithms.Algorithm = defaults.ALGORITHM,
                 trust_model: str = defaults.TRUST_MODEL,
                 participation_scheme: Any = defaults.PARTICIPATION,
                 gradients: str = defaults.GRADIENTS, exact: Any = defaults.EXACT,
                 method: str = defaults.METHOD, backend: str = "auto"):
        self.algorithm = algorithms.resolve(algorithm)
        self.scheme = participation.resolve(participation_scheme)
        if gradients not in GRADIENTS:
            raise ParameterError(f"gradients must be one of {GRADIENTS}, got {gradients!r}")
        self.W = W = sp.csr_matrix(check_gossip_matrix(
            W, require=("nonnegative", "row_stochastic")))
        n = W.shape[0]
        self.target = validation.node_index(target, n, "target")
        self.observation = trust.resolve(trust_model, W, self.target, attackers)
        self.attackers = None if attackers is None else self.observation.attackers
        self.sigma = validation.sigma(sigma)
        self.trust_model, self.gradients = trust_model, gradients
        self.exact, self.method, self.backend = exact, method, backend
        _check_like_the_one_shot_query(self.algorithm, trust_model, gradients, exact, n)
        self.rounds = 0
        self.history = np.zeros(0)  # certified upper bound on sens^2 at t = 1..computed
        self._interval: MFResult | None = None
        self._queries: dict[int, MFResult] = {}  # the one-shot route's queries, per T
        self._lags: LagStream | None = None
        self._factor: BorderedFactor | None = None
        self.offset = 0
        self.one_shot = not _closed_form(self.algorithm, trust_model) and not (
            self.algorithm.independent_noise and self.algorithm.K == 1
            and trust_model in RECEIVED_ROWS)
        observed = self.observation.observed
        if not self.one_shot and trust_model in RECEIVED_ROWS and observed.size:
            lambda_lb: float | None = None
            if matrix_facts(W).symmetric:  # the structured form of K_T
                model = resolve_view("secure-summation", W, self.target, observed, False)
                system = GossipSystem([W], model.observers, 1,
                                      power_offset=model.power_offset)
                lambda_lb = analytic_lambda_min_lower_bound(system)
            if lambda_lb:
                self.offset = model.power_offset
                self._lags = LagStream(W, model.observers, self.target, backend)
                self._factor = BorderedFactor(model.observers.size, lambda_lb)
            else:
                self.one_shot = True

    # -- recording steps -------------------------------------------------------------------

    @limit_blas_threads
    def step(self, k: int = 1) -> None:
        """Record ``k`` more gradient steps (``k >= 1``) and extend the bounds to them."""
        k = validation.rounds(k)
        self._compute_to(self.rounds + k)
        self.rounds += k
        self._interval = None

    def _compute_to(self, T: int) -> None:
        """The running bound for T steps (computed ahead of the recorded steps if need
        be): the bordered factor's, capped by the longest pattern (``M <= I``, independent
        noise; none claimed for correlated noise)."""
        for t in range(self.history.size + 1, T + 1):
            bound = (float(self._longest_pattern(t)) if self.algorithm.independent_noise
                     else float("inf"))
            if self._factor is not None and self._lags is not None:
                self._lags.extend_to(t + self.offset - 1)
                self._factor.append(self._lags.mu, self._lags.a, self.offset)
                bound = min(bound, float(self._factor.history[t - 1]))
            elif self.trust_model in RECEIVED_ROWS and not self.one_shot:
                bound = 0.0  # the attackers observe no message: M = 0
            self.history = np.append(self.history, bound)

    def _longest_pattern(self, T: int) -> int:
        """The most steps of one pattern within T steps (``T`` before a whole pattern fits)."""
        return self.scheme.sizes(T)[1] if T >= self.scheme.shortest_run() else T

    # -- answers ---------------------------------------------------------------------------

    @property
    def upper(self) -> float:
        """The best certified upper bound on ``sens^2`` at the recorded T (0 at T = 0; the
        one-shot route runs one query at T: module docstring)."""
        if self.rounds == 0:
            return 0.0
        if self.one_shot:
            return self._upper_at(self.rounds)
        bound = float(self.history[self.rounds - 1])
        if self._interval is not None:
            bound = min(bound, self._interval.upper)
        return bound

    def _query(self, T: int, scheme: participation.Participation) -> MFResult:
        """:func:`sparsedp.mf.mf_sensitivity` at T with this accountant's options."""
        return mf_sensitivity(
            self.W, self.target, self.attackers, T, algorithm=self.algorithm,
            trust_model=self.trust_model, participation_scheme=scheme,
            gradients=self.gradients, exact=self.exact, method=self.method)

    def _upper_at(self, T: int) -> float:
        """The one-shot route's certified upper bound at T (one query per T, cached): the
        query's, or the user-level query's before a whole pattern fits (its patterns
        contain every prefix of a pattern), capped by the free running bound."""
        if T not in self._queries:
            whole = T >= self.scheme.shortest_run()
            self._queries[T] = self._query(T, self.scheme if whole
                                           else participation.user_level())
        free = (float(self._longest_pattern(T)) if self.algorithm.independent_noise
                else float("inf"))
        return min(free, self._queries[T].upper)

    def epsilon(self, delta: float) -> float:
        """Tight epsilon at ``delta`` of the T steps recorded (one Gaussian mechanism of
        squared sensitivity :attr:`upper` and noise ``sigma``, as
        :meth:`sparsedp.mf.MFResult.epsilon`)."""
        return gaussian_epsilon(self.upper, self.sigma, validation.probability_delta(delta))

    def rdp(self, alpha: float) -> float:
        """Renyi DP of order ``alpha > 1``: ``alpha upper / (2 sigma^2)``
        (:func:`sparsedp.rdp_epsilon`, as :meth:`sparsedp.mf.MFResult.rdp`)."""
        return float(rdp_epsilon(self.upper, self.sigma, alpha))

    def to_dp_event(self) -> Any:
        """The T steps so far as one ``dp_accounting`` Gaussian event (certified upper bound;
        :func:`sparsedp.privacy.interop.gaussian_dp_event`)."""
        return gaussian_dp_event(self.upper, self.sigma)

    @limit_blas_threads
    def interval(self) -> MFResult:
        """Every bound on ``sens^2`` at the recorded T with kinds: :func:`sparsedp.mf.
        mf_sensitivity`'s at this T, plus the running bound (``"incremental_rows"``, certified
        upper); lazy (one one-shot query) and cached until the next step."""
        if self.rounds == 0:
            raise ParameterError("no steps recorded yet: call step() first")
        if self.one_shot:
            T = self.rounds
            if T < self.scheme.shortest_run():
                self._query(T, self.scheme)  # raises the one-shot query's refusal
            self._upper_at(T)
            return self._queries[T]
        if self._interval is None:
            T = self.rounds
            result = self._query(T, self.scheme)
            running = float(self.history[T - 1])
            bound = Bound("incremental_rows", running, "certified upper",
                          "sum_r ||(L^{-1} A_u)_r||_1^2 with the factorisation's rounding "
                          "charged, capped by the longest pattern (sparsedp.accountant.mf)")
            self._interval = dataclasses.replace(
                result, upper=min(result.upper, running), bounds=result.bounds + (bound,))
        return self._interval

    @limit_blas_threads
    def rounds_within(self, epsilon: float, delta: float, *,
                      limit: int = ROUNDS_WITHIN_LIMIT) -> int:
        """The largest number of steps T (counted from the start, at most ``limit``) whose
        certified bound keeps epsilon at ``delta`` within ``epsilon``: the running bound
        (non-decreasing in T), steps beyond those recorded computed ahead; on the one-shot
        route the queries' bounds, by exponential search and bisection where ``sens^2`` is
        non-decreasing in T, by a scan from T = 1 otherwise (module docstring).  ``limit``
        is returned when the budget lasts that long."""
        epsilon = validation.nonnegative("epsilon", epsilon)
        delta = validation.probability_delta(delta)
        limit = validation.rounds(limit)
        if self.one_shot:
            return self._rounds_within_by_queries(epsilon, delta, limit)

        def within(t: int) -> bool:
            return gaussian_epsilon(float(self.history[t - 1]), self.sigma, delta) <= epsilon

        while self.history.size < limit and (self.history.size == 0
                                             or within(self.history.size)):
            self._compute_to(self.history.size + 1)
        horizon = min(self.history.size, limit)
        return bisect.bisect_left(range(1, horizon + 1), True, key=lambda t: not within(t))

    def _rounds_within_by_queries(self, epsilon: float, delta: float, limit: int) -> int:
        """:meth:`rounds_within` on the one-shot route."""

        def within(t: int) -> bool:
            return gaussian_epsilon(self._upper_at(t), self.sigma, delta) <= epsilon

        if not _no_future_draws(self.algorithm):
            return next((t - 1 for t in range(1, limit + 1) if not within(t)), limit)
        good, bad = 0, 1  # within(good) (0: vacuously), not within(bad) unless bad > limit
        while bad <= limit and within(bad):
            good, bad = bad, 2 * bad
        bad = min(bad, limit + 1)
        while bad - good > 1:
            middle = (good + bad) // 2
            good, bad = (middle, bad) if within(middle) else (good, middle)
        return good

    # -- checkpoints -----------------------------------------------------------------------

    def state_dict(self) -> dict:
        """Everything needed to continue, as numpy arrays, numbers and strings (no pickle;
        :func:`sparsedp.accountant.checkpoint.save` writes such a dict to ``.npz``)."""
        scheme = self.scheme.to_dict()
        state = {
            "family": "mf", **matrix_state(self.W),
            "target": self.target,
            "attackers": (np.zeros(0, dtype=np.int64) if self.attackers is None
                          else self.attackers),
            "attackers_given": self.attackers is not None, "sigma": self.sigma,
            "algorithm": self.algorithm.name, "trust_model": self.trust_model,
            "participation": scheme["name"],
            "participation_kb": np.asarray([scheme["k"] or 0, scheme["b"] or 0]),
            "gradients": self.gradients, "exact": str(self.exact), "method": self.method,
            "backend": self.backend, "rounds": self.rounds, "history": self.history,
        }
        if self._lags is not None and self._factor is not None:
            state.update(self._lags.state())
            state.update(self._factor.state())
        return state

    @classmethod
    def from_state(cls, state: dict) -> MFAccountant:
        """The accountant of :meth:`state_dict` (plain arrays, e.g. loaded from ``.npz``):
        it continues with answers identical to the original's."""
        W = matrix_from_state(state)
        name = str(state["participation"])
        scheme = (participation.cyclic(*(int(v) for v in np.asarray(state["participation_kb"])))
                  if name.startswith("cyclic") else name)
        exact = exact_from_state(state)
        attackers = (np.asarray(state["attackers"]).tolist()
                     if bool(state["attackers_given"]) else None)
        accountant = cls(W, int(state["target"]), attackers, sigma=float(state["sigma"]),
                         algorithm=str(state["algorithm"]),
                         trust_model=str(state["trust_model"]), participation_scheme=scheme,
                         gradients=str(state["gradients"]), exact=exact,
                         method=str(state["method"]), backend=str(state["backend"]))
        if accountant._lags is not None and accountant._factor is not None:
            accountant._lags.restore(state)
            accountant._factor.restore(state)
        accountant.history = np.array(state["history"], dtype=np.float64)
        accountant.rounds = int(state["rounds"])
        return accountant


def _closed_form(algorithm: algorithms.Algorithm, trust_model: str) -> bool:
    """Independent node-local noise with every message public: ``M = I``."""
    return algorithm.independent_noise and trust_model in ("ldp", "secldp")


def _no_future_draws(algorithm: algorithms.Algorithm) -> bool:
    """Whether the first T steps of a longer run are the T-step run (no step's noise uses a
    later draw; a fixed-length correlation has one T only): ``sens^2`` is then
    non-decreasing in T (module docstring)."""
    if algorithm.correlation in ("custom", "per-node"):
        return False
    return algorithm.correlation != "square-root" or algorithm.causal


def _check_like_the_one_shot_query(algorithm: algorithms.Algorithm, trust_model: str,
                                   gradients: str, exact: Any, n: int) -> None:
    """The ParameterErrors of :func:`sparsedp.mf.mf_sensitivity` that do not depend on T:
    ``exact``, DECOR's scale, a per-node correlation for another number of nodes and, under
    PNDP, a singular fixed-length correlation."""
    resolve_exact(exact, gradients, 1)
    if algorithm.correlation == "decor":
        _ = algorithm.decor_scale
    if algorithm.correlation in ("custom", "per-node"):
        length = np.shape(np.asarray(algorithm.noise))[-1]
        L = algorithms.node_noise(algorithm, length, n)
        if trust_model not in ("ldp", "secldp"):
            for node_L in L.reshape(-1, length, length):
                require_invertible(node_L, trust_model)
