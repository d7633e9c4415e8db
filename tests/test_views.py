"""Every threat model against the dense reference (explicit H_T, pseudo-inverse)."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

import sparsedp
from sparsedp.errors import GossipMatrixError, ParameterError
from sparsedp.gossip.views import POWER_OFFSET, VIEWS, closed_neighbourhood
from sparsedp.linalg.operators import GossipSystem
from sparsedp.testing import dense_H, dense_in_range, dense_reference


def _graph(seed: int, n: int = 11, p: float = 0.35) -> nx.Graph:
    G = nx.erdos_renyi_graph(n, p, seed=seed)
    while not nx.is_connected(G):
        seed += 100
        G = nx.erdos_renyi_graph(n, p, seed=seed)
    return G


def _check_against_dense(r, W, target, T, **view):
    if r.noise_removed:  # only the attacker's own noise columns are deleted
        view["known_noise"] = list(r.known_noise)
    ref = dense_reference(W, target, list(r.observers), T, **view)
    truth = ref.exact
    scale = max(truth, 1e-12)
    assert r.lower <= truth + 1e-9 * scale
    assert r.upper >= truth - 1e-9 * scale
    by_name = {b.name: b.value for b in r.bounds}
    assert by_name["ones"] == pytest.approx(ref.ones, rel=1e-7, abs=1e-10)
    if r.solver.get("upper_certified"):
        assert r.exact == pytest.approx(truth, rel=1e-7, abs=1e-10)
        assert by_name["spectral"] == pytest.approx(ref.spectral, rel=1e-6, abs=1e-9)
        assert r.upper <= min(ref.upper, float(T)) * (1 + 1e-6) + 1e-9
    else:  # K singular beyond its redundant rows: least-squares lower bound, upper bound T
        assert r.lower == pytest.approx(truth, rel=1e-6, abs=1e-9)
        assert r.upper == T
    return ref


CASES = [
    # (view, observers given, noise_removed)
    ("secure-summation", "single", False),
    ("secure-summation", "coalition", False),
    # a target among its own observers is refused (tests/test_self_observation.py)
    ("secure-summation-v1", "single", False),
    ("secure-summation-v1", "coalition", False),
    ("neighbourhood", "neighbour-of-target", False),  # target in the neighbourhood
    ("neighbourhood", "single", False),
    ("adaptive-v1", None, False),
    ("target-v1", None, False),
    ("secure-summation", "single", True),
    ("secure-summation", "neighbour-of-target", True),  # adjacent target, noise removed
    ("secure-summation", "coalition", True),
    ("secure-summation-v1", "single", True),
    ("secure-summation-v1", "neighbour-of-target", True),
    ("neighbourhood", "single", True),
]


def _observers(G, target, kind):
    others = [v for v in G if v != target]
    far = [v for v in others if not G.has_edge(v, target)]
    near = sorted(G[target])
    return {
        None: None,
        "single": [far[0]],
        "coalition": [far[0], near[0], far[-1]],
        "neighbour-of-target": [near[0]],
    }[kind]


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("view, kind, noise_removed", CASES)
@pytest.mark.parametrize("method, preconditioner", [
    ("structured", "auto"), ("gram", "auto"), ("matrix-free", "gram"),
    ("matrix-free", "stationary"), ("matrix-free", "innovation"),
])
def test_view_agrees_with_dense_reference(seed, view, kind, noise_removed, method, preconditioner):
    G = _graph(seed)
    W = sparsedp.gossip_matrix(G, scheme="metropolis")
    target, T = 5, 7
    observers = _observers(G, target, kind)
    if preconditioner == "innovation" and view in POWER_OFFSET:
        with pytest.raises(ParameterError, match="v1 forms"):
            sparsedp.squared_sensitivity(W, target, observers, T, view=view,
                                         method=method, preconditioner=preconditioner)
        return
    r = sparsedp.squared_sensitivity(
        W, target, observers, T, view=view, noise_removed=noise_removed, method=method,
        preconditioner=preconditioner,
    )
    assert r.view == view and r.noise_removed == noise_removed
    offset = 1 if view.endswith("v1") and view != "target-v1" else 0
    _check_against_dense(r, W, target, T, power_offset=offset, noise_removed=noise_removed)
    # K_T is non-singular once the redundant rows are dropped
    assert r.solver["upper_certified"]


def test_view_observer_sets():
    G = _graph(3)
    W = sparsedp.gossip_matrix(G)
    target, T = 4, 3
    i = next(v for v in G if v != target and not G.has_edge(v, target))
    closed = sorted({i, *G[i]})
    r = sparsedp.squared_sensitivity(W, target, [i], T, view="neighbourhood")
    assert list(r.observers) == closed
    r = sparsedp.squared_sensitivity(W, target, None, T, view="adaptive-v1")
    assert list(r.observers) == sorted({target, *G[target]})
    r = sparsedp.squared_sensitivity(W, target, None, T, view="target-v1")
    assert list(r.observers) == [target]
    assert list(closed_neighbourhood(W, [i])) == closed


def test_local_dp_is_exactly_T():
    W = sparsedp.gossip_matrix(_graph(4))
    for T in (1, 5, 40):
        r = sparsedp.squared_sensitivity(W, 2, None, T, view="local-dp")
        assert r.lower == r.upper == r.exact == T
    # the dense reference agrees: M_T = I
    ref = dense_reference(W, 2, list(range(W.shape[0])), 4)
    assert np.allclose(ref.M, np.eye(4), atol=1e-10)


def test_target_observer_with_noise_removed_has_no_privacy():
    W = sparsedp.gossip_matrix(_graph(5))
    T = 4
    r = sparsedp.squared_sensitivity(W, 3, None, T, view="local-dp", noise_removed=True)
    assert r.lower == r.upper == np.inf
    assert "no privacy" in r.notes[0]
    # the dense reference: b leaves the range of the noise-removed H
    assert not dense_in_range(W, 3, [3, 5], T, noise_removed=True)
    assert dense_in_range(W, 3, [0, 5], T, noise_removed=True)
    assert sparsedp.gaussian_epsilon(float("inf"), 1.0, 1e-5) == np.inf


def test_c_one_is_not_optimal_when_the_target_observes():
    """v1 App. B claims c = 1 always maximises; the neighbourhood view refutes it."""
    G = _graph(6)
    W = sparsedp.gossip_matrix(G)
    target = 5
    i = sorted(G[target])[0]
    r = sparsedp.squared_sensitivity(W, target, [i], 8, view="neighbourhood")
    ones = next(b.value for b in r.bounds if b.name == "ones")
    assert r.exact > ones * 1.01


def _time_varying(seed: int, T: int, n: int = 10) -> list[sp.csr_matrix]:
    """T Metropolis matrices of different random graphs on the same nodes (connected union)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(T):
        G = nx.erdos_renyi_graph(n, 0.3, seed=int(rng.integers(1 << 30)))
        G.add_edges_from(nx.path_graph(n).edges)  # connected in every round
        out.append(sparsedp.gossip_matrix(G, scheme="metropolis"))
    return out


@pytest.mark.parametrize("view, observers, noise_removed", [
    ("secure-summation", [0], False),
    ("secure-summation", [0, 7], False),
    ("secure-summation-v1", [0], False),
    ("secure-summation", [1], True),
    ("neighbourhood", [0], False),
])
def test_time_varying_agrees_with_dense_reference(view, observers, noise_removed):
    T = 6
    Ws = _time_varying(7, T)
    r = sparsedp.squared_sensitivity(Ws, 4, observers, T, view=view, noise_removed=noise_removed)
    assert r.method == "matrix-free"
    offset = 1 if view.endswith("v1") else 0
    if offset:  # Metropolis matrices are not diagonally dominant: no analytic lambda bound
        assert r.solver["solver"].startswith("dense Cholesky of K_T assembled")
    _check_against_dense(r, Ws, 4, T, power_offset=offset, noise_removed=noise_removed)
    # a callable gives the same result
    r2 = sparsedp.squared_sensitivity(
        lambda t: Ws[t], 4, observers, T, view=view, noise_removed=noise_removed
    )
    assert r2.lower == pytest.approx(r.lower, rel=1e-12)


def test_time_varying_order_matters():
    """Left products W_(t-1) ... W_k: reversing the order of the rounds changes H."""
    T = 4
    Ws = _time_varying(8, T)
    H = dense_H(Ws, [0], T)
    system = GossipSystem(Ws, [0], T)
    Z = np.random.default_rng(0).standard_normal((T, Ws[0].shape[0], 2))
    assert np.allclose(system.apply_H(Z).reshape(T, 2), (H @ Z.reshape(-1, 2)).reshape(T, 2))
    reversed_H = dense_H(Ws[::-1], [0], T)
    assert not np.allclose(H, reversed_H)
    expected = (Ws[2] @ Ws[1]).toarray()[0]  # block (3, 1) = e_0^T W_2 W_1
    assert np.allclose(H[3, 1 * 10 : 2 * 10], expected)


@pytest.mark.parametrize("offset, noise_removed", [(0, False), (1, False), (0, True), (1, True)])
def test_operator_matches_dense_H(offset, noise_removed):
    G = _graph(9)
    W = sparsedp.gossip_matrix(G)
    T, observers = 5, [1, 6]
    H = dense_H(W, observers, T, power_offset=offset)
    if noise_removed:
        keep = np.ones(W.shape[0], dtype=bool)
        keep[observers] = False
        H = H * np.tile(keep, T)[None, :]
    system = GossipSystem(
        W, observers, T, power_offset=offset, known_noise=observers if noise_removed else ()
    )
    rng = np.random.default_rng(1)
    Z = rng.standard_normal((T, W.shape[0], 3))
    Y = rng.standard_normal((T, 2, 3))
    assert np.allclose(system.apply_H(Z).reshape(-1, 3), H @ Z.reshape(-1, 3))
    assert np.allclose(system.apply_HT(Y).reshape(-1, 3), H.T @ Y.reshape(-1, 3))
    redundant = system.redundant_rows().ravel()
    assert np.linalg.matrix_rank(H[~redundant]) == np.linalg.matrix_rank(H) == (~redundant).sum()
    if noise_removed and not offset:
        assert redundant[:2].all()  # the first block row for p = 0 vanishes


def test_redundant_rows_of_observers_surrounded_by_observers():
    G = nx.path_graph(6)
    W = sparsedp.gossip_matrix(G)
    observers = [0, 1]  # node 0's only neighbour is an observer: s_0(t) = W_00 s_0 + W_01 s_1
    system = GossipSystem(W, observers, 4, known_noise=observers)
    redundant = system.redundant_rows()
    assert redundant[0].all() and all(row.tolist() == [True, False] for row in redundant[1:])
    r = sparsedp.squared_sensitivity(W, 4, observers, 4, noise_removed=True)
    assert r.solver["redundant_rows_dropped"] == 5
    _check_against_dense(r, W, 4, 4, noise_removed=True)


def test_bad_view_input():
    W = sparsedp.gossip_matrix(_graph(10))
    with pytest.raises(ParameterError, match="unknown view"):
        sparsedp.squared_sensitivity(W, 1, [2], 3, view="everything")
    with pytest.raises(ParameterError, match="observers=None"):
        sparsedp.squared_sensitivity(W, 1, [2], 3, view="local-dp")
    with pytest.raises(ParameterError, match="needs observers"):
        sparsedp.squared_sensitivity(W, 1, None, 3, view="neighbourhood")
    with pytest.raises(ParameterError, match="one matrix per round"):
        sparsedp.squared_sensitivity([W, W], 1, [2], 3)
    bad = W.tolil()
    bad[3, 3] += 0.5
    with pytest.raises(GossipMatrixError, match="W_1"):
        sparsedp.squared_sensitivity([W, bad.tocsr(), W], 1, [2], 3)
    with pytest.raises(ParameterError, match="structured"):
        sparsedp.squared_sensitivity([W, W, W], 1, [2], 3, method="structured")
    assert set(VIEWS) >= {"secure-summation", "local-dp"}


def test_target_v1_does_not_bound_every_observer():
    """v1 Thm 10's claim is false (docs/views.md, docs/closed_forms.md counterexample 4): a
    neighbour's neighbourhood view exceeds the target's own view."""
    W = sparsedp.gossip_matrix(nx.path_graph(2))
    own = sparsedp.squared_sensitivity(W, 0, None, 2, view="target-v1")
    neighbour = sparsedp.squared_sensitivity(W, 0, [1], 2, view="neighbourhood")
    assert own.upper == pytest.approx(1.8, rel=1e-9) and neighbour.lower == pytest.approx(2.0)
    assert "not a bound for other observers" in own.notes[0]
    W = sparsedp.gossip_matrix(nx.karate_club_graph())
    own = sparsedp.squared_sensitivity(W, 0, None, 6, view="target-v1")
    neighbour = sparsedp.squared_sensitivity(W, 0, [1], 6, view="neighbourhood")
    assert own.upper < 5.8646 < 5.9273 < neighbour.lower


def test_adaptive_v1_does_not_bound_every_coalition():
    """v1 Thm 9's claim is false (counterexample 5): on the 5-cycle a coalition of two
    neighbours of the target and a node at distance 2 learns more than the target's closed
    neighbourhood."""
    W = sparsedp.gossip_matrix(nx.cycle_graph(5))
    own = sparsedp.squared_sensitivity(W, 0, None, 2, view="adaptive-v1")
    coalition = sparsedp.squared_sensitivity(W, 0, [1, 3, 4], 2, view="secure-summation-v1")
    assert own.upper < 1.27 < 1.73 < coalition.lower
    assert "not every observer" in own.notes[0]


@pytest.mark.parametrize("seed", range(4))
def test_adaptive_v1_bounds_its_sub_coalitions(seed):
    """What adaptive-v1 does bound (docs/views.md): every sub-coalition of the target's closed
    neighbourhood in the secure-summation-v1 view (a coalition can compute a sub-coalition's
    view)."""
    G = _graph(20 + seed, n=9, p=0.4)
    W = sparsedp.gossip_matrix(G, scheme=("metropolis", "max-degree")[seed % 2])
    target, T = 4, 5
    whole = sparsedp.squared_sensitivity(W, target, None, T, view="adaptive-v1")
    closed = list(whole.observers)
    for size in range(1, len(closed) + 1):
        for sub in itertools.islice(itertools.combinations(closed, size), 12):
            if target in sub:
                continue  # a target among its own observers is refused (docs/views.md)
            part = sparsedp.squared_sensitivity(W, target, list(sub), T,
                                                view="secure-summation-v1")
            assert part.lower <= whole.upper * (1 + 1e-9)


def _hub_graphs():
    star = nx.star_graph(14)  # a hub, pendant leaves and two chords
    star.add_edges_from([(1, 2), (3, 4)])
    star.add_edges_from([(5, 15), (15, 16), (16, 17), (17, 5)])  # a cycle hanging off
    return {
        "star": star,
        "barabasi-albert": nx.barabasi_albert_graph(40, 2, seed=4),
        "power-law-cluster": nx.powerlaw_cluster_graph(40, 2, 0.3, seed=5),
    }


@pytest.mark.parametrize("name", sorted(_hub_graphs()))
@pytest.mark.parametrize("noise_removed", [False, True])
@pytest.mark.parametrize("preconditioner", ["innovation", "auto"])
def test_hub_neighbourhood_view_agrees_with_dense_reference(name, noise_removed, preconditioner):
    """The hub as the observer of the neighbourhood view, by the matrix-free path (the
    innovation preconditioner, or auto: the Gram factor), against the dense reference:
    the interval holds the exact value; targets inside and outside the neighbourhood."""
    G = _hub_graphs()[name]
    W = sparsedp.gossip_matrix(G, scheme="metropolis")
    hub = max(G, key=G.degree)
    T = 6
    neighbourhood = set(closed_neighbourhood(W, [hub]).tolist())
    outside = next(v for v in sorted(G) if v not in neighbourhood)
    inside = next(v for v in sorted(G) if v in neighbourhood and v != hub)
    for target in (outside, inside):
        r = sparsedp.squared_sensitivity(
            W, target, [hub], T, view="neighbourhood", noise_removed=noise_removed,
            method="matrix-free", preconditioner=preconditioner,
        )
        if preconditioner == "innovation" and not noise_removed:  # noise removed: no
            assert r.solver["preconditioner"] == "innovation"  # lambda bound, dense K
        _check_against_dense(r, W, target, T, noise_removed=noise_removed)


def test_hub_view_estimate_names_the_method_and_covers_the_peak():
    """The cost estimate of a hub's neighbourhood view names the PCG and its
    preconditioner, gives a time, and its memory is at least the peak that tracemalloc
    measures during the query; auto prefers the PCG over the dense Cholesky of the
    structured path once m T is large."""
    import tracemalloc

    G = nx.barabasi_albert_graph(300, 2, seed=3)
    W = sparsedp.gossip_matrix(G)
    hub = max(G, key=G.degree)
    target = next(v for v in G if not G.has_edge(v, hub) and v != hub)
    plan = sparsedp.estimate_cost(W, target, [hub], 30, view="neighbourhood",
                                  method="matrix-free", preconditioner="innovation")
    assert (plan["method"], plan["preconditioner"]) == ("matrix-free", "innovation")
    assert plan["seconds"] > 0
    tracemalloc.start()
    r = sparsedp.squared_sensitivity(W, target, [hub], 30, view="neighbourhood",
                                     method="matrix-free", preconditioner="innovation")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert r.solver["upper_certified"] and r.solver["residual_correction"] < 1e-12
    assert plan["memory_bytes"] >= peak, (plan["memory_bytes"], peak)

    big = nx.barabasi_albert_graph(3000, 3, seed=1)
    W = sparsedp.gossip_matrix(big)
    hub = max(big, key=big.degree)
    plan = sparsedp.estimate_cost(W, 7, [hub], 100, view="neighbourhood")
    assert (plan["method"], plan["preconditioner"]) == ("matrix-free", "innovation")
    assert any("innovation-preconditioned PCG" in note for note in plan["notes"])
    small = sparsedp.estimate_cost(W, 7, [5], 100, view="neighbourhood")
    assert small["method"] == "structured"
