"""Certified inertia of sparse symmetric matrices (sparsedp.linalg.inertia) against dense
eigenvalues."""

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import reverse_cuthill_mckee
from scipy.sparse.linalg import splu

from sparsedp.graphs import random_geometric
from sparsedp.graphs.weights import gossip_matrix
from sparsedp.linalg import inertia as inertia_module
from sparsedp.linalg.inertia import (
    auto_skip_reason,
    envelope_cost,
    factorisation_plan,
    inertia,
    lowest_eigenvalue_bound,
    second_eigenvalue_bound,
)


def random_symmetric(n: int, seed: int, density: float = 0.2) -> sp.csc_matrix:
    rng = np.random.default_rng(seed)
    B = sp.random(n, n, density=density, random_state=seed)
    return sp.csc_matrix(B + B.T + sp.diags(rng.standard_normal(n)))


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 50), st.integers(0, 10**6))
def test_the_count_brackets_the_dense_eigenvalues(n, seed):
    """lambda_k(A) < error and lambda_(k+1)(A) > -error for k = the negative pivots (a
    random seed of 32 x 32 gave error 1.2e-5 against eigenvalues of size 7: element growth
    without pivoting, which the bound carries)."""
    A = random_symmetric(n, seed)
    try:
        counts = inertia(A)
    except (ValueError, RuntimeError):  # a zero pivot: no certificate, nothing claimed
        return
    ev = np.linalg.eigvalsh(A.toarray())
    k = counts.negative
    assert k == 0 or ev[k - 1] < counts.error
    assert k == n or counts.zero or ev[k] > -counts.error
    # no pivoting: growth (a tiny pivot) can make the error large, never wrong; where it
    # stays below every |eigenvalue| the count is the true one
    assert counts.error >= 0.0
    assert np.abs(ev).min() <= counts.error or k == int(np.sum(ev < 0))


@pytest.mark.parametrize("seed", range(5))
def test_the_error_bound_covers_the_distance_to_the_congruent_matrix(seed):
    """||P^T A P - L D L^T||_2, computed densely from SuperLU's factors, is within the bound,
    and the factors are SuperLU's factorisation of the permuted matrix (to rounding)."""
    A = random_symmetric(40, seed)
    counts = inertia(A)
    lu = splu(A, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
              options={"SymmetricMode": True, "Equil": False})
    L, U = lu.L.toarray(), lu.U.toarray()
    p = lu.perm_c
    P = np.zeros((40, 40))
    P[np.arange(40), p] = 1.0  # scipy: P_r A P_c = L U, here P_r = P_c^T
    S = L @ np.diag(np.diag(U)) @ L.T
    distance = np.linalg.norm(P.T @ A.toarray() @ P - S, 2)
    assert distance <= counts.error
    np.testing.assert_allclose(P.T @ A.toarray() @ P, L @ U, atol=1e-12)
    assert counts.negative == int(np.sum(np.linalg.eigvalsh(A.toarray()) < 0))


def test_no_certificate_for_a_non_symmetric_matrix_or_an_off_diagonal_pivot():
    with pytest.raises(ValueError, match="not exactly symmetric"):
        inertia(sp.csc_matrix(np.array([[2.0, 1.0], [1.0 + 1e-15, 2.0]])))
    with pytest.raises((ValueError, RuntimeError)):
        inertia(sp.csc_matrix(np.array([[0.0, 1.0], [1.0, 0.0]])))


GRAPHS = [nx.path_graph(200), nx.cycle_graph(201), nx.grid_2d_graph(12, 12),
          random_geometric(300, 0.12, seed=2), nx.barbell_graph(30, 40),
          nx.random_regular_graph(5, 300, seed=4)]


@pytest.mark.parametrize("method", ["sparse", "dense"])
@pytest.mark.parametrize("graph", GRAPHS)
def test_second_eigenvalue_bound_against_eigvalsh(graph, method):
    """Just above lambda_2: certified and at most a few ulps above mu (plus the error); just
    below: no certificate (sparse: two negative pivots; dense: Cholesky breaks down)."""
    W = gossip_matrix(graph)
    lambda_2 = np.linalg.eigvalsh(W.toarray())[-2]
    gap = 1.0 - lambda_2
    test = second_eigenvalue_bound(W, lambda_2 + 1e-3 * gap, method)
    assert test.bound is not None and lambda_2 < test.bound <= lambda_2 + 1e-3 * gap + 1e-9
    assert test.beyond == (0 if method == "sparse" else None)
    test = second_eigenvalue_bound(W, lambda_2 - 1e-3 * gap, method)
    assert test.bound is None
    assert (test.beyond >= 1) if method == "sparse" else test.beyond is None


@pytest.mark.parametrize("method", ["sparse", "dense"])
@pytest.mark.parametrize("graph", [nx.path_graph(200), nx.cycle_graph(200),
                                   random_geometric(300, 0.12, seed=2)])
def test_lowest_eigenvalue_bound_against_eigvalsh(graph, method):
    """Just below lambda_min: certified, within a few ulps of nu; just above: no certificate.
    The even cycle is periodic with Metropolis weights 1/3 (lambda_min = -1/3)."""
    W = gossip_matrix(graph)
    lowest = np.linalg.eigvalsh(W.toarray())[0]
    test = lowest_eigenvalue_bound(W, lowest - 1e-4, method)
    assert test.bound is not None and lowest - 1e-4 - 1e-9 <= test.bound < lowest
    assert lowest_eigenvalue_bound(W, lowest + 1e-4, method).bound is None


def test_the_plan_takes_the_dense_cholesky_where_the_sparse_factors_fill_in(monkeypatch):
    """A geometric graph's envelope is a small share of a dense factorisation (sparse); a
    random regular graph's is not (dense); a budget below the dense matrix keeps it sparse;
    beyond AUTO_MAX_FLOPS the automatic certificate is skipped with the plan named."""
    geometric = gossip_matrix(random_geometric(1500, 0.06, seed=1))
    expander = gossip_matrix(nx.random_regular_graph(6, 1500, seed=1))
    assert factorisation_plan(geometric, 1e12).method == "sparse"
    plan = factorisation_plan(expander, 1e12)
    assert plan.method == "dense" and plan.flops == 1500**3 / 3
    assert factorisation_plan(expander, 1e6).method == "sparse"
    assert auto_skip_reason(expander, 1e12) is None
    monkeypatch.setattr(inertia_module, "AUTO_MAX_FLOPS", 1e9)
    assert "skipped (dense: about 1.1e+09 flops" in auto_skip_reason(expander, 1e12)
    assert auto_skip_reason(geometric, 1e12) is None


def test_envelope_cost_of_a_path_and_its_bound_on_the_fill():
    """A path in RCM order is tridiagonal: n - 1 off-diagonal envelope entries, flops n - 1;
    on a geometric graph the envelope contains the fill of the RCM-ordered factorisation."""
    cost = envelope_cost(gossip_matrix(nx.path_graph(50)))
    assert (cost.entries, cost.flops) == (99.0, 49.0)
    W = gossip_matrix(random_geometric(400, 0.1, seed=3))
    A = sp.identity(W.shape[0]) * 1.5 - W
    order = reverse_cuthill_mckee(sp.csr_matrix(W), symmetric_mode=True)
    lu = splu(sp.csc_matrix(A.tocsr()[order][:, order]), permc_spec="NATURAL",
              diag_pivot_thresh=0.0, options={"SymmetricMode": True})
    assert lu.L.nnz <= envelope_cost(W).entries


def test_the_dense_route_factors_in_float64_and_refuses_non_finite_input():
    """A float32 (or integer) W is converted to float64 before forming B, as the error charges
    assume (it was formed in float32: certified shifts on the wrong side of lambda_2); a NaN
    is refused on both routes instead of certifying a NaN bound."""
    W = gossip_matrix(nx.path_graph(26))
    lambda_2 = np.linalg.eigvalsh(W.toarray())[-2]
    W32 = W.astype(np.float32)
    truth = np.linalg.eigvalsh(W32.toarray().astype(np.float64))[-2]
    for mu in truth - np.array([3e-8, 1e-9, 1e-12]):
        assert second_eigenvalue_bound(W32, mu, "dense").bound is None
    assert second_eigenvalue_bound(W32, lambda_2 + 1e-6, "dense").bound >= truth
    bad = sp.csr_matrix(np.array([[np.nan, 1.0], [1.0, 0.0]]))
    for method in ("sparse", "dense"):
        with pytest.raises(ValueError, match="not finite"):
            second_eigenvalue_bound(bad, 0.3, method)


def test_a_negative_shift_is_certified_by_the_dense_route_too():
    """W = (J - I)/4 on 5 nodes has lambda_2 = -1/4: the dense route lifts the direction of 1
    by more than |mu| (with c = 1/n it broke down at every mu <= 0)."""
    W = sp.csr_matrix((np.ones((5, 5)) - np.eye(5)) / 4.0)
    for method in ("sparse", "dense"):
        test = second_eigenvalue_bound(W, -0.1, method)
        assert test.bound is not None and -0.25 < test.bound < -0.0999
