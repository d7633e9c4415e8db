"""Gossip accounting with d-dimensional gradients clipped in norm
(``squared_sensitivity(gradients="vector")``): the exact value is the SDP
``max <M_T, X>`` over Gram matrices of unit vectors; its certified interval against an
independent dense computation, the scalar (sign) problem below it, and the refusals."""

import networkx as nx
import numpy as np
import pytest

import sparsedp
from sparsedp.errors import ParameterError
from sparsedp.testing import brute_force_max, dense_M, sdp_max

# (graph seed, T, observers as offsets into the target's neighbours): colluding observers
# next to the target give M_T negative entries, where the sign maximum is below the SDP
CASES = [(2, 30, 1), (6, 30, 1), (7, 40, 1), (0, 16, 3), (1, 12, 3), (3, 16, 3), (5, 16, 2)]
BELOW = [(0, 16, 3), (1, 12, 3), (3, 16, 3)]  # sign maximum 1.8-4.6 % below the SDP


def _instance(seed, observer_count):
    graph = nx.connected_watts_strogatz_graph(14, 4, 0.3, seed=seed)
    W = sparsedp.gossip_matrix(graph, scheme="metropolis")
    target = seed % 14
    observers = sorted(graph[target])[:observer_count]
    return W, target, observers


@pytest.mark.parametrize(("seed", "T", "observer_count"), CASES)
def test_the_interval_contains_the_independent_sdp_value_and_closes(seed, T, observer_count):
    W, target, observers = _instance(seed, observer_count)
    vector = sparsedp.squared_sensitivity(W, target, observers, T, gradients="vector")
    scalar = sparsedp.squared_sensitivity(W, target, observers, T)
    M = dense_M(W, target, observers, T)
    ref_low, ref_high = sdp_max(M)
    assert vector.lower <= ref_high * (1 + 1e-9)
    assert vector.upper >= ref_low * (1 - 1e-9)
    assert vector.upper - vector.lower <= 1e-6 * vector.upper
    # the sign vectors are feasible gradients: the scalar value is at most the vector one
    assert scalar.lower <= vector.upper * (1 + 1e-12)
    if T <= 16:
        assert brute_force_max(M) <= vector.upper * (1 + 1e-9)
    assert vector.exact is None
    assert any("gradients='vector'" in note for note in vector.notes)


def test_some_case_has_a_vector_value_above_the_sign_maximum():
    """The sign problem's exact value (exhaustive search, T <= 16) lies below the vector
    one on these cases, so the test above tells the two problems apart."""
    for seed, T, count in BELOW:
        W, target, observers = _instance(seed, count)
        scalar = sparsedp.squared_sensitivity(W, target, observers, T)
        vector = sparsedp.squared_sensitivity(W, target, observers, T, gradients="vector")
        assert scalar.exact is not None
        assert vector.lower > scalar.upper * (1 + 1e-3)


def test_where_the_sign_bounds_meet_both_models_agree():
    W = sparsedp.gossip_matrix(nx.cycle_graph(8), scheme="metropolis")
    scalar = sparsedp.squared_sensitivity(W, 0, [4], 50)
    vector = sparsedp.squared_sensitivity(W, 0, [4], 50, gradients="vector")
    assert vector.lower == pytest.approx(scalar.lower, rel=1e-12)
    assert vector.upper == pytest.approx(scalar.upper, rel=1e-9)


def test_the_exhaustive_search_is_a_lower_bound_only_and_exact_true_is_refused():
    W, target, observers = _instance(5, 2)
    with pytest.raises(ParameterError, match="exact only for gradients='scalar'"):
        sparsedp.squared_sensitivity(W, target, observers, 12, gradients="vector", exact=True)
    with pytest.raises(ParameterError, match="gradients must be one of"):
        sparsedp.squared_sensitivity(W, target, observers, 12, gradients="matrix")
    vector = sparsedp.squared_sensitivity(W, target, observers, 12, gradients="vector")
    assert "exhaustive" not in {b.name for b in vector.bounds}  # auto: no sign enumeration
    assert all(b.kind != "exact" for b in vector.bounds)
    assert np.isfinite(vector.upper)


@pytest.mark.parametrize(("seed", "T", "observer_count"), BELOW[:2])
def test_the_accountants_answer_the_vector_query_at_every_round(seed, T, observer_count):
    """The pair accountant with vector gradients: its interval's lower bound is the one-shot
    vector query's at every round, and every upper bound it gives (the running one included)
    is at least that query's lower bound; one attacker against every target likewise."""
    W, target, observers = _instance(seed, observer_count)
    pair = sparsedp.Accountant(W, target, observers, sigma=1.0, gradients="vector")
    targets = sparsedp.TargetsAccountant(W, observers, sigma=1.0, gradients="vector")
    for t in range(1, T + 1):
        pair.step()
        targets.step()
        one_shot = sparsedp.squared_sensitivity(W, target, observers, t, gradients="vector")
        interval = pair.interval()
        assert interval.lower == pytest.approx(one_shot.lower, rel=1e-9, abs=1e-13)
        assert interval.exact is None
        assert min(interval.upper, pair.upper) >= one_shot.lower * (1 - 1e-12)
        assert targets.upper[target] >= one_shot.lower * (1 - 1e-12)
    assert targets.interval([target]).lower[0] == pytest.approx(one_shot.lower, rel=1e-9)


def test_the_graph_accountant_bounds_every_vector_pair(monkeypatch):
    """Its worst case runs without the exhaustive sign search (whose upper end bounds the
    sign maximum only) and bounds every pair's vector value."""
    from sparsedp.accountant import graph

    asked = []
    engine = graph.per_target_worst_case
    monkeypatch.setattr(graph, "per_target_worst_case",
                        lambda *a, **k: asked.append(k["exact"]) or engine(*a, **k))
    W, _, _ = _instance(0, 1)
    accountant = sparsedp.GraphAccountant(W, sigma=1.0, gradients="vector")
    accountant.step(12)
    _, upper = accountant.worst_case()
    assert asked == [False]
    for target in range(W.shape[0]):
        worst = max(sparsedp.squared_sensitivity(W, target, [a], 12, gradients="vector").lower
                    for a in range(W.shape[0]) if a != target)
        assert upper[target] >= worst * (1 - 1e-12)
        assert accountant.running_upper[target] >= worst * (1 - 1e-12)
