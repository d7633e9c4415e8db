"""The batched route of a distance summary (issue 32, :mod:`sparsedp.mf.batched`): every
target of one attacker set from one shared Cholesky factor, certified per target in O(N T),
checked against the per-target route and an independent dense computation."""

import networkx as nx
import numpy as np
import pytest
import scipy.linalg

import sparsedp
from sparsedp.linalg import kernels
from sparsedp.linalg.certified import MatrixSandwich
from sparsedp.linalg.sign_bounds import evaluate_bounds
from sparsedp.mf import antipgd, batched, dp_d_sgd, mf_sensitivity, muffliato_sgd
from sparsedp.mf.algorithms import node_noise
from sparsedp.mf.summary import distance_summary
from sparsedp.testing import dense_mf_sensitivity

T = 6
ALGORITHMS = {"antipgd": antipgd(), "dp-d-sgd": dp_d_sgd(), "muffliato2": muffliato_sgd(2)}
SLACK = 1e-6  # the batched interval's excess over the per-target one, relative


@pytest.fixture(autouse=True)
def _small_systems_batched(monkeypatch):
    """The route needs BATCH_MIN_ROWS kept rows; these small systems are batched anyway."""
    monkeypatch.setattr(batched, "BATCH_MIN_ROWS", 0)


def _hub(n: int = 30, seed: int = 1):
    G = nx.powerlaw_cluster_graph(n, 2, 0.1, seed=seed)
    hub = max(G.degree, key=lambda pair: pair[1])[0]
    return sparsedp.gossip_matrix(G, scheme="row-normalised-self-loops"), int(hub)


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_batched_summary_contains_the_dense_value_and_matches_single_queries(name):
    """A hub attacker on a small power-law graph: every target's batched interval contains
    the exact scalar sensitivity of an independent dense computation (SVD of the explicit B,
    brute-force sign search), overlaps the per-target route's certified interval and exceeds
    it by at most ``SLACK`` relative."""
    algorithm = ALGORITHMS[name]
    W, hub = _hub()
    n = W.shape[0]
    summary = distance_summary(W, [hub], T, algorithm=algorithm, gradients="scalar",
                               progress=False)
    assert {r.method for r in summary.results} == {batched.METHOD}
    noise = node_noise(algorithm, T, n)
    for u, r in zip(summary.targets, summary.results, strict=True):
        single = mf_sensitivity(W, u, [hub], T, algorithm=algorithm, gradients="scalar")
        assert single.method != batched.METHOD
        dense = dense_mf_sensitivity(W, u, T, [np.arange(T)], K=algorithm.K, noise=noise,
                                     trust="pndp", attackers=[hub])["exact"]
        scale = max(single.upper, 1e-300)
        assert r.lower <= dense * (1 + 1e-10) and dense * (1 - 1e-10) <= r.upper
        assert r.lower <= single.upper and single.lower <= r.upper
        assert r.upper - single.upper <= SLACK * scale
        assert single.lower - r.lower <= SLACK * scale
        assert r.exact is not None and r.thm7 >= r.exact


def test_forward_solve_skips_leading_zeros_and_equals_the_triangular_solve():
    """Columns with leading zeros (in every panel position, all-zero included) solve to
    L^{-1} A as LAPACK's triangular solve does, with the leading zeros exact."""
    rng = np.random.default_rng(4)
    N, c = 3 * batched.PANEL_ROWS + 17, 40
    X = rng.standard_normal((N, N))
    factor = scipy.linalg.cho_factor(X @ X.T / N + np.eye(N), lower=True)[0]
    A = rng.standard_normal((N, c))
    starts = rng.integers(0, N + 1, c)
    starts[:3] = (0, N, batched.PANEL_ROWS)
    A[np.arange(N)[:, None] < starts[None, :]] = 0.0
    expected = scipy.linalg.solve_triangular(factor, A, lower=True)
    for layout in (factor, np.ascontiguousarray(factor)):  # LAPACK's column-major, row-major
        Yt, order = batched.forward_solve(layout, np.ascontiguousarray(A.T))
        assert np.all(np.diff(starts[order]) >= 0)
        Y = np.empty_like(Yt)
        Y[order] = Yt
        Y = Y.T
        np.testing.assert_allclose(Y, expected, rtol=1e-10, atol=1e-12)
        assert not np.any(Y[np.arange(N)[:, None] < starts[None, :]])


def test_in_place_blas_refuses_what_it_cannot_address():
    """BLAS writes wherever its pointers say: every layout and range is checked first."""
    from sparsedp.linalg.blas_in_place import solve_panel, subtract_panel

    L, Yt = np.eye(4), np.ones((2, 4))
    with pytest.raises(ValueError, match="Yt must be a C-contiguous"):
        solve_panel(L, np.ones((2, 8))[:, ::2], 0, 4, 2)
    with pytest.raises(ValueError, match="L must be a contiguous"):
        solve_panel(np.eye(8)[::2, ::2], Yt, 0, 4, 2)
    with pytest.raises(ValueError, match=r"rows \[2, 5\) of 4 or count 2 out of range"):
        subtract_panel(L, Yt, 2, 5, 2)
    with pytest.raises(ValueError, match="count 3 out of range"):
        subtract_panel(L, Yt, 0, 2, 3)
    with pytest.raises(ValueError, match="do not match"):
        solve_panel(L, np.ones((2, 3)), 0, 2, 1)


def test_the_batch_is_declared_by_the_summary_and_needs_enough_targets():
    """Outside a summary, with fewer than BATCH_MIN_TARGETS targets or BATCH_MIN_ROWS kept
    rows, or DP-D-SGD with an explicit gossip-engine method, each target is solved alone."""
    W, hub = _hub()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(batched, "BATCH_MIN_ROWS", 10**6)
        summary = distance_summary(W, [hub], T, algorithm=antipgd(), gradients="scalar")
        assert batched.METHOD not in {r.method for r in summary.results}
    assert batched.batch_for(1, T) is None
    few = [u for u in range(W.shape[0]) if u != hub][: batched.BATCH_MIN_TARGETS - 1]
    summary = distance_summary(W, [hub], T, algorithm=antipgd(), targets=few,
                               gradients="scalar")
    assert batched.METHOD not in {r.method for r in summary.results}
    summary = distance_summary(W, [hub], T, method="gram", gradients="scalar")
    assert batched.METHOD not in {r.method for r in summary.results}
    with batched.scope_targets(range(batched.BATCH_MIN_TARGETS)):
        assert batched.batch_for(0, T) == tuple(range(batched.BATCH_MIN_TARGETS))
        assert batched.batch_for(batched.BATCH_MIN_TARGETS, T) is None


def test_groups_hold_a_bounded_number_of_blocks_in_the_scope_order():
    """Long T: the scope's targets are solved in consecutive groups of BATCH_BYTES worth of
    T x T blocks (at least BATCH_MIN_TARGETS), in the order declared, duplicates once."""
    big_T = 2000
    size = max(batched.BATCH_MIN_TARGETS,
               batched.BATCH_BYTES // (batched.BLOCK_DOUBLES * 8 * big_T * big_T))
    order = [5, 3, 3] + list(range(100, 100 + 3 * size))
    with batched.scope_targets(order):
        first = batched.batch_for(5, big_T)
        assert first[:2] == (5, 3) and len(first) == size
        assert batched.batch_for(3, big_T) == first
        last = batched.batch_for(100 + 3 * size - 1, big_T)
        assert last == tuple(range(100 + 3 * size - 2, 100 + 3 * size))  # the 2 left over
        assert batched.batch_for(5, 20) == tuple(dict.fromkeys(order))


@pytest.mark.parametrize("seed", range(4))
def test_sign_search_of_a_nonnegative_sandwich_is_c_equal_one(seed):
    """For an entrywise non-negative sandwich the exhaustive bounds are taken at c = 1
    without the search: they equal the exhaustive search's values (to its drift)."""
    rng = np.random.default_rng(seed)
    X = rng.random((12, 12))
    low = X @ X.T
    sandwich = MatrixSandwich(low=low, excess=1e-9 * np.eye(12), eta_low=1e-12,
                              eta_excess=0.0)
    bounds = {b.name: b.value for b in evaluate_bounds(sandwich, True)[0]}
    slack = sandwich.quadratic_slack()
    searched_low, _ = kernels.max_sign_quadratic(low)
    searched_up, _ = kernels.max_sign_quadratic(sandwich.up)
    assert bounds["exhaustive"] == pytest.approx(searched_low - slack, rel=1e-14)
    assert bounds["exhaustive_upper"] == pytest.approx(searched_up + slack, rel=1e-14)
    assert bounds["exhaustive_upper"] >= bounds["exhaustive"]


@pytest.mark.parametrize("seed", range(3))
def test_abs_norm_bound_is_above_the_spectral_norm_of_abs_L(seed):
    """The Collatz-Wielandt bound on ``|| |L| ||_2`` (which the certificate charges for the
    rounding of the factor and of the solve) is at least its SVD value, and close to it."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((200, 200))
    factor = scipy.linalg.cho_factor(X @ X.T + 0.1 * np.eye(200), lower=True)[0]
    exact = np.linalg.norm(np.abs(np.tril(factor)), 2)
    bound = batched._abs_norm_bound(factor)
    assert exact <= bound <= 1.05 * exact


@pytest.mark.parametrize("seed", range(3))
def test_sign_search_without_excess_is_one_search(seed):
    """A sandwich without solver excess (the batched route's: up = low) gets the exhaustive
    upper end from the one search on low, equal to a separate search on up."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((12, 12))
    low = X @ X.T
    sandwich = MatrixSandwich(low=low, excess=np.zeros((12, 12)), eta_low=0.0,
                              eta_excess=0.0, model=1e-9 * np.ones((12, 12)))
    bounds = {b.name: b.value for b in evaluate_bounds(sandwich, True)[0]}
    searched_up, _ = kernels.max_sign_quadratic(sandwich.up)
    expected = (searched_up + kernels.max_sign_quadratic_drift(sandwich.up)
                + sandwich.quadratic_slack())
    assert bounds["exhaustive_upper"] == expected
    assert bounds["exhaustive"] == searched_up - sandwich.quadratic_slack()


def test_stacked_columns_equal_the_operators_impulse_responses():
    """Muffliato-SGD(2) on a hub: the targets' columns read off the observer lags at once
    (``MFSystem.stacked_A_T``, delayed K s rounds) equal those of R sparse products with W,
    target by target (``A_target`` without lags), to rounding."""
    from sparsedp.mf.operators import MFSystem

    W, hub = _hub()
    neighbours = np.union1d(W[hub].indices, [hub])
    system = MFSystem(W, neighbours, np.array([hub]), T, 2, np.eye(T))
    lags = system.assemble_K()[2]
    targets = [u for u in range(W.shape[0]) if u != hub][:9]
    stacked = system.stacked_A_T(targets, lags).reshape(len(targets), T, -1)
    rows = np.flatnonzero(np.random.default_rng(2).random(stacked.shape[2]) < 0.8)
    kept = system.stacked_A_T(targets, lags, rows).reshape(len(targets), T, -1)
    for k, u in enumerate(targets):
        np.testing.assert_allclose(stacked[k].T, system.A_target(u), rtol=1e-12, atol=1e-15)
        np.testing.assert_array_equal(system.A_target(u, lags), stacked[k].T)
        np.testing.assert_array_equal(kept[k], stacked[k][:, rows])


def test_chunks_solved_in_parallel_give_the_serial_results(monkeypatch):
    """With two BLAS threads allowed, two chunks are solved at a time (one BLAS thread
    each): every target's block is bit for bit the one of the serial run (the shared factor
    on one BLAS thread in both runs)."""
    W, hub = _hub(60, seed=3)
    monkeypatch.setattr(batched, "BATCH_COLUMNS", 4 * T)  # many chunks of 4 targets
    runs = []
    for threads in (1, 2):
        monkeypatch.setattr(batched, "blas_threads", lambda threads=threads: threads)
        summary = distance_summary(W, [hub], T, algorithm=muffliato_sgd(2),
                                   gradients="scalar", progress=False)
        assert {r.method for r in summary.results} == {batched.METHOD}
        runs.append([(r.lower, r.upper) for r in summary.results])
    assert len(runs[0]) > 8 and runs[0] == runs[1]
