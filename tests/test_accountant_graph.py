"""The graph accountant (issue 34, the worst case over the whole graph): its running per-node
bound is never below the brute-force worst case over single observers, its lazy interval is
the engine's per-target worst case, and rounds_within is the brute-force largest T."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.linalg as sla
import scipy.sparse as sp

import sparsedp
from sparsedp.accountant.graph import tail_bound
from sparsedp.errors import ParameterError
from tests.conftest import slow_after
from tests.test_accountant_sets import _graph


def _graphs():
    """Small connected graphs with Metropolis weights: ER, a path (slow mixing, deep lags)
    and a star (a hub whose leaves are each other's two-hop neighbours)."""
    er = nx.gnp_random_graph(12, 0.3, seed=4)
    er = er.subgraph(max(nx.connected_components(er), key=len)).copy()
    return [sparsedp.gossip_matrix(nx.convert_node_labels_to_integers(graph),
                                   scheme="metropolis")
            for graph in (er, nx.path_graph(9), nx.star_graph(7))]


def _brute_force_worst(W, T: int) -> np.ndarray:
    """Per target, the largest one-shot certified lower bound over every single observer."""
    n = W.shape[0]
    return np.array([max(sparsedp.squared_sensitivity(W, j, [a], T).lower
                         for a in range(n) if a != j) for j in range(n)])


@pytest.mark.parametrize("index", range(3))
def test_running_bound_is_never_below_the_brute_force_worst_case(index):
    W = _graphs()[index]
    accountant = sparsedp.GraphAccountant(W, sigma=1.0, max_depth=4)  # the tail bound in use
    for T in range(1, 11):
        accountant.step()
        worst = _brute_force_worst(W, T)
        assert np.all(accountant.running_upper >= worst), T
        assert np.all(accountant.running_upper <= T)


def _first_passage_sums(W, T: int) -> np.ndarray:
    """Per (target j, observer a) and t < T: row t of ``H_a^{-1} G_(aj) 1``, each a dense
    triangular solve with the Toeplitz matrices of ``(W^l)_(aa)`` and ``(W^l)_(aj)``
    (numpy's powers): ``phi_(ja)(t)`` of the module docstring, whose squares summed over t
    bound ``Delta_T^2(j -> a) <= max_(|c| <= 1) ||H_a^{-1} G c||^2`` (``H_a^{-1} G >=
    0``); NaN on the diagonal."""
    dense, n = W.toarray(), W.shape[0]
    powers = np.array([np.linalg.matrix_power(dense, lag) for lag in range(T)])
    out = np.full((n, n, T), np.nan)
    for a in range(n):
        H = sla.toeplitz(powers[:, a, a], np.zeros(T))
        for j in range(n):
            if j != a:
                F = sla.solve_triangular(H, sla.toeplitz(powers[:, a, j], np.zeros(T)),
                                         lower=True)
                assert F.min() >= -1e-12  # the paths from a to j not returning to a
                out[j, a] = F.sum(axis=1)
    return out


@pytest.mark.parametrize("seed", slow_after([0, 3] + [s for s in range(20) if s not in (0, 3)], 2))
def test_running_bound_holds_on_random_graphs_up_to_T_40(seed):
    """The 20 random graphs of the tracked sets' tests (tests/test_accountant_sets.py;
    every fourth one with row-normalised weights and self-loops: W not symmetric, its
    column sums above 1, so the tail grows): the running bound is at least the engine's
    certified lower bound of the per-target worst case at T = 1, 2, 3, 8, 16, .., 40 (the
    walks' depth and the tail both in use); a symmetric and a non-symmetric W in the default
    tier."""
    G = _graph(seed, np.random.default_rng(seed))
    scheme = "row-normalised-self-loops" if seed % 4 == 3 else "metropolis"
    W = sparsedp.gossip_matrix(G, scheme=scheme)
    accountant = sparsedp.GraphAccountant(W, sigma=1.0)
    for T in range(1, 41):
        accountant.step()
        if T < 4 or T % 8 == 0:
            table = sparsedp.per_target_worst_case(W, T=T, sigma=None, delta=None)
            rows = np.asarray(table.columns["target"], dtype=np.int64)
            assert np.all(accountant.running_upper[rows] >= table.columns["lower"]), T


def test_tail_bound_covers_every_later_first_passage_term():
    """``tail kappa^l >= L_(aj)(l) = phi_(ja)(l) - phi_(ja)(l - 1)`` (dense Toeplitz solves)
    for every pair at every lag beyond the walks' depth (max_depth 3: the tail in use)."""
    for W in _graphs():
        accountant = sparsedp.GraphAccountant(W, sigma=1.0, max_depth=3)
        depth = accountant.hitting.shape[1] - 1
        terms = np.diff(_first_passage_sums(W, 16), axis=2)  # lags 1 .. 15
        for lag in range(depth + 1, 16):
            bound = tail_bound(accountant.tail, accountant.growth, lag)
            assert np.nanmax(terms[:, :, lag - 1]) <= bound, lag


@pytest.mark.parametrize("index", range(3))
def test_running_bound_is_the_largest_own_noise_bound_within_the_depth(index):
    """Within the walks' depth the running bound is ``sum_t (max_a phi_(ja)(t))^2`` capped
    at T, ``phi`` computed independently by dense Toeplitz solves (``hitting_maxima``'s walks
    against the solves' running row sums), to 1e-12 relative; it is at least every pair's
    own-noise bound, and never below the brute-force worst case over observers (below and
    beyond the depth: test_running_bound_is_never_below_the_brute_force_worst_case)."""
    W = _graphs()[index]
    accountant = sparsedp.GraphAccountant(W, sigma=1.0)
    depth = accountant.hitting.shape[1] - 1
    assert depth >= 3
    for T in range(1, depth + 2):
        accountant.step()
        phi = _first_passage_sums(W, T)
        expected = np.minimum(np.sum(np.nanmax(phi, axis=1) ** 2, axis=1), T)
        assert accountant.running_upper == pytest.approx(expected, rel=1e-12, abs=1e-300), T
        pairs = np.nanmax(np.sum(phi**2, axis=2), axis=1)
        assert np.all(accountant.running_upper >= np.minimum(pairs, T))


def test_lazy_interval_is_the_per_target_worst_case():
    W = _graphs()[0]
    accountant = sparsedp.GraphAccountant(W, sigma=1.0)
    for T in (3, 7):
        accountant.step(T - accountant.rounds)
        lower, upper = accountant.worst_case()
        table = sparsedp.per_target_worst_case(W, T=T, sigma=None, delta=None)
        rows = np.asarray(table.columns["target"])
        assert np.array_equal(lower[rows], table.columns["lower"])
        assert np.array_equal(upper[rows], table.columns["upper"])
        assert np.all(lower >= _brute_force_worst(W, T) * (1 - 1e-9))
        assert np.array_equal(accountant.upper, np.minimum(accountant.running_upper, upper))
        assert accountant.worst_node() == int(np.argmax(accountant.upper))


def test_rounds_within_is_the_brute_force_largest_T():
    W = _graphs()[1]
    accountant = sparsedp.GraphAccountant(W, sigma=6.0)
    budget, delta = 1.0, 1e-5
    allowed = accountant.rounds_within(budget, delta, limit=60)
    brute = 0
    for T in range(1, 61):
        accountant.step()
        if accountant.epsilon(delta) > budget:
            break
        brute = T
    assert allowed == brute
    assert 0 < allowed < 60


def test_epsilon_per_node_is_the_gaussian_epsilon_of_the_bound():
    W = _graphs()[2]
    accountant = sparsedp.GraphAccountant(W, sigma=3.0)
    accountant.step(5)
    expected = [sparsedp.gaussian_epsilon(float(u), 3.0, 1e-5) for u in accountant.upper]
    assert np.array_equal(accountant.epsilons(1e-5), expected)
    assert accountant.epsilons(1e-5, nodes=[0])[0] == expected[0]
    assert accountant.epsilon(1e-5) == max(expected)


def test_refusals_name_the_problem():
    W = _graphs()[0]
    with pytest.raises(ParameterError, match="sigma"):
        sparsedp.GraphAccountant(W, sigma=0.0)
    with pytest.raises(ParameterError, match="time-varying gossip needs one matrix per round"):
        sparsedp.GraphAccountant([W, W], sigma=1.0)
    with pytest.raises(ParameterError, match="call step"):
        sparsedp.GraphAccountant(W, sigma=1.0).worst_case()
    with pytest.raises(ParameterError, match="alpha"):
        sparsedp.GraphAccountant(W, sigma=1.0).rdp(1.0)
    assert sp.issparse(sparsedp.GraphAccountant(W, sigma=1.0).W)


def test_state_round_trip_continues_identically(tmp_path):
    """state_dict -> .npz (no pickle) -> from_state, then both continue: identical bounds."""
    W = _graphs()[0]
    accountant = sparsedp.GraphAccountant(W, sigma=2.0, max_depth=3)
    accountant.step(4)
    path = tmp_path / "graph.npz"
    np.savez(path, **{key: np.asarray(value) for key, value in
                      accountant.state_dict().items()})
    with np.load(path, allow_pickle=False) as data:
        copy = sparsedp.GraphAccountant.from_state(dict(data))
    for acc in (accountant, copy):
        acc.step(6)
    assert copy.rounds == accountant.rounds == 10
    assert np.array_equal(copy.upper, accountant.upper)
    assert copy.rounds_within(1.0, 1e-5, limit=50) == accountant.rounds_within(1.0, 1e-5,
                                                                               limit=50)
