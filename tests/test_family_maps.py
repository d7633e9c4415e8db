"""Privacy maps of the random-walk and matrix-factorisation families
(:mod:`sparsedp.maps.families`): pair by pair equal to the single calls, distances equal to
networkx's, the table's shape and kinds, and one-line errors."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

import sparsedp
from sparsedp.errors import GraphError, ParameterError
from tests.conftest import random_family_graph


def _graph(k: int) -> nx.Graph:
    return random_family_graph(k, 3000, 12, 40)


def _pairs(m) -> dict:
    return {(r["observer"], r["target"]): r for r in m.rows()}


def _check_distances(m, G) -> None:
    for (a, j), row in _pairs(m).items():
        assert row["distance"] == nx.shortest_path_length(G, a, j)


@pytest.mark.parametrize("k", range(4))
def test_the_random_walk_map_equals_one_call_per_source(k):
    """Every pair's upper bound, kind and epsilon equal those of random_walk_rdp for the
    source, self-pairs are left out, and the distances are networkx's."""
    G = _graph(k)
    W = sparsedp.gossip_matrix(G)
    n = W.shape[0]
    obs = list(range(0, n, 2))
    tgt = [0, 1, n - 1]
    m = sparsedp.random_walk_map(W, observers=obs, targets=tgt, T=30, sigma=8.0, alpha=3.0,
                                 delta=1e-5, contributions=4)
    pairs = _pairs(m)
    assert len(m) == len(obs) * len(tgt) - len(set(obs) & set(tgt))
    assert all(a != j for a, j in pairs)
    for u in tgt:
        receivers = [v for v in obs if v != u]
        loss = sparsedp.random_walk_rdp(W, u, 30, 8.0, 3.0, contributions=4,
                                        receivers=receivers)
        eps = loss.epsilon(1e-5)
        for v, rdp, e in zip(loss.receivers.tolist(), loss.rdp, eps, strict=True):
            row = pairs[(v, u)]
            assert row["upper"] == pytest.approx(rdp, rel=1e-12)
            assert row["epsilon"] == pytest.approx(e, rel=1e-12)
            assert row["kind"] == "certified upper" and np.isnan(row["lower"])
    _check_distances(m, G)
    worst = {r["target"]: r for r in m.per_target()}
    for u in tgt:
        rows = [r for (a, j), r in pairs.items() if j == u]
        assert worst[u]["worst_lower"] is None
        assert worst[u]["worst_upper"] == max(r["upper"] for r in rows)


def test_the_random_walk_map_without_a_cap_is_an_estimate():
    m = sparsedp.random_walk_map(nx.cycle_graph(10), targets=[0], T=20, sigma=8.0, delta=None)
    assert set(m.columns["kind"].tolist()) == {"estimate"}
    assert np.isnan(m.columns["epsilon"]).all()  # no delta
    assert any("estimates" in note for note in m.notes)


@pytest.mark.parametrize("k", range(3))
def test_the_mf_map_equals_single_mf_sensitivity_calls(k):
    """Bit for bit the single call's bounds (the shared attacker work changes nothing),
    lower <= upper, epsilon from the upper bound."""
    G = _graph(k)
    W = sparsedp.lock_gossip_matrix(sparsedp.gossip_matrix(G))
    n = W.shape[0]
    obs, tgt = [0, n // 2], list(range(0, n, 3))
    m = sparsedp.mf_map(W, observers=obs, targets=tgt, T=6, sigma=4.0, delta=1e-5)
    pairs = _pairs(m)
    assert len(m) == len(obs) * len(tgt) - len(set(obs) & set(tgt))
    for (a, j), row in pairs.items():
        single = sparsedp.mf_sensitivity(W, j, [a], 6)
        assert (row["lower"], row["upper"]) == (single.lower, single.upper)
        assert row["lower"] <= row["upper"]
        assert row["kind"] == "certified upper"
        assert row["epsilon"] == sparsedp.gaussian_epsilon(single.upper, 4.0, 1e-5)
    _check_distances(m, G)


def test_the_mf_map_with_scalar_gradients_reports_exact_pairs():
    m = sparsedp.mf_map(nx.path_graph(6), observers=[0], T=4, gradients="scalar",
                        scheme="metropolis")
    single = sparsedp.mf_sensitivity(sparsedp.gossip_matrix(nx.path_graph(6)), 3, [0], 4,
                                     gradients="scalar")
    row = _pairs(m)[(0, 3)]
    assert row["kind"] == "exact"
    assert row["lower"] == single.exact and row["upper"] == single.exact + single.exact_error


def test_family_maps_refuse_bad_input_in_one_line():
    G = nx.cycle_graph(6)
    with pytest.raises(GraphError):
        sparsedp.random_walk_map(G, targets=[99], T=5, sigma=8.0)
    with pytest.raises(ParameterError, match="sample"):
        sparsedp.mf_map(G, observers=("sample", 7, 0), T=3)
    with pytest.raises(ParameterError, match="both sigma and delta"):
        sparsedp.mf_map(G, T=3, sigma=1.0, delta=None)
    # checked before any pair (a map of self pairs only computes none)
    with pytest.raises(ParameterError, match="sigma"):
        sparsedp.random_walk_map(G, observers=[0], targets=[0], T=5, sigma=1.0, alpha=3.0)
    with pytest.raises(ParameterError, match="contributions"):
        sparsedp.random_walk_map(G, observers=[0], targets=[0], T=5, sigma=8.0,
                                 contributions=0.5)
    with pytest.raises(ParameterError, match="trust_model"):
        sparsedp.mf_map(G, observers=[0], targets=[0], T=3, trust_model="nobody")
    with pytest.raises(ParameterError):
        sparsedp.mf_map(G, observers=[0], targets=[0], T=3, algorithm="no-such-algorithm")


def test_a_family_map_round_trips_through_the_parquet_store(tmp_path):
    pytest.importorskip("pyarrow")
    from sparsedp.maps import store

    m = sparsedp.random_walk_map(nx.cycle_graph(7), targets=[0, 3], T=15, sigma=8.0,
                                 delta=1e-5)
    path = tmp_path / "rw.parquet"
    store.write_map(m, path)
    back = store.read_map(path)
    assert back.parameters["family"] == "random-walk"
    for name in ("observer", "target", "distance", "upper", "epsilon"):
        np.testing.assert_array_equal(back.columns[name], m.columns[name])
    assert back.columns["kind"].tolist() == m.columns["kind"].tolist()
