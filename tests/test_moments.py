"""Lag sequences of symmetric gossip: frontier propagation and the certified truncation."""

import networkx as nx
import numpy as np
import pytest

import sparsedp
from sparsedp.gossip import certified_solve
from sparsedp.graphs.weights import gossip_matrix
from sparsedp.linalg.moments import LagPropagator, gossip_lags
from sparsedp.testing import dense_H

from .conftest import connected_instance

pytestmark = pytest.mark.usefixtures("engine_serves_self_observation")


def dense_lags(W, observers, target, T):
    """mu_l = S W^l S^T and a_l = S W^l e_j from the columns W^l e_k, l = 0..2T-2."""
    columns = np.eye(W.shape[0])[:, list(observers) + [target]]
    mu, a = [], []
    for lag in range(2 * T - 1):
        mu.append(columns[observers][:, : len(observers)])
        if lag < T:
            a.append(columns[observers, -1])
        columns = W @ columns
    return np.array(mu), np.array(a)


@pytest.mark.parametrize("kind,observers,target", [
    ("ring", [0], 5), ("grid", [3, 4], 4), ("ba", [1, 2, 3], 30), ("er", [7], 7),
])
def test_untruncated_lags_equal_dense_powers(kind, observers, target):
    W = gossip_matrix(connected_instance(kind, 49, 0))
    T = 14
    lags = gossip_lags(W, np.array(observers), target, T, truncate=False)
    mu, a = dense_lags(W, observers, target, T)
    np.testing.assert_allclose(lags.mu, mu, atol=1e-15)
    np.testing.assert_allclose(lags.a, a, atol=1e-15)
    assert not lags.truncated and lags.products == T - 1
    # without a column for the target: a_l read off the target's row of the observers' block
    propagator = LagPropagator(W, np.array(observers), target, T, target_column=False)
    short = propagator.advance(None).result()
    np.testing.assert_allclose(short.mu, mu, atol=1e-15)
    np.testing.assert_allclose(short.a, a, atol=1e-15)
    assert short.products == T - 1 and short.eps_target == 0.0


def test_no_target_column_refuses_a_truncated_result():
    W = gossip_matrix(connected_instance("er", 60, 1))
    propagator = LagPropagator(W, np.array([0]), 5, 40, frontier=False, target_column=False)
    propagator.advance(1e-2)  # stops early: the chain mixes quickly
    assert not propagator.finished
    with pytest.raises(ValueError, match="target column"):
        propagator.result()


def test_frontier_products_on_a_large_diameter_graph():
    W = gossip_matrix(nx.cycle_graph(2000))
    lags = gossip_lags(W, np.array([0]), 10, 30, truncate=False)
    assert lags.frontier_products == 29  # two balls of radius 30 stay below 1/8 of the ring
    mu, a = dense_lags(W, [0], 10, 30)
    np.testing.assert_allclose(lags.mu, mu, atol=1e-15)
    np.testing.assert_allclose(lags.a, a, atol=1e-15)


@pytest.mark.parametrize("tol", [1e-6, 1e-10])
def test_truncation_error_bounds_hold(tol):
    """With a loose tolerance the bound is far above rounding: check every truncated lag."""
    G = connected_instance("er", 60, 4)
    W = gossip_matrix(G)
    T = 120
    observers = np.array([0, 5])
    lags = gossip_lags(W, observers, 9, T, truncate=True, tol=tol)
    assert lags.truncated and lags.products < T - 1
    mu, a = dense_lags(W, list(observers), 9, T)
    assert np.all(np.abs(lags.mu - mu) <= lags.mu_error + 1e-16)
    assert np.all(np.abs(lags.a - a) <= lags.a_error + 1e-16)
    assert lags.mu_error.max() <= tol / 60 * 1.01


def test_truncated_structured_path_matches_matrix_free(monkeypatch):
    monkeypatch.setattr(certified_solve, "SMALL_PROPAGATION_WORK", 0)  # truncate this small chain
    G = nx.erdos_renyi_graph(150, 0.08, seed=5)
    W = gossip_matrix(G)
    r_s = sparsedp.squared_sensitivity(W, 3, [0, 1], 120, method="structured")
    r_m = sparsedp.squared_sensitivity(W, 3, [0, 1], 120, method="matrix-free")
    assert r_s.solver["truncated"] and r_s.solver["sparse_products"] < 119
    assert r_s.lower <= r_m.upper and r_m.lower <= r_s.upper
    assert r_s.upper == pytest.approx(r_m.upper, rel=1e-7)
    assert r_s.relative_gap < 1e-7


def test_truncated_interval_contains_dense_value(monkeypatch):
    monkeypatch.setattr(certified_solve, "SMALL_PROPAGATION_WORK", 0)  # truncate this small chain
    G = connected_instance("er", 40, 8)
    W = gossip_matrix(G)
    T = 60
    r = sparsedp.squared_sensitivity(W, 2, [0], T, exact=False)
    assert r.solver["truncated"]
    H = dense_H(W, [0], T)
    e = np.zeros(40)
    e[2] = 1.0
    b = H @ np.kron(np.ones(T), e)
    ones_value = b @ np.linalg.solve(H @ H.T, b)
    named = {bound.name: bound.value for bound in r.bounds}
    assert named["ones"] <= ones_value * (1 + 1e-12)
    assert ones_value <= r.upper


def _recorded_stops(monkeypatch, widening_ratio: float | None = None) -> list[int]:
    """Record the products at every predicted stop; ``widening_ratio``: report the
    predicted widening as that multiple of the lower bound instead."""
    stops = []
    predict = certified_solve._predicted_widening

    def recording(lags, T, model=None, progress=None):
        stops.append(lags.products)
        widening, lower, solved = predict(lags, T, model, progress)
        if widening_ratio is not None:
            widening = widening_ratio * lower
        return widening, lower, solved

    monkeypatch.setattr(certified_solve, "_predicted_widening", recording)
    return stops


@pytest.fixture(scope="module")
def slowly_mixing_W():
    """Chung-Lu, n = 2 10^4: a low-degree node next to hubs of degree d relaxes at rate
    1 / (d + 1) under Metropolis weights, so the chain is still far from its mixing level at
    T = 300 (and large enough to be truncated)."""
    from sparsedp.graphs import large

    graph = large.largest_component(large.chung_lu_large(20_000, 20, seed=1))
    return sparsedp.gossip_matrix(graph), graph.n // 2


def test_product_budget_stops_a_slowly_mixing_chain_early_and_stays_sound(
        monkeypatch, slowly_mixing_W):
    """On a slowly mixing chain the propagation stops for predictions at doubling product
    budgets before its mixing level: fewer products than running to the level (here every
    lag: the untruncated reference), and the interval still contains the reference's value
    and meets truncation_rtol."""
    W, target = slowly_mixing_W
    T, rtol = 300, 1e-6
    stops = _recorded_stops(monkeypatch)
    monkeypatch.setattr(certified_solve, "_first_budget", lambda system: 10**9)
    full = sparsedp.squared_sensitivity(W, target, [0], T, truncation_rtol=rtol)
    assert not full.solver["truncated"] and full.solver["sparse_products"] == T - 1
    assert full.relative_gap < 1e-9
    monkeypatch.setattr(certified_solve, "_first_budget", lambda system: 16)
    budgeted = sparsedp.squared_sensitivity(W, target, [0], T, truncation_rtol=rtol)
    assert stops[:3] == [16, 32, 64]  # budget stops, doubling
    assert budgeted.solver["truncated"]
    assert budgeted.solver["sparse_products"] < T - 1
    assert budgeted.lower <= full.upper and full.lower <= budgeted.upper
    assert budgeted.relative_gap <= 2 * rtol


def test_budget_stops_are_never_taken_for_the_rounding_floor(monkeypatch, slowly_mixing_W):
    """The floor test (a stop that halves the widening no more ends the propagation) holds
    only between stops that reached their mixing level: with the widening reported constant
    at every stop (a level stop, then budget stops only, the tightened level being out of
    reach), the propagation runs through every lag instead of stopping at the first budget
    stop with an interval wider than truncation_rtol."""
    W, target = slowly_mixing_W
    monkeypatch.setattr(certified_solve, "_first_level", lambda rtol: 0.5)  # a level stop first
    monkeypatch.setattr(certified_solve, "_first_budget", lambda system: 16)
    stops = _recorded_stops(monkeypatch, widening_ratio=10.0)
    r = sparsedp.squared_sensitivity(W, target, [0], 300, truncation_rtol=1e-6)
    first = stops[0]  # a level stop, then budget stops only
    assert first < 16 and stops[1:] == [2 * first, 4 * first, 8 * first, 16 * first]
    assert not r.solver["truncated"] and r.solver["sparse_products"] == 299
    assert r.relative_gap <= 1e-9


def test_schedule_of_level_and_budget_stops(monkeypatch, slowly_mixing_W):
    """With the predicted widening scripted (falling 4x per stop, so never a floor, until it
    passes), the sequence of stops follows the rules: the next budget is twice the products
    done and never below the first budget; a stop that reached its level tightens the level
    (at least halves it); a budget stop leaves the level as it was."""
    from sparsedp.linalg import moments

    W, target = slowly_mixing_W
    monkeypatch.setattr(certified_solve, "_first_level", lambda rtol: 50.0)
    monkeypatch.setattr(certified_solve, "_first_budget", lambda system: 16)
    predict = certified_solve._predicted_widening
    stops = []

    def scripted(lags, T, model=None, progress=None):
        widening, lower, solved = predict(lags, T, model, progress)
        return lower * 1e-2 * 4.0 ** -len(stops), lower, solved

    advance = moments.LagPropagator.advance

    def recording(self, tol=None, max_products=None):
        advance(self, tol, max_products)
        stops.append((tol, max_products, self.products, self.mixing_level))
        return self

    monkeypatch.setattr(certified_solve, "_predicted_widening", scripted)
    monkeypatch.setattr(moments.LagPropagator, "advance", recording)
    r = sparsedp.squared_sensitivity(W, target, [0], 300, truncation_rtol=1e-6)
    kinds = []
    pairs = zip(stops, stops[1:], strict=False)
    for (level, budget, products, mixing), (next_level, next_budget, _, _) in pairs:
        assert next_budget == max(budget, 2 * products)
        reached = mixing <= level
        kinds.append("level" if reached else "budget")
        if reached:
            assert next_level <= 0.5 * level
        else:
            assert products == budget and next_level == level
    assert kinds[0] == "level" and "budget" in kinds  # both kinds of stop occur
    assert stops[1][1] == 16  # an early level stop does not lower the first budget
    assert r.relative_gap <= 1e-5


@pytest.mark.parametrize("rtol", [1e-6, 1e-9])
def test_spectral_bounds_charge_the_truncation_its_total(monkeypatch, rtol):
    """The target among three observers of a lazy ER chain: the model error is concentrated
    in a few rows, and when the spectral bounds charged it ``T eta_model`` (T times the
    largest row sum, before 2026-11-26) the upper end, a diagonal-shift bound, moved 1.8
    rtol against the untruncated interval although the widening compared with rtol (the
    total ``sum B``) was within it.  Charged ``sum B``, both ends stay within rtol here
    (in general the searched bounds can land elsewhere on the truncated M and move
    further: ``docs/bounds.md``)."""
    import scipy.sparse as sp

    from sparsedp.graphs import large

    graph = large.largest_component(large.erdos_renyi_large(3000, 20, seed=2))
    W = sparsedp.gossip_matrix(graph)
    W = (0.6 * sp.identity(W.shape[0], format="csr") + 0.4 * W).tocsr()
    target = graph.n // 2
    observers, T = [0, target, 11], 120
    monkeypatch.setattr(certified_solve, "SMALL_PROPAGATION_WORK", 1e15)  # every lag
    full = sparsedp.squared_sensitivity(W, target, observers, T, truncation_rtol=rtol)
    assert not full.solver["truncated"]
    monkeypatch.setattr(certified_solve, "SMALL_PROPAGATION_WORK", 0)  # truncate this small chain
    monkeypatch.setattr(certified_solve, "_first_budget", lambda system: 8)
    cut = sparsedp.squared_sensitivity(W, target, observers, T, truncation_rtol=rtol)
    assert cut.solver["truncated"]
    assert cut.upper - full.upper <= rtol * cut.lower
    assert full.lower - cut.lower <= rtol * cut.lower


def test_truncation_rtol_trades_products_for_width_and_stays_sound(monkeypatch):
    monkeypatch.setattr(certified_solve, "SMALL_PROPAGATION_WORK", 0)  # truncate this small chain
    G = nx.erdos_renyi_graph(200, 0.06, seed=9)
    W = gossip_matrix(G)
    T = 300
    loose = sparsedp.squared_sensitivity(W, 4, [0], T, truncation_rtol=1e-3)
    tight = sparsedp.squared_sensitivity(W, 4, [0], T, truncation_rtol=1e-12)
    reference = sparsedp.squared_sensitivity(W, 4, [0], T, method="matrix-free")
    assert loose.solver["sparse_products"] < tight.solver["sparse_products"]
    assert loose.upper - loose.lower >= tight.upper - tight.lower
    for r in (loose, tight):
        assert r.lower <= reference.upper and reference.lower <= r.upper
    assert loose.relative_gap <= 1e-3


@pytest.mark.parametrize("level,observers,target", [
    (1e-2, [0], 9), (1e-4, [0, 5], 9), (1e-3, [3], 3), (1e-6, [1, 2, 4], 2),
])
def test_entrywise_model_bound_covers_the_truncation(level, observers, target):
    """The row sums of |M_T - M_hat| are within the model's (the structured path keeps only
    these), with M_hat from the truncated lags (solved exactly) and M_T from the explicit
    H_T; the sandwich then brackets every entry of M_T."""
    from sparsedp.gossip.certified_solve import _lag_sandwich
    from sparsedp.linalg.certified import gossip_lambda_min_lower_bound
    from sparsedp.linalg.moments import LagPropagator
    from sparsedp.linalg.operators import k_from_moments, toeplitz_blocks
    from sparsedp.testing import dense_M

    W = gossip_matrix(connected_instance("er", 50, 3))
    T = 40
    lags = LagPropagator(W, observers, target, T).advance(level).result()
    assert lags.truncated
    K, G = k_from_moments(lags.mu, T), toeplitz_blocks(lags.a)
    M_hat = G.T @ np.linalg.solve(K, G)
    M = dense_M(W, target, observers, T)
    sandwich, widening = _lag_sandwich(lags, T, gossip_lambda_min_lower_bound(W))
    deviation = np.abs(M - M_hat)
    assert deviation.max() > 1e-12  # the truncation is visible in M_hat
    assert sandwich.model.shape == (T, 1)
    assert np.all(deviation.sum(axis=1) <= sandwich.model[:, 0])
    # the bound is not wildly loose: within a few orders of magnitude of the true deviation
    assert sandwich.model_sum <= 1e4 * deviation.sum()
    slack = sandwich.eta_low + sandwich.eta_excess
    assert np.all(M >= sandwich.low - sandwich.model - slack)
    assert np.all(M <= sandwich.up + sandwich.model + slack + np.sqrt(
        np.outer(np.diag(sandwich.excess), np.diag(sandwich.excess))))


@pytest.mark.parametrize("count", [1, 10, 300, 1000])
def test_closed_neighbourhood_by_sorting_or_by_flags(count):
    """The frontier's closed neighbourhood is the sorted set of the nodes and their
    neighbours, whether found by sorting (small frontiers) or by a pass over n flags."""
    from sparsedp.graphs import large
    from sparsedp.linalg.moments import _closed_neighbourhood

    graph = large.largest_component(large.erdos_renyi_large(100_000, 20, seed=1))
    W = sparsedp.gossip_matrix(graph)
    nodes = np.unique(np.random.default_rng(count).integers(0, W.shape[0], count))
    want = np.unique(np.concatenate([W[nodes].indices, nodes]))
    np.testing.assert_array_equal(_closed_neighbourhood(W, nodes), want)


def test_row_sum_model_bounds_the_entrywise_one_row_by_row():
    """``model_perturbation`` with ``E_abs_norm``: one column of row sums, no smaller than
    the entrywise bound's row sums (equal first-order terms, a looser second-order one) and
    above the true perturbation's row sums for a random admissible (E, F)."""
    from sparsedp.linalg.certified import model_perturbation

    rng = np.random.default_rng(7)
    k, T = 30, 30
    A = rng.random((k, k)) * 1e-6
    A = A + A.T  # |E| <= A entrywise, E symmetric
    F_abs = np.tril(rng.random((k, T))) * 1e-6
    K_hat = np.eye(k) * 3 + 0.1 * rng.standard_normal((k, k))
    K_hat = K_hat @ K_hat.T
    G_hat = np.tril(rng.random((k, T)))
    X = np.linalg.solve(K_hat, G_hat)
    R = G_hat - K_hat @ X
    lam = float(np.linalg.eigvalsh(K_hat)[0]) * 0.5
    E_norm = float(np.abs(A).sum(axis=1).max())
    args = (X, R, float(np.linalg.norm(K_hat)), lam, E_norm, 0.0, lambda V: A @ V, F_abs)
    entrywise, _ = model_perturbation(*args)
    rows, _ = model_perturbation(*args, E_abs_norm=float(np.linalg.norm(A, 2)))
    assert rows.shape == (T, 1)
    assert np.all(rows[:, 0] >= entrywise.sum(axis=1) * (1 - 1e-12))
    assert rows.sum() <= 1.01 * entrywise.sum()
    E = A * rng.choice([-1.0, 1.0], size=A.shape)
    E = np.triu(E) + np.triu(E, 1).T
    F = F_abs * rng.choice([-1.0, 1.0], size=F_abs.shape)
    K, G = K_hat + E, G_hat + F
    true = np.abs(G.T @ np.linalg.solve(K, G) - G_hat.T @ np.linalg.solve(K_hat, G_hat))
    assert np.all(true.sum(axis=1) <= rows[:, 0])
