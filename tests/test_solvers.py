"""PCG with the stationary preconditioner."""

import numpy as np
import pytest

from sparsedp.graphs.weights import gossip_matrix
from sparsedp.linalg.operators import GossipSystem
from sparsedp.linalg.solvers import StationaryPreconditioner, block_pcg, cholesky_solve

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


def test_block_pcg_solves_to_tolerance():
    W = gossip_matrix(connected_instance("er", 60, 5))
    T = 30
    system = GossipSystem(W, [4], T)
    G = system.G_matrix(17)
    X, KX, info = block_pcg(system.apply_K, G.reshape(T, 1, T),
                            StationaryPreconditioner(T, 1, 1 / 60), rtol=1e-11)
    assert info.converged and info.max_relative_residual <= 1e-11
    X_direct = cholesky_solve(system.K @ np.eye(T), G)
    np.testing.assert_allclose(X.reshape(T, T), X_direct, rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(KX.reshape(T, T), G, atol=1e-9)


def test_iteration_count_levels_off_in_T():
    """With the stationary preconditioner the iterations grow far slower than T."""
    W = gossip_matrix(connected_instance("er", 100, 6))
    counts = {}
    for T in (25, 100, 400):
        system = GossipSystem(W, [0], T)
        G = system.G_matrix(50)[:, :4]  # a few right-hand sides suffice
        _, _, info = block_pcg(system.apply_K, G.reshape(T, 1, 4),
                               StationaryPreconditioner(T, 1, 1 / 100), rtol=1e-10)
        assert info.converged
        counts[T] = info.iterations
    assert counts[400] <= 2 * counts[25] + 10, counts
