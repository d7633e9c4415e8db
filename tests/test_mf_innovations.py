"""DP-D-SGD under PNDP in innovation form (sparsedp.mf.innovations) against the dense reference
of Bellet et al.'s App. A and against the gossip engine's path (the previous implementation)."""

import itertools
import subprocess
import sys

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

import sparsedp
from sparsedp.mf import cyclic, mf_sensitivity, single_use, trust, user_level
from sparsedp.mf.innovations import (
    InnovationOperator,
    innovation_memory,
    innovation_sandwich,
    preferred,
)
from sparsedp.mf.summary import distance_summary
from sparsedp.testing import dense_mf_sensitivity
from tests.conftest import slow_after
from tests.test_mf import GRAPHS, _check_against, _graph

T = 4
SCHEMES = [single_use(), user_level(), cyclic(2, 2)]


@pytest.mark.parametrize("graph,trust_model", list(itertools.product(
    GRAPHS, ["pndp", "pndp-eq12"])))
def test_innovations_against_dense_reference(graph, trust_model):
    """lower <= exact <= upper, Thm 7 to 1e-8, exact (scalar) to 1e-7, vector interval meets
    the reference SDP bracket; with and without self-loops (the attacker hidden under eq. 12
    when W[a, a] = 0), a coalition of two, Metropolis weights."""
    W, (target, attackers) = _graph(graph)
    for scheme in SCHEMES:
        ref = dense_mf_sensitivity(W, target, T, scheme.patterns(T), trust=trust_model,
                                   attackers=attackers)
        res = mf_sensitivity(W, target, attackers, T, trust_model=trust_model,
                             participation_scheme=scheme, gradients="scalar",
                             method="innovations")
        vector = mf_sensitivity(W, target, attackers, T, trust_model=trust_model,
                                participation_scheme=scheme, method="innovations")
        assert res.method == vector.method == "innovations"
        _check_against(res, ref, f"{graph} {trust_model} {scheme.name}", vector)


def _instances():
    """20 graphs with hubs and low-degree nodes: (W, target, attackers)."""
    out = []
    for seed in range(20):
        rng = np.random.default_rng(seed)
        n = int(rng.integers(30, 70))
        G = nx.powerlaw_cluster_graph(n, 2, 0.3, seed=seed) if seed % 2 else \
            nx.barabasi_albert_graph(n, 2, seed=seed)
        scheme = "metropolis" if seed % 4 == 3 else "row-normalised-self-loops"
        W = sparsedp.gossip_matrix(G, scheme=scheme)
        degrees = np.array([d for _, d in sorted(G.degree())])
        hub, low = int(degrees.argmax()), int(degrees.argmin())
        attackers = [hub] if seed % 3 == 0 else [low] if seed % 3 == 1 else [hub, low]
        target = int(rng.choice(np.setdiff1d(np.arange(n), attackers)))
        out.append((W, target, attackers))
    return out


@pytest.mark.parametrize("index", slow_after(range(20), 6))
def test_innovations_equal_the_gossip_engine(index):
    """The same certified interval as the gossip engine's path (the previous implementation),
    to 1e-8 relative, hub and low-degree attackers, both PNDP models, T = 8, vector
    gradients and (6, 1)-cyclic scalar gradients."""
    W, target, attackers = _instances()[index]
    for trust_model, (gradients, scheme) in itertools.product(
            ["pndp", "pndp-eq12"], [("vector", "user-level"), ("scalar", cyclic(6, 1))]):
        new = mf_sensitivity(W, target, attackers, 8, trust_model=trust_model,
                             gradients=gradients, participation_scheme=scheme,
                             method="innovations")
        old = mf_sensitivity(W, target, attackers, 8, trust_model=trust_model,
                             gradients=gradients, participation_scheme=scheme, method="gram")
        what = (index, trust_model, gradients, old.lower, old.upper, new.lower, new.upper)
        assert new.lower <= old.upper * (1 + 1e-12) and old.lower <= new.upper * (1 + 1e-12), what
        for a, b in [(new.lower, old.lower), (new.upper, old.upper), (new.thm7, old.thm7)]:
            assert abs(a - b) <= 1e-8 * abs(b) + 1e-14, what


def test_operator_adjoint_and_target_columns():
    """<F z, y> = <z, F^T y> and G = F E_u against the explicit messages of the recursion."""
    G = nx.powerlaw_cluster_graph(40, 2, 0.3, seed=1)
    W = sp.csr_matrix(sparsedp.gossip_matrix(G, scheme="row-normalised-self-loops"))
    obs = trust.resolve("pndp", W, 39, [0])
    op = InnovationOperator.build(W, obs.observed, obs.known_noise, 6)
    hidden = np.zeros(40)
    hidden[op.hidden_nodes] = 1.0
    np.testing.assert_array_equal(hidden[obs.observed], 0.0)
    assert op.hidden_nodes.size + obs.observed.size == 40
    rng = np.random.default_rng(0)
    z = rng.normal(size=(6, op.hidden_nodes.size, 3))
    y = rng.normal(size=(6, op.m, 3))
    assert np.isclose(np.sum(op.forward(z) * y), np.sum(z * op.adjoint(y)), rtol=1e-12)
    hidden_target = int(op.hidden_nodes[-1])
    Gu, error = op.target_columns(hidden_target)
    Wd = W.toarray()
    for tau in range(6):  # s_r = W s_(r-1) + e_tau [r = tau], seen through W_OU only
        s, expected = np.zeros(40), np.zeros((6, op.m))
        for r in range(6):
            if r > 0:
                expected[r] = (Wd[op.rows] * hidden) @ s
            s = (Wd @ s) * hidden if r > 0 else s
            if r == tau:
                s[hidden_target] += 1.0
        np.testing.assert_allclose(Gu[:, :, tau], expected, rtol=1e-13, atol=1e-15)
    assert 0 < error < 1e-12


def _dense_innovation_M(W, target: int, obs, T: int) -> np.ndarray:
    """``M = G^T (I + F F^T)^{-1} G`` from the module docstring's definitions, densely: the
    lags ``W_O'U W_UU^j`` by matrix powers, F block lower-triangular Toeplitz in time, G the
    target's columns of F (hidden target) or unit rows (observed target)."""
    Wd = W.toarray()
    hidden = np.setdiff1d(np.arange(Wd.shape[0]), obs.observed)
    rows = np.setdiff1d(obs.observed, obs.known_noise)
    m, h = rows.size, hidden.size
    lags = [Wd[np.ix_(rows, hidden)] @ np.linalg.matrix_power(Wd[np.ix_(hidden, hidden)], j)
            for j in range(T)]
    F = np.zeros((T * m, T * h))
    for r, s in itertools.product(range(T), range(T)):
        if r > s:
            F[r * m:(r + 1) * m, s * h:(s + 1) * h] = lags[r - 1 - s]
    if target in rows:
        G = np.zeros((T * m, T))
        G[np.arange(T) * m + np.searchsorted(rows, target), np.arange(T)] = 1.0
    else:
        G = F[:, np.arange(T) * h + np.searchsorted(hidden, target)]
    return G.T @ np.linalg.solve(np.eye(T * m) + F @ F.T, G)


def test_hub_pair_against_the_dense_innovation_form():
    """The hub as attacker (issue 35's pair) on a 150-node power-law cluster graph, T = 12:
    the certified sandwich of the innovation form (block CG on the hidden-node operator)
    contains M formed densely from its definition, in the Loewner order, and its lower side
    is within 1e-9 of it; a far hidden target, a target two hops from the hub and an
    observed one (a neighbour of the hub)."""
    graph = nx.powerlaw_cluster_graph(150, 3, 0.2, seed=2)
    W = sp.csr_matrix(sparsedp.gossip_matrix(graph, scheme="row-normalised-self-loops"))
    hops = nx.single_source_shortest_path_length(graph, hub := max(graph, key=graph.degree))
    T = 12
    targets = [max(hops, key=hops.get), next(v for v, d in hops.items() if d == 2),
               next(v for v, d in hops.items() if d == 1)]
    for target in targets:
        obs = trust.resolve("pndp", W, target, [hub])
        sandwich, info = innovation_sandwich(W, target, obs, T)
        M = _dense_innovation_M(W, target, obs, T)
        scale = np.abs(M).max()
        tolerance = 1e-12 * scale  # the dense reference's own rounding
        eye = np.eye(T)
        assert np.linalg.eigvalsh(M - sandwich.low + sandwich.eta * eye).min() >= -tolerance
        assert np.linalg.eigvalsh(sandwich.up + sandwich.eta * eye - M).min() >= -tolerance
        assert np.abs(sandwich.low - M).max() <= 1e-9 * scale, (target, info)
        assert info["converged"] and info["observed_rows"] == T * graph.degree(hub)


def test_a_target_out_of_reach_has_zero_sensitivity_without_a_solve():
    """A hidden target whose impulse reaches no observed row within T rounds (a 12-node path,
    attacker at one end, target at the other, T <= 10) has G = 0: M = 0 exactly, no
    application of K; the first T where it is reached agrees with the Gram route."""
    W = sparsedp.gossip_matrix(nx.path_graph(12), scheme="row-normalised-self-loops")
    for T in (1, 2, 10):
        r = mf_sensitivity(W, 11, [0], T, method="innovations")
        assert (r.lower, r.upper, r.solver["iterations"]) == (0.0, 0.0, 0), T
    r = mf_sensitivity(W, 11, [0], 11, method="innovations")
    g = mf_sensitivity(W, 11, [0], 11, method="gram")
    assert r.solver["iterations"] > 0 and r.lower > 0
    assert r.lower == pytest.approx(g.lower, rel=1e-9) and r.upper == pytest.approx(g.upper,
                                                                                   rel=1e-9)


def test_auto_prefers_innovations_for_many_observed_rows():
    """The cost model: the engine for an ER-like attacker, innovations for a hub."""
    assert not preferred(10**4, 2 * 10**5, 11, 20)
    assert preferred(10**4, 2 * 10**5, 188, 20)
    G = nx.star_graph(400)  # the centre observes every leaf: m = 401
    W = sparsedp.gossip_matrix(G, scheme="row-normalised-self-loops")
    assert mf_sensitivity(W, 1, [0], 5).method == "innovations"
    assert mf_sensitivity(W, 1, [2], 5).method != "innovations"


def test_auto_shares_the_gram_over_the_targets_of_a_summary():
    """Amortised over a summary's targets the shared Gram wins where a single query takes the
    innovation form (the hub above with 9999 targets; a 40-node star at T = 2, where the
    per-target dense solve is small); both are certified, and the summary's values equal the
    single queries'."""
    assert not preferred(10**4, 2 * 10**5, 188, 20, queries=9999)
    W = sparsedp.gossip_matrix(nx.star_graph(39), scheme="row-normalised-self-loops")
    assert preferred(40, W.nnz, 40, 2) and not preferred(40, W.nnz, 40, 2, queries=39)
    summary = distance_summary(W, [0], 2, gradients="scalar")
    singles = [mf_sensitivity(W, u, [0], 2, gradients="scalar") for u in summary.targets]
    assert {r.method for r in singles} == {"innovations"}
    assert "innovations" not in {r.method for r in summary.results}
    for shared, single in zip(summary.results, singles, strict=True):
        for field in ("thm7", "upper", "lower"):
            assert getattr(shared, field) == pytest.approx(getattr(single, field),
                                                           rel=1e-9, abs=1e-12)


MEMORY_SCRIPT = """
import sys, tracemalloc, networkx as nx, numpy as np, sparsedp
from sparsedp.mf import trust
from sparsedp.mf.innovations import innovation_sandwich, innovation_memory, InnovationOperator
from tests.conftest import slow_after
G = nx.powerlaw_cluster_graph(3000, 10, 0.1, seed=3)
W = sparsedp.gossip_matrix(G, scheme="row-normalised-self-loops")
hub = int(np.argmax([d for _, d in sorted(G.degree())]))
obs = trust.resolve("pndp", W, 2999, [hub])
m = InnovationOperator.build(W, obs.observed, obs.known_noise, 20).m
innovation_sandwich(W, 2999, obs, 4)  # compile and warm up outside the measurement
tracemalloc.start()
innovation_sandwich(W, 2999, obs, 20)
print(tracemalloc.get_traced_memory()[1], innovation_memory(3000, W.nnz, m, 20), m)
"""


@pytest.mark.slow  # a subprocess at n = 3000
def test_memory_estimate_is_above_the_measured_peak():
    """innovation_memory >= tracemalloc's peak of the solve (hub attacker, 3000 nodes)."""
    out = subprocess.run([sys.executable, "-c", MEMORY_SCRIPT], capture_output=True,
                         text=True, check=True).stdout.split()
    peak, estimate, m = (int(x) for x in out)
    assert m > 100 and peak <= estimate, (peak, estimate, m)
    assert innovation_memory(10**4, 2 * 10**5, 713, 20) < 2**28  # hub of the 10^4 graph


def test_memory_budget_refuses_in_one_line():
    G = nx.star_graph(400)
    W = sparsedp.gossip_matrix(G, scheme="row-normalised-self-loops")
    with pytest.raises(sparsedp.errors.ResourceLimitError, match="innovation form"):
        mf_sensitivity(W, 1, [0], 5, max_memory="64K")
