"""The online accountant (issue 34, sparsedp.accountant): at every round its interval's lower
bound is the one-shot query's and its upper bound is never below it; rounds_within is the
brute-force largest T; a checkpointed run killed with kill -9 continues identically."""

from __future__ import annotations

import json
import re
import textwrap

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

import sparsedp
from sparsedp.accountant import load, save
from sparsedp.errors import ParameterError
from tests.conftest import killed_and_whole_runs, slow_after

VIEWS = ("secure-summation", "neighbourhood", "secure-summation-v1", "target-v1")


def _random_case(seed: int):
    """A connected ER graph (Metropolis weights), a target, observers and a view."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(12, 40))
    G = nx.gnp_random_graph(n, float(rng.uniform(0.1, 0.3)), seed=seed)
    G = nx.convert_node_labels_to_integers(G.subgraph(max(nx.connected_components(G),
                                                          key=len)).copy())
    W = sparsedp.gossip_matrix(G, scheme="metropolis")
    n = W.shape[0]
    view = VIEWS[seed % len(VIEWS)]
    if view.endswith("-v1"):  # lazy gossip: diagonally dominant, so lambda_min(K) is bounded
        W = sp.csr_matrix(0.5 * (sp.identity(n) + W))
    target = int(rng.integers(n))
    others = [i for i in range(n) if i != target]
    size = 1 if view != "secure-summation" else int(rng.integers(1, 4))
    observers = None if view == "target-v1" else [int(i) for i in rng.choice(others, size,
                                                                            replace=False)]
    return W, target, observers, view


def _check_every_round(seed: int, T: int) -> None:
    W, target, observers, view = _random_case(seed)
    accountant = sparsedp.Accountant(W, target, observers, sigma=1.0, view=view)
    for t in range(1, T + 1):
        accountant.step()
        one_shot = sparsedp.squared_sensitivity(W, target, observers, t, view=view,
                                                method="structured")
        result = accountant.interval()
        assert result.T == t
        assert abs(result.lower - one_shot.lower) <= 1e-9 * max(one_shot.lower, 1e-300), (t, view)
        assert accountant.upper >= one_shot.lower, (t, view)
        assert result.upper >= one_shot.lower
        assert float(accountant._factor.history[t - 1]) >= one_shot.lower


@pytest.mark.parametrize("seed", slow_after(list(range(20)), 2))
def test_interval_matches_the_one_shot_query_at_every_round(seed):
    """20 random graphs, every t = 1..T: T = 30 for the two of the default tier, then in the
    slow tier T = 200 for every fifth graph and 80 for the others (each round costs a one-shot
    query and an interval, whose bound search grows like T^3)."""
    _check_every_round(seed, 30 if seed < 2 else 200 if seed % 5 == 0 else 80)


def test_running_bound_is_tight_on_a_cycle():
    """The O(m T) running bound sum_r ||Y_r||_1^2 is within 1e-8 of the one-shot upper bound
    where Y's rows have one sign (the opposite node of a cycle) and is non-decreasing."""
    W = sparsedp.gossip_matrix(nx.cycle_graph(8), scheme="metropolis")
    accountant = sparsedp.Accountant(W, 0, [4], sigma=5.0)
    accountant.step(50)
    one_shot = sparsedp.squared_sensitivity(W, 0, [4], 50)
    running = accountant.upper  # an answer: the 50 pending rounds factored in one block
    assert running == float(accountant._factor.history[-1])
    assert one_shot.lower <= running <= one_shot.upper * (1 + 1e-8)
    assert np.all(np.diff(accountant._factor.history) >= 0)
    assert accountant.epsilon(1e-5) == sparsedp.gaussian_epsilon(running, 5.0, 1e-5)
    assert accountant.rdp(4.0) == pytest.approx(4.0 * running / 50.0, rel=1e-15)


def _brute_force_rounds(W, target, observers, view, sigma, epsilon, delta, limit):
    """The largest T <= limit whose fresh accountant's epsilon stays within the budget."""
    best = 0
    for T in range(1, limit + 1):
        accountant = sparsedp.Accountant(W, target, observers, sigma=sigma, view=view)
        accountant.step(T)
        if accountant.epsilon(delta) <= epsilon:
            best = T
        else:
            break
    return best


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rounds_within_is_the_brute_force_largest_T(seed):
    W, target, observers, view = _random_case(seed)
    sigma, delta, limit = 0.6, 1e-5, 60
    accountant = sparsedp.Accountant(W, target, observers, sigma=sigma, view=view)
    accountant.step(3)
    probe = sparsedp.Accountant(W, target, observers, sigma=sigma, view=view)
    probe.step(25)
    # a budget that runs out within the limit, a hair above round 25's bound: the running
    # bound of a round depends in its last bits on how the rounds were blocked
    epsilon = probe.epsilon(delta) * (1 + 1e-9)
    expected = _brute_force_rounds(W, target, observers, view, sigma, epsilon, delta, limit)
    assert 3 <= expected < limit
    assert accountant.rounds_within(epsilon, delta, limit=limit) == expected
    assert accountant.rounds == 3  # looking ahead records nothing
    # never more rounds than the true sensitivity allows (the one-shot lower bound)
    true_T = sparsedp.squared_sensitivity(W, target, observers, expected, view=view)
    assert sparsedp.gaussian_epsilon(true_T.lower, sigma, delta) <= epsilon
    assert accountant.rounds_within(1e6, delta, limit=40) == 40


def test_composition_with_dp_accounting():
    pytest.importorskip("dp_accounting")
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant

    W = sparsedp.gossip_matrix(nx.cycle_graph(8))
    accountant = sparsedp.Accountant(W, 0, [3], sigma=4.0)
    accountant.step(40)
    event = accountant.to_dp_event()
    assert event.noise_multiplier == pytest.approx(4.0 / np.sqrt(accountant.upper), rel=1e-15)
    pld = pld_privacy_accountant.PLDAccountant()
    pld.compose(dp_accounting.SelfComposedDpEvent(event, 2))  # two independent runs
    two_runs = pld.get_epsilon(1e-5)
    # two runs of one Gaussian mechanism = one with twice the squared sensitivity
    assert two_runs == pytest.approx(sparsedp.gaussian_epsilon(2 * accountant.upper, 4.0, 1e-5),
                                     rel=1e-3)


def test_refusals_name_the_problem():
    W = sparsedp.gossip_matrix(nx.cycle_graph(6))
    with pytest.raises(ParameterError, match="local-dp"):
        sparsedp.Accountant(W, 0, None, sigma=1.0, view="local-dp")
    with pytest.raises(ParameterError, match="target"):
        sparsedp.Accountant(W, 0, [0], sigma=1.0)
    accountant = sparsedp.Accountant(W, 0, [3], sigma=1.0)
    with pytest.raises(ParameterError, match="no rounds recorded"):
        accountant.interval()
    assert accountant.epsilon(1e-5) == 0.0
    with pytest.raises(ParameterError, match="alpha must be > 1"):
        accountant.rdp(1.0)


def test_state_round_trip_continues_identically(tmp_path):
    W, target, observers, view = _random_case(3)
    original = sparsedp.Accountant(W, target, observers, sigma=1.0, view=view)
    original.step(17)
    copy = load(save(original, tmp_path / "acc.npz"))
    for accountant in (original, copy):
        accountant.step(13)
    assert copy.rounds == original.rounds == 30
    assert copy.upper == original.upper
    assert copy.interval().lower == original.interval().lower
    assert np.array_equal(copy._factor.history, original._factor.history)


CHILD = textwrap.dedent("""
    import json, pathlib, sys
    import networkx as nx, sparsedp
    from sparsedp.accountant import load, save
    folder, T = pathlib.Path(sys.argv[1]), int(sys.argv[2])
    checkpoint = folder / "acc.npz"
    if checkpoint.exists():
        accountant = load(checkpoint)
    else:
        G = nx.random_regular_graph(4, 40, seed=5)
        W = sparsedp.gossip_matrix(G, scheme="metropolis")
        accountant = sparsedp.Accountant(W, 3, [17, 21], sigma=2.0)
    while accountant.rounds < T:
        accountant.step()
        save(accountant, checkpoint)
        (folder / "rounds").write_text(str(accountant.rounds))
    r = accountant.interval()
    print(json.dumps({"upper": accountant.upper, "epsilon": accountant.epsilon(1e-6),
                      "lower": r.lower, "interval_upper": r.upper,
                      "history": accountant._factor.history.tolist()}))
""")


@pytest.mark.slow
def test_kill_9_and_restart_from_the_checkpoint_gives_identical_answers(tmp_path):
    T = 150
    resumed, whole = killed_and_whole_runs(tmp_path, CHILD, [T], T, kill_after=40)
    assert resumed == whole


def test_simulator_stops_at_the_accountants_budget():
    from sparsedp.learning import linear_regression, simulate, split_uniform, synthetic_regression

    W = sparsedp.gossip_matrix(nx.cycle_graph(8), scheme="metropolis")
    X, y = synthetic_regression(400, d=3)
    data = split_uniform(X[:320], y[:320], X[320:], y[320:], 8)
    accountant = sparsedp.Accountant(W, 0, [4], sigma=1.0)
    budget = (1.0, 1e-5)
    affordable = sparsedp.Accountant(W, 0, [4], sigma=1.0).rounds_within(*budget, limit=40)
    assert 0 < affordable < 40
    r = simulate(W.toarray(), data, linear_regression(), 40, participation=(4, 10),
                 progress=False, accountant=accountant, budget=budget)
    assert accountant.rounds == affordable == r.steps[-1]
    assert accountant.epsilon(1e-5) <= 1.0
    accountant.step()
    assert accountant.epsilon(1e-5) > 1.0  # one more round would have broken the budget
    assert any("stopped at the accountant's budget" in note for note in r.notes)
    with pytest.raises(ParameterError, match="spent already"):
        simulate(W.toarray(), data, linear_regression(), 40, participation=(4, 10),
                 progress=False, accountant=accountant, budget=budget)


def test_budget_command_prints_the_largest_rounds(capsys):
    from sparsedp.cli.main import main

    assert main(["budget", "--generator", "ring:12", "--target", "0", "--observer", "6",
                 "--epsilon", "1", "--delta", "1e-5", "--sigma", "1", "--limit", "60",
                 "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    W = sparsedp.gossip_matrix(nx.cycle_graph(12))
    expected = sparsedp.Accountant(W, 0, [6], sigma=1.0).rounds_within(1.0, 1e-5, limit=60)
    assert record["budgets"] == [{"family": "gossip", "view": "secure-summation", "target": 0,
                                  "observers": [6], "rounds": expected,
                                  "reached_limit": expected == 60}]


def test_budget_command_says_when_the_limit_itself_is_within_the_budget(capsys):
    """It printed "at most >= 8 (the limit) rounds"; now the limit is named as what it is."""
    from sparsedp.cli.main import main

    args = ["budget", "--generator", "ring:12", "--target", "0", "--observer", "1",
            "--delta", "1e-5", "--sigma", "1", "--limit", "8"]
    assert main([*args, "--epsilon", "100"]) == 0
    out = capsys.readouterr().out
    assert "every T up to the limit 8 is within the budget" in out and "at most" not in out
    assert main([*args, "--epsilon", "2"]) == 0
    assert re.search(r"target 0: at most [1-7] rounds", capsys.readouterr().out)


@pytest.mark.parametrize("seed", [0, 2, 3])
def test_bordered_factor_against_a_dense_factorisation(seed):
    """The incremental factor and Y against K_T, G_T assembled from the lags by the engine
    (k_from_moments, toeplitz_blocks) and a dense Cholesky and triangular solve; the running
    sums against their definitions."""
    import scipy.linalg

    from sparsedp.linalg.operators import k_from_moments, toeplitz_blocks

    W, target, observers, view = _random_case(seed)
    accountant = sparsedp.Accountant(W, target, observers, sigma=1.0, view=view)
    T, p = 25, accountant.offset
    accountant.step(T)
    assert accountant._factor.rounds == 0  # the rows are appended when an answer needs them
    _ = accountant.upper  # an answer: the 25 pending rounds factored in one block
    m = accountant.model.observers.size
    mu = accountant._lags.mu[2 * p:2 * p + 2 * T - 1]
    K, G = k_from_moments(mu, T), toeplitz_blocks(accountant._lags.a[p:p + T])
    factor = accountant._factor
    L, Y = factor.L[:m * T, :m * T], factor.Y[:m * T, :T]
    L_dense = np.linalg.cholesky(K)
    assert np.allclose(L, L_dense, rtol=1e-10, atol=1e-12)
    assert np.allclose(Y, scipy.linalg.solve_triangular(L_dense, G, lower=True), rtol=1e-9,
                       atol=1e-12)
    assert factor.rows_l1 == pytest.approx(float((np.abs(Y).sum(axis=1) ** 2).sum()), rel=1e-12)
    assert factor.Y_frobenius2 == pytest.approx(float((Y**2).sum()), rel=1e-12)
    assert factor.K_row_sums[:m * T].max() == pytest.approx(K.sum(axis=1).max(), rel=1e-12)
    M = Y.T @ Y
    # at least the entrywise bound, or T (M_T <= I caps it)
    assert factor.history[-1] >= min(np.abs(M).sum(), T) * (1 - 1e-12)


@pytest.mark.parametrize("seed", [0, 2, 3, 5])
def test_blocked_factor_is_the_round_by_round_one(seed, monkeypatch):
    """Rounds factored in blocks of 1, 7 and 40 (answers asked at different rounds; the last
    also with blocks capped at 16 rounds: 16 + 16 + 8) give the same factor, Y and running
    bound to rounding, and never a running bound below the one-shot lower bound at any
    round."""
    from sparsedp.accountant import gossip

    W, target, observers, view = _random_case(seed)
    T = 40
    histories, factors = [], []
    for block, cap in ((1, 64), (7, 64), (40, 64), (40, 16)):
        monkeypatch.setattr(gossip, "BLOCK_ROUNDS", cap)
        accountant = sparsedp.Accountant(W, target, observers, sigma=1.0, view=view)
        for t in range(1, T + 1):
            accountant.step()
            if t % block == 0 or t == T:
                _ = accountant.upper
        assert accountant._factor.rounds == T
        histories.append(accountant._factor.history)
        factors.append(accountant._factor)
    m = factors[0].m
    for factor, history in zip(factors[1:], histories[1:], strict=True):
        assert history == pytest.approx(histories[0], rel=1e-11)
        assert np.allclose(factor.L[:m * T, :m * T], factors[0].L[:m * T, :m * T],
                           rtol=1e-10, atol=1e-13)
        assert np.allclose(factor.Y[:m * T, :T], factors[0].Y[:m * T, :T], rtol=1e-9,
                           atol=1e-12)
    for t in (1, 6, 7, 8, 33, 40):
        one_shot = sparsedp.squared_sensitivity(W, target, observers, t, view=view,
                                                method="structured")
        assert min(h[t - 1] for h in histories) >= one_shot.lower, t


def test_a_block_names_the_round_whose_pivot_fails(monkeypatch):
    """A pivot that is not positive definite inside a block names its own round."""
    from sparsedp.accountant import bordered

    W = sparsedp.gossip_matrix(nx.cycle_graph(8), scheme="metropolis")
    accountant = sparsedp.Accountant(W, 0, [4], sigma=1.0)
    accountant.step(3)
    _ = accountant.upper
    accountant.step(10)
    real = bordered.BorderedFactor._block_rows_of_K

    def broken(self, mu, offset, rounds):
        K_new, K_max = real(self, mu, offset, rounds)
        K_new[5, :] = 0.0  # round 3 + 6 of the block: a zero row, a zero pivot
        return K_new, K_max

    monkeypatch.setattr(bordered.BorderedFactor, "_block_rows_of_K", broken)
    with pytest.raises(sparsedp.ParameterError,
                       match="not numerically positive definite at round 9"):
        _ = accountant.upper


def _small_instance(seed: int):
    """A connected small graph (G(n, 0.4), a Barabasi-Albert tree or a path, n = 6-13) and a
    view, for the check against the exhaustive exact value."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(6, 14))
    graph = [lambda: nx.gnp_random_graph(n, 0.4, seed=seed),
             lambda: nx.barabasi_albert_graph(n, 1, seed=seed),
             lambda: nx.path_graph(n)][seed % 3]()
    view = ("secure-summation", "neighbourhood")[seed % 2]
    return graph, view


@pytest.mark.parametrize("seed", range(24))
def test_every_answer_contains_the_exhaustive_exact_value(seed):
    """The running ``upper`` and ``interval()`` after every round T = 1..10 contain the exact
    squared sensitivity of the exhaustive sign search (``squared_sensitivity(exact=True)``)."""
    graph, view = _small_instance(seed)
    if not nx.is_connected(graph):
        pytest.skip("disconnected draw")
    W = sparsedp.gossip_matrix(graph)
    target, observer = 0, graph.number_of_nodes() - 1
    if view == "neighbourhood" and graph.has_edge(target, observer):
        pytest.skip("the target among the observed set")
    accountant = sparsedp.Accountant(W, target, [observer], sigma=1.0, view=view)
    for T in range(1, 11):
        accountant.step()
        exact = sparsedp.squared_sensitivity(W, target, [observer], T, view=view, exact=True,
                                             progress=False).exact
        interval = accountant.interval()
        assert accountant.upper >= exact * (1 - 1e-12), (T, accountant.upper, exact)
        assert interval.lower <= exact * (1 + 1e-12) and interval.upper >= exact * (1 - 1e-12)


def test_truncated_lags_keep_every_bound_certified(monkeypatch):
    """With the mixing truncation forced on a small graph (no work threshold), the chain stops
    propagating once mixed and every round's running bound and interval still contain the
    one-shot query's untruncated interval's lower end (and the interval's lower end stays
    below the one-shot upper bound)."""
    from sparsedp.accountant import lags
    monkeypatch.setattr(lags, "SMALL_PROPAGATION_WORK", 0)
    monkeypatch.setattr(lags, "MIXING_LEVEL", 1e-6)
    G = nx.gnp_random_graph(30, 0.25, seed=11)
    W = sparsedp.gossip_matrix(G, scheme="metropolis")
    accountant = sparsedp.Accountant(W, 0, [17, 23], sigma=1.0)
    for t in range(1, 61):
        accountant.step()
        one_shot = sparsedp.squared_sensitivity(W, 0, [17, 23], t, method="structured")
        result = accountant.interval()
        assert accountant.upper >= one_shot.lower, t
        assert float(accountant._factor.history[t - 1]) >= one_shot.lower, t
        assert result.lower <= one_shot.upper * (1 + 1e-12), t
    assert accountant._lags.mixed
    assert accountant._lags.propagator.products < 59
    assert result.solver["sparse_products"] == accountant._lags.propagator.products
    # the truncation widens the interval by about the mixing level
    assert result.lower >= one_shot.lower * (1 - 1e-4)


def test_truncated_stream_checkpoint_continues_identically(monkeypatch):
    from sparsedp.accountant import lags
    monkeypatch.setattr(lags, "SMALL_PROPAGATION_WORK", 0)
    W = sparsedp.gossip_matrix(nx.gnp_random_graph(30, 0.25, seed=11), scheme="metropolis")
    accountant = sparsedp.Accountant(W, 0, [17], sigma=1.0)
    accountant.step(40)
    assert accountant._lags.mixed
    copy = sparsedp.Accountant.from_state(accountant.state_dict())
    for acc in (accountant, copy):
        acc.step(30)
    assert copy.upper == accountant.upper
    assert np.array_equal(copy._factor.history, accountant._factor.history)
    assert copy._factor.history.size == 70
    assert copy.interval().lower == accountant.interval().lower
