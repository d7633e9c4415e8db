"""Audit of the PPAC leakage: simulate the protocol, estimate the attacker's information.

:func:`audit_ppac` checks ``pi_i^(j)(t) = I(D_i(t); u_j)`` (nats) of
:func:`sparsedp.ppac.leakage` from the other side: the protocol's preparation and consensus
are run ``trials`` times (:func:`sparsedp.ppac.protocol.simulated_data`: Algorithm 1 of
Fereydounian et al., and :func:`sparsedp.ppac.protocol.attacker_view`, which collects exactly
the data of their eq. 9 from the run, not from the leakage's matrices), values and noises
Gaussian with mean 0.

Values and data are jointly Gaussian, so ``I(D; u_j) = 1/2 log(Var u_j / Var(u_j | D))``
with ``Var(u_j | D)`` the residual variance of the least-squares regression of ``u_j`` on
``D`` (no intercept: every mean is 0).  Given ``D``, the residual sum of squares is
``Var(u_j | D)`` times a chi-square with ``N - p`` degrees of freedom (``p`` the rank of the
data), so with ``q`` its quantiles at ``(1 -/+ confidence) / 2``

    I in [1/2 log(Var u_j q_lo / RSS),  1/2 log(Var u_j q_hi / RSS)],

an exact interval.  A residual at rounding level (``RSS <= 1e-20 u^T u``) is exact recovery:
infinite leakage.  The audit passes when this interval holds the reported leakage (both
infinite, or the finite value inside it).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from sparsedp import defaults
from sparsedp.audit.statistics import chi2_quantile
from sparsedp.errors import ParameterError
from sparsedp.plain import plain
from sparsedp.ppac.information import leakage
from sparsedp.ppac.protocol import PPACLayout, simulated_data
from sparsedp.reprs import short_repr

__all__ = ["PPACAuditResult", "audit_ppac"]

RECOVERY_RTOL = 1e-20  # RSS / u^T u below this: u_j recovered exactly (rounding level)


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
               confidence: float = defaults.CONFIDENCE, engine: float | None = None
               ) -> PPACAuditResult:
    """Audit the leakage of ``victim`` to ``attacker`` (labels) after ``horizon`` rounds
    (module docstring).  ``engine``: the value to audit (default: :func:`leakage`'s)."""
    if not 0 < confidence < 1:
        raise ParameterError(f"confidence must be in (0, 1), got {confidence!r}")
    if not np.isscalar(value_std) or not value_std > 0:
        raise ParameterError(f"value_std must be one positive number, got {value_std!r}")
    kind = "given"
    if engine is None:
        reported = leakage(layout, W, attacker, horizon, value_std=value_std,
                           noise_std=noise_std, victims=[victim])
        engine, kind = float(reported.nats[0]), str(reported.kind[0])
    data, u = simulated_data(layout, W, attacker, victim, horizon, value_std=value_std,
                             noise_std=noise_std, runs=trials, seed=seed)
    coefficients, _, rank, _ = np.linalg.lstsq(data, u, rcond=None)
    rss = float(np.sum((u - data @ coefficients) ** 2))
    if trials <= rank:
        raise ParameterError(f"{trials} runs cannot fit the attacker's {rank} independent "
                             "observations: use more trials")
    if rss <= RECOVERY_RTOL * float(u @ u):
        estimate = low = high = math.inf
    else:
        dof = trials - rank
        variance = value_std**2
        q_low, q_high = chi2_quantile(np.array([1 - confidence, 1 + confidence]) / 2, dof)
        estimate = 0.5 * math.log(variance * dof / rss)
        low, high = (0.5 * math.log(variance * q / rss) for q in (q_low, q_high))
    return PPACAuditResult(attacker, victim, int(horizon), int(trials), int(seed),
                           float(confidence), float(engine), kind, estimate, low, high,
                           data.shape[1])
