"""Figures of a privacy map: each kind is drawn (a real image file), the size limits and the
missing graph are one-line errors, and the CLI writes the file atomically."""

from __future__ import annotations

import networkx as nx
import pytest

import sparsedp
from sparsedp.cli.main import main
from sparsedp.errors import ParameterError
from sparsedp.graphs.graph import as_graph
from sparsedp.maps.plots import plot_map

pytest.importorskip("matplotlib")

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def small_map():
    graph = as_graph(nx.connected_watts_strogatz_graph(40, 4, 0.3, seed=1))
    return graph, sparsedp.privacy_map(graph, T=6, sigma=2.0, delta=1e-5, upper="entrywise")


@pytest.mark.parametrize("kind", ["distance", "heatmap", "graph"])
def test_each_kind_draws_an_image(small_map, kind, tmp_path):
    graph, result = small_map
    path = tmp_path / f"{kind}.png"
    plot_map(result, path, kind, graph)
    assert path.read_bytes()[:8] == PNG and path.stat().st_size > 5000


def test_limits_and_missing_inputs_are_clear_errors(small_map, tmp_path, monkeypatch):
    graph, result = small_map
    with pytest.raises(ParameterError, match="needs the graph"):
        plot_map(result, tmp_path / "g.png", "graph")
    with pytest.raises(ParameterError, match="plot kind"):
        plot_map(result, tmp_path / "x.png", "pie")
    monkeypatch.setattr("sparsedp.maps.plots.HEATMAP_MAX", 10)
    with pytest.raises(ParameterError, match="at most 10 nodes a side"):
        plot_map(result, tmp_path / "h.png", "heatmap")
    assert not (tmp_path / "h.png").exists()


def test_cli_map_plot(tmp_path, capsys):
    path = tmp_path / "map.svg"
    assert main(["map", "--generator", "ring:16", "--rounds", "4", "--upper", "none",
                 "--plot", str(path), "--plot-kind", "distance"]) == 0
    assert path.read_text().lstrip().startswith(("<?xml", "<svg"))
    assert [p.name for p in tmp_path.iterdir()] == ["map.svg"]  # no temporary file left
