"""Gossip matrices checked once (issue 18, scope 3): locked matrices, the facts remembered for
them and shared within one query, and what happens when a matrix changes behind them."""

import gc
import pickle
import weakref

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

import sparsedp
from sparsedp.errors import GossipMatrixError
from sparsedp.linalg import kernels, matrix_facts
from sparsedp.linalg.stochastic import lock_gossip_matrix
from tests.conftest import slow_after


def _er_matrix(n=60, p=0.1, seed=0):
    G = nx.gnp_random_graph(n, p, seed=seed)
    G = G.subgraph(max(nx.connected_components(G), key=len)).copy()
    return sparsedp.gossip_matrix(nx.convert_node_labels_to_integers(G))


@pytest.fixture
def full_passes(monkeypatch):
    """Counts of the full passes over W that the checks make."""
    counts = {"line_sums": 0, "is_symmetric": 0, "components": 0}

    def counting(name, function):
        def wrapper(*args, **kwargs):
            counts[name] += 1
            return function(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(kernels, "csr_line_sums", counting("line_sums", kernels.csr_line_sums))
    monkeypatch.setattr(kernels, "is_symmetric", counting("is_symmetric", kernels.is_symmetric))
    monkeypatch.setattr(matrix_facts, "connected_components",
                        counting("components", matrix_facts.connected_components))
    return counts


def test_gossip_matrix_is_locked_and_read_only():
    W = _er_matrix()
    assert matrix_facts.is_locked(W)
    with pytest.raises(ValueError, match="read-only"):
        W.data[0] = 0.5
    writeable = W.copy()
    assert writeable.data.flags.writeable and not matrix_facts.is_locked(writeable)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("view", ["secure-summation", "neighbourhood"])
def test_locked_and_plain_matrices_give_identical_results(seed, view):
    W = _er_matrix(seed=seed)
    plain = sp.csr_matrix(W.toarray())  # a fresh, writeable, unregistered matrix
    assert not matrix_facts.is_locked(plain)
    for target, observers, T in [(3, [0], 30), (7, [1, 2], 12)]:
        a = sparsedp.squared_sensitivity(W, target, observers, T, view=view, exact=False)
        b = sparsedp.squared_sensitivity(plain, target, observers, T, view=view, exact=False)
        assert (a.lower, a.upper, a.method) == (b.lower, b.upper, b.method)


def test_second_query_on_a_locked_matrix_makes_no_full_pass(full_passes):
    W = _er_matrix(n=200, p=0.05, seed=1)
    sparsedp.squared_sensitivity(W, 5, [0], 40, exact=False)
    assert full_passes == {"line_sums": 1, "is_symmetric": 1, "components": 1}
    for name in full_passes:
        full_passes[name] = 0
    sparsedp.squared_sensitivity(W, 9, [4], 40, exact=False)
    sparsedp.privacy_map(W, T=10, observers=[0, 1], targets=[5, 6, 7])
    assert full_passes == {"line_sums": 0, "is_symmetric": 0, "components": 0}


def test_a_plain_matrix_is_checked_once_per_query(full_passes):
    W = _er_matrix(n=200, p=0.05, seed=2).copy()
    full_passes["line_sums"] = 0  # the one made by gossip_matrix
    sparsedp.squared_sensitivity(W, 5, [0], 40, exact=False)
    assert full_passes == {"line_sums": 1, "is_symmetric": 1, "components": 1}
    sparsedp.squared_sensitivity(W, 5, [0], 40, exact=False)  # may have changed: again
    assert full_passes == {"line_sums": 2, "is_symmetric": 2, "components": 2}


def test_a_matrix_changed_after_locking_is_checked_afresh():
    W = _er_matrix(seed=3)
    sparsedp.squared_sensitivity(W, 3, [0], 10, exact=False)  # facts remembered
    W.data.flags.writeable = True  # deliberately unlocked ...
    W.data[0] += 0.25  # ... and row 0 no longer sums to 1
    assert not matrix_facts.is_locked(W)
    with pytest.raises(GossipMatrixError, match="row 0 of W sums to"):
        sparsedp.squared_sensitivity(W, 3, [0], 10, exact=False)

    V = _er_matrix(seed=4)
    sparsedp.squared_sensitivity(V, 3, [0], 10, exact=False)
    data = V.data.copy()
    data[0] = -1.0
    V.data = data  # an array replaced, not changed in place
    with pytest.raises(GossipMatrixError, match="is negative"):
        sparsedp.squared_sensitivity(V, 3, [0], 10, exact=False)


def test_lock_copies_unless_asked_not_to():
    W = _er_matrix(seed=5).copy()
    locked = lock_gossip_matrix(W)
    assert locked is not W and W.data.flags.writeable and matrix_facts.is_locked(locked)
    assert lock_gossip_matrix(locked) is locked
    in_place = lock_gossip_matrix(W, copy=False)
    assert in_place is W and not W.data.flags.writeable and matrix_facts.is_locked(W)


def test_lock_refuses_what_is_not_a_gossip_matrix():
    with pytest.raises(GossipMatrixError, match="row 1 of W sums to"):
        lock_gossip_matrix(np.array([[0.5, 0.5], [0.2, 0.2]]))
    with pytest.raises(GossipMatrixError, match="negative"):
        lock_gossip_matrix(np.array([[1.5, -0.5], [0.5, 0.5]]))


def test_a_locked_float32_matrix_keeps_its_input_rounding():
    W32 = _er_matrix(seed=6).astype(np.float32)
    locked = lock_gossip_matrix(W32)
    assert locked.dtype == np.float64
    result = sparsedp.squared_sensitivity(locked, 3, [0], 10, exact=False)
    assert any("float32" in note for note in result.notes)
    plain = sparsedp.squared_sensitivity(W32, 3, [0], 10, exact=False)
    assert (result.lower, result.upper) == (plain.lower, plain.upper)


def test_a_locked_matrix_is_not_kept_alive_by_its_facts():
    W = lock_gossip_matrix(np.array([[0.5, 0.5], [0.5, 0.5]]))
    sparsedp.squared_sensitivity(W, 0, [1], 3)
    alive = weakref.ref(W)
    del W
    gc.collect()
    assert alive() is None


def test_a_copy_or_an_unpickled_matrix_is_not_locked():
    W = _er_matrix(seed=7)
    assert not matrix_facts.is_locked(W.copy())
    assert not matrix_facts.is_locked(pickle.loads(pickle.dumps(W)))


def test_no_writeable_base_is_left_behind_a_lock():
    """A locked array that were a view would leave its base writeable: writing through the
    base would change W behind its remembered facts (found in review)."""
    D = np.kron(np.eye(2), np.full((3, 3), 1 / 3))  # two disconnected lazy 3-cycles
    for W in (lock_gossip_matrix(D), sparsedp.gossip_matrix(nx.cycle_graph(6)),
              lock_gossip_matrix(sp.coo_matrix(D)), lock_gossip_matrix(D.astype(np.float32))):
        assert matrix_facts.is_locked(W)
        for array in (W.data, W.indices, W.indptr):
            assert array.base is None and not array.flags.writeable
    W = lock_gossip_matrix(D)
    r = sparsedp.squared_sensitivity(W, 0, [4], 4)
    assert r.upper == 0.0  # different components: exactly nothing learned


def test_query_memo_reuses_only_inside_a_reuse_scope_and_for_the_same_matrix_and_key():
    calls = []

    def compute():
        calls.append(1)
        return np.arange(3.0), 7

    W, V = _er_matrix(seed=1), _er_matrix(seed=2)
    matrix_facts.query_memo("k", W, ("a",), compute)
    matrix_facts.query_memo("k", W, ("a",), compute)
    assert len(calls) == 2  # outside a scope nothing is kept
    with matrix_facts.reuse_scope():
        first = matrix_facts.query_memo("k", W, ("a",), compute)
        assert matrix_facts.query_memo("k", W, ("a",), compute) is first
        assert len(calls) == 3
        assert not first[0].flags.writeable  # no caller can change what the next one reads
        matrix_facts.query_memo("k", V, ("a",), compute)  # another matrix
        matrix_facts.query_memo("k", V, ("b",), compute)  # another key
        assert len(calls) == 5
    matrix_facts.query_memo("k", V, ("b",), compute)
    assert len(calls) == 6  # freed with the scope
    plain = W.copy()  # not locked: it may change in place, so nothing is kept for it
    with matrix_facts.reuse_scope():
        matrix_facts.query_memo("k", plain, ("a",), compute)
        matrix_facts.query_memo("k", plain, ("a",), compute)
    assert len(calls) == 8


def test_a_plain_matrix_changed_inside_a_reuse_scope_is_not_answered_from_the_memo():
    """(Found in review.)  An unlocked W overwritten in place between two queries of one
    reuse scope: the second query must see the new W."""
    from sparsedp.mf import mf_sensitivity

    G = nx.powerlaw_cluster_graph(30, 3, 0.3, seed=2)
    first = sp.csr_matrix(sparsedp.gossip_matrix(G, scheme="row-normalised-self-loops"))
    second = first.copy()  # the same pattern, other row-stochastic weights
    second.data = np.random.default_rng(0).uniform(0.5, 1.5, second.nnz)
    second.data /= np.repeat(np.add.reduceat(second.data, second.indptr[:-1]),
                             np.diff(second.indptr))
    W = first.copy()
    with matrix_facts.reuse_scope():
        mf_sensitivity(W, 5, [0, 7], 6, method="gram")
        W.data[:] = second.data
        inside = mf_sensitivity(W, 3, [0, 7], 6, method="gram")
    fresh = mf_sensitivity(second, 3, [0, 7], 6, method="gram")
    assert (inside.lower, inside.upper) == (fresh.lower, fresh.upper)


@pytest.mark.parametrize("scheme", slow_after(["row-normalised-self-loops", "metropolis"], 1))
def test_distance_summary_shares_the_attackers_work_and_equals_single_queries(scheme,
                                                                             monkeypatch):
    """The lags, K, its rounding, lambda_min and Cholesky factor of one attacker set are
    formed once for all targets of a distance summary; every result equals the independent
    single query bit for bit (Gram path: 1/(d+1) weights are not symmetric)."""
    from sparsedp.linalg import gram
    from sparsedp.mf import mf_sensitivity
    from sparsedp.mf.summary import distance_summary

    G = nx.powerlaw_cluster_graph(40, 3, 0.3, seed=5)
    W = sparsedp.gossip_matrix(G, scheme=scheme)
    attackers, T = [0, 7], 6
    lags = []
    original = gram.observer_lags
    monkeypatch.setattr(gram, "observer_lags", lambda *a, **k: lags.append(1) or original(*a, **k))
    summary = distance_summary(W, attackers, T, progress=False, method="gram")
    assert len(lags) == 1 and len(summary.targets) == 38
    for u, r in zip(summary.targets, summary.results, strict=True):
        single = mf_sensitivity(W.copy(), u, attackers, T, method="gram")
        assert (r.lower, r.upper) == (single.lower, single.upper)
        assert r.lower <= r.upper


@pytest.mark.parametrize("seed", range(5))
def test_row_sum_deviation_bounds_the_exact_row_sums_closely(seed):
    """The extended-precision row-sum deviation is at least the exact one (math.fsum, exact
    for floats) and at most a rounding-level above it, far below the float64 sums' own
    rounding allowance for long rows."""
    import math

    import scipy.sparse as sp

    from sparsedp.linalg.matrix_facts import MatrixFacts

    rng = np.random.default_rng(seed)
    n, d = 300, 40
    rows = np.repeat(np.arange(n), d)
    cols = rng.integers(0, n, n * d)
    W = sp.csr_matrix((rng.random(n * d), (rows, cols)), shape=(n, n))
    W.sum_duplicates()
    W = sp.csr_matrix(W.multiply(1.0 / np.asarray(W.sum(axis=1))))  # rows sum to 1 in float
    exact = max(abs(math.fsum([*W.data[W.indptr[i]:W.indptr[i + 1]], -1.0])) for i in range(n))
    rho = MatrixFacts(W).row_sum_deviation
    assert exact <= rho <= exact + 1e-17
    assert rho < 45 * np.finfo(float).eps / 2  # below gamma_(d+1) of float64 sums


@pytest.mark.parametrize(("graph", "laziness"), [
    ("karate", 0.0), ("karate", 0.3), ("chung-lu", 0.0), ("ring", 0.5)])
def test_metropolis_rows_sum_to_exactly_one(graph, laziness):
    """Metropolis weights are rounded down to multiples of 2^-52: every stored row sums to 1
    exactly (math.fsum), the deviation is reported as 0 (no drift allowance), W stays
    symmetric and non-negative, and each weight is within 2^-52 of its float64 value."""
    import math

    from sparsedp.graphs import large as lg
    from sparsedp.linalg.matrix_facts import MatrixFacts

    G = {"karate": lambda: nx.Graph(nx.karate_club_graph().edges()),
         "chung-lu": lambda: lg.largest_component(lg.chung_lu_large(3000, 12, seed=2)),
         "ring": lambda: nx.cycle_graph(7)}[graph]()
    W = sparsedp.gossip_matrix(G, laziness=laziness)
    rows = np.split(W.data, W.indptr[1:-1])
    assert max(abs(math.fsum([*row, -1.0])) for row in rows) == 0.0
    assert MatrixFacts(W).row_sum_deviation == 0.0
    assert (W != W.T).nnz == 0 and W.data.min() >= 0
    degrees = np.diff(W.indptr) - (W.diagonal() != 0)
    off = W.tocoo()
    keep = off.row != off.col
    exact = (1 - laziness) / (1.0 + np.maximum(degrees[off.row[keep]], degrees[off.col[keep]]))
    assert np.abs(off.data[keep] - exact).max() <= 2.0**-52


def test_row_sum_deviation_is_exact_on_the_grid_and_bounded_off_it():
    """On multiples of 2^-52 the deviation is the exact one (a row 2^-52 short of 1 reports
    exactly 2^-52); one value off the grid falls back to the extended-precision bound, which
    is at least the exact deviation."""
    import math

    from sparsedp.linalg.matrix_facts import MatrixFacts

    grid = sp.csr_matrix(np.array([[0.5, 0.25, 0.25 - 2.0**-52],
                                   [0.25, 0.5, 0.25],
                                   [0.25 - 2.0**-52, 0.25, 0.5]]))
    assert MatrixFacts(grid).row_sum_deviation == 2.0**-52
    third = 1.0 / 3.0
    off_grid = sp.csr_matrix(np.full((3, 3), third))
    exact = abs(math.fsum([third] * 3 + [-1.0]))
    rho = MatrixFacts(off_grid).row_sum_deviation
    assert exact <= rho <= exact + 1e-17


def test_metropolis_keeps_float_weights_where_the_grid_would_delete_them():
    """Laziness within 1e-15 of 1 on K10: the off-diagonal weights (about 1e-16) are below
    the grid's floor, so the float64 weights are kept (no edge lost) and the row sums' own
    deviation is reported; a grid matrix whose row sum is below 0.5 (negative entries) takes
    the extended-precision path, which bounds the exact deviation."""
    import math

    from sparsedp.linalg.matrix_facts import MatrixFacts

    W = sparsedp.gossip_matrix(nx.complete_graph(10), laziness=1 - 1e-15)
    assert W.nnz == 100 and W.data.min() > 0
    rows = np.split(W.data, W.indptr[1:-1])
    exact = max(abs(math.fsum([*row, -1.0])) for row in rows)
    assert exact <= MatrixFacts(W).row_sum_deviation
    # on the grid, absolute sum <= 1.5, but sum - 1 = -2 - 2^-52 is not a float64
    negative = sp.csr_matrix(np.array([[-(1 + 2.0**-52), 0.0], [0.0, 1.0]]))
    assert MatrixFacts(negative).row_sum_deviation >= 2 + 2.0**-52
