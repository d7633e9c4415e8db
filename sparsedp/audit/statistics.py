"""The attacker's statistics: a Gaussian likelihood-ratio test built from simulations only, and
lower bounds on the privacy loss that hold with a stated confidence.

Two output distributions of the mechanism, for neighbouring inputs: ``y ~ N(0, Sigma)``
(noise only) and ``y ~ N(m, Sigma)`` (the target's contributions shifted by the sign pattern
``c``).  The attacker knows ``m`` from a noiseless run of the protocol and estimates
``Sigma`` from ``N`` independent noise-only runs:

* **Mahalanobis distance** ``d^2 = m^T Sigma^{-1} m`` -- the squared sensitivity of the
  mechanism is ``sigma^2 d^2``.  With ``S = sum y y^T`` (mean known to be zero, so ``S`` is
  Wishart with ``N`` degrees of freedom) and ``d_hat^2 = N m^T S^{-1} m``, the ratio
  ``d^2 / (m^T S^{-1} m)`` is chi-square with ``N - p + 1`` degrees of freedom (``p`` the
  rank of ``Sigma``; Muirhead, Aspects of Multivariate Statistical Theory, Thm 3.2.12), so

      d^2 in [d_hat^2 q_(a/2) / N,  d_hat^2 q_(1-a/2) / N],  q = quantiles of chi2(N - p + 1),

  an exact interval (not a bootstrap one) at confidence ``1 - a``.

* **The test.**  The Neyman-Pearson test of the two Gaussians thresholds the score
  ``w^T y`` with ``w = Sigma^{-1} m``; the attacker uses ``w = Sigma_hat^{-1} m``.  On fresh
  runs it counts false positives (noise-only scores above the threshold) and false negatives
  (shifted scores at or below it) at ``K`` thresholds fixed before the fresh runs.

* **Lower bounds.**  Clopper-Pearson upper limits ``FPR+``, ``FNR+`` at level
  ``a / (2K)`` each hold together with confidence ``1 - a`` (union bound).  Any
  (eps, delta)-DP mechanism has ``1 - FNR <= e^eps FPR + delta`` and
  ``1 - FPR <= e^eps FNR + delta``, so

      eps >= max_k max( log((1 - delta - FNR+) / FPR+), log((1 - delta - FPR+) / FNR+) ),

  and a mu-GDP mechanism has ``FNR >= Phi(Phi^{-1}(1 - FPR) - mu)``, so
  ``mu >= Phi^{-1}(1 - FPR+) - Phi^{-1}(FNR+)``.  Both bounds decrease in the two rates,
  so substituting the upper limits keeps them valid.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special

from sparsedp.reprs import short_repr

__all__ = ["Mahalanobis", "PrivacyLowerBounds", "chi2_quantile", "clopper_pearson_upper",
           "information_interval", "lower_bounds", "mahalanobis", "shift_gram",
           "squared_correlation_cdf", "thresholds"]

RANK_RTOL = 1e-9  # eigenvalues of Sigma_hat below this fraction of the largest are zero
NULL_SPACE_RTOL = 1e-6  # a shift this far outside the noise's range is "infinite" distance


def chi2_quantile(q, dof):
    """The ``q`` quantile of a chi-square with ``dof`` degrees of freedom
    (``scipy.stats.chi2.ppf``, through ``scipy.special``: the command starts faster)."""
    return 2.0 * special.gammaincinv(dof / 2.0, q)


@dataclass(frozen=True)
class Mahalanobis:
    """``d^2 = m^T Sigma^+ m`` estimated from ``samples`` noise-only runs, with its exact
    interval at ``confidence``; ``weights`` ``w = Sigma_hat^+ m`` define the attacker's score.
    ``infinite``: ``m`` leaves the range of the noise (a shift that no noise masks)."""

    value: float
    low: float
    high: float
    rank: int
    samples: int
    confidence: float
    infinite: bool
    weights: np.ndarray
    score_sd: float  # sqrt(w^T Sigma_hat w): the score's estimated noise level


def _noise_range(second_moment: np.ndarray, samples: int) -> tuple[np.ndarray, np.ndarray]:
    """The nonzero eigenvalues of ``Sigma_hat = second_moment / samples`` (those above
    ``RANK_RTOL`` times the largest) and their eigenvectors; ``samples`` must exceed the
    rank."""
    eigenvalues, vectors = np.linalg.eigh(second_moment / samples)
    keep = eigenvalues > RANK_RTOL * max(float(eigenvalues[-1]), 0.0)
    rank = int(keep.sum())
    if samples <= rank:
        raise ValueError(f"{samples} training runs cannot estimate a rank-{rank} covariance")
    return eigenvalues[keep], vectors[:, keep]


def shift_gram(second_moment: np.ndarray, samples: int, shifts: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """For the columns ``S`` of ``shifts``: ``Q = S_in^T Sigma_hat^+ S_in`` (their parts in
    the range of the noise) and ``O = S_out^T S_out`` (the Gram matrix of the parts outside
    it, zero when every shift is masked by noise).  ``c^T Q c`` is the plug-in
    ``d_hat^2`` of the combined shift ``S c``; ``c^T O c > 0`` makes it infinite."""
    eigenvalues, vectors = _noise_range(second_moment, samples)
    coordinates = vectors.T @ shifts
    outside = shifts - vectors @ coordinates
    masked = (np.linalg.norm(outside, axis=0)
              <= NULL_SPACE_RTOL * np.maximum(np.linalg.norm(shifts, axis=0), 1e-300))
    outside[:, masked] = 0.0
    return coordinates.T @ (coordinates / eigenvalues[:, None]), outside.T @ outside


def mahalanobis(second_moment: np.ndarray, samples: int, shift: np.ndarray,
                confidence: float) -> Mahalanobis:
    """:class:`Mahalanobis` from ``second_moment = sum y y^T`` of ``samples`` runs (module
    docstring).  The rank is read off the eigenvalues of ``Sigma_hat``; ``samples`` must
    exceed it."""
    eigenvalues, vectors = _noise_range(second_moment, samples)
    rank = eigenvalues.size
    coordinates = vectors.T @ shift
    outside = shift - vectors @ coordinates
    if np.linalg.norm(outside) > NULL_SPACE_RTOL * max(np.linalg.norm(shift), 1e-300):
        weights = outside / float(outside @ outside)  # score exactly 0 without the shift, 1 with
        return Mahalanobis(np.inf, np.inf, np.inf, rank, samples, confidence, True, weights, 0.0)
    value = float(np.sum(coordinates**2 / eigenvalues))
    weights = vectors @ (coordinates / eigenvalues)
    dof = samples - rank + 1
    alpha = 1.0 - confidence
    low = value * chi2_quantile(alpha / 2, dof) / samples
    high = value * chi2_quantile(1 - alpha / 2, dof) / samples
    return Mahalanobis(value, float(low), float(high), rank, samples, confidence, False,
                       weights, float(np.sqrt(value)))  # w^T Sigma_hat w = d_hat^2


def thresholds(estimate: Mahalanobis, test_runs: int, count: int = 16) -> np.ndarray:
    """``count`` score thresholds fixed from the training estimate alone: under the attacker's
    Gaussian model they give false-positive rates spaced geometrically from 1/2 down to
    ``10 / test_runs`` (rarer events could not be counted on the fresh runs)."""
    if estimate.infinite:
        return np.array([0.5])
    if estimate.score_sd == 0.0:  # no shift: nothing to test
        return np.array([0.0])
    rates = np.geomspace(0.5, min(0.5, 10.0 / test_runs), count)
    return estimate.score_sd * -special.ndtri(rates)


def clopper_pearson_upper(events: np.ndarray, trials: int, alpha: float) -> np.ndarray:
    """One-sided Clopper-Pearson upper limit of a rate, level ``alpha``: the ``p`` at which
    seeing at most ``events`` in ``trials`` has probability ``alpha``."""
    events = np.asarray(events, dtype=float)
    upper = special.betaincinv(events + 1, np.maximum(trials - events, 1e-300), 1.0 - alpha)
    return np.where(events >= trials, 1.0, upper)


@dataclass(frozen=True)
class PrivacyLowerBounds:
    """Lower bounds on epsilon (at ``delta``) and on mu (GDP) from the fresh runs, holding
    together with probability ``confidence``; ``best_threshold`` is the index of the
    threshold that gave the epsilon bound."""

    epsilon: float
    mu: float
    confidence: float
    false_positive_rates: np.ndarray
    false_negative_rates: np.ndarray
    best_threshold: int

    __repr__ = short_repr


def lower_bounds(false_positives: np.ndarray, false_negatives: np.ndarray, runs: int,
                 delta: float, confidence: float) -> PrivacyLowerBounds:
    """:class:`PrivacyLowerBounds` from the counts at each threshold over ``runs`` fresh runs
    per hypothesis (module docstring)."""
    k = len(false_positives)
    alpha = (1.0 - confidence) / (2 * k)
    fpr = clopper_pearson_upper(false_positives, runs, alpha)
    fnr = clopper_pearson_upper(false_negatives, runs, alpha)
    with np.errstate(divide="ignore", invalid="ignore"):
        eps = np.maximum(np.log(np.clip(1 - delta - fnr, 0, None) / fpr),
                         np.log(np.clip(1 - delta - fpr, 0, None) / fnr))
        mu = -special.ndtri(fpr) - special.ndtri(fnr)
    eps = np.where(np.isnan(eps), 0.0, eps)
    best = int(np.argmax(eps))
    return PrivacyLowerBounds(max(float(eps[best]), 0.0), max(float(np.max(mu)), 0.0),
                              confidence, fpr, fnr, best)


def squared_correlation_cdf(r2: float, runs: int, rank: int, information: float) -> float:
    """``P(R_hat^2 <= r2)`` for the sample squared multiple correlation of ``runs`` draws of
    zero-mean jointly Gaussian ``(u, D)`` (``D`` of rank ``rank``; no intercept) whose
    population ``R^2 = 1 - exp(-2 I)`` (``I = I(D; u)`` in nats).

    Given ``D``, ``ESS / sigma_e^2`` is a noncentral chi-square with ``rank`` degrees of freedom
    and noncentrality ``|D beta|^2 / sigma_e^2 = theta chi^2_runs`` (``theta = R^2 /
    (1 - R^2)``), and ``RSS / sigma_e^2`` an independent ``chi^2_(runs - rank)``; mixing the
    noncentral chi-square's Poisson index over the gamma noncentrality makes it negative
    binomial (Fisher's distribution of ``R^2``, the no-intercept form):

        P(R_hat^2 <= r2) = sum_k NB(k; runs / 2, R^2) I_r2(rank / 2 + k, (runs - rank) / 2).

    The sum runs over the negative binomial's mean +- 15 standard deviations (the rest is
    below 1e-40)."""
    population = -math.expm1(-2.0 * information)
    a, b = rank / 2.0, (runs - rank) / 2.0
    if population == 0.0:
        return float(special.betainc(a, b, r2))
    mean = runs / 2.0 * population / (1.0 - population)
    spread = 15.0 * math.sqrt(mean / (1.0 - population)) + 30.0
    k = np.arange(max(0, int(mean - spread)), int(mean + spread) + 1, dtype=float)
    log_weights = (special.gammaln(runs / 2.0 + k) - special.gammaln(runs / 2.0)
                   - special.gammaln(k + 1.0) + runs / 2.0 * math.log1p(-population)
                   + k * math.log(population))
    return float(np.sum(np.exp(log_weights) * special.betainc(a + k, b, r2)))


def information_interval(r2: float, runs: int, rank: int, confidence: float,
                         ceiling: float) -> tuple[float, float, float]:
    """``(estimate, low, high)`` of ``I = -1/2 log(1 - R^2)`` from the sample ``r2`` by
    inverting :func:`squared_correlation_cdf` (decreasing in ``I``): ``low`` and ``high``
    put ``(1 -/+ confidence) / 2`` of the distribution above ``r2``, the estimate is
    median-unbiased.  ``ceiling``: an information certainly above the upper limit (the root
    search's bracket; raised until it is)."""

    def solve(level: float) -> float:
        def gap(information):
            return squared_correlation_cdf(r2, runs, rank, information) - level

        if gap(0.0) <= 0.0:
            return 0.0
        top = ceiling
        while gap(top) > 0.0:
            top *= 2.0
        return float(optimize.brentq(gap, 0.0, top, xtol=1e-12, rtol=1e-10))

    alpha = 1.0 - confidence
    return solve(0.5), solve(1.0 - alpha / 2.0), solve(alpha / 2.0)
