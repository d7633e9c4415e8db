"""Audit of the PPAC leakage: simulate the protocol, estimate the attacker's information.

:func:`audit_ppac` checks ``pi_i^(j)(t) = I(D_i(t); u_j)`` (nats) of
:func:`sparsedp.ppac.leakage` from the other side: the protocol's preparation and consensus
are run ``trials`` times (:func:`sparsedp.ppac.protocol.simulated_data`: Algorithm 1 of
Fereydounian et al., and :func:`sparsedp.ppac.protocol.attacker_view`, which collects exactly
the data of their eq. 9 from the run, not from the leakage's matrices), values and noises
Gaussian with mean 0.

Values and data are jointly Gaussian, so ``I(D; u_j) = 1/2 log(Var u_j / Var(u_j | D))
= -1/2 log(1 - R^2)`` with ``R^2`` the population squared multiple correlation of ``u_j`` on
``D`` (no intercept: every mean is 0).  Two exact intervals, each at
``(1 + confidence) / 2`` so that both hold together with probability ``confidence``:

* **residual**: given ``D``, the residual sum of squares of the least-squares regression is
  ``Var(u_j | D)`` times a chi-square with ``N - p`` degrees of freedom (``p`` the rank of
  the data), so with ``q`` its quantiles ``I in [1/2 log(Var u_j q_lo / RSS),
  1/2 log(Var u_j q_hi / RSS)]``: about ``z sqrt(2 / N)`` nats wide whatever the leakage;
* **correlation** (:func:`sparsedp.audit.statistics.information_interval`): the sample
  ``R_hat^2 = 1 - RSS / u^T u`` has Fisher's exact distribution given ``R^2``; inverting it
  gives an interval about ``2 z R / sqrt(N)`` wide, which narrows with the leakage
  (``R ~ sqrt(2 I)``): 4 times narrower than the residual one at 0.03 nats.  Computed when
  the residual estimate is below ``CORRELATION_MAX_NATS`` (above it the residual interval is
  the narrower).

The audit reports their intersection (the residual one alone above the cut), with the
correlation interval's median-unbiased estimate (the residual one's above the cut).  A
residual at rounding level (``RSS <= 1e-20 u^T u``) is exact recovery: infinite leakage.  The
audit passes when the interval holds the reported leakage (both infinite, or the finite
value inside it).

**Run count from a requested precision.**  Both widths are known before any run from the
leakage to audit: the correlation interval's half-width is about ``z R / sqrt(N)`` nats and
the residual one's ``z / sqrt(2 N)`` (``z`` the normal quantile of the interval).  With
``precision`` the audit runs enough trials (:func:`runs_for_precision`) for a half-width of
``precision / 2`` times the reported leakage, so that a relative error of ``precision``
lies outside the interval.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy import special

from sparsedp import defaults
from sparsedp.audit.statistics import chi2_quantile, information_interval
from sparsedp.errors import ParameterError
from sparsedp.plain import plain
from sparsedp.ppac.information import leakage
from sparsedp.ppac.protocol import PPACLayout, simulated_data
from sparsedp.progress import progress_bar
from sparsedp.reprs import short_repr

__all__ = ["PPACAuditResult", "audit_ppac", "runs_for_precision"]

RECOVERY_RTOL = 1e-20  # RSS / u^T u below this: u_j recovered exactly (rounding level)
CORRELATION_MAX_NATS = 0.5  # the correlation interval is the narrower below about 0.35 nats
MAX_PRECISION_TRIALS = 2_000_000  # the attacker's data is trials x features doubles


@dataclass(frozen=True)
class PPACAuditResult:
    """One audited (attacker, victim, horizon): the reported leakage, the attacker's interval
    at ``confidence`` and whether it holds the reported value."""

    attacker: Any
    victim: Any
    horizon: int
    trials: int
    seed: int
    confidence: float
    engine_nats: float
    engine_kind: str
    nats_estimate: float
    nats_low: float
    nats_high: float
    features: int

    __repr__ = short_repr

    @property
    def passed(self) -> bool:
        if math.isinf(self.engine_nats) or math.isinf(self.nats_estimate):
            return math.isinf(self.engine_nats) and math.isinf(self.nats_estimate)
        return self.nats_low <= self.engine_nats <= self.nats_high

    @property
    def verdict(self) -> str:
        if self.passed:
            return "pass"
        return (f"attacker={self.attacker} victim={self.victim} horizon={self.horizon}: model "
                f"mismatch: the simulated attacker learns I in [{self.nats_low:.6g}, "
                f"{self.nats_high:.6g}] nats, the engine reports {self.engine_nats:.6g}")

    def to_dict(self) -> dict:
        """Plain data, strict JSON (:func:`sparsedp.plain.plain`)."""
        return plain({**asdict(self), "passed": self.passed, "verdict": self.verdict})


def audit_ppac(layout: PPACLayout, W, attacker, victim, horizon: int, *,
               value_std: float = defaults.PPAC_VALUE_STD,
               noise_std: float = defaults.PPAC_NOISE_STD,
               trials: int = defaults.PPAC_AUDIT_TRIALS, seed: int = defaults.SEED,
               confidence: float = defaults.CONFIDENCE, engine: float | None = None,
               precision: float | None = None, progress=None) -> PPACAuditResult:
    """Audit the leakage of ``victim`` to ``attacker`` (labels) after ``horizon`` rounds
    (module docstring).  ``engine``: the value to audit (default: :func:`leakage`'s);
    ``precision``: the relative error of it to catch -- the run count is then the larger of
    ``trials`` and :func:`runs_for_precision`'s; ``progress``: a bar over the simulated runs
    (:mod:`sparsedp.progress`; a 10^5-node graph simulates about 13 runs a second)."""
    if not 0 < confidence < 1:
        raise ParameterError(f"confidence must be in (0, 1), got {confidence!r}")
    if not np.isscalar(value_std) or not value_std > 0:
        raise ParameterError(f"value_std must be one positive number, got {value_std!r}")
    kind = "given"
    if engine is None:
        reported = leakage(layout, W, attacker, horizon, value_std=value_std,
                           noise_std=noise_std, victims=[victim])
        engine, kind = float(reported.nats[0]), str(reported.kind[0])
    if precision is not None:
        trials = max(trials, runs_for_precision(engine, precision, confidence))
    bar = progress_bar(progress, total=trials, desc="audit", unit="run")
    try:
        data, u = simulated_data(layout, W, attacker, victim, horizon, value_std=value_std,
                                 noise_std=noise_std, runs=trials, seed=seed, bar=bar)
    finally:
        if bar is not None:
            bar.close()
    coefficients, _, rank, _ = np.linalg.lstsq(data, u, rcond=None)
    rss = float(np.sum((u - data @ coefficients) ** 2))
    if trials <= rank:
        raise ParameterError(f"{trials} runs cannot fit the attacker's {rank} independent "
                             "observations: use more trials")
    total = float(u @ u)
    if rss <= RECOVERY_RTOL * total:
        estimate = low = high = math.inf
    else:
        each = (1.0 + confidence) / 2.0  # both intervals hold together at `confidence`
        dof = trials - rank
        variance = value_std**2
        q_low, q_high = chi2_quantile(np.array([1 - each, 1 + each]) / 2, dof)
        estimate = 0.5 * math.log(variance * dof / rss)
        low, high = (0.5 * math.log(variance * q / rss) for q in (q_low, q_high))
        if estimate <= CORRELATION_MAX_NATS:
            estimate, r_low, r_high = information_interval(1.0 - rss / total, trials, rank,
                                                           each, max(high, 1e-3))
            low, high = max(low, r_low), min(high, r_high)
    return PPACAuditResult(attacker, victim, int(horizon), int(trials), int(seed),
                           float(confidence), float(engine), kind, estimate, low, high,
                           data.shape[1])


def runs_for_precision(nats: float, precision: float, confidence: float) -> int:
    """The runs after which the audit's interval on a leakage of ``nats`` is predicted to be
    ``precision * nats`` wide (module docstring); 0 for a leakage of 0 or infinity (no relative
    precision: the given run count stands).  More than ``MAX_PRECISION_TRIALS`` is refused."""
    if not (isinstance(precision, (int, float)) and 0 < precision < 1):
        raise ParameterError(f"precision must be a relative error in (0, 1), got {precision!r}")
    if nats <= 0 or math.isinf(nats):
        return 0
    each = (1.0 + confidence) / 2.0
    z = float(-special.ndtri((1.0 - each) / 2.0))
    half_width = precision / 2.0 * nats
    if nats <= CORRELATION_MAX_NATS:
        runs = (z * math.sqrt(-math.expm1(-2.0 * nats)) / half_width) ** 2
    else:
        runs = (z / half_width) ** 2 / 2.0
    if runs > MAX_PRECISION_TRIALS:
        raise ParameterError(f"a relative precision of {precision:g} on {nats:.4g} nats needs "
                             f"about {runs:.3g} runs (more than {MAX_PRECISION_TRIALS}): "
                             "ask for a coarser precision")
    return math.ceil(runs)
