"""Privacy accounting for the Gaussian mechanism that a whole gossip view amounts to.

Everything a coalition observes during T rounds of gossip is a linear function of the private
values plus Gaussian noise, so the whole view is ONE Gaussian mechanism with l2 sensitivity
``Delta`` and noise standard deviation ``sigma``.  Its privacy is governed by the single number
``mu = Delta / sigma`` (the mechanism is mu-GDP).  The round count enters only through
``Delta``; never multiply by ``sqrt(T)`` here.  All public ``gaussian_*`` functions take the
SQUARED sensitivity ``Delta**2``, which is what the sensitivity engine reports.

Formulas (Phi is the standard normal CDF):

* Tight privacy profile (Balle & Wang 2018, Theorem 8), for eps >= 0::

      delta(eps) = Phi(-eps/mu + mu/2) - exp(eps) * Phi(-eps/mu - mu/2)

  evaluated in log space with ``a = -eps/mu + mu/2`` and ``b = -eps/mu - mu/2`` as::

      log delta(eps) = log Phi(a) + log(1 - exp(eps + log Phi(b) - log Phi(a)))

  and rounded UP by a bound on the floating-point error, so the value returned is never below
  the exact one.  ``mu = 0`` gives ``delta = 0``.  delta(eps) decreases in eps and increases
  in mu.
* Tight epsilon: the smallest eps >= 0 with delta(eps) <= delta, found by bracketing and
  ``brentq`` and then moved up until the check ``delta(eps) <= delta`` passes.
* Renyi DP of the Gaussian mechanism (Mironov 2017)::

      eps_RDP(alpha) = alpha * Delta**2 / (2 * sigma**2),   alpha > 1

* RDP -> (eps, delta) (Canonne, Kamath & Steinke 2020, Prop. 12; Balle et al. 2020, Thm. 21)::

      eps = min over alpha of  eps_RDP(alpha) + log((alpha - 1)/alpha)
                               - (log(delta) + log(alpha)) / (alpha - 1)

  a valid but looser bound than the tight epsilon.
* Tight calibration: ``sigma = Delta / mu*``, where mu* is the largest mu with
  delta(eps; mu) <= delta (checked after solving, moved down if the check fails).
* Classical calibration (Dwork & Roth 2014, Theorem A.1), valid only for 0 < eps < 1::

      sigma = Delta * sqrt(2 * ln(1.25 / delta)) / eps
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy.optimize import brentq
from scipy.special import log_ndtr, ndtri

from sparsedp import validation
from sparsedp.errors import ParameterError

__all__ = [
    "DEFAULT_ALPHAS",
    "calibrate_sigma",
    "calibrate_sigma_classical",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_mu",
    "gaussian_rdp_epsilon",
    "gdp_epsilon",
    "gdp_log_delta",
    "gdp_mu_for",
    "rdp_epsilon",
    "rdp_to_dp",
]

DEFAULT_ALPHAS: np.ndarray = np.concatenate(
    [np.linspace(1.01, 10.0, 200), np.geomspace(10.0, 10000.0, 200)[1:]]
)
"""Default Renyi orders for :func:`rdp_to_dp`: 1.01..10 linearly, then 10..1e4 geometrically."""
DEFAULT_ALPHAS.flags.writeable = False

_EPS = float(np.finfo(float).eps)
_TINY = float(np.finfo(float).tiny)


# --------------------------------------------------------------------------- validation


def _check_alphas(name: str, alpha: object) -> np.ndarray:
    try:
        arr = np.asarray(alpha, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ParameterError(f"{name} must be real numbers > 1, got {alpha!r}") from exc
    bad = ~(np.isfinite(arr) & (arr > 1.0))
    if np.any(bad):
        raise ParameterError(f"{name} must be > 1 and finite, got {float(arr[bad].flat[0])!r}")
    return arr


# --------------------------------------------------------------------------- mu-GDP core


def _log1mexp(x: float) -> float:
    """``log(1 - exp(x))`` for ``x < 0``, accurate on both sides of ``-log 2``."""
    if x > -math.log(2.0):
        return math.log(-math.expm1(x))
    return math.log1p(-math.exp(x))


def _log_delta(mu: float, eps: float) -> float:
    """Upper bound on ``log delta(eps)`` of mu-GDP, tight to rounding error (no validation).

    ``log delta = log Phi(a) + log(1 - exp(x))`` with ``x = eps + log Phi(b) - log Phi(a)``.
    The exact x is < 0; its computed value can be off by a few ulps of the magnitudes that were
    added, which matters when x is close to 0 (mu small).  As ``log(1 - exp(x))`` decreases in
    x, x is lowered by ``32 ulp * (1 + eps + |log Phi(a)| + |log Phi(b)|)`` (this also covers a
    few ulps of error in mu itself); if it is still not < 0 (only possible when the parts
    overflow), the bound ``delta <= Phi(a)`` is used.  At eps = 0 the closed form
    ``delta(0) = erf(mu / (2 sqrt 2)) <= mu / sqrt(2 pi)`` is used instead: it has no
    cancellation.  The result is raised by a further 8 ulps of its parts and capped at 0.
    """
    if mu == 0.0:
        return -math.inf
    if eps == 0.0:
        # delta(0) = 2 Phi(mu/2) - 1 = erf(mu / (2 sqrt 2)) <= mu / sqrt(2 pi): no cancellation.
        if mu < 1e-8:
            value = math.log(mu) - 0.5 * math.log(2.0 * math.pi)
        else:
            value = math.log(math.erf(mu / (2.0 * math.sqrt(2.0))))
        return min(value + 8.0 * _EPS * (1.0 + abs(value)), 0.0)
    a = -eps / mu + mu / 2.0
    b = -eps / mu - mu / 2.0
    lpa = float(log_ndtr(a))
    if lpa == -math.inf:
        # Phi(a) underflows even in log space (log Phi(a) < -1e308): delta <= Phi(a) is 0.
        return -math.inf
    lpb = float(log_ndtr(b))
    x_low = (eps + lpb) - lpa - 32.0 * _EPS * (1.0 + eps + abs(lpa) + abs(lpb))
    tail = _log1mexp(x_low) if x_low < 0.0 else 0.0
    return min(lpa + tail + 8.0 * _EPS * (1.0 + abs(lpa) + abs(tail)), 0.0)


def _log_threshold(delta: float) -> float:
    """``log(delta)`` lowered by 4 ulps of its size.

    ``log delta(eps) <= _log_threshold(delta)`` then also gives ``exp(log delta(eps)) <= delta``
    in floating point, although ``log`` and ``exp`` each round.
    """
    log_delta = math.log(delta)
    return log_delta - 4.0 * _EPS * (1.0 + abs(log_delta))


def gdp_log_delta(mu: float, epsilon: float) -> float:
    """Natural log of the tight delta(epsilon) of a mu-GDP mechanism (Balle & Wang 2018).

    ``delta(eps) = Phi(-eps/mu + mu/2) - exp(eps) * Phi(-eps/mu - mu/2)``, computed as
    ``log Phi(a) + log(1 - exp(eps + log Phi(b) - log Phi(a)))`` so that it neither
    overflows nor underflows for mu from 1e-4 to 50 and eps up to ~1e4.  The value is
    rounded up by a floating-point error bound, so it is never below the exact log delta.
    Returns ``-inf`` for ``mu == 0`` (delta = 0).
    """
    return _log_delta(validation.nonnegative("mu", mu), validation.nonnegative("epsilon", epsilon))


def gdp_epsilon(mu: float, delta: float) -> float:
    """Tight epsilon of a mu-GDP mechanism: the smallest eps >= 0 with delta(eps) <= delta.

    Returns 0 if ``delta(0) = 2 Phi(mu/2) - 1 <= delta``.  Otherwise the root of
    ``log delta(eps) - log(delta)`` is bracketed (starting from
    ``eps = mu * (mu/2 - Phi^-1(delta))``, where ``delta(eps) <= Phi(a) = delta``, doubling
    if needed) and solved with ``brentq``; the root is then moved up until
    ``delta(eps) <= delta`` holds (with the upper bound of :func:`gdp_log_delta`, against
    ``log(delta)`` lowered by 4 ulps), so the result is never below the true epsilon.
    """
    mu = validation.nonnegative("mu", mu)
    delta = validation.probability_delta(delta)
    log_target = _log_threshold(delta)

    def excess(eps: float) -> float:
        return _log_delta(mu, eps) - log_target

    if excess(0.0) <= 0.0:
        return 0.0
    lo, hi = 0.0, max(mu * (mu / 2.0 - float(ndtri(delta))), mu)
    while excess(hi) > 0.0:
        lo, hi = hi, 2.0 * hi
    eps = float(brentq(excess, lo, hi, xtol=_TINY, rtol=4.0 * _EPS))
    step = float(np.spacing(eps))
    while excess(eps) > 0.0:
        eps, step = min(eps + step, hi), 2.0 * step
    return eps


def gdp_mu_for(epsilon: float, delta: float) -> float:
    """Largest mu whose tight profile satisfies ``delta(epsilon; mu) <= delta``.

    delta(eps; mu) increases in mu, from 0 at mu = 0 towards 1.  The root of
    ``log delta(eps; mu) - log(delta)`` is bracketed by halving/doubling from mu = 1 and
    solved with ``brentq``; the root is then moved down until ``delta(eps; mu) <= delta``
    holds (checked as in :func:`gdp_epsilon`), so the result is never above the true mu*.
    """
    eps = validation.nonnegative("epsilon", epsilon)
    log_target = _log_threshold(validation.probability_delta(delta))

    def excess(mu: float) -> float:
        return _log_delta(mu, eps) - log_target

    lo = hi = 1.0
    while excess(lo) > 0.0:
        hi, lo = lo, lo / 2.0
    while excess(hi) <= 0.0:
        lo, hi = hi, 2.0 * hi
    mu = float(brentq(excess, lo, hi, xtol=_TINY, rtol=4.0 * _EPS))
    step = float(np.spacing(mu))
    while excess(mu) > 0.0:
        mu, step = max(mu - step, lo), 2.0 * step
    return mu


# --------------------------------------------------------------------------- Gaussian mechanism


def gaussian_mu(squared_sensitivity: float, sigma: float) -> float:
    """GDP parameter of the Gaussian mechanism: ``mu = Delta / sigma = sqrt(Delta**2) / sigma``.

    Parameters
    ----------
    squared_sensitivity : float
        Squared l2 sensitivity ``Delta**2`` of the whole view (>= 0, finite).
    sigma : float
        Standard deviation of the Gaussian noise (> 0, finite).

    Returns
    -------
    float
        ``mu``; the mechanism is mu-GDP.

    Raises
    ------
    ParameterError
        If ``squared_sensitivity`` is negative or not finite, ``sigma`` is not > 0 and
        finite, or ``Delta / sigma`` overflows.

    Examples
    --------
    >>> from sparsedp import gaussian_mu
    >>> gaussian_mu(4.0, sigma=2.0)
    1.0
    """
    d2 = validation.nonnegative("squared_sensitivity", squared_sensitivity)
    sigma = validation.sigma(sigma)
    mu = math.sqrt(d2) / sigma
    if not math.isfinite(mu):
        raise ParameterError(
            f"mu = Delta / sigma overflows for squared_sensitivity={d2!r}, sigma={sigma!r}"
        )
    return mu


def gaussian_delta(squared_sensitivity: float, sigma: float, epsilon: float) -> float:
    """Tight delta(epsilon) of the Gaussian mechanism, with ``mu = Delta / sigma``.

    ``delta = Phi(-eps/mu + mu/2) - exp(eps) * Phi(-eps/mu - mu/2)`` (never below the exact
    value; see :func:`gdp_log_delta`).

    Parameters
    ----------
    squared_sensitivity : float
        Squared l2 sensitivity ``Delta**2`` (>= 0, finite).
    sigma : float
        Noise standard deviation (> 0, finite).
    epsilon : float
        Privacy parameter eps (>= 0, finite).

    Returns
    -------
    float
        delta(epsilon), rounded up (never below the exact value).

    Raises
    ------
    ParameterError
        If a parameter is out of range (see :func:`gaussian_mu`; ``epsilon < 0``).

    Examples
    --------
    >>> from sparsedp import gaussian_delta
    >>> round(gaussian_delta(1.0, sigma=1.0, epsilon=1.0), 6)
    0.126937
    """
    mu = gaussian_mu(squared_sensitivity, sigma)
    return math.exp(gdp_log_delta(mu, epsilon))


def gaussian_epsilon(squared_sensitivity: float, sigma: float, delta: float) -> float:
    """Tight epsilon of the Gaussian mechanism: smallest eps >= 0 with delta(eps) <= delta.

    ``delta(eps) = Phi(-eps/mu + mu/2) - exp(eps) * Phi(-eps/mu - mu/2)``, ``mu = Delta/sigma``;
    see :func:`gdp_epsilon`.  Squared sensitivity 0 gives 0; an infinite one (the data seen
    without noise) gives ``inf``.

    Parameters
    ----------
    squared_sensitivity : float
        Squared l2 sensitivity ``Delta**2`` of the whole view (>= 0; ``inf`` allowed).  The
        round count enters only through it: never multiply by ``sqrt(T)``.
    sigma : float
        Noise standard deviation (> 0, finite).
    delta : float
        Target delta, in (0, 1).

    Returns
    -------
    float
        The tight epsilon (never below the exact value).

    Raises
    ------
    ParameterError
        If ``sigma`` is not > 0 and finite, ``delta`` is outside (0, 1), or
        ``squared_sensitivity`` is negative or NaN.

    Examples
    --------
    >>> from sparsedp import gaussian_epsilon
    >>> round(gaussian_epsilon(1.0, sigma=5.0, delta=1e-5), 6)
    0.725522
    >>> gaussian_epsilon(0.0, sigma=5.0, delta=1e-5)
    0.0
    >>> gaussian_epsilon(float("inf"), sigma=5.0, delta=1e-5)
    inf
    """
    if squared_sensitivity == math.inf:
        validation.sigma(sigma)
        validation.probability_delta(delta)
        return math.inf
    return gdp_epsilon(gaussian_mu(squared_sensitivity, sigma), delta)


def rdp_epsilon(
    squared_sensitivity: float, sigma: float, alpha: float | np.ndarray
) -> float | np.ndarray:
    """Renyi-DP epsilon of the Gaussian mechanism: ``alpha * Delta**2 / (2 * sigma**2)``.

    Vectorised over ``alpha`` (every order must be > 1); a scalar alpha gives a float.

    Parameters
    ----------
    squared_sensitivity : float
        Squared l2 sensitivity ``Delta**2`` (>= 0, finite).
    sigma : float
        Noise standard deviation (> 0, finite).
    alpha : float or numpy.ndarray
        Renyi order(s), each > 1 and finite.

    Returns
    -------
    float or numpy.ndarray
        eps_RDP(alpha): a float for a scalar ``alpha``, else an array of the shape of ``alpha``.

    Raises
    ------
    ParameterError
        If a parameter is out of range or an order is not > 1.

    Examples
    --------
    >>> from sparsedp import rdp_epsilon
    >>> rdp_epsilon(1.0, sigma=2.0, alpha=2.0)
    0.25
    >>> rdp_epsilon(1.0, sigma=2.0, alpha=[2.0, 4.0]).tolist()
    [0.25, 0.5]
    """
    d2 = validation.nonnegative("squared_sensitivity", squared_sensitivity)
    sigma = validation.sigma(sigma)
    alphas = _check_alphas("alpha", alpha)
    values = alphas * (d2 / (2.0 * sigma * sigma))
    return float(values) if values.ndim == 0 else values


def rdp_to_dp(
    rdp: Callable[[float], float] | np.ndarray,
    delta: float,
    alphas: np.ndarray | None = None,
) -> tuple[float, float]:
    """Convert Renyi DP to (epsilon, delta)-DP; returns ``(epsilon, best alpha)``.

    ``eps = min_alpha rdp(alpha) + log((alpha - 1)/alpha) - (log(delta) + log(alpha))/(alpha - 1)``
    (Canonne, Kamath & Steinke 2020, Prop. 12), minimised over ``alphas`` (default
    :data:`DEFAULT_ALPHAS`).  ``rdp`` is a callable ``alpha -> eps_RDP(alpha)`` or an array
    aligned with ``alphas``; its values must be >= 0 (``+inf`` marks an order with no bound).
    The bound holds for every real eps and delta(eps) decreases in eps, so a negative minimum
    is reported as 0.

    Parameters
    ----------
    rdp : callable or numpy.ndarray
        ``alpha -> eps_RDP(alpha)``, or an array of values aligned with ``alphas``; values
        must be >= 0 (``+inf`` marks an order with no bound).
    delta : float
        Target delta, in (0, 1).
    alphas : numpy.ndarray, optional
        Non-empty 1-D array of Renyi orders > 1 (default :data:`DEFAULT_ALPHAS`).

    Returns
    -------
    epsilon : float
        The smallest bound over the orders (>= 0).
    alpha : float
        The order that attains it.

    Raises
    ------
    ParameterError
        If ``delta`` is outside (0, 1), ``alphas`` is not a non-empty 1-D array of orders
        > 1, or ``rdp`` gives values that are not real, negative, NaN or of the wrong shape.

    Examples
    --------
    The Gaussian mechanism with ``Delta = 1``, ``sigma = 2`` (eps_RDP(alpha) = alpha / 8):

    >>> from sparsedp import rdp_to_dp
    >>> eps, alpha = rdp_to_dp(lambda a: a / 8, delta=1e-5)
    >>> round(eps, 6), round(alpha, 3)
    (2.165717, 9.593)
    """
    log_delta = math.log(validation.probability_delta(delta))
    orders = DEFAULT_ALPHAS if alphas is None else _check_alphas("alphas", alphas)
    if orders.ndim != 1 or orders.size == 0:
        raise ParameterError(f"alphas must be a non-empty 1-D array, got shape {orders.shape}")
    try:
        if callable(rdp):
            values = np.array([float(rdp(float(a))) for a in orders])
        else:
            values = np.asarray(rdp, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ParameterError(f"rdp must give real numbers, got {rdp!r}") from exc
    if values.shape != orders.shape:
        raise ParameterError(
            f"rdp must have the same shape as alphas {orders.shape}, got {values.shape}"
        )
    bad = np.isnan(values) | (values < 0.0)
    if np.any(bad):
        i = int(np.argmax(bad))
        raise ParameterError(
            f"rdp values must be >= 0, got {float(values[i])!r} at alpha={float(orders[i])!r}"
        )
    eps = values + np.log1p(-1.0 / orders) - (log_delta + np.log(orders)) / (orders - 1.0)
    best = int(np.argmin(eps))
    return max(float(eps[best]), 0.0), float(orders[best])


def gaussian_rdp_epsilon(
    squared_sensitivity: float,
    sigma: float,
    delta: float,
    alphas: np.ndarray | None = None,
) -> float:
    """Epsilon of the Gaussian mechanism by the RDP route (valid, looser than the tight one).

    ``min_alpha alpha*Delta**2/(2 sigma**2) + log((alpha-1)/alpha)
    - (log(delta) + log(alpha))/(alpha-1)``; see :func:`rdp_to_dp`.

    Parameters
    ----------
    squared_sensitivity : float
        Squared l2 sensitivity ``Delta**2`` (>= 0, finite).
    sigma : float
        Noise standard deviation (> 0, finite).
    delta : float
        Target delta, in (0, 1).
    alphas : numpy.ndarray, optional
        Renyi orders > 1 to minimise over (default :data:`DEFAULT_ALPHAS`).

    Returns
    -------
    float
        The RDP-route epsilon (>= the tight :func:`gaussian_epsilon`).

    Raises
    ------
    ParameterError
        If a parameter is out of range (see :func:`rdp_epsilon` and :func:`rdp_to_dp`).

    Examples
    --------
    >>> from sparsedp import gaussian_epsilon, gaussian_rdp_epsilon
    >>> round(gaussian_rdp_epsilon(1.0, sigma=2.0, delta=1e-5), 6)
    2.165717
    >>> round(gaussian_epsilon(1.0, sigma=2.0, delta=1e-5), 6)  # the tight value is smaller
    1.993091
    """
    orders = DEFAULT_ALPHAS if alphas is None else alphas
    values = rdp_epsilon(squared_sensitivity, sigma, orders)
    return rdp_to_dp(np.atleast_1d(values), delta, orders)[0]


def calibrate_sigma(squared_sensitivity: float, epsilon: float, delta: float) -> float:
    """Smallest sigma for which the tight profile gives ``delta(epsilon) <= delta``.

    ``sigma = Delta / mu*`` with mu* from :func:`gdp_mu_for`; as ``Delta / sigma`` rounds,
    sigma is then moved up until ``delta(epsilon; gaussian_mu(Delta**2, sigma)) <= delta``
    holds (checked as in :func:`gdp_epsilon`).  Squared sensitivity 0 gives 0.

    Parameters
    ----------
    squared_sensitivity : float
        Squared l2 sensitivity ``Delta**2`` (>= 0, finite).
    epsilon : float
        Target epsilon (>= 0, finite).
    delta : float
        Target delta, in (0, 1).

    Returns
    -------
    float
        The noise standard deviation sigma.

    Raises
    ------
    ParameterError
        If ``squared_sensitivity`` or ``epsilon`` is negative or not finite, or ``delta`` is
        outside (0, 1).

    Examples
    --------
    >>> from sparsedp import calibrate_sigma, gaussian_epsilon
    >>> sigma = calibrate_sigma(1.0, epsilon=1.0, delta=1e-5)
    >>> round(sigma, 6)
    3.730632
    >>> gaussian_epsilon(1.0, sigma, delta=1e-5) <= 1.0
    True
    """
    d2 = validation.nonnegative("squared_sensitivity", squared_sensitivity)
    mu = gdp_mu_for(epsilon, delta)  # also validates epsilon and delta
    if d2 == 0.0:
        return 0.0
    eps, log_target = float(epsilon), _log_threshold(delta)
    sigma = math.sqrt(d2) / mu
    step = float(np.spacing(sigma))
    while _log_delta(gaussian_mu(d2, sigma), eps) > log_target:
        sigma, step = sigma + step, 2.0 * step
    return sigma


def calibrate_sigma_classical(squared_sensitivity: float, epsilon: float, delta: float) -> float:
    """Classical Dwork-Roth rule ``sigma = Delta * sqrt(2 ln(1.25/delta)) / epsilon``.

    Valid only for ``0 < epsilon < 1`` (Dwork & Roth 2014, Thm. A.1); it is looser than
    :func:`calibrate_sigma`.  Squared sensitivity 0 gives 0.

    Parameters
    ----------
    squared_sensitivity : float
        Squared l2 sensitivity ``Delta**2`` (>= 0, finite).
    epsilon : float
        Target epsilon, in (0, 1).
    delta : float
        Target delta, in (0, 1).

    Returns
    -------
    float
        The noise standard deviation sigma.

    Raises
    ------
    ParameterError
        For epsilon outside (0, 1) (where the rule is invalid), a negative or non-finite
        ``squared_sensitivity``, or ``delta`` outside (0, 1).

    Examples
    --------
    >>> from sparsedp import calibrate_sigma, calibrate_sigma_classical
    >>> round(calibrate_sigma_classical(1.0, epsilon=0.5, delta=1e-5), 6)
    9.689611
    >>> round(calibrate_sigma(1.0, epsilon=0.5, delta=1e-5), 6)  # the tight rule needs less
    7.031827
    """
    d2 = validation.nonnegative("squared_sensitivity", squared_sensitivity)
    eps = validation.nonnegative("epsilon", epsilon)
    delta = validation.probability_delta(delta)
    if not 0.0 < eps < 1.0:
        raise ParameterError(
            f"epsilon must lie in (0, 1) for the classical Dwork-Roth rule, got {eps!r}; "
            "the rule is invalid there, use calibrate_sigma (tight calibration) instead"
        )
    return math.sqrt(d2) * math.sqrt(2.0 * math.log(1.25 / delta)) / eps
