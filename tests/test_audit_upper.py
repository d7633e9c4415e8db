"""The audit of the certified upper bound: the attacker's own sign search (simulations only)
catches an upper bound below the truth, passes a sound one, names the simulated instance, and
never calls the engine when handed its result; the power sweep of bench/audit_power.py runs in
the slow tier."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import sys

import networkx as nx
import numpy as np
import pytest

import sparsedp
from sparsedp.audit import audit_gossip, audit_mf
from sparsedp.audit.search import EXHAUSTIVE_MAX, strongest_attack, strongest_signs
from sparsedp.errors import ParameterError
from sparsedp.linalg.kernels import max_sign_quadratic
from sparsedp.mf import mf_sensitivity
from tests.conftest import bench_module

BA = sparsedp.gossip_matrix(nx.barabasi_albert_graph(30, 2, seed=960767), scheme="max-degree")


def _issue_claim(**changes):
    """The engine's result for the issue's reproducer with the interval of issue 33."""
    true = sparsedp.squared_sensitivity(BA, 14, None, 9, view="target-v1")
    return true, dataclasses.replace(true, **changes)


def test_the_issues_upper_bound_below_the_truth_fails_the_audit():
    """Issue 33: signs (1,)*9 and [7.0987, 7.8417] against a true 8.585 passed the audit at
    the engine's signs; the attacker's own signs measure more than the claimed upper bound.
    The verdict names the simulated target (14), not the result's (3)."""
    true, claim = _issue_claim(signs=(1,) * 9, lower=7.0987, upper=7.8417, target=3)
    assert true.exact == pytest.approx(8.585, abs=1e-3)
    result = audit_gossip(BA, 14, None, 9, view="target-v1", trials=25_000, seed=6001,
                          engine=claim)
    assert not result.upper_holds and not result.passed
    assert result.strongest_low > 7.8417
    assert "upper bound violated" in result.verdict and "target=14 " in result.verdict
    assert "target=3 " not in result.verdict
    sound = audit_gossip(BA, 14, None, 9, view="target-v1", trials=25_000, seed=6001,
                         engine=true)
    assert sound.passed, sound.verdict
    assert sound.strongest_low <= true.exact <= sound.strongest_high


def test_the_search_finds_the_exhaustive_maximum_beyond_the_exhaustive_limit():
    """On a matrix with a planted sign pattern (rank one plus a small PSD perturbation), the
    ascent from many starts finds the exhaustive maximum at 22 signs (above EXHAUSTIVE_MAX);
    at or below the limit the search is exhaustive."""
    rng = np.random.default_rng(4)
    k = EXHAUSTIVE_MAX + 2
    planted = rng.choice([-1.0, 1.0], size=k)
    noise = rng.standard_normal((k, k)) / k
    Q = np.outer(planted, planted) + noise @ noise.T
    value, signs = strongest_signs(Q, seed=1)
    exact, _ = max_sign_quadratic(Q)
    assert value == pytest.approx(exact, rel=1e-12)
    assert abs(signs @ planted) == k
    small = Q[:EXHAUSTIVE_MAX, :EXHAUSTIVE_MAX]
    assert strongest_signs(small)[0] == pytest.approx(max_sign_quadratic(small)[0], rel=1e-12)


def test_a_shift_outside_the_noise_decides_the_attack():
    """A nonzero O (a combination no noise masks) wins over any finite Q, per pattern."""
    Q = np.diag([5.0, 1.0, 1.0])
    outside = np.zeros((3, 3))
    outside[2, 2] = 1.0
    steps, signs = strongest_attack((Q, outside), [np.array([0]), np.array([1, 2])])
    assert steps.tolist() == [1, 2] and abs(signs[1]) == 1
    steps, _ = strongest_attack((Q, np.zeros((3, 3))), [np.array([0]), np.array([1, 2])])
    assert steps.tolist() == [0]


ENGINE_MODULES = ("sparsedp.gossip.sensitivity", "sparsedp.gossip.certified_solve",
                  "sparsedp.gossip.views", "sparsedp.gossip.banded", "sparsedp.linalg.certified",
                  "sparsedp.linalg.sign_bounds", "sparsedp.linalg.gram",
                  "sparsedp.mf.sensitivity", "sparsedp.mf.operators")


def _engine_raises(monkeypatch) -> None:
    """Every function of the engine's modules, wherever a sparsedp module holds it, raises."""
    engine = {}
    for name in ENGINE_MODULES:
        for value in vars(importlib.import_module(name)).values():
            if inspect.isfunction(value) and value.__module__ == name:
                engine[id(value)] = value

    def raises(*args, **kwargs):
        raise AssertionError("the audit called the engine")

    for module in [m for n, m in sys.modules.items() if n.startswith("sparsedp") and m]:
        for attribute, value in list(vars(module).items()):
            if id(value) in engine:
                monkeypatch.setattr(module, attribute, raises)


def test_the_audit_is_independent_of_the_engine(monkeypatch):
    """With every engine function raising, audits handed the engine's results run on the
    simulations alone and reach the same verdicts (the search included)."""
    W = sparsedp.gossip_matrix(nx.cycle_graph(10), scheme="metropolis")
    gossip = sparsedp.squared_sensitivity(W, 0, [3], 24, view="secure-summation")
    mf = mf_sensitivity(W, 0, [3], 22, gradients="scalar")
    _engine_raises(monkeypatch)
    with pytest.raises(AssertionError, match="called the engine"):
        sparsedp.squared_sensitivity(W, 0, [3], 5)
    with pytest.raises(AssertionError, match="called the engine"):
        audit_gossip(W, 0, [3], 24, trials=1000)  # no result handed in: the engine is asked
    result = audit_gossip(W, 0, [3], 24, trials=20_000, seed=2, engine=gossip)
    assert result.passed, result.verdict
    assert result.strongest_low > 0.9 * gossip.lower
    result = audit_mf(W, 0, [3], 22, trials=20_000, seed=2, engine=mf)
    assert result.passed, result.verdict


def test_an_engine_result_for_another_T_is_refused():
    claim = sparsedp.squared_sensitivity(BA, 14, None, 8, view="target-v1")
    with pytest.raises(ParameterError, match="8 signs for T = 9 rounds"):
        audit_gossip(BA, 14, None, 9, view="target-v1", trials=1000, engine=claim)


def test_mf_upper_bound_below_the_truth_beyond_the_exhaustive_limit_is_caught():
    """DP-D-SGD on a ring, T = 30 (a pattern of 30 steps, no longer refused): the engine's
    bound lowered to 90 % of its lower bound is reported as violated."""
    W = sparsedp.gossip_matrix(nx.cycle_graph(10), scheme="metropolis")
    true = mf_sensitivity(W, 0, [3], 30, gradients="scalar")
    scale = 0.9 * true.lower / true.upper
    claim = dataclasses.replace(true, lower=true.lower * scale, upper=true.upper * scale)
    result = audit_mf(W, 0, [3], 30, trials=40_000, seed=3, engine=claim)
    assert not result.upper_holds and "upper bound violated" in result.verdict


@pytest.mark.slow
def test_the_audit_catches_upper_bounds_at_90_percent_on_the_power_instances():
    """bench/audit_power.py's 24 instances (T = 30-60; gossip in five views, DP-D-SGD and
    Muffliato-SGD under both PNDP models) at the default run count: every upper bound lowered
    to 90 % of the engine's lower bound is reported as violated (the acceptance asks for
    90 %; all are, measured), and at most one sound bound fails (99 % per check)."""
    power = bench_module("audit_power")
    rows = [power.measure(i, sparsedp.defaults.AUDIT_TRIALS, 0.9)
            for i in range(len(power.INSTANCES))]
    summary = power.summary(rows)
    assert summary["instances"] >= 20
    assert summary["lowered_reported"] >= 0.9 * summary["instances"], rows
    assert summary["sound_passed"] >= summary["instances"] - 1, rows
