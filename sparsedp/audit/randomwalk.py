"""Audit of the random-walk accounting: walk the token, attack one contribution, compare.

:func:`audit_random_walk` checks :func:`sparsedp.random_walk_rdp` for one contribution of the
source ``u`` (``contributions=1``) towards a receiver ``v`` (Cyffers, Bellet & Upadhyay,
Lemma 2 and Theorem 3).  The protocol is run literally: the token starts at ``u``, which adds
its contribution (``+1`` or ``0``: sensitivity 1) and its noise ``N(0, sigma^2)``; then for
``T`` steps the token moves to a neighbour drawn from the holder's row of ``W`` and each
holder adds fresh noise.  ``v`` records the time ``tau`` of the token's first arrival and
its value (later arrivals only add noise to a value it has already seen; with one
contribution they carry no further information).

Given ``tau`` the value is ``N(s, tau sigma^2)`` (``tau`` noises so far) and ``tau`` does not
depend on the data, so the attacker's optimal test thresholds the log-likelihood ratio
``(y - 1/2) / (tau sigma^2)`` (0 when the token never arrives).  Two checks:

* **Renyi divergence of the simulated mechanism**: exactly
  ``D_alpha = log E[exp(alpha (alpha - 1) / (2 tau sigma^2))] / (alpha - 1)`` (the term is 1
  when the token never arrives), estimated from the simulated arrival times with a
  Hoeffding interval (the terms lie in ``[1, exp(alpha (alpha - 1) / (2 sigma^2))]``); its
  lower end must not exceed the engine's certified RDP.
* **Likelihood-ratio test**: Clopper-Pearson lower bounds on epsilon at ``delta``
  (:func:`sparsedp.audit.statistics.lower_bounds`) must not exceed the engine's epsilon
  (its RDP curve converted with :meth:`PairwiseLoss.epsilon`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import scipy.sparse as sp

from sparsedp import defaults
from sparsedp.audit.statistics import lower_bounds
from sparsedp.errors import ParameterError
from sparsedp.plain import plain
from sparsedp.progress import progress_bar
from sparsedp.randomwalk.accounting import random_walk_rdp
from sparsedp.randomwalk.pairwise import PairwiseLoss
from sparsedp.reprs import short_repr

__all__ = ["RandomWalkAuditResult", "audit_random_walk"]

THRESHOLDS = 16


@dataclass(frozen=True)
class RandomWalkAuditResult:
    """One audited (source, receiver, T, sigma): the engine's RDP and epsilon against the
    simulated mechanism's Renyi divergence (with its interval) and the empirical epsilon
    lower bound, all at ``confidence``; ``arrival_rate``: runs in which the token reached
    the receiver."""

    source: int
    receiver: int
    T: int
    sigma: float
    alpha: float
    delta: float
    trials: int
    seed: int
    confidence: float
    engine_rdp: float
    engine_kind: str
    engine_epsilon: float
    rdp_estimate: float
    rdp_low: float
    rdp_high: float
    epsilon_lower: float
    arrival_rate: float

    __repr__ = short_repr

    @property
    def passed(self) -> bool:
        slack = 1e-9
        return (self.rdp_low <= self.engine_rdp * (1 + slack)
                and self.epsilon_lower <= self.engine_epsilon * (1 + slack) + slack)

    @property
    def verdict(self) -> str:
        if self.passed:
            return "pass"
        return (f"source={self.source} receiver={self.receiver} T={self.T} sigma={self.sigma:g}:"
                f" bound violated: the simulated walk has RDP in [{self.rdp_low:.6g}, "
                f"{self.rdp_high:.6g}] and epsilon >= {self.epsilon_lower:.6g}; the engine "
                f"reports RDP {self.engine_rdp:.6g} and epsilon {self.engine_epsilon:.6g}")

    def to_dict(self) -> dict:
        """Plain data, strict JSON (:func:`sparsedp.plain.plain`)."""
        return plain({**asdict(self), "passed": self.passed, "verdict": self.verdict})


def audit_random_walk(W, source: int, receiver: int, T: int, sigma: float, *,
                      alpha: float = defaults.ALPHA, delta: float = defaults.DELTA,
                      trials: int = defaults.RANDOM_WALK_AUDIT_TRIALS,
                      seed: int = defaults.SEED, confidence: float = defaults.CONFIDENCE,
                      engine: PairwiseLoss | None = None, progress=None
                      ) -> RandomWalkAuditResult:
    """Audit one contribution of ``source`` towards ``receiver`` (module docstring); nodes
    are rows of ``W``.  Half the runs fix the test's thresholds, half measure its errors.
    ``engine``: the loss to audit (default: ``random_walk_rdp`` with ``contributions=1`` and
    ``receivers=[receiver]``); ``progress``: a bar over the walk's T steps, every run at
    once (:mod:`sparsedp.progress`)."""
    if not 0 < confidence < 1:
        raise ParameterError(f"confidence must be in (0, 1), got {confidence!r}")
    if not isinstance(trials, (int, np.integer)) or trials < 4:
        raise ParameterError(f"trials must be an integer >= 4, got {trials!r}")
    if engine is None:
        engine = random_walk_rdp(W, source, T, sigma, alpha, contributions=1,
                                 receivers=[receiver], method="series", progress=False)
    W = sp.csr_matrix(W, dtype=np.float64)
    rng = np.random.Generator(np.random.SFC64(seed))
    train, test = trials // 2, trials - trials // 2
    bar = progress_bar(progress, total=T, desc="audit", unit="step")
    try:
        arrival, value = _walk(W, source, receiver, T, sigma, train + test, rng, bar)
    finally:
        if bar is not None:
            bar.close()
    rdp, rdp_low, rdp_high = _renyi(arrival, sigma, alpha, confidence)
    shifted = value + 1.0  # the same runs with the contribution: the protocol is linear
    score0, score1 = _log_ratio(arrival, value, sigma), _log_ratio(arrival, shifted, sigma)
    levels = np.geomspace(0.5, 10.0 / test, THRESHOLDS)
    taus = np.unique(np.quantile(score0[:train], 1.0 - levels))
    false_positives = (score0[train:, None] > taus).sum(axis=0)
    false_negatives = (score1[train:, None] <= taus).sum(axis=0)
    bounds = lower_bounds(false_positives, false_negatives, test, delta, confidence)
    return RandomWalkAuditResult(
        source=int(source), receiver=int(receiver), T=int(T), sigma=float(sigma),
        alpha=float(alpha), delta=float(delta), trials=int(trials), seed=int(seed),
        confidence=float(confidence), engine_rdp=float(engine.rdp[0]),
        engine_kind=str(engine.kind), engine_epsilon=float(engine.epsilon(delta)[0]),
        rdp_estimate=rdp, rdp_low=rdp_low, rdp_high=rdp_high,
        epsilon_lower=bounds.epsilon, arrival_rate=float(np.mean(arrival > 0)))


def _walk(W: sp.csr_matrix, source: int, receiver: int, T: int, sigma: float, runs: int,
          rng: np.random.Generator, bar=None) -> tuple[np.ndarray, np.ndarray]:
    """First arrival time at ``receiver`` (0: never within T steps) and the token's value
    then, without the contribution, for ``runs`` independent walks from ``source``
    (``bar`` advanced once a step)."""
    cumulative = np.cumsum(W.data)
    row_start = np.concatenate([[0.0], cumulative])[W.indptr[:-1]]
    position = np.full(runs, source, dtype=np.int64)
    value = sigma * rng.standard_normal(runs)  # the source's own noise
    arrival = np.zeros(runs, dtype=np.int64)
    seen = np.zeros(runs)
    for step in range(1, T + 1):
        # the holder passes the token to k with probability W[holder, k]
        draw = row_start[position] + rng.random(runs) * (cumulative[W.indptr[position + 1] - 1]
                                                          - row_start[position])
        entry = np.searchsorted(cumulative, draw, side="right")
        entry = np.clip(entry, W.indptr[position], W.indptr[position + 1] - 1)
        position = W.indices[entry]
        first = (position == receiver) & (arrival == 0)
        arrival[first] = step
        seen[first] = value[first]
        value += sigma * rng.standard_normal(runs)  # the new holder's noise
        if bar is not None:
            bar.update(1)
    return arrival, seen


def _log_ratio(arrival: np.ndarray, value: np.ndarray, sigma: float) -> np.ndarray:
    """``log p_1 / p_0`` of the receiver's record: ``(y - 1/2) / (tau sigma^2)``, 0 without
    an arrival."""
    out = np.zeros(arrival.shape)
    hit = arrival > 0
    out[hit] = (value[hit] - 0.5) / (arrival[hit] * sigma**2)
    return out


def _renyi(arrival: np.ndarray, sigma: float, alpha: float, confidence: float):
    """``D_alpha`` of the simulated mechanism and its two-sided Hoeffding interval."""
    exponent = np.zeros(arrival.shape)
    hit = arrival > 0
    exponent[hit] = alpha * (alpha - 1) / (2 * arrival[hit] * sigma**2)
    terms = np.exp(exponent)
    width = math.expm1(alpha * (alpha - 1) / (2 * sigma**2))  # range of the terms
    half = width * math.sqrt(math.log(2 / (1 - confidence)) / (2 * len(terms)))
    mean = float(terms.mean())
    return tuple(math.log(max(m, 1.0)) / (alpha - 1) for m in (mean, mean - half, mean + half))
