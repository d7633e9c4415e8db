"""Bounds on max_c c^T M c (sparsedp.linalg.sign_bounds) and the exact integer exhaustive search."""

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sparsedp
from sparsedp.graphs.weights import gossip_matrix
from sparsedp.linalg import certified, kernels, sign_bounds
from sparsedp.linalg.certified import MatrixSandwich
from sparsedp.linalg.vector_bounds import vector_bounds
from sparsedp.testing import brute_force_max, dense_reference, random_psd

from .conftest import connected_instance, slow_after

pytestmark = pytest.mark.usefixtures("engine_serves_self_observation")


def exact_sandwich(M):
    return MatrixSandwich(low=M, excess=np.zeros_like(M), eta_low=0.0, eta_excess=0.0)


def hidden_sandwich(M, seed):
    """A sandwich of M whose ``low`` misses a PSD part (put in ``excess``) and a rounding-size
    part ``D`` (``||D||_F = eta_low``), both aimed along the maximiser: bounds computed from
    ``low`` alone, or without ``T eta``, fall below the true maximum."""
    T = M.shape[0]
    if T <= 14:
        _, s = kernels.max_sign_quadratic(M, backend="numpy")
    else:
        _, s = kernels.local_sign_search(M, np.linalg.eigh(M)[1][:, -1])
    rng = np.random.default_rng(seed)
    P = 0.05 * np.outer(s, s) / T
    Q = rng.standard_normal((T, 2))
    excess = P + 0.01 * Q @ Q.T / T
    eta_low = 1e-3
    D = eta_low * np.outer(s, s) / T  # ||D||_F = eta_low
    low = M - P - D
    return MatrixSandwich(low=low, excess=excess, eta_low=eta_low, eta_excess=0.0)


def named(bounds):
    return {b.name: b for b in bounds}


def check_chain(bounds, truth, T):
    """lower <= truth <= every certified upper; diagonal_shift <= spectral (up to rounding)."""
    tol = 1e-12 * max(1.0, truth)
    for b in bounds:
        if b.kind in ("lower", "exact"):
            assert b.value <= truth + tol, b
        else:
            assert b.value >= truth - tol, b
    by = named(bounds)
    if "diagonal_shift" in by:
        assert by["diagonal_shift"].value <= by["spectral"].value * (1 + 1e-12) + 1e-12 * T
    else:  # settled, or after the exhaustive search: the refinements were not needed
        assert "multistart" not in by
        if "exhaustive" not in by:
            lower = max(b.value for b in bounds if b.kind in ("lower", "exact"))
            upper = min(b.value for b in bounds if b.kind == "certified upper")
            assert upper - lower <= sign_bounds.SETTLED_GAP * abs(upper)


# --- the exhaustive search --------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    T=st.integers(1, 14),
    seed=st.integers(0, 10_000),
    shape=st.sampled_from(["psd", "indefinite", "nonsymmetric", "low-rank", "tiny", "huge"]),
)
def test_exhaustive_backends_equal_brute_force(T, seed, shape):
    rng = np.random.default_rng(seed)
    if shape == "psd":
        M = random_psd(T, seed)
    elif shape == "low-rank":
        M = random_psd(T, seed, rank=1)
    elif shape == "indefinite":
        M = rng.standard_normal((T, T))
        M = M + M.T
    elif shape == "nonsymmetric":
        M = rng.standard_normal((T, T))
    else:
        M = random_psd(T, seed) * (1e-200 if shape == "tiny" else 1e200)
    truth = brute_force_max(M)
    v_numba, c_numba = kernels.max_sign_quadratic(M, backend="numba")
    v_numpy, c_numpy = kernels.max_sign_quadratic(M, backend="numpy")
    drift = kernels.max_sign_quadratic_drift(M)
    scale = float(np.abs(M).sum())
    for v, c in ((v_numba, c_numba), (v_numpy, c_numpy)):
        assert c[0] == 1.0 and set(np.unique(c)) <= {-1.0, 1.0}
        assert v == pytest.approx(c @ M @ c, rel=1e-14, abs=1e-14 * scale)
        assert v == pytest.approx(truth, rel=1e-12, abs=1e-13 * scale)
        assert truth <= v + drift + 1e-13 * scale
    assert 0.0 <= drift <= 1e-11 * float(np.abs(M).max())


def test_integer_grid_is_within_the_stated_error_and_fits_int64():
    for T in (1, 2, 9, 24, 30):
        M = random_psd(T, T) * 3.7
        M[0, -1] += 1e-3  # not symmetric
        Mi, s = kernels.integer_grid(M)
        sym = 0.5 * (M + M.T)
        assert np.all(np.abs(sym - Mi / (2 * s)) <= 1 / s)
        assert (T + 2) ** 2 * int(np.abs(Mi).max()) <= 2**61
        assert int(np.abs(Mi).max()) > 2**61 // (4 * (T + 2) ** 2)  # the grid is not wasted
    Mi, s = kernels.integer_grid(np.zeros((3, 3)))
    assert not Mi.any() and kernels.max_sign_quadratic_drift(np.zeros((3, 3))) == 0.0


def chunked_float_max(M, chunk_bits=14):
    """Independent float enumeration of max_c c^T M c (c_1 = +1), in chunks."""
    T = M.shape[0]
    free = T - 1
    low = 1 - 2 * ((np.arange(2**chunk_bits)[:, None] >> np.arange(chunk_bits)) & 1)
    best = -np.inf
    for high in range(2 ** (free - chunk_bits)):
        C = np.ones((2**chunk_bits, T))
        C[:, 1 : 1 + chunk_bits] = low
        C[:, 1 + chunk_bits :] = 1 - 2 * ((high >> np.arange(free - chunk_bits)) & 1)
        best = max(best, float(np.max(np.einsum("ij,ij->i", C @ M, C))))
    return best


def test_exhaustive_at_T_20_equals_a_float_enumeration():
    M = random_psd(20, 7)
    value, _ = kernels.max_sign_quadratic(M, backend="numba")
    assert value == pytest.approx(chunked_float_max(M), rel=1e-13)


def rank_two_max(V):
    """max_c ||V^T c||^2 for V (T x 2): c = sign(V u) for u between consecutive zero
    crossings of the T lines V_i . u = 0 (an exact O(T^2) method independent of enumeration)."""
    angles = np.arctan2(V[:, 1], V[:, 0]) + np.pi / 2
    breaks = np.sort(np.concatenate([angles % np.pi, angles % np.pi + np.pi]))
    mids = 0.5 * (breaks + np.roll(breaks, -1))
    mids[-1] = breaks[-1] + 0.5 * (breaks[0] + 2 * np.pi - breaks[-1])
    best = 0.0
    for theta in mids:
        c = np.where(V @ np.array([np.cos(theta), np.sin(theta)]) >= 0, 1.0, -1.0)
        best = max(best, float(np.sum((V.T @ c) ** 2)))
    return best


@pytest.mark.parametrize("T", [22, 24])
def test_exhaustive_at_T_24_equals_an_exact_rank_two_maximum(T):
    rng = np.random.default_rng(T)
    V = rng.standard_normal((T, 2))
    M = V @ V.T
    value, c = kernels.max_sign_quadratic(M, backend="numba")
    assert value == pytest.approx(rank_two_max(V), rel=1e-13)
    assert value == pytest.approx(c @ M @ c, rel=1e-14)


# --- bounds on random matrices ----------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(T=st.integers(1, 12), seed=st.integers(0, 10_000), rank=st.integers(1, 12))
def test_chain_on_random_psd_matrices(T, seed, rank):
    M = random_psd(T, seed, rank=min(rank, T))
    truth = brute_force_max(M)
    for sandwich in (exact_sandwich(M), hidden_sandwich(M, seed)):
        bounds, signs = sign_bounds.evaluate_bounds(sandwich, True)
        check_chain(bounds, truth, T)
        assert set(np.unique(signs)) <= {-1.0, 1.0}
        by = named(bounds)
        if "multistart" in by:  # (absent when the bounds were settled without it)
            assert by["exhaustive"].value >= by["multistart"].value - 1e-12 * T
        assert by["exhaustive"].value >= by["local_search"].value - 1e-12 * T


@pytest.mark.parametrize("seed", range(4))
def test_chain_without_exhaustive_and_the_shift_search_runs(seed):
    """T = 40 (no exhaustive search): the shift search must run and stay certified.

    ``M`` = a sign-vector direction plus noise, so spectral is loose but the SDP bound is
    close; the truth is bracketed by the multistart value and a local brute force."""
    T = 40
    rng = np.random.default_rng(seed)
    s = np.where(rng.standard_normal(T) >= 0, 1.0, -1.0)
    A = rng.standard_normal((T, 6))
    M = 0.5 * np.outer(s, s) / T + A @ A.T / (3 * T)
    M /= np.linalg.eigvalsh(M)[-1]
    for sandwich in (exact_sandwich(M), hidden_sandwich(M, seed)):
        bounds, _ = sign_bounds.evaluate_bounds(sandwich, False)
        by = named(bounds)
        lower = max(b.value for b in bounds if b.kind == "lower")
        assert lower <= by["diagonal_shift"].value
        assert by["diagonal_shift"].value < by["spectral"].value - 0.1
    # the certified upper bounds must cover the true maximum of M, found by ascent from s
    bounds, _ = sign_bounds.evaluate_bounds(hidden_sandwich(M, seed), False)
    v, _ = kernels.local_sign_search(M, s)
    for b in bounds:
        if b.kind == "certified upper":
            assert b.value >= v - 1e-12, b


def test_diagonal_shift_is_exact_for_a_diagonal_matrix():
    """max_c c^T diag(m) c = sum(m) = f(d = m); spectral gives T max(m)."""
    m = np.linspace(0.1, 1.0, 30)
    search = sign_bounds.minimise_diagonal_shift(np.diag(m))
    assert search.value == pytest.approx(m.sum(), rel=1e-4)
    assert search.evaluations <= sign_bounds.shift_evaluations(30)
    bound = sign_bounds.certified_shift_bound(exact_sandwich(np.diag(m)), search.d)
    assert m.sum() <= bound <= m.sum() * (1 + 1e-4)


def test_shift_search_budget_and_reproducibility():
    assert sign_bounds.shift_evaluations(100) == sign_bounds.SHIFT_MAX_EVALUATIONS
    assert sign_bounds.shift_evaluations(1000) == 35
    assert sign_bounds.shift_evaluations(10_000) == sign_bounds.SHIFT_MIN_EVALUATIONS
    M = random_psd(60, 3, rank=8)
    one = sign_bounds.minimise_diagonal_shift(M, evaluations=5)
    assert one.evaluations == 5
    assert one.value <= 60 * np.linalg.eigvalsh(M)[-1] * (1 + 1e-12)
    a, _ = sign_bounds.evaluate_bounds(exact_sandwich(M), False)
    b, _ = sign_bounds.evaluate_bounds(exact_sandwich(M), False)
    assert [x.value for x in a] == [x.value for x in b]


def test_certified_lambda_max_with_a_given_vector():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((50, 50))
    A = A + A.T - 3 * np.eye(50)  # indefinite, lambda_max of either sign
    for shift in (0.0, 30.0):
        B = A - shift * np.eye(50)
        lam = np.linalg.eigvalsh(B)[-1]
        for vector in (np.linalg.eigh(B)[1][:, -1], rng.standard_normal(50)):
            lower, upper = certified.certified_lambda_max(B, vector=vector)
            assert lower <= lam <= upper


# --- gossip instances -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kind,n,relation,T",
    [("er", 20, "random", 9), ("ring", 12, "equal", 10), ("ba", 18, "hood", 8)],
)
def test_chain_on_dense_reference_instances(kind, n, relation, T):
    G = connected_instance(kind, n, 5)
    W = gossip_matrix(G)
    i = 0
    nb = sorted(G.neighbors(i))
    target, observers = {
        "random": (n - 1, [i]),
        "equal": (i, [i]),
        "hood": (nb[0], [i, *nb]),
    }[relation]
    ref = dense_reference(W, target, observers, T)
    r = sparsedp.squared_sensitivity(W, target, observers, T, exact=False)
    check_chain(r.bounds, ref.exact, T)
    by = named(r.bounds)
    assert by.get("diagonal_shift", by["spectral"]).value >= ref.exact
    assert r.lower <= ref.exact <= r.upper
    assert r.gap == pytest.approx(r.upper - r.lower) and r.gap >= 0
    assert r.to_dict()["gap"] == r.gap


@pytest.fixture(scope="module")
def er100():
    G = nx.erdos_renyi_graph(100, 0.15, seed=1)
    return G, gossip_matrix(G)


def test_target_equal_to_observer_multistart_finds_the_exact_maximum(er100):
    """i == j: c = 1 is far from optimal; the multistart finds the exhaustive maximum at
    T = 24, which the plain local search misses."""
    _, W = er100
    r = sparsedp.squared_sensitivity(W, 0, [0], 24)
    assert r.exact is not None and r.exact_error < 1e-8
    assert "multistart" not in {b.name for b in r.bounds}  # the exhaustive search settles it
    searched = sparsedp.squared_sensitivity(W, 0, [0], 24, exact=False)
    by = {b.name: b.value for b in searched.bounds}
    assert by["ones"] < 0.7 * r.exact
    assert by["local_search"] < r.exact - 1e-3
    assert by["multistart"] == pytest.approx(r.exact, rel=1e-10)


def test_neighbourhood_view_shift_and_multistart_close_the_gap(er100):
    """Observers = closed neighbourhood of i, target a neighbour: at T = 100 the diagonal
    shift cuts the spectral bound (100) to within 0.1 % of the multistart lower bound, and
    the multistart beats c = 1 and the plain local search."""
    G, W = er100
    i = 0
    nb = sorted(G.neighbors(i))
    r = sparsedp.squared_sensitivity(W, nb[0], [i, *nb], 100)
    by = {b.name: b.value for b in r.bounds}
    assert by["multistart"] > by["local_search"] + 0.1 > by["ones"] + 1.0
    assert by["diagonal_shift"] < by["spectral"] - 2.0
    assert r.upper == by["diagonal_shift"] and r.lower == by["multistart"]
    assert r.relative_gap < 1e-3


@pytest.mark.parametrize("seed", range(4))
def test_entrywise_nonnegative_low_gives_the_local_searches_value_without_running_them(seed):
    """For low >= 0 entrywise, c = 1 is the best sign vector, so the local-search and
    multistart lower bounds are 1^T low 1 (what the searches return, to rounding) and
    agree with the exhaustive search."""
    rng = np.random.default_rng(seed)
    B = rng.random((12, 12))
    M = B @ B.T + np.diag(rng.random(12))  # PSD and entrywise positive
    sandwich = exact_sandwich(M)
    bounds, signs = sign_bounds.evaluate_bounds(sandwich, True)
    value = {b.name: b.value for b in bounds}
    searched, _ = kernels.local_sign_search(M, np.stack([np.ones(12), -np.ones(12)]))
    assert value["local_search"] == pytest.approx(searched - sandwich.quadratic_slack(),
                                                  rel=1e-12)
    assert value["local_search"] == pytest.approx(brute_force_max(M), rel=1e-12)
    assert np.all(signs == 1)


def test_first_pair_by_lanczos_at_large_T_or_lapack_for_a_top_cluster():
    """Past ``ONE_PAIR_FIRST_MAX_T`` the top pair comes from Lanczos when its residual is
    small (a separated top eigenvalue: the same pair as LAPACK's), and LAPACK's top k pairs
    come instead for a tight top cluster, where Lanczos does not converge
    in its few restarts (two top eigenvalues 1e-7 apart)."""
    T = 300
    rng = np.random.default_rng(5)
    Q = np.linalg.qr(rng.standard_normal((T, T)))[0]
    M = (Q * np.geomspace(1.0, 1e-6, T)) @ Q.T
    lam, V = sign_bounds._first_pairs(M, 32, "auto")
    assert lam.shape == (1,)
    assert lam[0] == pytest.approx(1.0, rel=1e-12)
    assert abs(V[:, 0] @ Q[:, 0]) == pytest.approx(1.0, rel=1e-10)
    spectrum = np.concatenate([[1.0, 1.0 - 1e-7], np.linspace(0.99, 0.5, T - 2)])
    cluster = (Q * spectrum) @ Q.T
    lam, V = sign_bounds._first_pairs(cluster, 32, "auto")
    assert lam.shape == (32,)
    np.testing.assert_allclose(lam, np.linalg.eigvalsh(cluster)[-32:], rtol=1e-13)


@pytest.mark.parametrize("seed", slow_after(range(3), 1))
def test_bounds_at_large_T_agree_with_the_lapack_first_pairs(seed, monkeypatch):
    """The Lanczos first pair only steers: at T = 200 every bound equals, to rounding, the
    one computed with LAPACK's top pairs, and the chain holds against the exhaustive-free
    truth bracket (an entrywise positive PSD M, whose maximum is 1^T M 1)."""
    T = 200
    rng = np.random.default_rng(seed)
    B = rng.random((T, 3))
    M = B @ B.T / T + np.diag(rng.random(T)) * 1e-3
    sandwich = hidden_sandwich(M, seed)
    fast = named(sign_bounds.evaluate_bounds(sandwich, False)[0])
    monkeypatch.setattr(sign_bounds, "_first_pairs",
                        lambda up, k, backend: sign_bounds.top_pairs(up, k))
    slow = named(sign_bounds.evaluate_bounds(sandwich, False)[0])
    assert fast.keys() == slow.keys()
    for name in fast:
        assert fast[name].value == pytest.approx(slow[name].value, rel=1e-9), name
    truth = float(M.sum())
    check_chain(list(fast.values()), truth, T)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("row_sums_only", [False, True])
@pytest.mark.parametrize("tight", [False, True])
def test_spectral_bounds_charge_a_one_row_model_error_by_its_total(seed, row_sums_only, tight):
    """A model error concentrated in one row and column, aimed along the maximiser s (``s^T E
    s = sum |E_ij|``): the spectral and diagonal-shift bounds charge it its total (T times
    its largest row sum is about T / 2 times more), and every certified upper bound still
    covers the true maximum of ``c^T M c``.  ``tight``: ``low = s s^T / (2 T)`` (rank one
    along s; M <= I as the ``local_dp`` bound assumes), so the spectral bound ``T
    lambda_max(up) + allowance`` equals the true maximum ``T / 2 + sum |E_ij|`` up to the
    allowance's rounding: without the model's charge it would fall below."""
    T = 10
    if tight:
        s = np.where(np.random.default_rng(seed).random(T) < 0.5, -1.0, 1.0)
        low = np.outer(s, s) / (2 * T)
    else:
        low = random_psd(T, 3, seed)
        s = kernels.max_sign_quadratic(low, backend="numpy")[1]
    delta = 0.02 * float(s @ low @ s) / T
    E = np.zeros((T, T))
    E[0, :] = E[:, 0] = delta * s[0] * s
    B = np.abs(E)
    model = B.sum(axis=1, keepdims=True) if row_sums_only else B
    sandwich = MatrixSandwich(low=low, excess=np.zeros_like(low), eta_low=0.0,
                              eta_excess=0.0, model=model)
    assert sandwich.sign_vector_allowance < 0.5 * T * sandwich.eta_model
    M = low + E
    assert s @ E @ s == pytest.approx(B.sum())  # aimed along the maximiser of low
    truth = brute_force_max(M)
    bounds, _ = sign_bounds.evaluate_bounds(sandwich, True)
    uppers = {b.name: b.value for b in bounds if b.kind == "certified upper"}
    assert {"spectral", "exhaustive_upper", "entrywise"} <= set(uppers)
    assert all(v >= truth * (1 - 1e-12) for v in uppers.values())
    if tight:
        assert truth == pytest.approx(T / 2 + B.sum(), rel=1e-12)
        assert uppers["spectral"] == pytest.approx(truth, rel=1e-12)


def test_square_wave_optimum_leaves_the_sdp_integrality_gap_open():
    """A Toeplitz PSD M whose symbol peaks at period 8 (the adjacent pairs of clustered and
    geometric graphs, docs/bounds.md): the sign maximum (brute force, T = 16) is a square
    wave, the SDP optimum lies strictly above it (by 17 %), and the searched
    diagonal shift, an SDP dual point, stays at or above that optimum, so the reported
    interval contains the maximum but cannot close; the exhaustive search closes it."""
    T, period = 16, 8
    lags = np.subtract.outer(np.arange(T), np.arange(T))
    M = np.cos(2 * np.pi * lags / period) + 0.1 * np.exp(-np.abs(lags))  # both PSD
    M /= np.linalg.eigvalsh(M)[-1]
    truth = brute_force_max(M)
    sandwich = exact_sandwich(M)
    sdp = {b.name: b.value for b in vector_bounds(sandwich)}
    assert sdp["sdp_primal"] > 1.15 * truth  # the relaxation's value, above every sign vector
    bounds, signs = sign_bounds.evaluate_bounds(sandwich, do_exact=False, backend="numpy")
    by = {b.name: b.value for b in bounds}
    assert by["diagonal_shift"] >= sdp["sdp_primal"] * (1 - 1e-9)
    assert by["multistart"] == pytest.approx(truth, rel=1e-12)
    assert np.count_nonzero(np.diff(signs)) >= 3  # a square wave, not c = 1
    exact, _ = sign_bounds.evaluate_bounds(sandwich, do_exact=True, backend="numpy")
    assert min(b.value for b in exact if b.kind == "certified upper") == pytest.approx(
        truth, rel=1e-12)
