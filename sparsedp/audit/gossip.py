"""Audit of the gossip accounting: simulate the protocol, attack it, compare with the engine.

:func:`audit_gossip` checks one instance ``(W, target, observers, T, view, noise_removed)``
from the other side:

1. the engine (:func:`sparsedp.squared_sensitivity`) reports its interval
   ``[lower, upper]`` on ``Delta_T^2`` and the sign pattern ``c`` of its lower bound;
2. the protocol is run literally (:mod:`sparsedp.audit.simulate`) without noise, the target
   contributing ``c_t`` in round ``t`` (the mean shift ``m`` of the attacker's records), and
   ``trials / 2`` times with noise only (the attacker's training runs);
3. the attacker's estimate of the squared sensitivity, ``sigma^2 m^T Sigma_hat^+ m``, with its
   exact interval (:mod:`sparsedp.audit.statistics`), must overlap the engine's interval --
   otherwise the matrix model is not the protocol (**model mismatch**);
4. the attacker's likelihood-ratio test on ``trials / 2`` fresh runs per hypothesis gives
   lower bounds on epsilon (at ``delta``) and on mu that hold with probability
   ``confidence``; they must not exceed the engine's ``gaussian_epsilon(upper)`` and
   ``sqrt(upper) / sigma`` (**bound violated**).

The fresh runs under the shifted hypothesis are the noise-only runs plus the noiseless run
(the protocol is linear; the simulator computes both with the same message-passing code).
Batches of runs have their own seeds spawned from ``seed`` (``numpy.random.SeedSequence``),
so a result depends on ``seed``, ``trials`` and ``batch`` only, not on the thread count.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from sparsedp import defaults, resources
from sparsedp.audit.batches import (
    DEFAULT_BATCH,
    MAX_FEATURES,
    GaussianVerdict,
    check_parameters,
    error_counts,
    run_batches,
    second_moment,
    verdict_fields,
)
from sparsedp.audit.simulate import Threat, data_response, simulate, threat
from sparsedp.audit.statistics import lower_bounds, mahalanobis, thresholds
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
    and its interval at ``confidence``; ``epsilon_lower`` / ``mu_lower``: empirical lower
    bounds (holding with probability ``confidence``) against the engine's certified
    ``epsilon_upper`` / ``mu_upper``; ``tightness``: ``epsilon_lower / epsilon_upper``.
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
    confidence: float
    engine_lower: float
    engine_upper: float
    signs: tuple[int, ...]
    epsilon_upper: float
    mu_upper: float
    sensitivity_estimate: float
    sensitivity_low: float
    sensitivity_high: float
    features: int
    epsilon_lower: float
    mu_lower: float
    model_matches: bool
    bound_holds: bool

    __repr__ = short_repr

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
                 batch: int = DEFAULT_BATCH, threads: int | None = None,
                 progress=None) -> AuditResult:
    """Audit the engine's answer for one gossip instance (module docstring).

    ``engine``: the result to audit (default: ``squared_sensitivity`` with the same
    arguments); passing one computed for another model shows what a mismatch looks like.
    ``threads``: batches run concurrently (default: the CPUs available); the result does not
    depend on it.
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
    n = Ws[0].shape[0]
    resources.require_within(8.0 * batch * (2 * n + features) * (threads or 2)
                             + 16.0 * features**2, resources.memory_budget(),
                             "the audit's simulation batches", "use a smaller batch")
    signs = np.asarray(engine.signs, dtype=float)
    shift = data_response(Ws, T, attacker, target, signs)
    train, test = trials // 2, trials - trials // 2
    seeds = np.random.SeedSequence(seed).spawn(2)
    bar = progress_bar(progress, total=trials, desc="audit", unit="run")
    try:
        with ThreadPoolExecutor(threads or len(os.sched_getaffinity(0))) as pool:
            moment = run_batches(
                pool, train, batch, seeds[0], bar,
                lambda rng, size: _second_moment(Ws, T, attacker, sigma, size, rng))
            estimate = mahalanobis(moment, train, shift, confidence)
            taus = thresholds(estimate, test)
            shift_score = float(estimate.weights @ shift)
            counts = run_batches(
                pool, test, batch, seeds[1], bar,
                lambda rng, size: _error_counts(Ws, T, attacker, sigma, size, rng,
                                                estimate.weights, taus, shift_score))
    finally:
        if bar is not None:
            bar.close()
    bounds = lower_bounds(counts[0], counts[1], test, delta, confidence)
    return _verdict(engine, attacker, T, sigma, delta, trials, seed, confidence, estimate, bounds)


def _second_moment(Ws, T: int, attacker: Threat, sigma: float, size: int, rng) -> np.ndarray:
    """``sum y y^T`` over ``size`` noise-only runs."""
    return second_moment(simulate(Ws, T, attacker, sigma, size, rng))


def _error_counts(Ws, T: int, attacker: Threat, sigma: float, size: int, rng,
                  weights: np.ndarray, taus: np.ndarray, shift_score: float) -> np.ndarray:
    """False positives and false negatives at each threshold over ``size`` fresh runs."""
    return error_counts(simulate(Ws, T, attacker, sigma, size, rng), weights, taus,
                        shift_score)


def _verdict(engine: SensitivityResult, attacker: Threat, T, sigma, delta, trials, seed,
             confidence, estimate, bounds) -> AuditResult:
    return AuditResult(
        view=attacker.view, noise_removed=attacker.noise_removed, target=engine.target,
        observers=engine.observers, T=T, sigma=float(sigma), delta=float(delta),
        trials=int(trials), seed=int(seed), confidence=float(confidence), signs=engine.signs,
        features=T * attacker.features,
        **verdict_fields(engine.lower, engine.upper, sigma, delta, estimate, bounds),
    )
