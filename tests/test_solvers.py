"""PCG with the stationary and the innovation preconditioners."""

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from sparsedp.gossip.certified_solve import innovation_preconditioner
from sparsedp.gossip.views import closed_neighbourhood
from sparsedp.graphs.weights import gossip_matrix
from sparsedp.linalg.operators import GossipSystem
from sparsedp.linalg.solvers import (
    InnovationPreconditioner,
    StationaryPreconditioner,
    block_cg,
    cholesky_solve,
)

from .conftest import connected_instance


@pytest.mark.parametrize("T,m,p", [(1, 1, 0.1), (6, 1, 0.02), (5, 3, 0.05), (4, 4, 0.25)])
def test_preconditioner_is_the_inverse_of_K_stat(T, m, p):
    u = np.ones(m) / np.sqrt(m)
    q = min(p * m, 1.0)
    J = np.minimum.outer(np.arange(1, T + 1), np.arange(1, T + 1)).astype(float)
    K_stat = np.kron(np.eye(T), np.eye(m) - q * np.outer(u, u)) + np.kron(J, q * np.outer(u, u))
    P = StationaryPreconditioner(T, m, p)
    inverse = P(np.eye(T * m).reshape(T, m, T * m)).reshape(T * m, T * m)
    np.testing.assert_allclose(inverse @ K_stat, np.eye(T * m), atol=1e-12)


def _column_by_column(apply_A, B, precondition=None, rtol=1e-11):
    """Independent (P)CG per column, all advanced together: its block applications are
    the most any single column needs (block CG on one column is CG)."""
    infos = [block_cg(apply_A, B[..., j:j + 1], precondition, rtol=rtol)[2]
             for j in range(B.shape[-1])]
    assert all(info.converged for info in infos)
    return max(info.iterations for info in infos)


def test_block_pcg_solves_to_tolerance():
    W = gossip_matrix(connected_instance("er", 60, 5))
    T = 30
    system = GossipSystem(W, [4], T)
    G = system.G_matrix(17)
    X, KX, info = block_cg(system.apply_K, G.reshape(T, 1, T),
                           StationaryPreconditioner(T, 1, 1 / 60), rtol=1e-11)
    assert info.converged and info.max_relative_residual <= 1e-11
    X_direct = cholesky_solve(system.K @ np.eye(T), G)
    np.testing.assert_allclose(X.reshape(T, T), X_direct, rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(KX.reshape(T, T), G, atol=1e-9)


def test_block_cg_shares_its_krylov_space_across_the_columns():
    """Block CG solves six time-shifted columns of G (300 unknowns: no finite termination
    within the iterations) to tolerance in fewer block applications than independent CG per
    column (20 against 30 here), and a block with repeated and zero columns (dependent
    directions dropped) gives each column its own solution."""
    W = gossip_matrix(connected_instance("er", 60, 5))
    T, observers = 30, list(range(0, 60, 6))
    system = GossipSystem(W, observers, T)
    G = np.ascontiguousarray(system.G_matrix(17)[:, :6])
    X_direct = cholesky_solve(system.K @ np.eye(T * len(observers)), G)
    shape = (T, len(observers), -1)
    X, KX, info = block_cg(system.apply_K, G.reshape(shape), rtol=1e-11)
    assert info.converged and info.max_relative_residual <= 1e-11
    np.testing.assert_allclose(X.reshape(G.shape), X_direct, rtol=1e-8, atol=1e-9)
    np.testing.assert_array_equal(KX, system.apply_K(X))
    assert info.iterations < _column_by_column(system.apply_K, G.reshape(shape))
    B = np.concatenate([G, G[:, :3], np.zeros((G.shape[0], 1))], axis=1)
    X, _, info = block_cg(system.apply_K, B.reshape(shape), rtol=1e-11)
    X = X.reshape(B.shape)
    assert info.converged
    np.testing.assert_allclose(X[:, :6], X_direct, rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(X[:, 6:9], X_direct[:, :3], rtol=1e-8, atol=1e-9)
    np.testing.assert_array_equal(X[:, -1], 0.0)
    X, AX, info = block_cg(system.apply_K, np.zeros((T, len(observers), 0)))
    assert X.shape == AX.shape == (T, len(observers), 0) and info.iterations == 0


def test_block_pcg_matches_a_direct_solve_with_repeated_and_zero_columns():
    """Preconditioned block CG on a hub's neighbourhood view (innovation preconditioner):
    the direct solve's X for every column, a repeated column's solution repeated, a zero
    column's zero, and no more block applications than PCG column by column on the T
    time-shifted columns of G (13 against 22 here)."""
    W, S, target, T = _hub_view(n=120, T=12)
    system = GossipSystem(W, S, T)
    m = S.size
    G = system.G_matrix(target)
    X_direct = cholesky_solve(_dense(system.apply_K, T, m), G)
    precondition = innovation_preconditioner(system)
    B = np.concatenate([G, G[:, 2:5], np.zeros((T * m, 1))], axis=1)
    X, KX, info = block_cg(system.apply_K, B.reshape(T, m, -1), precondition, rtol=1e-11)
    assert info.converged and info.max_relative_residual <= 1e-11
    X = X.reshape(B.shape)
    np.testing.assert_allclose(X[:, :T], X_direct, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(X[:, T:T + 3], X_direct[:, 2:5], rtol=1e-8, atol=1e-10)
    np.testing.assert_array_equal(X[:, -1], 0.0)
    np.testing.assert_array_equal(KX, system.apply_K(X.reshape(T, m, -1)))
    _, _, shared = block_cg(system.apply_K, G.reshape(T, m, T), precondition, rtol=1e-11)
    separate = _column_by_column(system.apply_K, G.reshape(T, m, T), precondition)
    assert shared.iterations <= separate, (shared, separate)


def test_the_preconditioner_never_changes_the_unpreconditioned_iteration():
    """``precondition=None`` is CG on the residual itself: the identity preconditioner
    gives the same iterates, to the bit."""
    W = gossip_matrix(connected_instance("er", 40, 2))
    T = 10
    system = GossipSystem(W, [1, 7], T)
    G = system.G_matrix(20).reshape(T, 2, T)
    plain = block_cg(system.apply_K, G, rtol=1e-11)
    identity = block_cg(system.apply_K, G, lambda R: R, rtol=1e-11)
    np.testing.assert_array_equal(plain[0], identity[0])
    np.testing.assert_array_equal(plain[1], identity[1])
    assert plain[2] == identity[2] and plain[2].converged


def test_iteration_count_levels_off_in_T():
    """With the stationary preconditioner the iterations grow far slower than T."""
    W = gossip_matrix(connected_instance("er", 100, 6))
    counts = {}
    for T in (25, 100, 400):
        system = GossipSystem(W, [0], T)
        G = system.G_matrix(50)[:, :4]  # a few right-hand sides suffice
        _, _, info = block_cg(system.apply_K, G.reshape(T, 1, 4),
                              StationaryPreconditioner(T, 1, 1 / 100), rtol=1e-10)
        assert info.converged
        counts[T] = info.iterations
    assert counts[400] <= 2 * counts[25] + 10, counts


def _dense(apply, T, m):
    return apply(np.eye(T * m).reshape(T, m, T * m)).reshape(T * m, T * m)


@pytest.mark.parametrize("T", [1, 2, 7])
def test_innovation_preconditioner_is_L_T_C_inverse_L(T):
    """``P = L^T C^{-1} L`` with L block bidiagonal (``-W[S, S]`` below the diagonal) and
    ``C = I kron (I - u u^T) + (I + gamma J) kron u u^T``, built densely."""
    rng = np.random.default_rng(T)
    m = 4
    block = sp.random(m, m, density=0.6, random_state=T) * 0.3
    inflow, p = rng.random(m), 0.07
    P = _dense(InnovationPreconditioner([block], inflow, p), T, m)
    L = np.eye(T * m) - np.kron(np.eye(T, k=-1), block.toarray())
    u = inflow / np.linalg.norm(inflow)
    J = np.minimum.outer(np.arange(1, T + 1), np.arange(1, T + 1)).astype(float)
    gamma = p * inflow @ inflow
    C = (np.kron(np.eye(T), np.eye(m) - np.outer(u, u))
         + np.kron(np.eye(T) + gamma * J, np.outer(u, u)))
    np.testing.assert_allclose(P, L.T @ np.linalg.solve(C, L), atol=1e-12)


def test_innovation_preconditioner_is_exact_when_every_node_is_observed():
    """S = all nodes: ``y_t = W y_(t-1) + z_t`` exactly, so ``K = L^{-1} L^{-T}`` and the
    preconditioner is K's inverse (no inflow, time-varying W too)."""
    T = 5
    Ws = [gossip_matrix(connected_instance("er", 12, seed)) for seed in range(T)]
    system = GossipSystem(Ws, np.arange(12), T)
    K = _dense(system.apply_K, T, 12)
    P = _dense(innovation_preconditioner(system), T, 12)
    np.testing.assert_allclose(P @ K, np.eye(T * 12), atol=1e-10)


def _hub_view(n=300, T=30, seed=3):
    """A hub's neighbourhood view: preferential attachment with a few pendant nodes."""
    G = nx.barabasi_albert_graph(n, 2, seed=seed)
    W = gossip_matrix(G)
    hub = max(G, key=G.degree)
    S = closed_neighbourhood(W, [hub])
    target = next(v for v in G if v not in set(S.tolist()))
    return W, S, target, T


def test_innovation_preconditioner_cuts_the_iterations_of_a_hub_view():
    """The hub's neighbourhood view: fewer block PCG iterations than with the stationary
    preconditioner (19 against 35 here; 32 against 122 column by column), and the same
    solution."""
    W, S, target, T = _hub_view()
    system = GossipSystem(W, S, T)
    G = system.G_matrix(target).reshape(T, S.size, T)
    X_s, _, stationary = block_cg(system.apply_K, G,
                                  StationaryPreconditioner(T, S.size, 1 / W.shape[0]))
    X_i, _, innovation = block_cg(system.apply_K, G, innovation_preconditioner(system))
    assert stationary.converged and innovation.converged
    assert 3 * innovation.iterations <= 2 * stationary.iterations, (innovation, stationary)
    np.testing.assert_allclose(X_i, X_s, rtol=1e-6, atol=1e-8)


def test_a_reducible_first_round_gets_a_preconditioner_and_the_dense_value():
    """Time-varying gossip whose W_0 is directed, reducible and not doubly stochastic has no
    stationary distribution; the preconditioner only needs some weight, and the iterative
    solve still returns the dense assembly's interval (it raised GossipMatrixError)."""
    import sparsedp

    n = 6
    W0 = np.eye(n)
    W0[1, :2] = W0[2, 1:3] = 0.5
    rounds = [sp.csr_matrix(W0)] + [sp.csr_matrix(np.full((n, n), 1.0 / n))] * 2
    iterative = sparsedp.squared_sensitivity(rounds, 0, [3], 3, method="matrix-free")
    dense = sparsedp.squared_sensitivity(rounds, 0, [3], 3, method="dense")
    assert iterative.lower <= dense.upper and dense.lower <= iterative.upper
    assert iterative.lower == pytest.approx(dense.lower, rel=1e-12)


def test_a_long_cholesky_shows_progress_and_gives_lapacks_own_factor(monkeypatch, capsys):
    """From CHOLESKY_PROGRESS_ORDER on, potrf runs without the GIL in a worker thread while a
    bar advances: the factor is bit for bit scipy's dpotrf (the same routine), a matrix that
    is not positive definite is refused with LAPACK's info, and the bar reaches its total."""
    import scipy.linalg.lapack

    import sparsedp.progress
    from sparsedp.linalg import solvers
    from sparsedp.linalg.blas_in_place import cholesky_in_place
    from sparsedp.progress import progress_bar

    rng = np.random.default_rng(5)
    A = rng.standard_normal((400, 400))
    K = A @ A.T / 400 + 0.1 * np.eye(400)
    monkeypatch.setattr(solvers, "CHOLESKY_PROGRESS_ORDER", 300)
    monkeypatch.setattr(sparsedp.progress, "ESTIMATE_TICK", 1e-4)
    bars = []

    def recorded(*args, **kwargs):
        bars.append(progress_bar(*args, **kwargs))
        return bars[-1]

    monkeypatch.setattr(solvers, "progress_bar", recorded)
    factor = solvers.cholesky_factor(K, progress="always")
    expected, info = scipy.linalg.lapack.dpotrf(K, lower=1, clean=0)
    assert info == 0 and np.array_equal(factor, expected)
    assert np.allclose(np.tril(factor) @ np.tril(factor).T, K, atol=1e-12)
    assert "Cholesky factorisation (400 x 400, estimated)" in capsys.readouterr().err
    assert bars[0].n == bars[0].total == 1  # whole Gflop, at least one
    K[7, 7] = -1.0
    with pytest.raises(np.linalg.LinAlgError, match="potrf info 8"):
        solvers.cholesky_factor(K, progress="always")
    with pytest.raises(ValueError, match="F-contiguous"):
        cholesky_in_place(np.ascontiguousarray(K))


def test_the_estimated_bar_advances_while_the_routine_runs_and_stops_short_of_the_end(
        monkeypatch):
    """The bar moves at the given rate while the worker runs, never past 99 % of its total
    before the routine returns, and is filled when it does."""
    import time

    import sparsedp.progress
    from sparsedp.progress import run_with_estimated_progress

    class Bar:
        total, n, updates = 100, 0, []

        def update(self, step):
            self.n += step
            self.updates.append(self.n)

    monkeypatch.setattr(sparsedp.progress, "ESTIMATE_TICK", 0.01)
    bar = Bar()
    result = run_with_estimated_progress(lambda x: time.sleep(x) or "done", 0.3, bar,
                                         rate=1e11)  # 100 Gflop/s: 30 Gflop at 0.3 s
    assert result == "done" and bar.updates[-1] == 100
    before_end = bar.updates[:-1]
    assert len(before_end) >= 3 and before_end == sorted(before_end)
    assert 5 <= before_end[-1] <= 99
