"""The realistic-graph bench suite's graphs (bench/realistic.py, issue 35) have the shape they
claim, at the suite's default size n = 10^4: connected, power-law graphs with hubs and
degree-1 nodes, ER twins with the same n and edge count, and an edge-list file with a header
line and isolated nodes that ``largest_component=True`` drops."""

from __future__ import annotations

import functools
import pathlib
import warnings

import numpy as np
import pytest
from scipy.sparse.csgraph import connected_components

import sparsedp
from tests.conftest import bench_module

BENCH = pathlib.Path(__file__).resolve().parents[1] / "bench"
N = 10_000




realistic = bench_module("realistic")


def _components(graph) -> int:
    return connected_components(graph.adjacency, directed=False)[0]


@functools.cache
def _graph(name: str):
    return realistic.GRAPHS[name](N, 1)


@pytest.fixture(scope="module", params=list(realistic.GRAPHS))
def built(request):
    graph = _graph(request.param)
    return request.param, graph, realistic.er_twin(graph, 1)


def test_every_model_is_connected_near_the_requested_size(built):
    name, graph, _ = built
    assert _components(graph) == 1, name
    assert 0.95 * N <= graph.n <= N, (name, graph.n)


def test_the_twin_has_the_same_n_and_edges_connected_and_no_hubs(built):
    name, graph, twin = built
    assert (twin.n, twin.num_edges) == (graph.n, graph.num_edges), name
    assert _components(twin) == 1, name
    degrees = twin.degrees
    assert degrees.max() < 3 * np.median(degrees), name  # Poisson degrees: no hubs


def test_the_twin_is_deterministic_and_relabelled():
    graph = realistic.GRAPHS["chung-lu"](2000, 1)
    first, again = realistic.er_twin(graph, 1), realistic.er_twin(graph, 1)
    assert (first.adjacency != again.adjacency).nnz == 0
    assert (first.adjacency != realistic.er_twin(graph, 2).adjacency).nnz > 0


@pytest.mark.parametrize("name", ["chung-lu", "edge-list-file"])
def test_power_law_graphs_have_hubs_and_pendant_nodes(name):
    degrees = _graph(name).degrees
    assert degrees.max() > 10 * np.median(degrees)
    assert np.sum(degrees == 1) > 0


def test_the_holme_kim_graph_has_hubs_and_the_sbm_its_communities():
    degrees = _graph("powerlaw-cluster").degrees
    assert degrees.max() > 10 * np.median(degrees) and degrees.min() >= 9  # no pendants
    sbm = _graph("sbm")
    block = np.asarray(sbm.node_ids) // (N // 50)  # labels block by block, 50 blocks of 200
    coo = sbm.adjacency.tocoo()
    inside = np.mean(block[coo.row] == block[coo.col])
    assert 0.8 < inside < 0.95  # expected 14 of 16 edges inside


def test_the_edge_list_file_has_a_header_and_isolated_nodes_that_largest_component_drops(
        tmp_path):
    path = realistic.write_edge_list_file(tmp_path / "edges.txt", N, 1)
    assert path.read_text().splitlines()[0] == "source target"
    with pytest.warns(UserWarning, match="'source target' is read as a header"):
        whole = sparsedp.read_edge_list(path)
    isolated = int(np.sum(whole.degrees == 0))
    assert isolated == N // 100
    assert _components(whole) >= isolated + 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        kept = sparsedp.read_edge_list(path, largest_component=True)
    assert _components(kept) == 1 and kept.degrees.min() >= 1
    assert kept.n <= whole.n - isolated
    assert (kept.n, kept.num_edges) == (_graph("edge-list-file").n,
                                        _graph("edge-list-file").num_edges)


def test_roles_follow_degree_rank():
    graph = realistic.GRAPHS["chung-lu"](2000, 1)
    roles = realistic.Roles.of(graph)
    degrees = graph.degrees
    assert degrees[roles.hub] == degrees.max()
    assert degrees[roles.median] == np.sort(degrees)[graph.n // 2]
    assert len({roles.hub, roles.median, roles.target}) == 3


def test_a_refusal_is_recorded_with_its_message():
    def refuses():
        raise sparsedp.ParameterError("T must be >= 1")
    record = realistic.measure(refuses)
    assert record["status"] == "refused: ParameterError: T must be >= 1"
    assert realistic.ratio({"twin": {"status": "ok", "cpu_s": 1.0}, "graph": record}) is None


def test_the_ratio_is_graph_cpu_over_twin_cpu_or_the_limit():
    twin = {"status": "ok", "cpu_s": 0.5}
    assert realistic.ratio({"twin": twin, "graph": {"status": "ok", "cpu_s": 1.5}}) == 3.0
    over = {"status": "over limit (60 s, timed run)"}
    assert realistic.ratio({"twin": twin, "graph": over}) == over["status"]
    assert "> limit" in realistic.format_row("sbm", "job", {"twin": twin, "graph": over})
