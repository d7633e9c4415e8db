"""dp_accounting interop: a result's event, composed in dp_accounting's own accountants, gives
our epsilons (PLD within 1e-3 and never below by more than its discretisation; RDP equal at
the same order)."""

from __future__ import annotations

import doctest

import networkx as nx
import numpy as np
import pytest

import sparsedp
from sparsedp.privacy import interop

dp_accounting = pytest.importorskip("dp_accounting")
from dp_accounting.pld import pld_privacy_accountant  # noqa: E402
from dp_accounting.rdp import rdp_privacy_accountant  # noqa: E402

from tests.conftest import slow_after  # noqa: E402

rng = np.random.default_rng(2026)
TRIPLES = [(float(d2), float(s), float(d)) for d2, s, d in zip(
    rng.uniform(0.01, 50.0, 20), rng.uniform(0.5, 20.0, 20), 10.0 ** rng.uniform(-9, -3, 20),
    strict=True)]


@pytest.mark.parametrize("d2, sigma, delta", slow_after(TRIPLES, 2))  # 1-3 s each
def test_pld_accountant_agrees_with_the_tight_gaussian_epsilon(d2, sigma, delta):
    accountant = pld_privacy_accountant.PLDAccountant()
    accountant.compose(interop.gaussian_dp_event(d2, sigma))
    theirs, ours = accountant.get_epsilon(delta), sparsedp.gaussian_epsilon(d2, sigma, delta)
    assert theirs == pytest.approx(ours, rel=1e-3, abs=1e-4)
    assert theirs >= ours * (1 - 1e-3) - 1e-4  # pessimistic discretisation: not below ours


@pytest.mark.parametrize("d2, sigma, delta", TRIPLES)
@pytest.mark.parametrize("alpha", [1.5, 4.0, 32.0])
def test_rdp_accountant_equals_ours_at_the_same_order(d2, sigma, delta, alpha):
    accountant = rdp_privacy_accountant.RdpAccountant(orders=[alpha])
    accountant.compose(interop.gaussian_dp_event(d2, sigma))
    ours = sparsedp.gaussian_rdp_epsilon(d2, sigma, delta, alphas=np.array([alpha]))
    assert accountant.get_epsilon(delta) == pytest.approx(ours, rel=1e-9, abs=1e-12)


def test_a_result_gives_its_event_and_it_composes():
    W = sparsedp.gossip_matrix(nx.karate_club_graph())
    r = sparsedp.squared_sensitivity(W, 0, [5], 30)
    event = r.to_dp_event(sigma=2.0)
    assert event.noise_multiplier == pytest.approx(2.0 / np.sqrt(r.upper))
    twice = pld_privacy_accountant.PLDAccountant()
    twice.compose(event, count=2)  # two independent runs: mu adds in quadrature
    assert twice.get_epsilon(1e-5) == pytest.approx(
        sparsedp.gaussian_epsilon(2 * r.upper, 2.0, 1e-5), rel=1e-3)


def test_degenerate_sensitivities():
    assert isinstance(interop.gaussian_dp_event(0.0, 1.0), dp_accounting.NoOpDpEvent)
    assert isinstance(interop.gaussian_dp_event(float("inf"), 1.0),
                      dp_accounting.NonPrivateDpEvent)


def test_docstring_examples_run():
    failures, tried = doctest.testmod(interop)
    assert tried > 0 and failures == 0
