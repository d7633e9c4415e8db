"""The pair accountant with removed noise (``Accountant(..., noise_removed=True)``, issue 34):
the lazy route's interval at every round is the one-shot ``noise_removed=True`` query's, its
upper bound never below the lower one and never above the cap T; rounds_within is the
brute-force largest T; checkpoints continue identically; the combinations it does not offer
are refused with messages naming the problem."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

import sparsedp
from sparsedp.accountant import load, save
from sparsedp.errors import ParameterError
from tests.conftest import brute_force_rounds, slow_after

VIEWS = ("secure-summation", "neighbourhood", "secure-summation-v1")


def _random_case(seed: int):
    """A small connected ER graph (Metropolis weights; lazy for the v1 view, and made
    non-symmetric by a directed ring for every fourth seed), a target, 1-3 observers, a view
    and the gradient model."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(8, 16))
    G = nx.gnp_random_graph(n, float(rng.uniform(0.2, 0.4)), seed=seed)
    G = nx.convert_node_labels_to_integers(G.subgraph(max(nx.connected_components(G),
                                                          key=len)).copy())
    W = sparsedp.gossip_matrix(G, scheme="metropolis")
    n = W.shape[0]
    view = VIEWS[seed % len(VIEWS)]
    if view.endswith("-v1"):
        W = sp.csr_matrix(0.5 * (sp.identity(n) + W))
    if seed % 4 == 3:  # non-symmetric: half of W, half a directed ring
        ring = sp.csr_matrix((np.ones(n), (np.arange(n), (np.arange(n) + 1) % n)), shape=(n, n))
        W = sp.csr_matrix(0.5 * (W + ring))
    target = int(rng.integers(n))
    others = [i for i in range(n) if i != target]
    observers = [int(i) for i in rng.choice(others, int(rng.integers(1, 4)), replace=False)]
    gradients = "vector" if seed % 5 == 4 else "scalar"
    return W, target, observers, view, gradients


@pytest.mark.parametrize("seed,T", slow_after([(seed, 8 if seed < 3 else 40)
                                               for seed in range(20)], 3))
def test_interval_is_the_one_shot_query_at_every_round(seed, T):
    """20 random small graphs (3 in the default tier at T = 8, the rest slow at T = 40),
    every t = 1..T: the interval's lower bound is the one-shot noise_removed query's, the
    upper bound is not below it, and the cap Delta_t^2 <= t holds."""
    W, target, observers, view, gradients = _random_case(seed)
    accountant = sparsedp.Accountant(W, target, observers, sigma=1.0, view=view,
                                     gradients=gradients, noise_removed=True)
    for t in range(1, T + 1):
        accountant.step()
        one_shot = sparsedp.squared_sensitivity(W, target, observers, t, view=view,
                                                noise_removed=True, gradients=gradients)
        result = accountant.interval()
        assert result.T == t and result.noise_removed
        assert abs(result.lower - one_shot.lower) <= 1e-9 * max(one_shot.lower, 1e-300), t
        assert one_shot.lower <= accountant.upper == result.upper <= t, t
        assert result.upper == min(one_shot.upper, t)
        assert result.bounds[-1].name == "noise_cap" and result.bounds[-1].value == t


@pytest.mark.parametrize("seed", [0, 1])
def test_rounds_within_is_the_brute_force_largest_T(seed):
    """Two small graphs: the exponential search and bisection over the lazy answers give the
    largest T whose fresh accountant stays within the budget (T* inside the limit, beyond
    the rounds the cap alone decides)."""
    W, target, observers, view, _ = _random_case(seed)
    sigma, delta, limit = 1.0, 1e-5, 40

    def make():
        return sparsedp.Accountant(W, target, observers, sigma=sigma, view=view,
                                   noise_removed=True)

    probe = make()
    probe.step(12)
    epsilon = probe.epsilon(delta)  # T* >= 12, where the cap alone is over budget
    assert sparsedp.gaussian_epsilon(12.0, sigma, delta) > epsilon
    expected = brute_force_rounds(make, epsilon, delta, limit)
    assert 12 <= expected < limit
    accountant = make()
    accountant.step(3)
    assert accountant.rounds_within(epsilon, delta, limit=limit) == expected
    assert make().rounds_within(epsilon, delta, limit=expected) == expected  # the limit


def test_state_round_trip_continues_identically(tmp_path):
    """save / load mid-run (the flag carried): the restored copy answers as the original at
    every later round."""
    W, target, observers, view, _ = _random_case(1)
    original = sparsedp.Accountant(W, target, observers, sigma=2.0, view=view,
                                   noise_removed=True)
    original.step(4)
    assert original.state_dict()["noise_removed"] is True
    restored = load(save(original, tmp_path / "acc.npz"))
    assert isinstance(restored, sparsedp.Accountant) and restored.noise_removed
    assert restored.rounds == 4
    for _ in range(3):
        original.step(2)
        restored.step(2)
        assert restored.upper == original.upper
        assert restored.interval().lower == original.interval().lower
        assert restored.epsilon(1e-5) == original.epsilon(1e-5)
    assert restored.rounds_within(3.0, 1e-5, limit=30) == original.rounds_within(3.0, 1e-5,
                                                                                 limit=30)


def test_refusals_name_the_problem():
    """Time-varying gossip, the views whose known noise contains the target's, a target
    among the observers."""
    W = sparsedp.gossip_matrix(nx.cycle_graph(8))
    with pytest.raises(ParameterError, match="noise_removed is offered for one constant W"):
        sparsedp.Accountant(None, 0, [4], sigma=1.0, n=8, noise_removed=True)
    for view in ("target-v1", "adaptive-v1"):
        with pytest.raises(ParameterError, match=f"view '{view}' with noise_removed: .*"
                                                 "unbounded"):
            sparsedp.Accountant(W, 0, None, sigma=1.0, view=view, noise_removed=True)
        assert sparsedp.squared_sensitivity(W, 0, None, 3, view=view,
                                            noise_removed=True).upper == np.inf
    with pytest.raises(ParameterError, match="target"):
        sparsedp.Accountant(W, 0, [0, 4], sigma=1.0, noise_removed=True)
    with pytest.raises(ParameterError, match="noise_removed must be True or False"):
        sparsedp.Accountant(W, 0, [4], sigma=1.0, noise_removed="yes")
