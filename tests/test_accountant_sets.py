"""The accountants of tracked sets (issue 34, sparsedp.accountant.targets and .observers): at
every round each pair's interval lower bound is the one-shot structured query's and every
running upper bound is at least it; the tight running bound is the pair accountant's; the
running box bound contains the exhaustive exact value; rounds_within is the brute-force
largest T; a state round trip continues identically, also after kill -9."""

from __future__ import annotations

import textwrap

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

import sparsedp
from sparsedp.errors import ParameterError
from tests.conftest import brute_force_rounds, killed_and_whole_runs, slow_after

FAMILIES = ("er", "power-law", "cycle", "regular", "clustered")
VIEWS = ("secure-summation", "neighbourhood", "secure-summation-v1")


def _graph(seed: int, rng) -> nx.Graph:
    n = int(rng.integers(10, 24))
    family = FAMILIES[seed % len(FAMILIES)]
    if family == "er":
        G = nx.gnp_random_graph(n, float(rng.uniform(0.15, 0.35)), seed=seed)
    elif family == "power-law":
        G = nx.barabasi_albert_graph(n, int(rng.integers(1, 3)), seed=seed)
    elif family == "cycle":
        G = nx.cycle_graph(n)
    elif family == "regular":
        G = nx.random_regular_graph(3, n + n % 2, seed=seed)
    else:
        G = nx.powerlaw_cluster_graph(n, 2, 0.5, seed=seed)
    G = G.subgraph(max(nx.connected_components(G), key=len)).copy()
    return nx.convert_node_labels_to_integers(G)


def _case(seed: int):
    """A random graph (Metropolis weights; lazy for the v1 view), an attacker and a view."""
    rng = np.random.default_rng(seed)
    G = _graph(seed, rng)
    W = sparsedp.gossip_matrix(G, scheme="metropolis")
    n = W.shape[0]
    view = VIEWS[seed % len(VIEWS)]
    if view.endswith("-v1"):  # diagonally dominant: lambda_min(K) has the analytic bound
        W = sp.csr_matrix(0.5 * (sp.identity(n) + W))
    size = int(rng.integers(1, 3)) if view == "secure-summation" else 1
    observers = sorted(int(i) for i in rng.choice(n, size, replace=False))
    return W, observers, view


def _check_targets_every_round(seed: int, T: int, targets=None) -> None:
    W, observers, view = _case(seed)
    accountant = sparsedp.TargetsAccountant(W, observers, sigma=1.0, view=view)
    n = W.shape[0]
    asked = [j for j in range(n) if j not in observers] if targets is None else targets
    for t in range(1, T + 1):
        accountant.step()
        running = accountant.upper
        interval = accountant.interval(asked)
        assert interval.T == t
        for j, lower, upper in zip(asked, interval.lower, interval.upper, strict=True):
            one_shot = sparsedp.squared_sensitivity(W, j, observers, t, view=view,
                                                    method="structured")
            assert abs(lower - one_shot.lower) <= 1e-9 * max(one_shot.lower, 1e-300), (t, j)
            assert upper >= one_shot.lower and running[j] >= one_shot.lower, (t, j)
        assert np.all(np.isnan(running[observers]))


@pytest.mark.parametrize("seed", slow_after(list(range(20)), 2))
def test_targets_interval_matches_the_one_shot_query_at_every_round(seed):
    """20 random graphs (ER, Barabasi-Albert, cycles, 3-regular, power-law clustered; 10-24
    nodes; secure summation with 1-2 attackers, the neighbourhood and the v1 view), every
    t = 1..T: every target with T = 12 in the default tier; in the slow tier three targets (a
    neighbour of the attacker among them), T = 200 for every fifth graph and 40 for the
    others (every target of every graph: about two hours on two cores)."""
    if seed < 2:
        _check_targets_every_round(seed, 12)
        return
    W, observers, _ = _case(seed)
    near = [j for j in W[observers[0]].indices.tolist() if j not in observers][:1]
    far = [j for j in range(W.shape[0]) if j not in observers and j not in near]
    _check_targets_every_round(seed, 200 if seed % 5 == 0 else 40, near + far[:1] + far[-1:])


def _observers_case(seed: int):
    """A random graph (Metropolis weights; lazy for the v1 view), a target and a view."""
    rng = np.random.default_rng(seed)
    W = sparsedp.gossip_matrix(_graph(seed, rng), scheme="metropolis")
    target = int(rng.integers(W.shape[0]))
    view = VIEWS[seed % len(VIEWS)]
    if view.endswith("-v1"):  # diagonally dominant: lambda_min(K) has the analytic bound
        W = sp.csr_matrix(0.5 * (sp.identity(W.shape[0]) + W))
    return W, target, view


def _check_observers_every_round(seed: int, T: int, observers=None) -> None:
    W, target, view = _observers_case(seed)
    accountant = sparsedp.ObserversAccountant(W, target, sigma=1.0, view=view)
    n = W.shape[0]
    asked = [a for a in range(n) if a != target] if observers is None else observers
    for t in range(1, T + 1):
        accountant.step()
        running = accountant.upper
        interval = accountant.interval(asked)
        for a, lower, upper in zip(asked, interval.lower, interval.upper, strict=True):
            one_shot = sparsedp.squared_sensitivity(W, target, [a], t, view=view,
                                                    method="structured")
            assert abs(lower - one_shot.lower) <= 1e-9 * max(one_shot.lower, 1e-300), (t, a)
            assert upper >= one_shot.lower and running[a] >= one_shot.lower, (t, a)
        assert np.isnan(running[target])
        assert accountant.worst_upper >= interval.worst_lower


@pytest.mark.parametrize("seed", slow_after(list(range(20)), 3))
def test_observers_interval_matches_the_one_shot_query_at_every_round(seed):
    """The same 20 graphs, the target against every single-node attacker in the three views
    in turn (secure summation, neighbourhood, secure-summation-v1 on lazy W), every t =
    1..T: every attacker with T = 12 (the v1 view 8) in the default tier; in the slow tier
    three attackers (a neighbour of the target among them: in the neighbourhood view it
    reads the target's own messages), T = 200 for every fifth graph and 40 for the
    others."""
    if seed < 3:
        _check_observers_every_round(seed, 8 if seed == 2 else 12)
        return
    W, target, _ = _observers_case(seed)
    near = [a for a in W[target].indices.tolist() if a != target][:1]
    far = [a for a in range(W.shape[0]) if a != target and a not in near]
    _check_observers_every_round(seed, 200 if seed % 5 == 0 else 40, near + far[:1] + far[-1:])


@pytest.mark.parametrize("seed", [0, 3, 4])
def test_tight_running_bound_is_the_pair_accountants(seed):
    """The shared factor's rows bound of every target equals the pair accountant's running
    bound (its own factor and Y, computed by panels) to 1e-10 relative, at every round; the
    tracked set's rows appended in blocks of 7 rounds (answers every 7th round), the pair's in
    one block of 30."""
    W, observers, view = _case(seed)
    T = 30
    accountant = sparsedp.TargetsAccountant(W, observers, sigma=1.0, view=view)
    for t in range(1, T + 1):
        accountant.step()
        assert len(accountant._tight_history) == t - 1 - (t - 1) % 7
        if t % 7 == 0:
            _ = accountant.upper
    _ = accountant.upper
    history = np.array(accountant._tight_history)
    assert history.shape == (T, accountant.tight_targets.size)
    for column, j in enumerate(accountant.tight_targets.tolist()):
        pair = sparsedp.Accountant(W, j, observers, sigma=1.0, view=view)
        pair.step(T)
        _ = pair.upper
        assert history[:, column] == pytest.approx(pair._factor.history, rel=1e-10), j


@pytest.mark.parametrize("seed", range(6))
def test_running_bounds_contain_the_exhaustive_exact_value(seed):
    """Without tight pairs (the box bound alone) and with them, every running upper bound
    after rounds T = 1..8 is at least the exact value of the exhaustive sign search; also
    the observers' box bound in the neighbourhood view (per-node sums summed over N(j)),
    for attackers j inside the target's neighbourhood and outside it."""
    rng = np.random.default_rng(seed)
    G = _graph(seed, rng)
    W = sparsedp.gossip_matrix(G)
    n = W.shape[0]
    targets_box = sparsedp.TargetsAccountant(W, [0], sigma=1.0, tight_targets=[])
    targets_tight = sparsedp.TargetsAccountant(W, [0], sigma=1.0)
    observers_box = sparsedp.ObserversAccountant(W, 0, sigma=1.0, tight_observers=[])
    neighbourhood_box = sparsedp.ObserversAccountant(W, 0, sigma=1.0, view="neighbourhood",
                                                     tight_observers=[])
    for T in range(1, 9):
        for accountant in (targets_box, targets_tight, observers_box, neighbourhood_box):
            accountant.step()
        for j in range(1, n, 3):
            exact = sparsedp.squared_sensitivity(W, j, [0], T, exact=True, progress=False).exact
            assert targets_box.upper[j] >= exact * (1 - 1e-12), (T, j)
            assert targets_tight.upper[j] >= exact * (1 - 1e-12), (T, j)
            # the target's vector gives observer j's lags: Delta^2(0 -> j) = Delta^2(j -> 0)
            assert observers_box.upper[j] >= exact * (1 - 1e-12), (T, j)
            exact = sparsedp.squared_sensitivity(W, 0, [j], T, view="neighbourhood",
                                                 exact=True, progress=False).exact
            assert neighbourhood_box.upper[j] >= exact * (1 - 1e-12), (T, j)
    assert targets_tight.worst_upper <= targets_box.worst_upper


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("tracked", ["targets", "observers"])
def test_rounds_within_is_the_brute_force_largest_T(seed, tracked):
    W, observers, view = _case(seed)
    if tracked == "targets":
        def make():
            return sparsedp.TargetsAccountant(W, observers, sigma=1.5, view=view)
    else:
        W, target, view = _observers_case(seed)

        def make():
            return sparsedp.ObserversAccountant(W, target, sigma=1.5, view=view)
    delta, limit = 1e-5, 40
    probe = make()
    probe.step(15)
    epsilon = probe.epsilon(delta)  # a budget that runs out within the limit
    expected = brute_force_rounds(make, epsilon, delta, limit)
    assert 3 <= expected < limit
    accountant = make()
    accountant.step(3)
    assert accountant.rounds_within(epsilon, delta, limit=limit) == expected
    assert accountant.rounds == 3  # looking ahead records nothing
    fresh = make()
    fresh.step(3)
    assert np.array_equal(accountant.upper, fresh.upper, equal_nan=True)
    accountant.step(expected - 3)
    assert accountant.epsilon(delta) <= epsilon
    accountant.step()
    assert accountant.epsilon(delta) > epsilon
    assert make().rounds_within(1e6, delta, limit=25) == 25


@pytest.mark.parametrize("tracked", ["targets", "observers"])
def test_state_round_trip_continues_identically(tmp_path, tracked):
    W, observers, view = _case(4)
    if tracked == "targets":
        original = sparsedp.TargetsAccountant(W, observers, sigma=1.0, view=view)
        cls = sparsedp.TargetsAccountant
    else:
        original = sparsedp.ObserversAccountant(W, observers[0], sigma=1.0, view=view,
                                                tight_observers=[1, 2, 3])
        cls = sparsedp.ObserversAccountant
    original.step(11)
    original.rounds_within(1.0, 1e-5, limit=20)  # computes ahead: saved too
    np.savez(tmp_path / "state.npz", **{k: np.asarray(v) for k, v in
                                         original.state_dict().items()})
    with np.load(tmp_path / "state.npz", allow_pickle=False) as data:
        copy = cls.from_state({key: data[key] for key in data.files})
    for accountant in (original, copy):
        accountant.step(9)
    assert copy.rounds == original.rounds == 20
    assert np.array_equal(copy.upper, original.upper, equal_nan=True)
    assert copy.epsilon(1e-6) == original.epsilon(1e-6)
    assert np.array_equal(copy.interval([5, 6]).lower, original.interval([5, 6]).lower)
    assert copy.rounds_within(2.0, 1e-6, limit=30) == original.rounds_within(2.0, 1e-6,
                                                                             limit=30)


def test_answers_and_refusals_name_the_problem():
    W = sparsedp.gossip_matrix(nx.cycle_graph(8))
    for cls, args in ((sparsedp.TargetsAccountant, ([0],)),
                      (sparsedp.ObserversAccountant, (0,))):
        name = cls.__name__
        for view in ("target-v1", "adaptive-v1"):
            with pytest.raises(ParameterError, match=(
                    f"{name}: view '{view}' has no attacker to track: its observed rows are "
                    f"fixed by the target .* sparsedp.Accountant\\(W, target, None, "
                    f"view='{view}'\\)")):
                cls(W, *args, sigma=1.0, view=view)
        with pytest.raises(ParameterError, match=f"{name}: view 'local-dp' needs no "
                                                 "accountant: .* Delta_T\\^2 = T exactly"):
            cls(W, *args, sigma=1.0, view="local-dp")
        with pytest.raises(ParameterError, match="unknown view 'plain'; choose one of"):
            cls(W, *args, sigma=1.0, view="plain")
        with pytest.raises(ParameterError, match="view 'secure-summation-v1' has no analytic "
                                                 "lambda_min"):  # W not diagonally dominant
            cls(W, *args, sigma=1.0, view="secure-summation-v1")
    with pytest.raises(ParameterError, match="exactly symmetric"):
        sparsedp.TargetsAccountant(sp.csr_matrix(np.roll(np.eye(8), 1, axis=1)), [0],
                                   sigma=1.0)
    with pytest.raises(ParameterError, match="tight target is one of the attacker's"):
        sparsedp.TargetsAccountant(W, [0], sigma=1.0, tight_targets=[0, 1])
    with pytest.raises(ParameterError, match="tight observer is the target"):
        sparsedp.ObserversAccountant(W, 2, sigma=1.0, tight_observers=[2])
    targets = sparsedp.TargetsAccountant(W, [0, 4], sigma=2.0)
    observers = sparsedp.ObserversAccountant(W, 3, sigma=2.0)
    for accountant in (targets, observers):
        with pytest.raises(ParameterError, match="no rounds recorded"):
            accountant.interval()
        assert accountant.epsilon(1e-5) == 0.0
    targets.step(10)
    observers.step(10)
    with pytest.raises(ParameterError, match="target 4 is one of the attacker's nodes"):
        targets.to_dp_event(4)
    with pytest.raises(ParameterError, match="a target is one of the attacker's nodes"):
        targets.interval([1, 0])
    with pytest.raises(ParameterError, match="observer 3 is the target"):
        observers.to_dp_event(3)
    epsilons = targets.epsilons(1e-5)
    assert np.isnan(epsilons[[0, 4]]).all()
    assert np.nanmax(epsilons) == targets.epsilon(1e-5)
    assert targets.to_dp_event(2).noise_multiplier == pytest.approx(
        2.0 / np.sqrt(targets.upper[2]), rel=1e-15)
    assert observers.epsilon(1e-5) == np.nanmax(observers.epsilons(1e-5))


CHILD = textwrap.dedent("""
    import json, pathlib, sys
    import networkx as nx, numpy as np, sparsedp
    from sparsedp.accountant import save
    folder, T, tracked = pathlib.Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    cls = getattr(sparsedp, tracked)
    checkpoint = folder / "acc.npz"
    if checkpoint.exists():
        with np.load(checkpoint, allow_pickle=False) as data:
            accountant = cls.from_state({key: data[key] for key in data.files})
    else:
        W = sparsedp.gossip_matrix(nx.random_regular_graph(4, 30, seed=5), scheme="metropolis")
        accountant = (cls(W, [3], sigma=2.0) if tracked == "TargetsAccountant"
                      else cls(W, 3, sigma=2.0))
    while accountant.rounds < T:
        accountant.step()
        save(accountant, checkpoint)
        (folder / "rounds").write_text(str(accountant.rounds))
    r = accountant.interval([7, 21])
    print(json.dumps({"upper": np.nan_to_num(accountant.upper, nan=-1.0).tolist(),
                      "epsilon": accountant.epsilon(1e-6), "lower": r.lower.tolist(),
                      "interval_upper": r.upper.tolist(),
                      "rounds_within": accountant.rounds_within(3.0, 1e-6, limit=150)}))
""")


@pytest.mark.slow
@pytest.mark.parametrize("tracked", ["TargetsAccountant", "ObserversAccountant"])
def test_kill_9_and_restart_from_the_checkpoint_gives_identical_answers(tmp_path, tracked):
    """As the pair's test (tests/test_accountant.py): a child checkpointing every round
    (sparsedp.accountant.save of state_dict) is killed with SIGKILL after 30 rounds,
    restarted from its checkpoint, and answers as a run never interrupted."""
    T = 80
    resumed, whole = killed_and_whole_runs(tmp_path, CHILD, [T, tracked], T, kill_after=30)
    assert resumed == whole


def test_too_many_tight_targets_is_refused_before_allocating():
    """Every target tight on a graph too large for the memory budget: a clear error names
    the fix (the box bound alone needs no such memory)."""
    from sparsedp.errors import ResourceLimitError
    from sparsedp.resources import memory_limit

    W = sparsedp.gossip_matrix(nx.cycle_graph(200))
    with memory_limit(1 << 20):
        accountant = sparsedp.TargetsAccountant(W, [0], sigma=1.0)
        with pytest.raises(ResourceLimitError, match="199 tight targets at T = .*pass fewer "
                                                     "tight_targets"):
            accountant.step(30)
        box_only = sparsedp.TargetsAccountant(W, [0], sigma=1.0, tight_targets=[])
        box_only.step(30)
    assert box_only.worst_upper > 0
