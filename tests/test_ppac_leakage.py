"""Leakage I(D_i(t); u_j): the scalable leverage computation against exact rational
arithmetic, the paper's Thm 6.6 formula (dense, exact informative rows) and a Monte-Carlo
estimate from the simulator."""

import itertools
import json
import math
from fractions import Fraction

import networkx as nx
import numpy as np
import pytest

from sparsedp.cli.ppac import example_graph
from sparsedp.errors import GraphError, ParameterError
from sparsedp.graphs.generators import ring
from sparsedp.graphs.graph import as_graph
from sparsedp.graphs.weights import gossip_matrix
from sparsedp.linalg.exact_rank import IntegerEchelon
from sparsedp.ppac import (
    generalised_leaves,
    laplacian_consensus_matrix,
    leakage,
    leakage_monte_carlo,
    leakage_noise_limit,
    leakage_theorem_6_6,
    ppac_layout,
    random_designated,
)
from sparsedp.ppac.exact import exact_observation_rows, rational_matrix
from sparsedp.ppac.structure import informative_sequence
from tests.conftest import slow_after

from .test_ppac_protocol import leafy_graph, random_connected


def rational_leakage(layout, W, i, j, horizon, value_std, noise_std) -> float:
    """Independent exact reference: ``h = s_j^2 a^T (R S R^T)^{-1} a`` in rational arithmetic
    on the exact informative rows (variances are the floats' exact binary values)."""
    seq = informative_sequence(layout, W, i, horizon)
    if j in seq.recoverable:
        return math.inf
    var = [Fraction(float(x)) ** 2 for x in layout.source_std(value_std, noise_std)]
    R = [[Fraction(int(x)) for x in row] for _, row in seq.rows]
    k = len(R)
    M = [[sum(R[a][c] * var[c] * R[b][c] for c in range(len(var))) for b in range(k)]
         + [R[a][j]] for a in range(k)]
    for c in range(k):  # Gauss-Jordan
        p = next(r for r in range(c, k) if M[r][c] != 0)
        M[c], M[p] = M[p], M[c]
        for r in range(k):
            if r != c and M[r][c] != 0:
                f = M[r][c] / M[c][c]
                M[r] = [x - f * y for x, y in zip(M[r], M[c], strict=True)]
    h = var[j] * sum(R[r][j] * M[r][k] / M[r][r] for r in range(k))
    return -0.5 * math.log(1 - h)


def case(seed: int, leafy: bool = False):
    G = leafy_graph(seed) if leafy else random_connected(seed, (5, 10), (0.25, 0.6))
    g = as_graph(G)
    layout = ppac_layout(g, random_designated(g, seed=seed))
    W = laplacian_consensus_matrix(g) if seed % 2 else gossip_matrix(g, "metropolis")
    return g, layout, W


@pytest.mark.parametrize("seed", slow_after(range(8), 3))
@pytest.mark.parametrize("horizon", [0, 2, math.inf])
def test_scalable_leakage_agrees_with_theorem_6_6(seed, horizon):
    g, layout, W = case(seed, leafy=seed % 3 == 0)
    rng = np.random.default_rng(seed)
    value_std = rng.uniform(0.5, 3.0, g.n)
    noise_std = rng.uniform(0.5, 3.0, layout.num_sources)
    i = int(rng.integers(g.n))
    kw = dict(value_std=value_std, noise_std=noise_std)
    exact = leakage(layout, W, i, horizon, exact=True, **kw)
    floating = leakage(layout, W, i, horizon, exact=False, **kw) \
        if horizon != math.inf else exact
    for k, j in enumerate(exact.victims):
        paper = leakage_theorem_6_6(layout, W, i, int(j), horizon, **kw)
        ref = rational_leakage(layout, W, i, int(j), horizon, **kw)
        assert math.isinf(paper) == math.isinf(ref)
        if not math.isinf(ref):
            assert paper == pytest.approx(ref, rel=1e-6)  # dense formula: limited accuracy
        for result in (exact, floating):
            value = result.nats[k]
            if math.isinf(ref):
                assert math.isinf(value)
            else:
                assert value == pytest.approx(ref, rel=1e-10, abs=1e-14)
        assert (exact.kind[k] == "exact") == math.isinf(ref)


def test_monte_carlo_agrees_on_the_papers_example():
    """Tolerance: 5 standard errors of the regression estimate (N = 20000)."""
    g, designated = example_graph()
    layout = ppac_layout(g, designated)
    W = laplacian_consensus_matrix(g)
    i, j = 4, 1  # node labels of the paper's example (1..6)
    for horizon in (0, 1):
        ref = leakage_theorem_6_6(layout, W, i, j, horizon, value_std=1.0, noise_std=1.5)
        scalable = leakage(layout, W, i, horizon, value_std=1.0, noise_std=1.5).value(j)
        est, se = leakage_monte_carlo(layout, W, i, j, horizon, value_std=1.0, noise_std=1.5,
                                      samples=20_000, seed=horizon)
        assert scalable == pytest.approx(ref, rel=1e-10)
        assert abs(est - ref) <= 5 * se


def test_monte_carlo_sees_the_recovery_of_a_generalised_leaf():
    g = as_graph(leafy_graph(0))
    head, tail = generalised_leaves(g)[0]
    layout = ppac_layout(g, random_designated(g, seed=0))
    W = laplacian_consensus_matrix(g)
    result = leakage(layout, W, tail, 0, victims=[head])
    assert math.isinf(result.nats[0]) and result.kind[0] == "exact"
    assert json.loads(json.dumps(result.to_dict()))["nats"] == ["infinity"]
    est, _ = leakage_monte_carlo(layout, W, tail, head, 0, samples=2000, seed=0)
    assert est > 10  # residual variance at rounding level


@pytest.mark.parametrize("seed", range(6))
def test_graphs_without_generalised_leaves_leak_finitely(seed):
    g, layout, W = next(c for c in (case(s) for s in itertools.count(50 + 100 * seed))
                        if not generalised_leaves(c[0]))
    for i in range(g.n):
        r = leakage(layout, W, i, math.inf)
        assert np.all(np.isfinite(r.nats)) and np.all(r.nats >= 0)


def test_noise_limit_and_monotonicity():
    g, designated = example_graph()
    layout = ppac_layout(g, designated)
    W = laplacian_consensus_matrix(g)
    i, j = 4, 1  # node labels of the paper's example (1..6)
    values = [leakage(layout, W, i, math.inf, value_std=10.0, noise_std=s).value(j)
              for s in (15.0, 150.0, 1.5e3, 1.5e4, 1.5e6)]
    assert all(a > b for a, b in zip(values, values[1:], strict=False))
    limit = leakage_noise_limit(layout, W, i, j, value_std=10.0)
    assert values[-1] == pytest.approx(limit, rel=1e-9)
    assert limit == pytest.approx(0.5 * math.log(2.0), rel=1e-12)


def test_even_cycle_periodic_matrix_gives_the_lazy_leakage():
    g = ring(12)
    layout = ppac_layout(g, random_designated(g, seed=0))
    paper = leakage(layout, laplacian_consensus_matrix(g), 0, math.inf, noise_std=15.0)
    lazy = leakage(layout, laplacian_consensus_matrix(g, scale=3), 0, math.inf, noise_std=15.0)
    np.testing.assert_allclose(paper.nats, lazy.nats, rtol=1e-9)


def test_float_path_matches_exact_path_on_a_larger_graph():
    G = nx.random_regular_graph(4, 60, seed=2)
    g = as_graph(G)
    layout = ppac_layout(g, random_designated(g, seed=2))
    W = laplacian_consensus_matrix(g, scale=5)
    a = leakage(layout, W, 0, 6, exact=True, noise_std=3.0)
    b = leakage(layout, W, 0, 6, exact=False, noise_std=3.0)
    np.testing.assert_allclose(a.nats, b.nats, rtol=1e-9)
    assert a.rank == b.rank


def test_refusals():
    g, designated = example_graph()
    layout = ppac_layout(g, designated)
    W = laplacian_consensus_matrix(g)
    with pytest.raises(ParameterError, match="attacker 1 is among the victims"):
        leakage(layout, W, 1, 3, victims=[1])
    with pytest.raises(ParameterError, match="victim 2 is the attacker"):
        leakage_theorem_6_6(layout, W, 2, 2, 3)
    with pytest.raises(ParameterError, match="horizon"):
        leakage(layout, W, 1, -1)
    with pytest.raises(GraphError, match="unknown node id 0 for attacker"):
        leakage(layout, W, 0, 3)  # the example's labels are 1..6
    big = ppac_layout(ring(30_000), random_designated(ring(30_000), seed=0))
    with pytest.raises(ParameterError, match="finite horizon"):
        leakage(big, laplacian_consensus_matrix(ring(30_000), scale=3), 0, math.inf)


@pytest.mark.parametrize("n", [8, 10, 14])
def test_bipartite_noise_floor_is_the_colour_class_sum(n):
    """On a bipartite graph the alternating vector z has z^T v(0) = -sum_k z_k u_k free of
    noise (m_k and every l in N_k share a colour), so with the total the attacker learns the
    sum of each colour class: the large-noise limit is 1/2 log(1 + 1/(c - 1)) with c the
    number of unknown values in the victim's class -- not the paper's 1/2 log(1 + 1/(n - 1))."""
    g = ring(n)
    layout = ppac_layout(g, random_designated(g, seed=n))
    W = laplacian_consensus_matrix(g, scale=3)
    other = leakage_noise_limit(layout, W, 0, 1, value_std=2.0)
    same = leakage_noise_limit(layout, W, 0, 2, value_std=2.0)
    assert other == pytest.approx(0.5 * math.log1p(1 / (n // 2 - 1)), rel=1e-12)
    assert same == pytest.approx(0.5 * math.log1p(1 / (n // 2 - 2)), rel=1e-12)


def test_auto_falls_back_to_floats_for_irrational_weights():
    g = ring(7)
    layout = ppac_layout(g, random_designated(g, seed=0))
    W = laplacian_consensus_matrix(g, scale=math.pi)
    r = leakage(layout, W, 0, 4)
    assert any("floating point used" in note for note in r.notes)
    ref = leakage(layout, laplacian_consensus_matrix(g, scale=3), 0, 4)  # same span
    np.testing.assert_allclose(r.nats, ref.nats, rtol=1e-9)
    with pytest.raises(ParameterError, match="exact arithmetic is unavailable"):
        leakage(layout, W, 0, 4, exact=True)


@pytest.mark.parametrize("seed", range(6))
def test_a_horizon_past_n_minus_1_is_the_infinite_horizon(seed):
    """Cayley-Hamilton (Prop. 6.3): the exact rank of every observation row up to t = n + 3
    equals that up to t = n - 1, so a horizon of 10^9 is evaluated at n - 1 (no loop) and
    gives the infinite horizon's values."""
    g, layout, W = case(seed, leafy=seed % 3 == 0)
    i = seed % g.n
    W_int, _ = rational_matrix(W)
    ranks = []
    for rounds in (g.n - 1, g.n + 3):
        echelon = IntegerEchelon(layout.num_sources)
        for _, row in exact_observation_rows(layout, W_int, i, rounds):
            echelon.add(row)
        ranks.append(echelon.rank)
    assert ranks[0] == ranks[1]
    huge, infinite = leakage(layout, W, i, 10**9), leakage(layout, W, i, math.inf)
    np.testing.assert_array_equal(huge.nats, infinite.nats)
    assert huge.horizon == 10**9 and infinite.horizon is None
