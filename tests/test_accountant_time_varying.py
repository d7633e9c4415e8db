"""The pair accountant for time-varying gossip (``Accountant(None, ..., n=n)``, ``step(W_t)``)
and for one constant non-symmetric W (issue 34): at every round its interval's lower bound is
the one-shot query's on the recorded matrices and its upper bounds are never below it; the
block rows it borders are the dense ``H H^T`` of the matrices; rounds_within with a schedule
is the brute-force largest T; checkpoints continue identically."""

from __future__ import annotations

import json
import textwrap

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

import sparsedp
from sparsedp.accountant import load, save
from sparsedp.accountant.operator_rows import OperatorRows
from sparsedp.errors import ParameterError
from sparsedp.testing import metropolis_round
from tests.conftest import brute_force_rounds, killed_and_whole_runs, slow_after

KINDS = ("er", "matching", "directed", "directed-constant")
VIEWS = ("secure-summation", "secure-summation-v1", "target-v1")



def directed(rng: np.random.Generator, n: int) -> sp.csr_matrix:
    """A non-symmetric row-stochastic W: each node averages itself, the next node of a
    directed ring (irreducible: the one-shot matrix-free query's preconditioner needs a
    stationary distribution) and 0-2 random others."""
    rows, columns, values = [], [], []
    for i in range(n):
        nxt = (i + 1) % n
        extra = rng.choice([j for j in range(n) if j not in (i, nxt)], int(rng.integers(0, 3)),
                           replace=False)
        others = (nxt, *extra)
        for j in (i, *others):
            rows.append(i)
            columns.append(int(j))
            values.append(1.0 / (len(others) + 1))
    return sp.csr_matrix((values, (rows, columns)), shape=(n, n))


def schedule(kind: str, n: int, seed: int):
    """``t -> W_t`` of a kind: random ER graphs (Metropolis weights), random matchings
    (randomized pairwise gossip), random directed averaging, or one directed W."""
    fixed = directed(np.random.default_rng(seed), n)

    def W(t: int) -> sp.csr_matrix:
        rng = np.random.default_rng([seed, t])
        if kind == "er":
            graph = nx.gnp_random_graph(n, 3.0 / n, seed=int(rng.integers(1 << 30)))
            return metropolis_round(graph, n)
        if kind == "matching":
            order = rng.permutation(n)
            pairs = order[:2 * int(rng.integers(1, n // 2 + 1))].reshape(-1, 2)
            matching = nx.empty_graph(n)
            matching.add_edges_from(tuple(map(int, p)) for p in pairs)
            return metropolis_round(matching, n)
        return directed(rng, n) if kind == "directed" else fixed

    return W


def random_case(seed: int):
    """A kind of schedule, its view, target and observers (lazy matrices for the v1 views,
    ``3/4 I + W / 4``: diagonally dominant in rows and columns even for the directed kinds,
    whose columns sum to up to 4, so lambda_min(K_T) has its analytic bound)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(10, 24))
    kind, view = KINDS[seed % len(KINDS)], VIEWS[seed % len(VIEWS)]
    base = schedule(kind, n, seed)
    W = base if not view.endswith("-v1") else (
        lambda t: sp.csr_matrix(0.75 * sp.identity(n) + 0.25 * base(t)))
    target = int(rng.integers(n))
    others = [i for i in range(n) if i != target]
    observers = None if view == "target-v1" else [
        int(i) for i in rng.choice(others, int(rng.integers(1, 4)), replace=False)]
    return n, kind, W, target, observers, view


def make_accountant(n, kind, W, target, observers, view, sigma=1.0):
    if kind == "directed-constant":
        return sparsedp.Accountant(W(0), target, observers, sigma=sigma, view=view)
    return sparsedp.Accountant(None, target, observers, sigma=sigma, view=view, n=n)


def step(accountant, kind, W) -> None:
    """One round: the round's matrix, or one more round of the constant W."""
    accountant.step() if kind == "directed-constant" else accountant.step(W(accountant.rounds))


def check_every_round(seed: int, T: int) -> None:
    n, kind, W, target, observers, view = random_case(seed)
    accountant = make_accountant(n, kind, W, target, observers, view)
    for t in range(1, T + 1):
        step(accountant, kind, W)
        given = W(0) if kind == "directed-constant" else [W(r) for r in range(t)]
        one_shot = sparsedp.squared_sensitivity(given, target, observers, t, view=view)
        result = accountant.interval()
        assert result.T == t
        assert abs(result.lower - one_shot.lower) <= 1e-9 * max(one_shot.lower, 1e-300), (t, kind)
        assert accountant.upper >= one_shot.lower, (t, kind)
        assert float(accountant._factor.history[t - 1]) >= one_shot.lower, (t, kind)
        assert result.upper == min(one_shot.upper, float(accountant._factor.history[t - 1]))


@pytest.mark.parametrize("seed", slow_after(list(range(20)), 3))
def test_interval_contains_the_one_shot_value_at_every_round(seed):
    """20 random schedules (ER graphs per round, matchings, directed averaging per round, one
    directed W), every t = 1..T: T = 10 in the default tier, then T = 200 for seeds 5 and 15
    and 60 for the others (each round costs two one-shot queries: seed 10 at T = 200 took
    about 5 minutes of the slow tier)."""
    check_every_round(seed, 10 if seed < 3 else 200 if seed in (5, 15) else 60)


def dense_system(Ws, observed, target, p, T):
    """``K_T``, ``G_T`` from the explicit ``H[t, k] = S W_(t-1+p) ... W_k`` (dense products,
    independent of the recursions)."""
    n, m = Ws[0].shape[0], len(observed)
    H = np.zeros((m * T, n * T))
    for t in range(T):
        for k in range(t + 1):
            product = np.eye(n)
            for r in range(k, t + p):
                product = Ws[r].toarray() @ product
            H[t * m:(t + 1) * m, k * n:(k + 1) * n] = product[observed]
    return H @ H.T, H[:, target::n]


@pytest.mark.parametrize("p", [0, 1])
def test_rows_are_the_dense_system_of_the_matrices(p):
    n, T = 9, 7
    Ws = [schedule("directed", n, 3)(t) for t in range(T)]
    observed = np.array([2, 5])
    rows = OperatorRows(observed, 0, p)
    for W in Ws:
        rows.record(W)
    K, G = dense_system(Ws, observed, 0, p, T)
    for t in range(T):
        K_row, G_row, rounding = rows.rows(t)
        assert np.allclose(K_row, K[2 * t:2 * t + 2, :2 * t + 2], rtol=1e-13, atol=0)
        assert np.allclose(G_row, G[2 * t:2 * t + 2, :t + 1], rtol=1e-13, atol=0)
        assert 0 < rounding < 1e-12
    # the bordered factor of those rows is the Cholesky factor of the dense K
    accountant = sparsedp.Accountant(None, 0, [2, 5], n=n, sigma=1.0,
                                     view="secure-summation-v1" if p else "secure-summation")
    lazy = [sp.csr_matrix(0.5 * (sp.identity(n) + W)) for W in Ws] if p else Ws
    for W in lazy:
        accountant.step(W)
    _ = accountant.upper
    K, _ = dense_system(lazy, observed, 0, p, T)
    L = accountant._factor.L[:2 * T, :2 * T]
    assert np.allclose(L @ L.T, K, rtol=0, atol=1e-13 * np.abs(K).max())


def test_a_constant_symmetric_W_stepped_as_a_sequence_agrees():
    """The operator rows of W, W, ... bound what the lag path of the constant W bounds."""
    W = sparsedp.gossip_matrix(nx.cycle_graph(8), scheme="metropolis")
    constant = sparsedp.Accountant(W, 0, [4], sigma=5.0)
    varying = sparsedp.Accountant(None, 0, [4], sigma=5.0, n=8)
    constant.step(40)
    for _ in range(40):
        varying.step(W)
    assert varying.upper == pytest.approx(constant.upper, rel=1e-9)
    assert varying.interval().lower == pytest.approx(constant.interval().lower, rel=1e-9)


@pytest.mark.parametrize("view", ["neighbourhood", "adaptive-v1"])
def test_a_constant_directed_W_in_the_pattern_views(view):
    """The views read from W's pattern, offered for one constant non-symmetric W: the
    interval is the one-shot query's (the Gram path) and the running bound is above it."""
    n = 14
    W = directed(np.random.default_rng(5), n)
    if view == "adaptive-v1":
        W = sp.csr_matrix(0.5 * (sp.identity(n) + W))
    observers = None if view == "adaptive-v1" else [7]
    accountant = sparsedp.Accountant(W, 0, observers, sigma=1.0, view=view)
    for t in (1, 2, 9):
        accountant.step(t - accountant.rounds)
        one_shot = sparsedp.squared_sensitivity(W, 0, observers, t, view=view)
        assert one_shot.method == "gram" or t == 1
        assert accountant.interval().lower == one_shot.lower
        assert float(accountant._factor.history[t - 1]) >= one_shot.lower
    assert one_shot.lower > 0  # the target reached the attacker


class _Stepped:
    """A time-varying accountant that ``step(T)`` steps through its schedule's first T
    matrices (for :func:`tests.conftest.brute_force_rounds`)."""

    def __init__(self, accountant, W):
        self.accountant, self.W = accountant, W

    def step(self, T: int) -> None:
        for t in range(T):
            self.accountant.step(self.W(t))

    def epsilon(self, delta: float) -> float:
        return self.accountant.epsilon(delta)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_rounds_within_with_a_schedule_is_the_brute_force_largest_T(seed):
    n, kind, W, target, observers, view = random_case(seed)
    sigma, delta, limit = 0.6, 1e-5, 40

    def make():
        accountant = make_accountant(n, kind, W, target, observers, view, sigma)
        return accountant if kind == "directed-constant" else _Stepped(accountant, W)

    probe = make()
    probe.step(18)
    epsilon = probe.epsilon(delta) * (1 + 1e-9)  # runs out within the limit
    expected = brute_force_rounds(make, epsilon, delta, limit)
    assert 3 <= expected < limit
    accountant = make_accountant(n, kind, W, target, observers, view, sigma)
    for _ in range(3):
        step(accountant, kind, W)
    planned = {} if kind == "directed-constant" else {"schedule": W}
    assert accountant.rounds_within(epsilon, delta, limit=limit, **planned) == expected
    assert accountant.rounds == 3  # looking ahead records nothing
    if kind != "directed-constant":  # a sequence of the rounds ahead, and its end
        ahead = [W(t) for t in range(3, 12)]
        assert accountant.rounds_within(epsilon, delta, limit=limit, schedule=ahead) == min(
            expected, 12)


def test_planned_rounds_are_forgotten():
    """rounds_within with planned matrices that the run then does not use (refused ones
    too): the answers after it are those of an accountant that never looked ahead (bit for
    bit)."""
    n, kind, W, target, observers, view = random_case(4)  # ER graphs, secure-summation-v1
    other = schedule("er", n, 99)
    looked, plain = (make_accountant(n, kind, W, target, observers, view) for _ in range(2))
    for accountant in (looked, plain):
        for _ in range(5):
            step(accountant, kind, W)
        _ = accountant.upper
    with pytest.raises(ParameterError, match="no analytic lambda_min"):  # not lazy: refused
        looked.rounds_within(1e6, 1e-5, limit=30, schedule=other)
    looked.rounds_within(1e6, 1e-5, limit=30,
                         schedule=lambda t: sp.csr_matrix(0.5 * (sp.identity(n) + other(t))))
    for accountant in (looked, plain):
        for _ in range(20):
            step(accountant, kind, W)
    assert np.array_equal(looked._factor.history, plain._factor.history)
    assert looked.interval().lower == plain.interval().lower
    assert looked.lambda_lb == plain.lambda_lb


def test_state_round_trip_continues_identically(tmp_path):
    for seed in (0, 3):  # time-varying, and one constant non-symmetric W
        n, kind, W, target, observers, view = random_case(seed)
        original = make_accountant(n, kind, W, target, observers, view)
        for _ in range(11):
            step(original, kind, W)
        copy = load(save(original, tmp_path / f"acc{seed}.npz"))
        for accountant in (original, copy):
            for _ in range(9):
                step(accountant, kind, W)
        assert copy.rounds == original.rounds == 20
        assert copy.upper == original.upper
        assert copy.interval().lower == original.interval().lower
        assert np.array_equal(copy._factor.history, original._factor.history)


def test_refusals_name_the_problem():
    W = sparsedp.gossip_matrix(nx.cycle_graph(6))
    constant = sparsedp.Accountant(W, 0, [3], sigma=1.0)
    with pytest.raises(ParameterError, match="created for one constant W: step"):
        constant.step(W)
    with pytest.raises(ParameterError, match="schedule is for time-varying gossip"):
        constant.rounds_within(1.0, 1e-5, schedule=[W])
    varying = sparsedp.Accountant(None, 0, [3], sigma=1.0, n=6)
    with pytest.raises(ParameterError, match=r"records a round with step\(W_t\)"):
        varying.step(3)
    with pytest.raises(ParameterError, match="needs the planned matrices"):
        varying.rounds_within(1.0, 1e-5)
    with pytest.raises(ParameterError, match=r"W_0 has shape \(8, 8\), the accountant's n = 6"):
        varying.step(sparsedp.gossip_matrix(nx.cycle_graph(8)))
    with pytest.raises(ParameterError, match="needs the number of nodes n >= 1"):
        sparsedp.Accountant(None, 0, [3], sigma=1.0)
    with pytest.raises(ParameterError, match="n is for time-varying gossip"):
        sparsedp.Accountant(W, 0, [3], sigma=1.0, n=6)
    with pytest.raises(ParameterError, match="not offered for time-varying gossip"):
        sparsedp.Accountant(None, 0, [3], sigma=1.0, n=6, view="neighbourhood")
    # a v1 view and a W that is not diagonally dominant: refused, the round not recorded
    v1 = sparsedp.Accountant(None, 0, [3], sigma=1.0, n=6, view="secure-summation-v1")
    with pytest.raises(ParameterError, match="no analytic lambda_min"):
        v1.step(W)
    assert v1.rounds == 0 and v1.epsilon(1e-5) == 0.0


CHILD = textwrap.dedent("""
    import json, pathlib, sys
    import sparsedp
    from sparsedp.accountant import load, save
    from tests.test_accountant_time_varying import schedule
    folder, T = pathlib.Path(sys.argv[1]), int(sys.argv[2])
    checkpoint = folder / "acc.npz"
    W = schedule("er", 30, 7)
    if checkpoint.exists():
        accountant = load(checkpoint)
    else:
        accountant = sparsedp.Accountant(None, 3, [17, 21], sigma=2.0, n=30)
    while accountant.rounds < T:
        accountant.step(W(accountant.rounds))
        save(accountant, checkpoint)
        (folder / "rounds").write_text(str(accountant.rounds))
    r = accountant.interval()
    print(json.dumps({"upper": accountant.upper, "epsilon": accountant.epsilon(1e-6),
                      "lower": r.lower, "interval_upper": r.upper,
                      "history": accountant._factor.history.tolist()}))
""")


@pytest.mark.slow
def test_kill_9_and_restart_from_the_checkpoint_gives_identical_answers(tmp_path):
    T = 60
    resumed, whole = killed_and_whole_runs(tmp_path, CHILD, [T], T, kill_after=20)
    assert resumed == whole
    assert json.dumps(resumed)  # plain data
