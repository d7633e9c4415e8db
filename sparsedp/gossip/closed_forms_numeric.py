"""The closed forms of Koskela & Kulkarni on numbers (n, m, T, rho or gamma, epsilon, delta)
and their result type :class:`ClosedForm`.

Re-exported by :mod:`sparsedp.gossip.closed_forms`, whose docstring states every result, its
kind and the corrections to the paper; the versions for a given gossip matrix (``*_for``,
:func:`~sparsedp.gossip.closed_forms.certified_rho`) are there.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from sparsedp import validation
from sparsedp.errors import ParameterError
from sparsedp.privacy.gaussian import calibrate_sigma_classical
from sparsedp.reprs import short_repr

__all__ = [
    "KINDS",
    "ClosedForm",
    "eq54_bound",
    "eq55_sigma",
    "eq56_sigma",
    "thm13_rate",
    "thm15_bound",
    "thm16_rate",
    "thm17_utility_estimate",
]

KINDS = ("upper", "limit", "asymptotic upper", "estimate")
_W_ASSUMPTION = "W symmetric, doubly stochastic and primitive (irreducible and aperiodic)"


@dataclass(frozen=True)
class ClosedForm:
    """One closed-form value with its kind (:data:`KINDS`) and the assumptions it rests on.

    ``terms`` lists ``(name, value)`` pairs that add up to ``value`` (a single pair for
    one-term formulas); ``notes`` records corrections to the paper and where rho came from.

    Attributes
    ----------
    name : str
        Which result (``"Thm 15 bound"``, ``"eq. 5.6 sigma"``, ...).
    value : float
        The value of the formula.
    kind : str
        One of :data:`KINDS`: ``"upper"``, ``"limit"``, ``"asymptotic upper"``, ``"estimate"``.
    assumptions : str
        The theorem's assumptions, as text.
    terms : tuple of (str, float)
        ``(name, value)`` pairs that add up to ``value``.
    notes : tuple of str
        Corrections to the paper and where rho came from.

    Examples
    --------
    >>> from sparsedp import thm15_bound
    >>> form = thm15_bound(n=8, m=1, T=50, rho=0.8)
    >>> form.kind, round(form.value, 6)
    ('upper', 1381.25)
    >>> [(name, round(v, 6)) for name, v in form.terms]
    [('(m/n) T', 6.25), ('2/(1-rho)^2 sqrt(mT/n)', 125.0), ('2/(1-rho)^4', 1250.0)]
    >>> sorted(form.to_dict())
    ['assumptions', 'kind', 'name', 'notes', 'terms', 'value']
    """

    name: str
    value: float
    kind: str
    assumptions: str
    terms: tuple[tuple[str, float], ...] = ()
    notes: tuple[str, ...] = ()

    __repr__ = short_repr

    def to_dict(self) -> dict:
        """Plain data (JSON-ready)."""
        return {"name": self.name, "value": self.value, "kind": self.kind,
                "assumptions": self.assumptions, "terms": [list(t) for t in self.terms],
                "notes": list(self.notes)}


# --------------------------------------------------------------------------------------------
# Validation of the scalar arguments
# --------------------------------------------------------------------------------------------

def _integer(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ParameterError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ParameterError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def _nodes_and_observers(n: object, m: object) -> tuple[int, int]:
    n = _integer("n (number of nodes)", n, 2)
    m = _integer("m (number of observers)", m, 1)
    if m >= n:
        raise ParameterError(f"m (number of observers) must satisfy 1 <= m < n = {n}, got {m}: "
                             "the target must be outside the observer set")
    return n, m


def _rho(rho: object) -> float:
    x = validation.real("rho", rho)
    if not 0.0 <= x < 1.0:
        raise ParameterError(f"rho = max(|lambda_2|, |lambda_n|) must lie in [0, 1) (W primitive), "
                             f"got {x!r}")
    return x


def _gamma(gamma: object) -> float:
    x = validation.real("gamma", gamma)
    if not 0.0 < x <= 1.0:
        raise ParameterError(f"gamma = 1 - rho (absolute spectral gap) must lie in (0, 1], "
                             f"got {x!r}")
    return x


def _positive(name: str, value: object) -> float:
    x = validation.real(name, value)
    if not (math.isfinite(x) and x > 0.0):
        raise ParameterError(f"{name} must be > 0 and finite, got {x!r}")
    return x


def _epsilon_classical(epsilon: object) -> float:
    eps = _positive("epsilon", epsilon)
    if eps >= 1.0:
        raise ParameterError(
            f"epsilon = {eps!r}: the classical calibration sigma = Delta sqrt(2 log(1.25/delta))"
            " / epsilon (v2 eq. 5.5, Dwork & Roth Thm A.1) is only valid for epsilon < 1; use "
            "sparsedp.calibrate_sigma (tight Gaussian calibration, any epsilon > 0) instead")
    return eps


# --------------------------------------------------------------------------------------------
# Closed forms on numbers
# --------------------------------------------------------------------------------------------

def thm13_rate(n: int) -> ClosedForm:
    """Thm 13: ``lim_{T -> inf} Delta_T(j -> i)^2 / T = 1/n`` (single observer i, kind
    ``"limit"``).  Needs ``j != i``: for ``j == i`` the slope is close to 1 (see the tests).

    Parameters
    ----------
    n : int
        Number of nodes (>= 2).

    Returns
    -------
    ClosedForm
        ``value = 1/n``, kind ``"limit"``.

    Raises
    ------
    ParameterError
        If ``n`` is not an integer >= 2.

    Examples
    --------
    >>> from sparsedp import thm13_rate
    >>> form = thm13_rate(8)
    >>> form.value, form.kind
    (0.125, 'limit')
    """
    n = _integer("n (number of nodes)", n, 2)
    return ClosedForm("Thm 13 rate", 1.0 / n, "limit",
                      f"{_W_ASSUMPTION}; single observer i; target j != i; T -> inf",
                      (("1/n", 1.0 / n),))


def thm15_bound(n: int, m: int, T: int, rho: float) -> ClosedForm:
    """Thm 15 (as corrected): ``Delta^2 <= (m/n) T + 2/(1-rho)^2 sqrt(mT/n) + 2/(1-rho)^4``.

    Kind ``"upper"``, for j not in A (it fails for j in A, see the tests).  The printed
    statement divides the left side by T, a stray factor (see the module docstring).
    ``rho`` must not under-estimate the true rho: use :func:`certified_rho` or
    :func:`thm15_bound_for`.

    Parameters
    ----------
    n : int
        Number of nodes (>= 2).
    m : int
        Number of observers, ``1 <= m < n``.
    T : int
        Number of gossip rounds (>= 1).
    rho : float
        Upper bound on ``max(|lambda_2|, |lambda_n|)`` of W, in [0, 1).

    Returns
    -------
    ClosedForm
        The bound on ``Delta^2`` (kind ``"upper"``) and its three terms.

    Raises
    ------
    ParameterError
        If ``n``, ``m`` or ``T`` is out of range or ``rho`` is not in [0, 1).

    Examples
    --------
    >>> from sparsedp import thm15_bound
    >>> form = thm15_bound(n=8, m=1, T=50, rho=0.8)
    >>> form.kind, round(form.value, 6)
    ('upper', 1381.25)
    """
    n, m = _nodes_and_observers(n, m)
    T = validation.rounds(T)
    rho = _rho(rho)
    g = 1.0 - rho
    terms = (("(m/n) T", m / n * T),
             ("2/(1-rho)^2 sqrt(mT/n)", 2.0 / g**2 * math.sqrt(m * T / n)),
             ("2/(1-rho)^4", 2.0 / g**4))
    return ClosedForm(
        "Thm 15 bound", math.fsum(v for _, v in terms), "upper",
        f"{_W_ASSUMPTION}; observers A with |A| = m; target j not in A; any T >= 1; "
        "rho >= max(|lambda_2|, |lambda_n|)",
        terms,
        ("the printed statement bounds Delta^2 / T by this expression: a stray factor T; the "
         "proof (App. H) bounds Delta^2",))


def thm16_rate(n: int, m: int) -> ClosedForm:
    """Thm 16: ``limsup Delta-bar^2 / T <= m / (n - m)`` (observers' own noise removed; kind
    ``"asymptotic upper"``).  Needs j not in A and, as measured (see the tests), j adjacent to
    no observer; :func:`thm16_rate_for` checks both.

    Parameters
    ----------
    n : int
        Number of nodes (>= 2).
    m : int
        Number of observers, ``1 <= m < n``.

    Returns
    -------
    ClosedForm
        ``value = m / (n - m)``, kind ``"asymptotic upper"``.

    Raises
    ------
    ParameterError
        If ``n`` or ``m`` is out of range.

    Examples
    --------
    >>> from sparsedp import thm16_rate
    >>> form = thm16_rate(n=8, m=2)
    >>> round(form.value, 6), form.kind
    (0.333333, 'asymptotic upper')
    """
    n, m = _nodes_and_observers(n, m)
    return ClosedForm(
        "Thm 16 rate", m / (n - m), "asymptotic upper",
        f"{_W_ASSUMPTION}; observers A with |A| = m, their own noise removed; target j not in "
        "A and not adjacent to any observer (W_aj = 0 for a in A; added here, see the "
        "counterexample); T -> inf",
        (("m/(n-m)", m / (n - m)),))


def eq54_bound(n: int, T: int, gamma: float) -> ClosedForm:
    """v2 eq. 5.4: ``Delta_T(j -> i)^2 <= T/n + 2/gamma^2 sqrt(T/n) + 2/gamma^4``, gamma = 1 - rho
    (Thm 15 with m = 1; kind ``"upper"``; single observer ``i != j``).

    Parameters
    ----------
    n : int
        Number of nodes (>= 2).
    T : int
        Number of gossip rounds (>= 1).
    gamma : float
        Absolute spectral gap ``1 - rho`` (a lower bound on it), in (0, 1].

    Returns
    -------
    ClosedForm
        The bound on ``Delta_T(j -> i)^2`` (kind ``"upper"``) and its three terms.

    Raises
    ------
    ParameterError
        If ``n`` or ``T`` is out of range or ``gamma`` is not in (0, 1].

    Examples
    --------
    >>> from sparsedp import eq54_bound
    >>> round(eq54_bound(n=8, T=50, gamma=0.2).value, 6)
    1381.25
    """
    n = _integer("n (number of nodes)", n, 2)
    gamma = _gamma(gamma)
    T = validation.rounds(T)
    terms = (("T/n", T / n),
             ("2/gamma^2 sqrt(T/n)", 2.0 / gamma**2 * math.sqrt(T / n)),
             ("2/gamma^4", 2.0 / gamma**4))
    return ClosedForm("eq. 5.4 bound", math.fsum(v for _, v in terms), "upper",
                      f"{_W_ASSUMPTION}; single observer i; target j != i; any T >= 1; "
                      "gamma <= 1 - max(|lambda_2|, |lambda_n|)", terms)


def eq55_sigma(squared_sensitivity: float, epsilon: float, delta: float) -> float:
    """v2 eq. 5.5: ``sigma = Delta sqrt(2 log(1.25/delta)) / epsilon`` (classical Gaussian
    mechanism, Dwork & Roth Thm A.1).  Valid only for ``0 < epsilon < 1``: larger epsilon raises
    ``ParameterError`` pointing to :func:`sparsedp.calibrate_sigma` (tight, any epsilon), which
    is also smaller for every epsilon.

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
        If ``epsilon`` is not in (0, 1), ``delta`` not in (0, 1), or the sensitivity is
        negative or not finite.

    Examples
    --------
    >>> from sparsedp import eq55_sigma
    >>> round(eq55_sigma(1.0, epsilon=0.5, delta=1e-5), 6)
    9.689611
    """
    eps = _epsilon_classical(epsilon)
    return calibrate_sigma_classical(squared_sensitivity, eps, delta)


def eq56_sigma(n: int, T: int, gamma: float, epsilon: float, delta: float) -> ClosedForm:
    """v2 eq. 5.6: eq. 5.5 applied to the bound (5.4), ``sigma^2 = 2 log(1.25/delta) / eps^2 *
    (T/n + 2/gamma^2 sqrt(T/n) + 2/gamma^4)``.

    The constants are kept (the paper's ``<~`` drops the 2's and the 1.25).  Kind ``"upper"``:
    under Thm 15's assumptions this sigma is at least the sigma that eq. 5.5 asks for with the
    true sensitivity, so it gives (epsilon, delta)-DP of j towards any single observer i != j.
    ``value`` is sigma; ``terms`` the three parts of ``sigma^2``.

    Parameters
    ----------
    n : int
        Number of nodes (>= 2).
    T : int
        Number of gossip rounds (>= 1).
    gamma : float
        Absolute spectral gap ``1 - rho`` (a lower bound on it), in (0, 1].
    epsilon : float
        Target epsilon, in (0, 1).
    delta : float
        Target delta, in (0, 1).

    Returns
    -------
    ClosedForm
        ``value`` is sigma (kind ``"upper"``); ``terms`` add up to ``sigma^2``.

    Raises
    ------
    ParameterError
        If a parameter is out of range (as for :func:`eq54_bound` and :func:`eq55_sigma`).

    Examples
    --------
    >>> from sparsedp import eq56_sigma
    >>> form = eq56_sigma(n=8, T=50, gamma=0.2, epsilon=0.5, delta=1e-5)
    >>> round(form.value, 4), form.kind
    (360.116, 'upper')
    """
    bound = eq54_bound(n, T, gamma)
    scale = eq55_sigma(1.0, epsilon, delta) ** 2
    terms = tuple((f"2 log(1.25/delta)/eps^2 * {name}", scale * v) for name, v in bound.terms)
    return ClosedForm(
        "eq. 5.6 sigma", math.sqrt(scale * bound.value), "upper",
        bound.assumptions + "; epsilon < 1 (classical calibration)", terms,
        ("value is sigma; terms add up to sigma^2",
         "the paper's eq. 5.6 drops the constants (2 and 1.25); they are kept here"))


def thm17_utility_estimate(n: int, T: int, gamma: float, epsilon: float, delta: float, *,
                           d: int = 1, mu: float = 1.0, L: float = 1.0, zeta2: float = 0.0,
                           initial_distance2: float = 1.0) -> ClosedForm:
    """Thm 17 / Lemma J.3 with every hidden constant (and the O~ logs) set to 1: an
    order-of-magnitude ESTIMATE of the time-averaged excess risk (kind ``"estimate"``; it is
    neither an upper nor a lower bound).

    With ``rho = 1 - gamma``, ``p = 1 - rho^2`` (Lemma J.1; eq. 5.3 and App. J.3 write
    ``1 - gamma^2``), ``sigma_DP`` from :func:`eq56_sigma` and ``sigma_bar^2 = d sigma_DP^2``::

        noise       = sigma_bar^2 / (n mu T)
        consensus   = L (zeta2 + p sigma_bar^2) (1 - p) / (mu^2 p^2 T^2)
        initial     = L initial_distance2 / p * exp(-mu p T / L)

    ``d`` dimension, ``mu`` strong convexity, ``L`` smoothness, ``zeta2`` heterogeneity
    ``(1/n) sum ||grad f_i(theta*)||^2``, ``initial_distance2`` ``||theta_bar^0 - theta*||^2``.
    The displayed Thm 17 also drops the ``p sigma_bar^2`` part of the consensus term
    ((J.10) is not carried into the statement); it is kept here.

    Parameters
    ----------
    n : int
        Number of nodes (>= 2).
    T : int
        Number of rounds (>= 1).
    gamma : float
        Absolute spectral gap ``1 - rho``, in (0, 1].
    epsilon, delta : float
        Privacy target; ``0 < epsilon < 1`` (classical calibration), ``0 < delta < 1``.
    d : int, default 1
        Dimension of the model (>= 1).
    mu : float, default 1.0
        Strong-convexity constant (> 0).
    L : float, default 1.0
        Smoothness constant (>= ``mu``).
    zeta2 : float, default 0.0
        Heterogeneity ``(1/n) sum ||grad f_i(theta*)||^2`` (>= 0).
    initial_distance2 : float, default 1.0
        ``||theta_bar^0 - theta*||^2`` (>= 0).

    Returns
    -------
    ClosedForm
        The estimate (kind ``"estimate"``); ``terms`` are the noise, consensus and initial
        parts.

    Raises
    ------
    ParameterError
        If a parameter is out of range, ``L < mu``, or ``epsilon >= 1``.

    Examples
    --------
    >>> from sparsedp import thm17_utility_estimate
    >>> form = thm17_utility_estimate(n=8, T=50, gamma=0.2, epsilon=0.5, delta=1e-5)
    >>> form.kind, round(form.value, 3)
    ('estimate', 416.428)
    >>> [round(v, 3) for _, v in form.terms]
    [324.209, 92.219, 0.0]
    """
    n = _integer("n (number of nodes)", n, 2)
    T = validation.rounds(T)
    gamma = _gamma(gamma)
    d = _integer("d (dimension)", d, 1)
    mu = _positive("mu", mu)
    L = _positive("L", L)
    if L < mu:
        raise ParameterError(f"L (smoothness) must be >= mu (strong convexity), got L = {L!r}, "
                             f"mu = {mu!r}")
    zeta2 = validation.nonnegative("zeta2", zeta2)
    r2 = validation.nonnegative("initial_distance2", initial_distance2)
    sigma_dp = eq56_sigma(n, T, gamma, epsilon, delta)
    sigma_bar2 = d * sigma_dp.value**2
    rho = 1.0 - gamma
    p = 1.0 - rho**2
    terms = (("noise sigma_bar^2/(n mu T)", sigma_bar2 / (n * mu * T)),
             ("consensus L(zeta2 + p sigma_bar^2)(1-p)/(mu^2 p^2 T^2)",
              L * (zeta2 + p * sigma_bar2) * (1.0 - p) / (mu**2 * p**2 * T**2)),
             ("initial L r0^2/p exp(-mu p T/L)", L * r2 / p * math.exp(-mu * p * T / L)))
    return ClosedForm(
        "Thm 17 utility estimate", math.fsum(v for _, v in terms), "estimate",
        "f_i L-smooth and mu-strongly convex; full-batch DP-GD with gossip averaging (v2 eq. "
        "5.1), step ~ 1/L; W symmetric and doubly stochastic with absolute spectral gap gamma; "
        "sigma_DP from eq. 5.5 with the bound (5.4); O~ constants and logs set to 1",
        terms,
        (f"p = 1 - rho^2 = {p:.6g} (rho = 1 - gamma); the paper writes p = 1 - gamma^2 in eq. "
         "5.3 and App. J.3, which Lemma J.1 does not give",
         f"sigma_DP = {sigma_dp.value:.6g} (eq. 5.6 with constants)",
         "an order-of-magnitude estimate, not a bound: the hidden constants are unknown"))
