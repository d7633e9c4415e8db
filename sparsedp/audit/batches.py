"""What every Gaussian-mechanism audit shares: simulated runs in seeded batches on threads, the
attacker's second moment and error counts over a batch, the two verdict checks and the
verdict itself (:class:`GaussianVerdict`).

A batch of ``size`` runs gets its own seed spawned from the audit's ``seed``
(``numpy.random.SeedSequence.spawn``), so a result depends on ``seed``, ``trials`` and
``batch`` only, not on the thread count.  The checks (the engine's model and bounds against
the attacker's measurements) allow ``SLACK`` relative rounding, far below any statistical
width:

* *model match*: the attacker's interval ``[low, high]`` on the squared sensitivity overlaps
  the engine's ``[lower, upper]``;
* *bound holds*: the empirical lower bounds on epsilon and mu do not exceed the certified
  ``epsilon_upper`` and ``mu_upper``;
* *upper holds*: the attacker's interval at the strongest signs it found
  (:mod:`sparsedp.audit.search`) does not lie above the certified ``upper``.
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict

import numpy as np

from sparsedp import resources
from sparsedp.errors import ParameterError
from sparsedp.plain import plain
from sparsedp.privacy.gaussian import gaussian_epsilon

__all__ = ["BATCH_FLOATS", "DEFAULT_BATCH", "MAX_FEATURES", "SLACK", "GaussianVerdict",
           "bound_holds", "check_parameters", "error_counts", "model_matches", "plan_batches",
           "run_batches",
           "scaled_interval", "second_moment", "signs_text", "upper_holds", "verdict_fields"]

DEFAULT_BATCH = 8192
BATCH_FLOATS = 1 << 28  # float64 numbers one batch's simulation holds at most (2 GiB)
MAX_FEATURES = 4000  # the attacker's covariance is features x features, eigendecomposed
SLACK = 1e-9  # rounding of the two sides, far below the statistical widths


def check_parameters(T, sigma, delta, trials, confidence, batch) -> None:
    """One-line errors for the parameters every audit takes."""
    if isinstance(T, bool) or not isinstance(T, (int, np.integer)) or T < 1:
        raise ParameterError(f"T must be a positive integer, got {T!r}")
    if not sigma > 0:
        raise ParameterError(f"sigma must be positive, got {sigma!r}")
    if not 0 < delta < 1:
        raise ParameterError(f"delta must be in (0, 1), got {delta!r}")
    if not isinstance(trials, (int, np.integer)) or trials < 8:  # four parts of >= 2 runs
        raise ParameterError(f"trials must be an integer >= 8, got {trials!r}")
    if not 0 < confidence < 1:
        raise ParameterError(f"confidence must be in (0, 1), got {confidence!r}")
    if batch is not None and not (isinstance(batch, (int, np.integer)) and batch >= 1):
        raise ParameterError(f"batch must be a positive integer or None, got {batch!r}")


def plan_batches(batch: int | None, floats_per_run: int, features: int,
                 threads: int | None) -> tuple[int, int]:
    """``(runs per batch, batches run at once)`` for a simulation whose run holds
    ``floats_per_run`` float64 numbers while it is simulated, with an attacker covariance of
    ``features x features``: ``8 batch floats_per_run threads + 16 features^2`` bytes.

    ``batch=None``: ``DEFAULT_BATCH`` runs, or fewer on large graphs so that one batch holds at
    most ``BATCH_FLOATS`` numbers (2 GiB; the simulators hold about ``3.5 n`` numbers a run,
    counted as ``4 n``, with ``n`` the nodes a round simulates, for gossip its light cone:
    gossip on the 10^5-node power-law file runs about 670 at a time), and fewer still
    if the memory budget (not the free memory) holds less than that.  So the batch, and with
    it the result (seeds are spawned per batch), depends on the problem's size only wherever
    the budget holds ``8 BATCH_FLOATS + 16 features^2`` bytes, and otherwise on the budget;
    the audits report the batch they used.
    ``threads`` (default: the CPUs available) is lowered to the number of batches that fit
    the budget together; the result does not depend on it.  Refuses
    (:class:`~sparsedp.errors.ResourceLimitError`) when one batch of the given size (or of
    one run) does not fit.
    """
    budget = resources.memory_budget()
    fixed = 16.0 * features**2
    run_bytes = 8.0 * max(floats_per_run, 1)
    if batch is None:
        fitting = int(max(budget - fixed, 0) // run_bytes)
        batch = max(1, min(DEFAULT_BATCH, BATCH_FLOATS // max(floats_per_run, 1), fitting))
    resources.require_within(batch * run_bytes + fixed, budget,
                             "the audit's simulation batches",
                             "give a smaller batch or fewer rounds")
    wanted = threads or len(os.sched_getaffinity(0))
    return int(batch), int(max(1, min(wanted, (budget - fixed) // (batch * run_bytes))))


def run_batches(pool, runs: int, batch: int, seed: np.random.SeedSequence, bar, work):
    """``sum`` of ``work(rng, size)`` over batches of ``runs`` runs, each batch with its own
    spawned seed, run on ``pool``."""
    sizes = [min(batch, runs - start) for start in range(0, runs, batch)]
    children = seed.spawn(len(sizes))

    def one(index: int):
        out = work(np.random.Generator(np.random.SFC64(children[index])), sizes[index])
        if bar is not None:
            bar.update(sizes[index])
        return out

    total = None
    for part in pool.map(one, range(len(sizes))):
        total = part if total is None else total + part
    return total


def second_moment(records: np.ndarray) -> np.ndarray:
    """``sum y y^T`` over the runs (the columns of ``records``)."""
    return records @ records.T


def error_counts(records: np.ndarray, weights: np.ndarray, taus: np.ndarray,
                 shift_score: float) -> np.ndarray:
    """False positives and false negatives at each threshold over the noise-only runs
    ``records`` (one per column): ``[#(w^T y > tau), #(w^T (y + m) <= tau)]``, with
    ``shift_score = w^T m``."""
    scores = weights @ records
    positives = (scores[None, :] > taus[:, None]).sum(axis=1)
    negatives = (scores[None, :] + shift_score <= taus[:, None]).sum(axis=1)
    return np.stack([positives, negatives])


def model_matches(low: float, high: float, engine_lower: float, engine_upper: float) -> bool:
    """The attacker's ``[low, high]`` overlaps the engine's ``[engine_lower, engine_upper]``
    (two infinite intervals overlap)."""
    return bool(low <= engine_upper * (1 + SLACK) and high >= engine_lower * (1 - SLACK))


def bound_holds(epsilon_lower: float, mu_lower: float, epsilon_upper: float,
                mu_upper: float) -> bool:
    """No empirical lower bound above its certified upper bound."""
    return bool(epsilon_lower <= epsilon_upper * (1 + SLACK) + SLACK
                and mu_lower <= mu_upper * (1 + SLACK) + SLACK)


def upper_holds(strongest_low: float, engine_upper: float) -> bool:
    """The attacker's interval at its strongest signs does not lie above the certified upper
    bound (an infinite interval lies above every finite bound)."""
    return bool(strongest_low <= engine_upper * (1 + SLACK))


def scaled_interval(estimate, sigma: float) -> tuple[float, float, float]:
    """The estimate and interval of a :class:`~sparsedp.audit.statistics.Mahalanobis` ``d^2``
    as squared sensitivities, ``Delta^2 = sigma^2 d^2`` (the engine's M is for unit noise)."""
    scale = sigma**2
    return scale * estimate.value, scale * estimate.low, scale * estimate.high


def verdict_fields(engine_lower: float, engine_upper: float, sigma: float, delta: float,
                   estimate, bounds, strongest=None) -> dict:
    """The fields of a :class:`GaussianVerdict` result shared by every audit: the attacker's
    estimate and interval (:func:`scaled_interval`), the certified epsilon and mu of
    ``engine_upper``, the empirical ``bounds`` and the three checks; ``strongest``: the
    estimate at the attacker's strongest signs (default ``estimate``: the audits whose
    estimate is at those signs)."""
    value, low, high = scaled_interval(estimate, sigma)
    strongest_low = scaled_interval(strongest or estimate, sigma)[1]
    epsilon_upper = gaussian_epsilon(engine_upper, sigma, delta)
    mu_upper = math.sqrt(engine_upper) / sigma
    return {"engine_lower": float(engine_lower), "engine_upper": float(engine_upper),
            "epsilon_upper": epsilon_upper, "mu_upper": mu_upper,
            "sensitivity_estimate": value, "sensitivity_low": low,
            "sensitivity_high": high, "epsilon_lower": bounds.epsilon, "mu_lower": bounds.mu,
            "model_matches": model_matches(low, high, engine_lower, engine_upper),
            "bound_holds": bound_holds(bounds.epsilon, bounds.mu, epsilon_upper, mu_upper),
            "upper_holds": upper_holds(strongest_low, engine_upper)}


class GaussianVerdict:
    """The verdict of one audited Gaussian-mechanism instance, for a result dataclass with the
    fields ``engine_lower``, ``engine_upper``, ``sensitivity_low``, ``sensitivity_high``,
    ``signs``, ``epsilon_lower``, ``mu_lower``, ``epsilon_upper``, ``mu_upper``,
    ``model_matches``, ``bound_holds``, ``upper_holds`` and an ``instance`` string naming it;
    ``QUANTITY`` names the squared sensitivity in messages.  ``strongest`` is the attacker's
    interval and signs at its strongest attack: the estimate's own unless a subclass
    measures it apart."""

    QUANTITY = "Delta^2"

    @property
    def strongest(self) -> tuple[float, float, tuple[int, ...]]:
        """``(low, high, signs)`` of the attacker's strongest attack."""
        return self.sensitivity_low, self.sensitivity_high, self.signs

    @property
    def passed(self) -> bool:
        return self.model_matches and self.bound_holds and self.upper_holds

    @property
    def tightness(self) -> float:
        """``epsilon_lower / epsilon_upper`` (NaN when the certified epsilon is 0 or infinite)."""
        if self.epsilon_upper == 0 or math.isinf(self.epsilon_upper):
            return math.nan
        return self.epsilon_lower / self.epsilon_upper

    @property
    def verdict(self) -> str:
        """``"pass"``, or what failed, naming the instance."""
        if self.passed:
            return "pass"
        what = []
        if not self.model_matches:
            what.append(
                f"model mismatch: the attacker measures {self.QUANTITY} in "
                f"[{self.sensitivity_low:.6g}, {self.sensitivity_high:.6g}], the engine "
                f"reports [{self.engine_lower:.6g}, {self.engine_upper:.6g}]")
        if not self.upper_holds:
            low, high, signs = self.strongest
            what.append(
                f"upper bound violated: at the signs {signs_text(signs)} the attacker "
                f"measures {self.QUANTITY} in [{low:.6g}, {high:.6g}], above the certified "
                f"upper bound {self.engine_upper:.6g}")
        if not self.bound_holds:
            what.append(
                f"bound violated: empirical epsilon >= {self.epsilon_lower:.6g} (mu >= "
                f"{self.mu_lower:.6g}) above the certified {self.epsilon_upper:.6g} "
                f"(mu {self.mu_upper:.6g})")
        return f"{self.instance}: " + "; ".join(what)

    def record(self) -> dict:
        """Every field and the derived ``passed``, ``tightness`` and ``verdict``, as Python
        values (infinite floats kept)."""
        return {**asdict(self), "passed": self.passed, "tightness": self.tightness,
                "verdict": self.verdict}

    def to_dict(self) -> dict:
        """Plain data, strict JSON (:func:`sparsedp.plain.plain`)."""
        return plain(self.record())


def signs_text(signs) -> str:
    """Signs as a compact string of + and - (one per contribution)."""
    return "".join("+" if c > 0 else "-" for c in signs)
