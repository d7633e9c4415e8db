"""Generalised leaves, privacy certificates and the informative sequence against exact
arithmetic and brute force."""

import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparsedp.errors import ParameterError
from sparsedp.graphs.generators import ring
from sparsedp.graphs.graph import as_graph
from sparsedp.graphs.weights import gossip_matrix
from sparsedp.ppac import (
    delayed_recovery,
    generalised_leaves,
    informative_sequence,
    is_generalised_leaf,
    laplacian_consensus_matrix,
    pair_status,
    ppac_layout,
    random_designated,
    victim_status,
)
from sparsedp.ppac.exact import rational_matrix
from tests.conftest import slow_after

from .test_ppac_protocol import leafy_graph, random_connected


def brute_force_leaves(G: nx.Graph) -> list[tuple[int, int]]:
    """Def. 6.7 read literally."""
    out = []
    for j in G:
        for i in G:
            if i != j and all(G.degree(s) == 2 and G.has_edge(s, i)
                              for s in G.neighbors(j) if s != i):
                out.append((j, i))
    return sorted(out)


@settings(max_examples=60, deadline=None)
@given(st.integers(3, 9), st.floats(0.1, 0.9), st.integers(0, 2**30))
def test_generalised_leaves_match_the_definition(n, p, seed):
    G = nx.gnp_random_graph(n, p, seed=seed)
    if not nx.is_connected(G):
        return
    g = as_graph(G)
    expected = brute_force_leaves(G)
    assert generalised_leaves(g) == expected
    for j, i in expected:
        assert is_generalised_leaf(g, j, i)
        assert pair_status(g, i, j) == "recoverable"
    for i in range(n):
        status = victim_status(g, i)
        assert [j for j in range(n) if status[j] == "recoverable"] == \
            [j for j, t in expected if t == i]


def test_cycles_without_leaves_and_known_small_cases():
    for n in range(5, 12):
        assert generalised_leaves(ring(n)) == []
    assert set(generalised_leaves(ring(4))) == {(j, (j + 2) % 4) for j in range(4)}
    assert (0, 1) in generalised_leaves(as_graph(nx.path_graph(3)))
    with pytest.raises(ParameterError, match="victim 2 is the attacker"):
        pair_status(ring(5), 2, 2)


def exact_case(seed: int, leafy: bool):
    G = leafy_graph(seed) if leafy else random_connected(seed, (4, 9), (0.25, 0.6))
    g = as_graph(G)
    layout = ppac_layout(g, random_designated(g, seed=seed))
    return g, layout


@pytest.mark.parametrize("seed", slow_after(range(10), 4))
@pytest.mark.parametrize("leafy", [False, True])
def test_structure_agrees_with_exact_rank(seed, leafy):
    """Generalised leaf => exact recovery; certificate => never; delayed recovery => recovery;
    graphs without generalised leaves => every pair finite (Thm 6.8)."""
    g, layout = exact_case(seed, leafy)
    schemes = [laplacian_consensus_matrix(g), gossip_matrix(g, "metropolis")]
    no_leaves = not generalised_leaves(g)
    for W in schemes:
        for i in range(g.n):
            status = victim_status(g, i)
            for horizon in (0, 1, 2, math.inf):
                rec = set(informative_sequence(layout, W, i, horizon).recoverable)
                for j in range(g.n):
                    if j == i:
                        continue
                    if status[j] == "recoverable":
                        assert j in rec
                    elif status[j] == "private":
                        assert j not in rec
                    elif delayed_recovery(g, W, i, j, 10**9 if horizon == math.inf
                                          else horizon):
                        assert j in rec
                    if no_leaves:
                        assert j not in rec


def test_undetermined_pair_recovered_one_round_late():
    """N_j = {i, s} with s a leaf of j: not a generalised leaf (deg s = 1), no certificate;
    exact arithmetic shows privacy at t = 0 and exact recovery from t = 1."""
    G = nx.cycle_graph(6)
    G.add_edges_from([(0, 6), (6, 7)])  # j = 6 hangs off i = 0 and carries the leaf 7
    g = as_graph(G)
    i, j = 0, 6
    assert pair_status(g, i, j) == "undetermined"
    assert not is_generalised_leaf(g, j, i)
    layout = ppac_layout(g, random_designated(g, seed=0))
    W = laplacian_consensus_matrix(g)
    assert j not in informative_sequence(layout, W, i, 0).recoverable
    assert j in informative_sequence(layout, W, i, 1).recoverable
    assert delayed_recovery(g, W, i, j, 1) and not delayed_recovery(g, W, i, j, 0)


@pytest.mark.parametrize("seed", range(8))
def test_informative_sequence_propositions(seed):
    """Prop. 6.3: t_k <= deg(mu_W) - 1 <= n - 1; Prop. 6.4: t_k >= ecc(i) - 2; the own and
    received rows are all independent (rank >= 2 deg(i))."""
    G = random_connected(300 + seed, (4, 10), (0.2, 0.5))
    g = as_graph(G)
    layout = ppac_layout(g, random_designated(g, seed=seed))
    W = laplacian_consensus_matrix(g)
    for i in range(g.n):
        seq = informative_sequence(layout, W, i)
        assert seq.horizon is None
        assert seq.last_time <= g.n - 1
        assert seq.last_time >= nx.eccentricity(G, i) - 2
        assert seq.rank == 2 * g.degrees[i] + len(seq.sequence)
        finite = informative_sequence(layout, W, i, seq.last_time)
        assert finite.sequence == seq.sequence  # nothing new after t_k


def test_leakage_does_not_depend_on_the_laplacian_scale():
    """span{(I - L/c)^s, s <= t} = span{L^s, s <= t}: same informative sequence for every c,
    so the periodic paper matrix on an even cycle gives the same leakage as a lazy one."""
    g = ring(10)
    layout = ppac_layout(g, random_designated(g, seed=4))
    for i in (0, 3):
        seqs = {c: informative_sequence(layout, laplacian_consensus_matrix(g, scale=c), i)
                for c in (2, 3, 7)}
        assert seqs[2].sequence == seqs[3].sequence == seqs[7].sequence


def test_rational_matrix():
    g = as_graph(nx.petersen_graph())
    W = gossip_matrix(g, "metropolis")
    W_int, D = rational_matrix(W)
    assert np.allclose(W_int.astype(float) / D, W.toarray(), rtol=0, atol=1e-15)
    assert all(sum(row) == D for row in W_int)  # exactly stochastic
    with pytest.raises(ParameterError, match="exact arithmetic is unavailable"):
        rational_matrix(np.array([[1 - 1 / math.pi, 1 / math.pi], [1 / math.pi, 1 - 1 / math.pi]]))
