"""The PPAC audit's power (issue 33): Fisher's exact distribution of the sample squared
multiple correlation against simulation, the interval narrowing with the leakage, and a run
count chosen from a requested precision catching an error of that size."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from sparsedp.audit import audit_ppac
from sparsedp.audit.ppac import runs_for_precision
from sparsedp.audit.statistics import (
    chi2_quantile,
    information_interval,
    squared_correlation_cdf,
)
from sparsedp.errors import ParameterError
from sparsedp.ppac import leakage
from tests.conftest import bench_module


@pytest.mark.parametrize("information", [0.0, 0.05, 0.4])
def test_the_squared_correlation_cdf_is_the_simulated_distribution(information):
    """Zero-mean Gaussian (u, D), 3 regressors, 200 runs, population R^2 = 1 - exp(-2 I):
    the CDF at 200 simulated sample R^2 is uniform (Kolmogorov-Smirnov, p > 0.001), and the
    90 % interval covers I in 60 of them within the binomial 99.9 % band."""
    rng = np.random.default_rng(11)
    runs, rank = 200, 3
    r2_population = -math.expm1(-2 * information)
    beta = np.array([math.sqrt(r2_population), 0.0, 0.0])
    values, covered = [], 0
    for repetition in range(200):
        D = rng.standard_normal((runs, rank))
        u = D @ beta + math.sqrt(1 - r2_population) * rng.standard_normal(runs)
        fitted = D @ np.linalg.lstsq(D, u, rcond=None)[0]
        r2 = float(fitted @ fitted / (u @ u))
        values.append(squared_correlation_cdf(r2, runs, rank, information))
        if repetition < 60:
            _, low, high = information_interval(r2, runs, rank, 0.9, 1.0)
            covered += low <= information <= high
    assert stats.kstest(values, "uniform").pvalue > 1e-3
    band = stats.binom.ppf([0.0005, 0.9995], 60, 0.9)
    assert band[0] <= covered <= band[1]


def _instance(index):
    power = bench_module("audit_power")
    seed, victim_index, horizon = power.PPAC[index]
    graph, layout, W = power.ppac_instance(seed)
    attacker = graph.id_of(0)
    reported = leakage(layout, W, attacker, horizon, noise_std=power.PPAC_NOISE)
    return (layout, W, attacker, reported.victims[victim_index], horizon,
            float(reported.nats[victim_index]), power.PPAC_NOISE)


def test_the_interval_narrows_with_the_leakage():
    """A victim leaking 0.066 nats (bench/audit_power.py's PPAC instance 2), 20,000 runs: the
    interval holds the reported leakage and is about 1.5 R = 0.54 times the width of the
    residual interval alone at the same confidence (the audit's interval before issue 33)."""
    layout, W, attacker, victim, horizon, nats, noise = _instance(2)
    assert 0.03 < nats < 0.1
    sound = audit_ppac(layout, W, attacker, victim, horizon, noise_std=noise, trials=20_000,
                       seed=5)
    assert sound.passed, sound.verdict
    q_low, q_high = chi2_quantile(np.array([0.01, 1.99]) / 2, 20_000 - sound.features)
    residual_width = 0.5 * math.log(q_high / q_low)
    assert sound.nats_high - sound.nats_low < 0.6 * residual_width


def test_a_run_count_from_the_precision_catches_an_error_of_that_size():
    """A victim leaking 0.17 nats (PPAC instance 1): precision 0.1 asks for about 31,000
    runs; the reported leakage passes, the leakage understated or overstated by 10 % fails."""
    layout, W, attacker, victim, horizon, nats, noise = _instance(1)
    runs = runs_for_precision(nats, 0.1, 0.99)
    assert 25_000 < runs < 40_000
    for k, (claim, passes) in enumerate([(nats, True), (0.9 * nats, False),
                                         (1.1 * nats, False)]):
        result = audit_ppac(layout, W, attacker, victim, horizon, noise_std=noise, seed=k,
                            engine=claim, precision=0.1)
        assert result.trials == runs_for_precision(claim, 0.1, 0.99)
        assert result.passed == passes, result.verdict


@pytest.mark.parametrize("precision, nats, message", [
    (0.0, 0.1, "precision must be a relative error"), (1.5, 0.1, "precision must be"),
    (1e-3, 0.01, "needs about"),
])
def test_an_impossible_precision_is_one_clear_error(precision, nats, message):
    with pytest.raises(ParameterError, match=message):
        runs_for_precision(nats, precision, 0.99)


def test_no_relative_precision_for_zero_or_infinite_leakage():
    assert runs_for_precision(0.0, 0.1, 0.99) == runs_for_precision(math.inf, 0.1, 0.99) == 0


def test_cli_precision_chooses_the_run_count_and_is_refused_outside_ppac(capsys):
    """The paper's 6-node example (0.255 nats): --precision 0.05 runs the predicted count,
    above the default 20,000; --precision with the gossip audit is one line of refusal."""
    import json

    from sparsedp.cli.main import main

    assert main(["audit", "--family", "ppac", "--target", "3", "--observer", "5", "--rounds",
                 "2", "--precision", "0.05", "--json", "--progress", "never"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["trials"] == runs_for_precision(record["engine_nats"], 0.05, 0.99) > 20_000
    assert record["nats_high"] - record["nats_low"] < 0.05 * record["engine_nats"] * 1.2
    assert main(["audit", "--precision", "0.1", "--rounds", "3"]) == 2
    assert "--precision is not an option of --family gossip" in capsys.readouterr().err
