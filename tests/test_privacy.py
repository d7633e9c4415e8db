"""Tests for sparsedp.privacy: tight Gaussian/GDP accounting, RDP route, calibration."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.integrate import quad
from scipy.optimize import minimize_scalar
from scipy.stats import norm

from sparsedp.errors import ParameterError
from sparsedp.privacy.gaussian import (
    DEFAULT_ALPHAS,
    calibrate_sigma,
    calibrate_sigma_classical,
    gaussian_delta,
    gaussian_epsilon,
    gaussian_mu,
    gaussian_rdp_epsilon,
    gdp_epsilon,
    gdp_log_delta,
    gdp_mu_for,
    rdp_epsilon,
    rdp_to_dp,
)

# (mu, epsilon at delta = 1e-6): 4-decimal values from the spec, and 40-digit mpmath roots.
REFERENCE = [
    (0.25, 1.0607, 1.06070186232827),
    (0.5, 2.2541, 2.25408465021974),
    (1.0, 4.8866, 4.88655411746221),
    (2.0, 10.9972, 10.9971512142207),
]


def hockey_stick(mu: float, eps: float) -> float:
    """H_{e^eps}(N(mu, 1) || N(0, 1)) = int (p - e^eps q)_+ by numerical integration."""

    def integrand(x: float) -> float:
        return max(norm.pdf(x, loc=mu) - math.exp(eps) * norm.pdf(x), 0.0)

    # p / q = exp(mu x - mu^2 / 2) crosses e^eps at x0; split there so quad sees no kink.
    x0 = eps / mu + mu / 2.0
    opts = {"epsabs": 0.0, "epsrel": 1e-12, "limit": 200}
    return quad(integrand, -np.inf, x0, **opts)[0] + quad(integrand, x0, np.inf, **opts)[0]


# --------------------------------------------------------------------------- tight profile


@pytest.mark.parametrize(("mu", "eps4", "eps_exact"), REFERENCE)
def test_reference_epsilons(mu, eps4, eps_exact):
    eps = gdp_epsilon(mu, 1e-6)
    assert round(eps, 4) == eps4
    assert eps == pytest.approx(eps_exact, rel=1e-9)
    assert gaussian_epsilon(mu**2, 1.0, 1e-6) == pytest.approx(eps_exact, rel=1e-9)
    assert gaussian_epsilon(4.0 * mu**2, 2.0, 1e-6) == pytest.approx(eps_exact, rel=1e-9)


@pytest.mark.parametrize(
    ("mu", "eps"), [(1.0, 1.0), (0.5, 0.3), (2.0, 3.0), (3.0, 0.0), (0.1, 0.05), (5.0, 10.0)]
)
def test_delta_matches_hockey_stick_integral(mu, eps):
    expected = hockey_stick(mu, eps)
    assert expected > 1e-3  # the check must compare real numbers
    assert gaussian_delta(mu**2, 1.0, eps) == pytest.approx(expected, rel=1e-8)


@pytest.mark.parametrize(
    ("mu", "eps", "expected"),
    [
        (1.0, 1.0, 0.12693673750664395),
        (2.0, 3.0, 0.18381307654447216),
        (3.0, 0.0, 0.86638559746228387),
        (5.0, 10.0, 0.61662373041021237),
    ],
)
def test_delta_matches_closed_form_references(mu, eps, expected):
    delta = math.exp(gdp_log_delta(mu, eps))
    assert delta >= expected
    assert delta == pytest.approx(expected, rel=1e-12)


def test_delta_at_zero_is_erf():
    for mu in [1e-12, 1e-6, 1e-3, 0.7, 4.0]:
        expected = math.erf(mu / (2.0 * math.sqrt(2.0)))
        value = math.exp(gdp_log_delta(mu, 0.0))
        assert expected <= value <= expected * (1.0 + 1e-12)


@settings(max_examples=300, deadline=None)
@given(
    mu=st.floats(1e-3, 30.0),
    log10_delta=st.floats(-12.0, math.log10(0.5)),
)
def test_epsilon_is_sound_and_tight(mu, log10_delta):
    target = 10.0**log10_delta
    eps = gdp_epsilon(mu, target)
    achieved = math.exp(gdp_log_delta(mu, eps))
    assert achieved <= target
    if eps == 0.0:
        assert math.erf(mu / (2.0 * math.sqrt(2.0))) <= target
    else:
        assert achieved >= target * (1.0 - 1e-6)
        smaller = max(eps * (1.0 - 1e-6) - 1e-9, 0.0)
        assert math.exp(gdp_log_delta(mu, smaller)) > target


def test_epsilon_zero_when_delta0_small_enough():
    mu = 0.01
    delta0 = math.erf(mu / (2.0 * math.sqrt(2.0)))  # about 0.004
    assert gdp_epsilon(mu, 0.01) == 0.0
    assert gdp_epsilon(mu, delta0 * 0.99) > 0.0


def test_monotonicity():
    mus = np.geomspace(1e-3, 30.0, 25)
    deltas = np.geomspace(1e-12, 0.5, 25)
    epsilons = np.linspace(0.0, 50.0, 101)
    eps_by_mu = [gdp_epsilon(m, 1e-6) for m in mus]
    assert all(b > a for a, b in zip(eps_by_mu, eps_by_mu[1:], strict=False))
    eps_by_delta = [gdp_epsilon(2.0, d) for d in deltas]
    assert all(b < a for a, b in zip(eps_by_delta, eps_by_delta[1:], strict=False))
    log_d_by_eps = [gdp_log_delta(3.0, e) for e in epsilons]
    assert all(b < a for a, b in zip(log_d_by_eps, log_d_by_eps[1:], strict=False))
    # (mu up to 12: beyond that delta(1) rounds to 1.)
    log_d_by_mu = [gdp_log_delta(m, 1.0) for m in np.geomspace(1e-3, 12.0, 25)]
    assert all(b > a for a, b in zip(log_d_by_mu, log_d_by_mu[1:], strict=False))


@pytest.mark.parametrize("mu", [1e-4, 40.0, 50.0])
@pytest.mark.parametrize("eps", [0.0, 1e-3, 1.0, 100.0, 1e4])
def test_log_space_is_finite_at_extremes(mu, eps):
    value = gdp_log_delta(mu, eps)
    assert math.isfinite(value)
    assert value <= 0.0
    # delta = Phi(a) - e^eps Phi(b) <= Phi(a) with a = -eps/mu + mu/2.
    log_phi_a = norm.logcdf(-eps / mu + mu / 2.0)
    assert value <= log_phi_a + 1e-9 * (1.0 + abs(log_phi_a))


@pytest.mark.parametrize("mu", [1e-4, 40.0])
def test_epsilon_at_extreme_mu(mu):
    eps = gdp_epsilon(mu, 1e-6)
    assert math.isfinite(eps) and eps > 0.0
    assert math.exp(gdp_log_delta(mu, eps)) == pytest.approx(1e-6, rel=1e-6)
    assert math.exp(gdp_log_delta(mu, eps)) <= 1e-6


def test_large_mu_epsilon_against_asymptotics():
    # For large mu, delta(eps) ~ Phi(-eps/mu + mu/2), so eps ~ mu^2/2 + mu * z with Phi(-z) = delta.
    mu, delta = 40.0, 1e-6
    upper = mu * mu / 2.0 - mu * norm.ppf(delta)
    eps = gdp_epsilon(mu, delta)
    assert eps <= upper
    assert eps == pytest.approx(upper, rel=1e-3)


def test_zero_sensitivity():
    assert gdp_log_delta(0.0, 0.0) == -math.inf
    assert gaussian_delta(0.0, 1.0, 0.0) == 0.0
    assert gaussian_epsilon(0.0, 3.0, 1e-9) == 0.0
    assert calibrate_sigma(0.0, 1.0, 1e-6) == 0.0
    assert calibrate_sigma_classical(0.0, 0.5, 1e-6) == 0.0
    assert gaussian_mu(0.0, 2.0) == 0.0


def test_gaussian_mu():
    assert gaussian_mu(9.0, 2.0) == 1.5
    assert gaussian_mu(2.0, 1.0) == pytest.approx(math.sqrt(2.0), rel=1e-15)


# --------------------------------------------------------------------------- calibration


@settings(max_examples=200, deadline=None)
@given(
    squared_sensitivity=st.floats(1e-4, 1e4),
    eps=st.floats(0.01, 20.0),
    log10_delta=st.floats(-12.0, -1.0),
)
def test_calibrate_sigma_round_trip(squared_sensitivity, eps, log10_delta):
    delta = 10.0**log10_delta
    sigma = calibrate_sigma(squared_sensitivity, eps, delta)
    assert gaussian_delta(squared_sensitivity, sigma, eps) <= delta
    back = gaussian_epsilon(squared_sensitivity, sigma, delta)
    # gaussian_epsilon rounds up by a few ulps of |log Phi| (about 30 at delta = 1e-12), which
    # is 1e-11 relative at eps = 0.01
    assert back <= eps + 1e-10 * (1.0 + eps)
    assert back >= eps * (1.0 - 1e-6)
    # A slightly smaller sigma would violate the target: sigma is (nearly) the smallest.
    assert gaussian_delta(squared_sensitivity, sigma * (1.0 - 1e-6), eps) > delta


def test_calibrate_sigma_reference():
    # Inverse of the reference table: mu = 1 is exactly what (4.88655..., 1e-6) needs.
    assert calibrate_sigma(1.0, REFERENCE[2][2], 1e-6) == pytest.approx(1.0, rel=1e-9)
    assert gdp_mu_for(REFERENCE[3][2], 1e-6) == pytest.approx(2.0, rel=1e-9)
    assert calibrate_sigma(4.0, REFERENCE[0][2], 1e-6) == pytest.approx(8.0, rel=1e-9)


def test_calibrate_sigma_epsilon_zero():
    delta = 1e-3
    mu = gdp_mu_for(0.0, delta)
    assert math.erf(mu / (2.0 * math.sqrt(2.0))) <= delta
    assert math.erf(mu * (1.0 + 1e-9) / (2.0 * math.sqrt(2.0))) > delta


@pytest.mark.parametrize("eps", [0.05, 0.3, 0.99])
@pytest.mark.parametrize("delta", [1e-10, 1e-5, 0.01])
def test_classical_rule(eps, delta):
    sigma = calibrate_sigma_classical(4.0, eps, delta)
    assert sigma == pytest.approx(2.0 * math.sqrt(2.0 * math.log(1.25 / delta)) / eps, rel=1e-15)
    # The classical rule is valid for eps < 1 but never better than the tight calibration.
    assert gaussian_delta(4.0, sigma, eps) <= delta
    assert sigma >= calibrate_sigma(4.0, eps, delta)


# --------------------------------------------------------------------------- RDP route


def test_rdp_epsilon_values():
    assert rdp_epsilon(4.0, 2.0, 3.0) == pytest.approx(1.5, rel=1e-15)
    assert isinstance(rdp_epsilon(4.0, 2.0, 3.0), float)
    alphas = np.array([1.5, 2.0, 10.0])
    np.testing.assert_allclose(rdp_epsilon(1.0, 1.0, alphas), alphas / 2.0, rtol=1e-15)


def test_rdp_to_dp_single_order_formula():
    alpha, tau, delta = 5.0, 0.7, 1e-5
    expected = (
        tau + math.log((alpha - 1.0) / alpha) - (math.log(delta) + math.log(alpha)) / (alpha - 1.0)
    )
    eps, best = rdp_to_dp(np.array([tau]), delta, np.array([alpha]))
    assert best == alpha
    assert eps == pytest.approx(expected, rel=1e-14)


def test_rdp_to_dp_callable_matches_array_and_skips_infinite_orders():
    delta = 1e-6
    from_callable = rdp_to_dp(lambda a: 0.5 * a, delta)
    from_array = rdp_to_dp(0.5 * DEFAULT_ALPHAS, delta)
    assert from_callable == from_array
    alphas = np.array([2.0, 8.0, 32.0])
    eps, best = rdp_to_dp(np.array([math.inf, 0.4, math.inf]), delta, alphas)
    assert best == 8.0
    assert math.isfinite(eps)


def test_rdp_to_dp_clamps_at_zero():
    eps, _ = rdp_to_dp(np.zeros_like(DEFAULT_ALPHAS), 0.5)
    assert eps == 0.0


def test_rdp_grid_close_to_continuous_optimum():
    mu, delta = 1.0, 1e-6

    def conversion(alpha: float) -> float:
        return (
            alpha * mu * mu / 2.0
            + math.log1p(-1.0 / alpha)
            - (math.log(delta) + math.log(alpha)) / (alpha - 1.0)
        )

    best = minimize_scalar(conversion, bounds=(1.001, 1000.0), method="bounded").fun
    eps = gaussian_rdp_epsilon(mu**2, 1.0, delta)
    assert best - 1e-9 <= eps <= best + 1e-3
    assert eps == pytest.approx(5.2216, abs=1e-4)


@pytest.mark.parametrize("mu", [1e-3, 0.05, 0.3, 1.0, 3.0, 10.0, 30.0])
@pytest.mark.parametrize("delta", [1e-12, 1e-6, 1e-2, 0.3])
def test_rdp_is_never_below_tight(mu, delta):
    tight = gaussian_epsilon(mu**2, 1.0, delta)
    via_rdp = gaussian_rdp_epsilon(mu**2, 1.0, delta)
    assert via_rdp >= tight
    # ... and it is a real, reasonably close bound, not a vacuous one.
    assert via_rdp <= 2.0 * tight + 0.5


# --------------------------------------------------------------------------- bad parameters


BAD = [
    (gaussian_delta, (-1.0, 1.0, 1.0), "squared_sensitivity", "-1.0"),
    (gaussian_delta, (math.nan, 1.0, 1.0), "squared_sensitivity", "nan"),
    (gaussian_delta, (math.inf, 1.0, 1.0), "squared_sensitivity", "inf"),
    (gaussian_delta, (1.0, 0.0, 1.0), "sigma", "0.0"),
    (gaussian_delta, (1.0, -1.0, 1.0), "sigma", "-1.0"),
    (gaussian_delta, (1.0, math.inf, 1.0), "sigma", "inf"),
    (gaussian_delta, (1.0, math.nan, 1.0), "sigma", "nan"),
    (gaussian_delta, (1.0, 1.0, -0.5), "epsilon", "-0.5"),
    (gaussian_delta, (1.0, 1.0, math.inf), "epsilon", "inf"),
    (gaussian_delta, (1.0, 1.0, math.nan), "epsilon", "nan"),
    (gaussian_epsilon, (1.0, 1.0, 0.0), "delta", "0.0"),
    (gaussian_epsilon, (1.0, 1.0, 1.0), "delta", "1.0"),
    (gaussian_epsilon, (1.0, 1.0, 1.5), "delta", "1.5"),
    (gaussian_epsilon, (1.0, 1.0, -1e-6), "delta", "-1e-06"),
    (gaussian_epsilon, (1.0, 1.0, math.nan), "delta", "nan"),
    (gaussian_epsilon, (-2.0, 1.0, 1e-6), "squared_sensitivity", "-2.0"),
    (gaussian_epsilon, (1.0, -3.0, 1e-6), "sigma", "-3.0"),
    (gaussian_mu, (1.0, 0.0), "sigma", "0.0"),
    (gaussian_mu, (-1.0, 1.0), "squared_sensitivity", "-1.0"),
    (gaussian_mu, ("1.0", 1.0), "squared_sensitivity", "'1.0'"),
    (gaussian_mu, (1.0, True), "sigma", "True"),
    (gdp_log_delta, (-0.1, 1.0), "mu", "-0.1"),
    (gdp_log_delta, (1.0, -1.0), "epsilon", "-1.0"),
    (gdp_epsilon, (math.inf, 1e-6), "mu", "inf"),
    (gdp_epsilon, (1.0, 2.0), "delta", "2.0"),
    (gdp_mu_for, (-1.0, 1e-6), "epsilon", "-1.0"),
    (gdp_mu_for, (1.0, 0.0), "delta", "0.0"),
    (rdp_epsilon, (1.0, 1.0, 1.0), "alpha", "1.0"),
    (rdp_epsilon, (1.0, 1.0, 0.5), "alpha", "0.5"),
    (rdp_epsilon, (1.0, 1.0, np.array([2.0, 0.9])), "alpha", "0.9"),
    (rdp_epsilon, (1.0, 1.0, math.inf), "alpha", "inf"),
    (rdp_epsilon, (1.0, 0.0, 2.0), "sigma", "0.0"),
    (rdp_epsilon, (-1.0, 1.0, 2.0), "squared_sensitivity", "-1.0"),
    (rdp_to_dp, (np.ones(3), 1e-6, np.array([2.0, 3.0])), "rdp", "(2,)"),
    (rdp_to_dp, (np.array([1.0, -1.0]), 1e-6, np.array([2.0, 3.0])), "rdp", "-1.0"),
    (rdp_to_dp, (np.array([1.0, math.nan]), 1e-6, np.array([2.0, 3.0])), "rdp", "nan"),
    (rdp_to_dp, (["x", "y"], 1e-6, np.array([2.0, 3.0])), "rdp", "'x'"),
    (rdp_to_dp, (lambda a: None, 1e-6, np.array([2.0, 3.0])), "rdp", "lambda"),
    (rdp_to_dp, (lambda a: a, 1e-6, np.array([2.0, 1.0])), "alphas", "1.0"),
    (rdp_to_dp, (lambda a: a, 1e-6, np.array([])), "alphas", "(0,)"),
    (rdp_to_dp, (lambda a: a, 1.0), "delta", "1.0"),
    (gaussian_rdp_epsilon, (1.0, 1.0, 0.0), "delta", "0.0"),
    (gaussian_rdp_epsilon, (1.0, 1.0, 1e-6, np.array([0.5])), "alpha", "0.5"),
    (gaussian_rdp_epsilon, (1.0, -1.0, 1e-6), "sigma", "-1.0"),
    (calibrate_sigma, (-1.0, 1.0, 1e-6), "squared_sensitivity", "-1.0"),
    (calibrate_sigma, (1.0, -1.0, 1e-6), "epsilon", "-1.0"),
    (calibrate_sigma, (1.0, math.inf, 1e-6), "epsilon", "inf"),
    (calibrate_sigma, (1.0, 1.0, 1.0), "delta", "1.0"),
    (calibrate_sigma_classical, (1.0, 1.0, 1e-6), "epsilon", "1.0"),
    (calibrate_sigma_classical, (1.0, 3.0, 1e-6), "epsilon", "3.0"),
    (calibrate_sigma_classical, (1.0, 0.0, 1e-6), "epsilon", "0.0"),
    (calibrate_sigma_classical, (1.0, 0.5, 0.0), "delta", "0.0"),
    (calibrate_sigma_classical, (math.nan, 0.5, 1e-6), "squared_sensitivity", "nan"),
]


@pytest.mark.parametrize(("func", "args", "name", "shown"), BAD)
def test_bad_parameters_raise(func, args, name, shown):
    with pytest.raises(ParameterError) as info:
        func(*args)
    message = str(info.value)
    assert name in message
    assert shown in message
    assert isinstance(info.value, ValueError)


def test_classical_rule_message_points_to_tight_calibration():
    with pytest.raises(ParameterError, match="calibrate_sigma"):
        calibrate_sigma_classical(1.0, 2.0, 1e-6)
