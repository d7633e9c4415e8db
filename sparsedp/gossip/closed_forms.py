"""Closed-form results of Koskela & Kulkarni (v2, Sec. 4-5) as checked calculators.

Every function returns a :class:`ClosedForm` (plain data: ``value``, ``kind``, the theorem's
``assumptions`` as text, and the ``terms`` that add up to ``value``).  ``kind`` is one of
:data:`KINDS`:

``"upper"``
    an upper bound that holds under the theorem and its stated assumptions (the same meaning as
    ``"upper"`` in :class:`sparsedp.PairwiseLoss`; it is not numerically certified like the
    ``"certified upper"`` bounds of :func:`sparsedp.squared_sensitivity`, it rests on the
    paper's proof);
``"limit"``
    the exact value of a limit as ``T -> inf`` (no finite-T statement);
``"asymptotic upper"``
    an upper bound on a ``limsup`` as ``T -> inf`` (no finite-T statement);
``"estimate"``
    an order-of-magnitude value (constants hidden by ``O~`` set to 1): neither a lower nor an
    upper bound.

Results (Delta^2 denotes the squared sensitivity ``Delta_T(j -> A)^2`` of
:func:`sparsedp.squared_sensitivity`; rho = max(|lambda_2|, |lambda_n|)):

* Thm 13 (:func:`thm13_rate`): single observer i != j, ``lim Delta^2 / T = 1/n``.
* Thm 15 (:func:`thm15_bound`): ``Delta^2 <= (m/n) T + 2/(1-rho)^2 sqrt(mT/n) + 2/(1-rho)^4``
  for j not in A.  The printed statement has ``Delta^2 / T`` on the left: a stray factor T
  (the proof, App. H, bounds ``Delta^2`` itself; with ``Delta^2 / T`` the bound would grow
  like T while ``Delta^2 <= T``).
* Thm 16 (:func:`thm16_rate`): observers' own noise removed, ``limsup Delta^2 / T <= m/(n-m)``,
  for j not in A and -- an extra condition added here -- j adjacent to no observer.
* eq. 5.4 (:func:`eq54_bound`): Thm 15 with m = 1 and ``gamma = 1 - rho``.
* eq. 5.5 (:func:`eq55_sigma`): classical Gaussian-mechanism calibration, eps < 1 only.
* eq. 5.6 (:func:`eq56_sigma`): eq. 5.5 applied to the bound (5.4).
* Thm 17 (:func:`thm17_utility_estimate`): the O~ utility bound with constants set to 1, an
  estimate; the consensus parameter is ``p = 1 - rho^2`` (Lemma J.1; eq. 5.3 and App. J.3
  write ``1 - gamma^2``).

The ``*_for`` functions take a gossip matrix W, check the theorem's assumptions (W symmetric,
doubly stochastic and primitive; the target not an observer; for Thm 16 the target adjacent
to no observer) and raise :class:`~sparsedp.errors.GossipMatrixError` /
:class:`~sparsedp.errors.ParameterError` with the reason.  Where an assumption is missing
from the paper but needed (j != i in Thm 13, j not adjacent to A in Thm 16), the refusal cites
the counterexample in ``tests/test_gossip_closed_forms.py``; ``docs/closed_forms.md`` has the
measured numbers.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from sparsedp import validation
from sparsedp.errors import GossipMatrixError, ParameterError
from sparsedp.linalg.spectral import spectral_info
from sparsedp.linalg.stochastic import as_square_sparse, check_gossip_matrix
from sparsedp.privacy.gaussian import calibrate_sigma_classical

__all__ = [
    "KINDS",
    "ClosedForm",
    "certified_rho",
    "eq54_bound",
    "eq55_sigma",
    "eq56_sigma",
    "thm13_rate",
    "thm13_rate_for",
    "thm15_bound",
    "thm15_bound_for",
    "thm16_rate",
    "thm16_rate_for",
    "thm17_utility_estimate",
]

KINDS = ("upper", "limit", "asymptotic upper", "estimate")
THEOREM_PROPERTIES = ("nonnegative", "symmetric", "doubly_stochastic", "primitive")
_W_ASSUMPTION = "W symmetric, doubly stochastic and primitive (irreducible and aperiodic)"
_TESTS = "tests/test_gossip_closed_forms.py"


@dataclass(frozen=True)
class ClosedForm:
    """One closed-form value with its kind (:data:`KINDS`) and the assumptions it rests on.

    ``terms`` lists ``(name, value)`` pairs that add up to ``value`` (a single pair for
    one-term formulas); ``notes`` records corrections to the paper and where rho came from.
    """

    name: str
    value: float
    kind: str
    assumptions: str
    terms: tuple[tuple[str, float], ...] = ()
    notes: tuple[str, ...] = ()

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
    ``"limit"``).  Needs ``j != i``: for ``j == i`` the slope is close to 1 (see the tests)."""
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
    no observer; :func:`thm16_rate_for` checks both."""
    n, m = _nodes_and_observers(n, m)
    return ClosedForm(
        "Thm 16 rate", m / (n - m), "asymptotic upper",
        f"{_W_ASSUMPTION}; observers A with |A| = m, their own noise removed; target j not in "
        "A and not adjacent to any observer (W_aj = 0 for a in A; added here, see the "
        "counterexample); T -> inf",
        (("m/(n-m)", m / (n - m)),))


def eq54_bound(n: int, T: int, gamma: float) -> ClosedForm:
    """v2 eq. 5.4: ``Delta_T(j -> i)^2 <= T/n + 2/gamma^2 sqrt(T/n) + 2/gamma^4``, gamma = 1 - rho
    (Thm 15 with m = 1; kind ``"upper"``; single observer ``i != j``)."""
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
    is also smaller for every epsilon."""
    eps = _epsilon_classical(epsilon)
    return calibrate_sigma_classical(squared_sensitivity, eps, delta)


def eq56_sigma(n: int, T: int, gamma: float, epsilon: float, delta: float) -> ClosedForm:
    """v2 eq. 5.6: eq. 5.5 applied to the bound (5.4), ``sigma^2 = 2 log(1.25/delta) / eps^2 *
    (T/n + 2/gamma^2 sqrt(T/n) + 2/gamma^4)``.

    The constants are kept (the paper's ``<~`` drops the 2's and the 1.25).  Kind ``"upper"``:
    under Thm 15's assumptions this sigma is at least the sigma that eq. 5.5 asks for with the
    true sensitivity, so it gives (epsilon, delta)-DP of j towards any single observer i != j.
    ``value`` is sigma; ``terms`` the three parts of ``sigma^2``.
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


# --------------------------------------------------------------------------------------------
# Closed forms for a given gossip matrix
# --------------------------------------------------------------------------------------------

def certified_rho(W) -> tuple[float, str]:
    """An upper bound on ``rho = max(|lambda_2|, |lambda_n|)`` of a symmetric W, and a note.

    :func:`sparsedp.spectral_info` reports estimates of lambda_2 and lambda_n together with
    ``tolerance``, a bound on the distance from each estimate to an eigenvalue of W.  The
    returned value is ``rho + tolerance``.  For the dense method (n <= 2000) this is an upper
    bound up to the backward-error model of the eigensolver.  For the iterative methods the
    residual only shows that SOME eigenvalue lies within ``tolerance``; that it is lambda_2
    (not an eigenvalue the solver skipped) is not certified, and the note says so.
    """
    info = spectral_info(W)
    if not info.symmetric:
        raise GossipMatrixError("W is not symmetric: the closed forms need a symmetric W")
    upper = info.rho + info.tolerance
    if info.method.startswith("dense"):
        note = (f"rho <= {upper:.12g}: dense eigenvalues {info.rho:.12g} + backward-error "
                f"bound {info.tolerance:.3g}")
    else:
        note = (f"rho <= {upper:.12g}: {info.method} estimate {info.rho:.12g} + residual "
                f"{info.tolerance:.3g}; certified only if the eigensolver did not skip an "
                "eigenvalue (not checked)")
    return upper, note


def _checked_matrix(W):
    M = as_square_sparse(W)
    check_gossip_matrix(M, require=THEOREM_PROPERTIES)
    return M


def _observer_set(M, target, observers) -> tuple[int, np.ndarray]:
    n = M.shape[0]
    j = validation.node_index(target, n, "target")
    A = validation.node_set(observers, n, "observers")
    if j in set(A.tolist()):
        raise ParameterError(
            f"target {j} is one of the observers: the closed forms need j not in A; they are "
            f"false there (the observer sees j's messages, Delta^2 grows like T; see {_TESTS})")
    return j, A


def _adjacent_observers(M, j: int, A: np.ndarray) -> list[int]:
    """Observers a with ``W_aj != 0`` (the sparsity pattern; W symmetric)."""
    col = M[:, [j]].toarray().ravel()
    return [int(a) for a in A if col[a] != 0.0]


def thm13_rate_for(W, target: int, observer: int) -> ClosedForm:
    """Thm 13 for a given W: checks W symmetric, doubly stochastic, primitive and
    ``target != observer`` (for ``target == observer`` the slope is close to 1, not 1/n:
    counterexample in the tests), then returns :func:`thm13_rate`."""
    M = _checked_matrix(W)
    _observer_set(M, target, [observer])
    return thm13_rate(M.shape[0])


def thm15_bound_for(W, target: int, observers, T: int) -> ClosedForm:
    """Thm 15 for a given W, with rho from :func:`certified_rho` (rounded up by the reported
    eigenvalue error, so rho is not under-estimated).  Checks W symmetric, doubly stochastic,
    primitive and ``target not in observers`` (the bound is false otherwise: counterexample in
    the tests)."""
    M = _checked_matrix(W)
    _, A = _observer_set(M, target, observers)
    T = validation.rounds(T)
    rho, note = certified_rho(M)
    if rho >= 1.0:
        raise GossipMatrixError(f"rho upper bound {rho:.6g} >= 1 (spectral gap below the "
                                "eigensolver's tolerance): the bound is infinite")
    form = thm15_bound(M.shape[0], len(A), T, rho)
    return ClosedForm(form.name, form.value, form.kind, form.assumptions, form.terms,
                      (*form.notes, note))


def thm16_rate_for(W, target: int, observers) -> ClosedForm:
    """Thm 16 for a given W.  Checks W symmetric, doubly stochastic, primitive, target not in
    observers and target adjacent to no observer (``W_aj == 0`` for every a in A).

    The adjacency condition is not in the paper.  It is added because the exact computation
    contradicts the theorem there: ER(40, 0.2), Metropolis weights, observer 0, neighbour 1,
    noise removed: ``Delta-bar_T^2 >= 3.785 (T = 20), 7.838 (T = 40)``, i.e. a slope of about
    0.203 against ``m/(n-m) = 0.0256`` (``tests/test_gossip_closed_forms.py``).
    """
    M = _checked_matrix(W)
    j, A = _observer_set(M, target, observers)
    adjacent = _adjacent_observers(M, j, A)
    if adjacent:
        raise ParameterError(
            f"target {j} is adjacent to observer(s) {adjacent[:5]}: Thm 16 is refused there. "
            "The exact sensitivity contradicts it for neighbours (ER(40, 0.2): slope about 0.20 "
            f"instead of m/(n-m) = 0.026 with alternating signs c; see {_TESTS} and "
            "docs/closed_forms.md)")
    return thm16_rate(M.shape[0], len(A))
