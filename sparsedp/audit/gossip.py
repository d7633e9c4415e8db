"""Audit of the gossip accounting: simulate the protocol, attack it, compare with the engine.

:func:`audit_gossip` checks one instance ``(W, target, observers, T, view, noise_removed)``
from the other side:

1. the engine (:func:`sparsedp.squared_sensitivity`) reports its interval
   ``[lower, upper]`` on ``Delta_T^2`` and the sign pattern ``c`` of its lower bound;
2. the protocol is run literally (:mod:`sparsedp.audit.simulate`) without noise, the target
   contributing 1 in one round (the columns ``S`` of the attacker's mean shifts; a pattern
   ``c`` shifts the records by ``S c``), and ``trials`` times with noise only;
3. **the attacker searches its strongest attack from simulations only**: from ``trials / 4``
   runs it estimates ``Q = S^T Sigma_hat^+ S`` and takes the signs maximising ``c^T Q c``
   (:mod:`sparsedp.audit.search`: exhaustive for ``T <= 20``, else an ascent from the
   engine's signs, eigenvector signs, roundings of the eigenvalue relaxation and random
   starts);
4. from ``trials / 4`` fresh runs, ``sigma^2 m^T Sigma_hat^+ m`` at ``m = S c`` for the
   attacker's signs, with its exact interval (:mod:`sparsedp.audit.statistics`: the choice
   used other runs), must not lie above the engine's ``upper`` -- ``c^T M c <= Delta^2`` for
   every ``c``, so an interval above it shows an upper bound below the truth (**upper bound
   violated**);
5. from the first ``trials / 2`` runs, the same estimate at the engine's signs must overlap
   the engine's interval -- otherwise the matrix model is not the protocol (**model
   mismatch**);
6. the attacker's likelihood-ratio test at its signs on ``trials / 2`` fresh runs per
   hypothesis gives lower bounds on epsilon (at ``delta``) and on mu that hold with
   probability ``confidence``; they must not exceed the engine's ``gaussian_epsilon(upper)``
   and ``sqrt(upper) / sigma`` (**bound violated**).

Each check errs on a sound engine with probability at most ``1 - confidence`` (the upper
check at most half of it: it uses the lower end of a two-sided interval).  The fresh runs
under the shifted hypothesis are the noise-only runs plus the noiseless run (the protocol is
linear; the simulator computes both with the same message-passing code).  Batches of runs
have their own seeds spawned from ``seed`` (``numpy.random.SeedSequence``), so a result
depends on ``seed``, ``trials`` and ``batch`` only, not on the thread count (``batch=None``:
8192 runs, fewer on graphs of more than about 8,000 nodes, and fewer still when the memory
budget holds less than one such batch, :func:`~sparsedp.audit.batches.plan_batches`; the
batch used is in the result).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from sparsedp import defaults
from sparsedp.audit.batches import (
    MAX_FEATURES,
    GaussianVerdict,
    check_parameters,
    error_counts,
    plan_batches,
    run_batches,
    scaled_interval,
    second_moment,
    verdict_fields,
)
from sparsedp.audit.search import strongest_attack
from sparsedp.audit.simulate import data_responses, simulate, threat, threat_cone
from sparsedp.audit.statistics import lower_bounds, mahalanobis, shift_gram, thresholds
from sparsedp.errors import ParameterError
from sparsedp.gossip.inputs import gossip_sequence
from sparsedp.gossip.sensitivity import SensitivityResult, squared_sensitivity
from sparsedp.progress import progress_bar
from sparsedp.reprs import short_repr

__all__ = ["AuditResult", "audit_gossip"]


@dataclass(frozen=True)
class AuditResult(GaussianVerdict):
    """One audited instance: the engine's claim, what the attacker measured, the verdict.

    ``sensitivity_*``: the attacker's estimate of ``c^T M_T c`` at the engine's signs ``c``
    and its interval at ``confidence``; ``strongest_*``: the same at the signs of the
    attacker's own search; ``epsilon_lower`` / ``mu_lower``: empirical lower bounds (holding
    with probability ``confidence``) of the attacker's test at its signs against the
    engine's certified ``epsilon_upper`` / ``mu_upper``; ``tightness``:
    ``epsilon_lower / epsilon_upper``.
    """

    view: str
    noise_removed: bool
    target: int
    observers: tuple[int, ...]
    T: int
    sigma: float
    delta: float
    trials: int
    seed: int
    batch: int
    confidence: float
    engine_lower: float
    engine_upper: float
    signs: tuple[int, ...]
    epsilon_upper: float
    mu_upper: float
    sensitivity_estimate: float
    sensitivity_low: float
    sensitivity_high: float
    strongest_signs: tuple[int, ...]
    strongest_estimate: float
    strongest_low: float
    strongest_high: float
    features: int
    epsilon_lower: float
    mu_lower: float
    model_matches: bool
    bound_holds: bool
    upper_holds: bool

    __repr__ = short_repr

    @property
    def strongest(self) -> tuple[float, float, tuple[int, ...]]:
        return self.strongest_low, self.strongest_high, self.strongest_signs

    @property
    def instance(self) -> str:
        observers = ",".join(map(str, self.observers)) or "-"
        return (f"view={self.view} noise_removed={self.noise_removed} target={self.target} "
                f"observers={observers} T={self.T} sigma={self.sigma:g}")


def audit_gossip(W, target: int, observers=None, T: int = defaults.AUDIT_ROUNDS, *,
                 view: str = defaults.VIEW, noise_removed: bool = False,
                 sigma: float = defaults.SIGMA, delta: float = defaults.DELTA,
                 trials: int = defaults.AUDIT_TRIALS, seed: int = defaults.SEED,
                 confidence: float = defaults.CONFIDENCE, engine: SensitivityResult | None = None,
                 batch: int | None = None, threads: int | None = None,
                 progress=None) -> AuditResult:
    """Audit the engine's answer for one gossip instance (module docstring).

    ``engine``: the result to audit (default: ``squared_sensitivity`` with the same
    arguments); passing one computed for another model shows what a mismatch looks like.
    ``batch``: runs simulated at once (default: chosen from the graph's size,
    :func:`~sparsedp.audit.batches.plan_batches`).  ``threads``: batches run concurrently
    (default: the CPUs available, fewer when their batches do not fit the memory budget
    together); the result does not depend on it.
    """
    check_parameters(T, sigma, delta, trials, confidence, batch)
    Ws, _ = gossip_sequence(W, T)
    if engine is None:
        engine = squared_sensitivity(W, target, observers, T, view=view,
                                     noise_removed=noise_removed, progress=False)
    attacker = threat(Ws, view, target, observers, noise_removed)
    features = T * attacker.features
    if features > MAX_FEATURES:
        raise ParameterError(f"the attacker records {features} numbers per run (more than "
                             f"{MAX_FEATURES}): audit a smaller T or fewer observers")
    if len(engine.signs) != T:
        raise ParameterError(f"the engine's result has {len(engine.signs)} signs for T = {T} "
                             "rounds: pass the result of the audited instance")
    cone = threat_cone(Ws, T, attacker)  # the nodes a run simulates (sparsedp.audit.cone)
    batch, threads = plan_batches(batch, 4 * cone.size + features, features, threads)
    responses = data_responses(Ws, T, attacker, target, cone)
    claimed_shift = responses @ np.asarray(engine.signs, dtype=float)
    choose, train = trials // 4, trials // 4
    test = trials - choose - train
    seeds = np.random.SeedSequence(seed).spawn(3)
    bar = progress_bar(progress, total=trials, desc="audit", unit="run")

    def moment(rng, size):
        return second_moment(simulate(Ws, T, attacker, sigma, size, rng, cone))

    try:
        with ThreadPoolExecutor(threads) as pool:
            first = run_batches(pool, choose, batch, seeds[0], bar, moment)
            _, signs = strongest_attack(shift_gram(first, choose, responses), [np.arange(T)],
                                        [engine.signs], seed)
            second = run_batches(pool, train, batch, seeds[1], bar, moment)
            claimed = mahalanobis(first + second, choose + train, claimed_shift, confidence)
            shift = responses @ signs
            strongest = mahalanobis(second, train, shift, confidence)
            taus = thresholds(strongest, test)
            shift_score = float(strongest.weights @ shift)
            counts = run_batches(
                pool, test, batch, seeds[2], bar,
                lambda rng, size: error_counts(simulate(Ws, T, attacker, sigma, size, rng, cone),
                                               strongest.weights, taus, shift_score))
    finally:
        if bar is not None:
            bar.close()
    bounds = lower_bounds(counts[0], counts[1], test, delta, confidence)
    value, low, high = scaled_interval(strongest, sigma)
    return AuditResult(
        view=attacker.view, noise_removed=attacker.noise_removed, target=int(target),
        observers=tuple(attacker.observers.tolist()), T=int(T), sigma=float(sigma),
        delta=float(delta), trials=int(trials), seed=int(seed), batch=int(batch),
        confidence=float(confidence),
        signs=tuple(int(c) for c in engine.signs), strongest_signs=tuple(int(c) for c in signs),
        strongest_estimate=value, strongest_low=low, strongest_high=high,
        features=features,
        **verdict_fields(engine.lower, engine.upper, sigma, delta, claimed, bounds, strongest),
    )

