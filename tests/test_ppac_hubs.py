"""PPAC leakage with hub attackers: the deflated message basis, the Gram route against the
Householder route and the dense reference, the memory estimate against the measured peak,
progress with a time estimate."""

import math
import tracemalloc

import networkx as nx
import numpy as np
import pytest
import scipy.linalg as sla

from sparsedp.graphs.graph import as_graph
from sparsedp.ppac import (
    information,
    laplacian_consensus_matrix,
    leakage,
    leakage_theorem_6_6,
    ppac_layout,
    random_designated,
)
from tests.conftest import slow_after

from .test_ppac_leakage import rational_leakage


def instance(G, seed=0):
    g = as_graph(G)
    layout = ppac_layout(g, random_designated(g, seed=seed))
    return g, layout, laplacian_consensus_matrix(g)


def hub(g) -> int:
    return int(np.argmax(g.degrees))


def with_pendants(G, node, count):
    """``G`` with ``count`` leaves glued to ``node`` (relabelled 0..n-1)."""
    G = nx.convert_node_labels_to_integers(G)
    n = G.number_of_nodes()
    G.add_edges_from((node, n + a) for a in range(count))
    return G


@pytest.mark.parametrize("seed", range(4))
def test_attackers_own_state_and_leaves_carry_no_new_information(seed):
    """The deflation's premise, in the whitened factors: ``F e_i = Lam 1`` (the attacker's
    state is its known noises plus its received designated fragments) and ``F e_l = 0`` for a
    leaf ``l`` of the attacker."""
    G = with_pendants(nx.powerlaw_cluster_graph(40, 3, 0.3, seed=seed), 0, 2)
    g, layout, _ = instance(G, seed)
    i = hub(g)
    std = layout.source_std(np.linspace(1, 2, g.n), np.linspace(0.5, 3, layout.num_sources))
    _, F, Lam = information._whitened_parts(layout, i, std)
    deflated = information._attacker_deflation(layout, i)
    assert deflated[0] == i and np.all(g.degrees[deflated[1:]] == 1)
    np.testing.assert_allclose(F[:, [i]].toarray().ravel(), Lam @ np.ones(Lam.shape[1]),
                               atol=1e-15)
    for leaf in deflated[1:]:
        assert F[:, [leaf]].count_nonzero() == 0


def test_a_saturating_hub_basis_stays_orthonormal_and_within_n():
    """With one Gram-Schmidt pass a hub's basis outgrew n (3190 columns for n = 2000); the
    basis of a space that fills R^n has n - 1 orthonormal columns (all coordinates but the
    attacker's): block Lanczos loses orthogonality when the space fills, and the sketch
    check re-orthogonalises those blocks."""
    G = nx.powerlaw_cluster_graph(300, 5, 0.1, seed=1)
    g, layout, W = instance(G)
    i = hub(g)
    nbrs = information._neighbours(layout, i)
    assert nbrs.size * 11 > g.n
    X, _ = information._message_vectors(W, nbrs, 10, information._attacker_deflation(layout, i))
    assert X.shape[1] == g.n - 1
    np.testing.assert_allclose(X.T @ X, np.eye(X.shape[1]), atol=1e-10)
    assert np.all(X[i] == 0)


@pytest.mark.parametrize("graph", slow_after(["pendants", "plc", "geometric"], 1))
def test_hub_gram_route_agrees_with_householder_and_dense_reference(graph, monkeypatch):
    """Hubs used to fall to the 2m-row Householder QR because Y was singular; now the Gram
    route is taken, and it agrees with the Householder route (forced) and with exact rational
    arithmetic (eq. 25 evaluated densely in floats is off by up to 7e-6 here)."""
    if graph == "plc":
        G = nx.powerlaw_cluster_graph(30, 3, 0.3, seed=2)
    elif graph == "geometric":
        G = nx.random_geometric_graph(30, 0.35, seed=3)
        G = nx.convert_node_labels_to_integers(  # labels = positions for rational_leakage
            G.subgraph(max(nx.connected_components(G), key=len)))
    else:
        G = with_pendants(nx.powerlaw_cluster_graph(25, 2, 0.3, seed=4), 0, 3)
    g, layout, W = instance(G)
    i = hub(g)
    kw = dict(value_std=2.0, noise_std=3.0, exact=False)
    gram = leakage(layout, W, g.id_of(i), 3, **kw)
    assert "Gram" in gram.method and gram.rank == gram.extra["basis_columns"]
    monkeypatch.setattr(information, "GRAM_MIN_SV_RATIO", 2.0)  # forces the fallback
    qr = leakage(layout, W, g.id_of(i), 3, **kw)
    assert "Householder" in qr.method and qr.rank == gram.rank
    finite = np.isfinite(gram.nats)
    np.testing.assert_array_equal(finite, np.isfinite(qr.nats))
    np.testing.assert_allclose(gram.nats[finite], qr.nats[finite], rtol=1e-9)
    for victim in gram.victims[finite][:1]:
        j = g.index_of(victim)
        ref = rational_leakage(layout, W, i, j, 3, 2.0, 3.0)
        assert gram.value(victim) == pytest.approx(ref, rel=1e-10)
        paper = leakage_theorem_6_6(layout, W, g.id_of(i), victim, 3, value_std=2.0,
                                    noise_std=3.0)
        assert paper == pytest.approx(ref, rel=1e-4)


def _graphs():
    rgg = nx.random_geometric_graph(400, 0.12, seed=5)
    rgg = rgg.subgraph(max(nx.connected_components(rgg), key=len))
    return {
        "plc-hub": (nx.powerlaw_cluster_graph(500, 5, 0.1, seed=1), "hub", 6),
        "plc-saturating-hub": (nx.powerlaw_cluster_graph(300, 5, 0.1, seed=1), "hub", 10),
        "rgg-hub": (rgg, "hub", 8),
        "er-median": (nx.gnm_random_graph(500, 2500, seed=6), "median", 10),
        "star-of-leaves": (with_pendants(nx.cycle_graph(30), 0, 40), "hub", 4),
    }


@pytest.mark.parametrize("name", list(_graphs()))
def test_memory_estimate_is_at_least_the_measured_peak(name, monkeypatch):
    """``leakage_memory`` (checked before any work) against the peak traced by tracemalloc
    during the call, on the Gram route and on the Householder fallback."""
    G, which, rounds = _graphs()[name]
    g, layout, W = instance(G)
    deg = g.degrees
    i = hub(g) if which == "hub" else int(np.flatnonzero(deg == int(np.median(deg)))[0])
    estimate = information.leakage_memory(g.n, int(deg[i]), rounds, g.n - 1,
                                          edges=g.num_edges)
    for ratio in (information.GRAM_MIN_SV_RATIO, 2.0):
        monkeypatch.setattr(information, "GRAM_MIN_SV_RATIO", ratio)
        tracemalloc.start()
        try:
            leakage(layout, W, g.id_of(i), rounds, exact=False, progress=False)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak <= estimate, (name, ratio, peak, estimate)


def test_progress_reports_the_time_estimate(capsys):
    G = nx.powerlaw_cluster_graph(200, 4, 0.1, seed=1)
    g, layout, W = instance(G)
    r = leakage(layout, W, g.id_of(hub(g)), 4, progress="always")
    err = capsys.readouterr().err
    assert "PPAC leakage (attacker degree" in err and "estimated" in err and "Gflop" in err
    assert r.extra["estimated_seconds"] > 0
    assert r.extra["flops"] == information.leakage_flops(
        g.n, int(g.degrees.max()), 4, g.n - 1, edges=g.num_edges)
    leakage(layout, W, g.id_of(hub(g)), 4, progress="never")
    assert capsys.readouterr().err == ""


def test_infinite_horizon_on_a_star_of_leaves_is_exact():
    """Every neighbour of the centre is a leaf: the basis is empty after deflation and the
    received fragments alone recover every leaf's value."""
    G = nx.star_graph(6)
    g, layout, W = instance(G)
    r = leakage(layout, W, 0, math.inf)
    assert np.all(np.isinf(r.nats)) and np.all(r.kind == "exact")


@pytest.mark.parametrize("name", ["plc-hub", "rgg-hub", "er-median"])
def test_lanczos_basis_gives_the_gram_schmidt_values(name, monkeypatch):
    """The block Lanczos basis (projections against the last two blocks, the sketch check)
    spans the same space as full Gram-Schmidt against every block (forced by an overlap
    threshold no block meets): same rank, same leakage to 1e-10 (victims out of reach have
    leverages at rounding level, about 1e-17 nats: absolute 1e-14)."""
    G, which, rounds = _graphs()[name]
    g, layout, W = instance(G)
    deg = g.degrees
    i = hub(g) if which == "hub" else int(np.flatnonzero(deg == int(np.median(deg)))[0])
    lanczos = leakage(layout, W, g.id_of(i), rounds, exact=False, progress=False)
    monkeypatch.setattr(information, "LANCZOS_ORTHOGONALITY", -1.0)
    full = leakage(layout, W, g.id_of(i), rounds, exact=False, progress=False)
    assert lanczos.rank == full.rank
    np.testing.assert_array_equal(lanczos.kind, full.kind)
    np.testing.assert_allclose(lanczos.nats, full.nats, rtol=1e-10, atol=1e-14)


def _grid_at_two_scales(horizon):
    """Leakage to the grid's first degree-4 node at the scales ``c = 4`` and ``c = 5`` of
    ``W = I - L / c``: ``span{W^tau e_l : tau <= t} = span{L^s e_l : s <= t}`` for every ``c``,
    so the exact leakage is the same at both scales."""
    g, layout, _ = instance(nx.convert_node_labels_to_integers(nx.grid_2d_graph(15, 15)))
    i = hub(g)
    return [leakage(layout, laplacian_consensus_matrix(g, scale=c), i, horizon, exact=False,
                    progress=False) for c in (4, 5)]


def _relative_gap(a, b) -> float:
    finite = np.isfinite(a.nats) & np.isfinite(b.nats)
    assert finite.any() and np.array_equal(finite, np.isfinite(b.nats))
    return float(np.max(np.abs(a.nats - b.nats)[finite]) / np.max(a.nats[finite]))


def test_an_undecided_message_span_claims_no_accuracy():
    """Grid 15 x 15, t = 60: the Krylov directions of relative size 1e-11 to 1e-8 are genuine
    or rounding depending on the scale of W, and the two scales' values differ by 2.4 % (they
    claimed a relative accuracy of 5e-12).  The basis reports those directions, and the
    result an infinite relative accuracy with a note, not an accuracy it does not have."""
    a, b = _grid_at_two_scales(60)
    gap = _relative_gap(a, b)
    assert gap > 1e-3  # the inconsistency is real: float cannot decide this span
    assert gap <= a.relative_accuracy + b.relative_accuracy
    for r in (a, b):
        assert r.relative_accuracy == math.inf
        sizes = np.array(r.extra["borderline_directions"])
        assert sizes.size and np.all((sizes > information.KRYLOV_ROUNDING)
                                     & (sizes < information.KRYLOV_CLEAR))
        assert any("not decided in floating point" in note for note in r.notes)


def test_a_decided_message_span_keeps_its_accuracy_across_scales():
    """Grid 15 x 15, t = 40: no borderline direction, a finite accuracy, and the two scales
    agree within it (the invariance the t = 60 case breaks)."""
    a, b = _grid_at_two_scales(40)
    for r in (a, b):
        assert r.extra["borderline_directions"] == [] and r.relative_accuracy < 1e-9
    assert _relative_gap(a, b) <= 10 * (a.relative_accuracy + b.relative_accuracy)


def test_a_float_basis_narrower_than_the_exact_rank_claims_no_accuracy(monkeypatch):
    """A float basis that dropped genuine directions (here forced by a drop threshold of
    0.5) against the exact rank: the leverages use the columns there are (it used to raise
    IndexError), and the result says the span is not decided, with no accuracy."""
    monkeypatch.setattr(information, "KRYLOV_DROP", 0.5)
    g, layout, W = instance(nx.convert_node_labels_to_integers(nx.grid_2d_graph(6, 6)))
    r = leakage(layout, W, hub(g), 20, exact=True, progress=False)
    columns = r.extra["basis_columns"]
    assert r.rank == columns and r.relative_accuracy == math.inf
    assert any(f"the float basis has {columns} columns, exact arithmetic says" in note
               for note in r.notes)


def _dense_krylov_basis(W, start, rounds):
    """Independent reference: an orthonormal basis of ``span{(W^T)^tau e_l : l in start,
    tau <= rounds}`` by dense block Gram-Schmidt, two full passes per block, dropping the
    directions that keep less than 1e-8 of their norm (pivoted QR)."""
    WT = W.toarray().T
    X = np.eye(WT.shape[0])[:, start]
    last = X
    for _ in range(rounds):
        V = WT @ last
        before = np.linalg.norm(V, axis=0).max()
        for _ in range(2):
            V -= X @ (X.T @ V)
        Q, R, _ = sla.qr(V, mode="economic", pivoting=True)
        last = Q[:, np.abs(np.diag(R)) > 1e-8 * before]
        X = np.hstack([X, last])
    return X


def _dense_leakage(layout, W, i, rounds):
    """Leakage of every node's value to ``i`` (position) from the attacker's raw observations,
    densely: its own value, the noise fragments it sent and received, the designated
    fragments it received (``u_l`` minus ``l``'s noises) and the span of the message rows
    ``C^T (W^T)^tau e_l`` (``l`` a neighbour or ``i`` itself), leverages from numpy's QR of
    the whitened observation matrix (all 2m sources, unit standard deviations)."""
    g = layout.graph
    A, src_of = g.adjacency, layout.edge_source
    C = layout.source_matrix().toarray()
    nbrs = A.indices[A.indptr[i]:A.indptr[i + 1]]
    columns = [C.T @ _dense_krylov_basis(W, np.append(nbrs, i), rounds)]
    unit = np.eye(layout.num_sources)
    known = [i] + [s for s in src_of[A.indptr[i]:A.indptr[i + 1]] if s >= 0]
    for nb in nbrs:
        row = src_of[A.indptr[nb]:A.indptr[nb + 1]]
        if layout.designated_index[nb] == i:
            columns.append((unit[:, nb] - unit[:, row[row >= 0]].sum(axis=1))[:, None])
        else:
            known.append(row[A.indices[A.indptr[nb]:A.indptr[nb + 1]] == i][0])
    columns.append(unit[:, known])
    Q, R, _ = sla.qr(np.hstack(columns), mode="economic", pivoting=True)
    Q = Q[:, np.abs(np.diag(R)) > 1e-10 * np.abs(R[0, 0])]
    h = np.einsum("ij,ij->i", Q[:g.n], Q[:g.n])
    with np.errstate(divide="ignore"):  # the attacker's own value: h = 1
        return -0.5 * np.log1p(-np.minimum(h, 1.0))


def test_lanczos_resumes_after_a_reorthogonalised_block(monkeypatch):
    """Hub of degree 62 on a 500-node power-law cluster graph, t = 6: the sketch rejects
    Lanczos block 5 (re-orthogonalised against the whole basis) and block 6 is accepted by
    Lanczos again (it used to go to Gram-Schmidt, as every block after the first rejected
    one).  The basis (434 columns, not all of R^499) stays orthonormal and spans the dense
    Gram-Schmidt reference's space;
    the leakage agrees with full Gram-Schmidt (every block, forced) to 1e-10 and with an
    independent dense computation from the attacker's raw observations to 1e-8."""
    g, layout, W = instance(nx.powerlaw_cluster_graph(500, 3, 0.1, seed=3))
    i = hub(g)
    rounds = []
    qr, spmm = information._full_rank_qr, information.spmm
    monkeypatch.setattr(information, "spmm", lambda *a: rounds.append([]) or spmm(*a))
    monkeypatch.setattr(information, "_full_rank_qr",
                        lambda V, drop: rounds[-1].append(V.shape[1]) or qr(V, drop))
    nbrs = information._neighbours(layout, i)
    deflated = information._attacker_deflation(layout, i)
    X, borderline = information._message_vectors(W, nbrs, 6, deflated)
    # one QR per Lanczos block; two (Lanczos, then Gram-Schmidt) for block 5 only
    assert [len(r) for r in rounds] == [1, 1, 1, 1, 2, 1] and borderline.size == 0
    np.testing.assert_allclose(X.T @ X, np.eye(X.shape[1]), atol=1e-10)
    reference = _dense_krylov_basis(W, np.append(nbrs, i), 6)  # e_i too: the deflation's
    reference[deflated] = 0.0  # span, with the attacker's coordinate removed
    assert X.shape[1] == 434 == np.linalg.matrix_rank(reference, tol=1e-8)
    assert np.linalg.norm(reference - X @ (X.T @ reference)) < 1e-9
    monkeypatch.undo()
    r = leakage(layout, W, g.id_of(i), 6, exact=False, progress=False)
    assert "Gram" in r.method and r.relative_accuracy < 1e-9
    monkeypatch.setattr(information, "LANCZOS_ORTHOGONALITY", -1.0)
    full = leakage(layout, W, g.id_of(i), 6, exact=False, progress=False)
    np.testing.assert_allclose(r.nats, full.nats, rtol=1e-10)
    dense = np.delete(_dense_leakage(layout, W, i, 6), i)
    np.testing.assert_allclose(r.nats, dense, rtol=1e-8)


@pytest.mark.parametrize("block", [7, 40, 1024])
def test_gram_gathers_the_unit_columns_rows(block, monkeypatch):
    """The Gram matrix with the neighbours' unit columns gathered (blocks of 7 and 40 columns
    straddle the end of the 50 unit columns) equals ``Y^T Y`` of the dense ``Y = [F X, Lam]``."""
    monkeypatch.setattr(information, "GRAM_BLOCK", block)
    g, layout, W = instance(nx.powerlaw_cluster_graph(200, 3, 0.1, seed=2))
    i = hub(g)
    nbrs = information._neighbours(layout, i)
    deflated = information._attacker_deflation(layout, i)
    X, _ = information._message_vectors(W, nbrs, 3, deflated)
    units = information._start_coordinates(nbrs, deflated)
    assert units.size == 50 and np.array_equal(X[:, :50], np.eye(g.n)[:, units])
    std = layout.source_std(np.linspace(1, 2, g.n), np.linspace(0.5, 3, layout.num_sources))
    _, F, Lam = information._whitened_parts(layout, i, std)
    Y = np.hstack([F @ X, Lam.toarray()])
    np.testing.assert_allclose(information._gram(F, Lam, X, units), Y.T @ Y,
                               rtol=1e-12, atol=1e-12 * np.abs(Y.T @ Y).max())
