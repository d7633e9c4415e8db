"""Figures of a privacy map (matplotlib, the optional extra ``sparsedp[plot]``).

* ``"distance"``: the papers' figure -- epsilon (or, without sigma and delta, the squared
  sensitivity) against hop distance, the mean as a line in a min-max band, from
  :meth:`PrivacyMap.by_distance`; certified upper bounds where the map has them, lower
  bounds otherwise (the axis label says which);
* ``"heatmap"``: the observer x target table of the same value, for maps of at most
  :data:`HEATMAP_MAX` nodes a side;
* ``"graph"``: the graph drawn with each target coloured by its worst case over the observers
  (:meth:`PrivacyMap.per_target`), for graphs of at most :data:`GRAPH_MAX_NODES` nodes.
"""

from __future__ import annotations

import numpy as np

from sparsedp.errors import ParameterError
from sparsedp.graphs.graph import Graph
from sparsedp.maps.privacy_map import PrivacyMap

__all__ = ["PLOT_KINDS", "plot_map"]

PLOT_KINDS = ("distance", "heatmap", "graph")
HEATMAP_MAX = 500
GRAPH_MAX_NODES = 2000


def plot_map(privacy_map: PrivacyMap, path, kind: str = "distance", graph: Graph | None = None,
             title: str | None = None) -> None:
    """Draw ``kind`` (module docstring) of ``privacy_map`` to ``path`` (format from its
    suffix); ``graph`` (labels as in the map) is needed for ``"graph"``."""
    if kind not in PLOT_KINDS:
        raise ParameterError(f"plot kind must be one of {PLOT_KINDS}, got {kind!r}")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ParameterError("plots need matplotlib: pip install 'sparsedp[plot]'") from None
    value, label = _value(privacy_map)
    figure, axes = plt.subplots(figsize=(6.5, 4.5))
    try:
        if kind == "distance":
            _distance(axes, privacy_map, value, label)
        elif kind == "heatmap":
            _heatmap(figure, axes, privacy_map, value, label)
        else:
            _graph(figure, axes, privacy_map, graph, value, label)
        p = privacy_map.parameters
        axes.set_title(title or f"T = {p.get('T')}, {p.get('scheme', 'given W')}", fontsize=10)
        figure.tight_layout()
        suffix = str(path).rsplit(".", 1)[-1] if "." in str(path) else "png"
        figure.savefig(path, format=suffix, dpi=120)
    except ValueError as exc:
        raise ParameterError(f"cannot draw {path}: {exc}") from None
    finally:
        plt.close(figure)


def _value(privacy_map: PrivacyMap) -> tuple[str, str]:
    """The column to draw and its axis label: epsilon from certified uppers when the map has
    them, else the certified upper, else the lower bound."""
    c = privacy_map.columns
    has_upper = not np.isnan(c["upper"]).all()
    has_epsilon = "epsilon" in c and not np.isnan(c["epsilon"]).all()
    if has_upper and has_epsilon:
        return "epsilon", "epsilon (from certified upper bounds)"
    if has_upper:
        return "upper", "Delta_T^2 (certified upper bound)"
    return "lower", "Delta_T^2 (lower bound, c = 1)"


def _distance(axes, privacy_map: PrivacyMap, value: str, label: str) -> None:
    rows = [r for r in privacy_map.by_distance() if r["distance"] >= 0 and r[value] is not None]
    if not rows:
        raise ValueError("the map has no pair at a finite distance")
    d = [r["distance"] for r in rows]
    low, mean, high = ([r[value][k] for r in rows] for k in ("min", "mean", "max"))
    axes.fill_between(d, low, high, alpha=0.3, label="min - max over pairs")
    axes.plot(d, mean, "o-", label="mean")
    if min(low) > 0:
        axes.set_yscale("log")
    axes.set_xlabel("hop distance between observer and target")
    axes.set_ylabel(label)
    axes.legend(fontsize=8)


def _heatmap(figure, axes, privacy_map: PrivacyMap, value: str, label: str) -> None:
    c = privacy_map.columns
    observers, o_index = np.unique(c["observer"], return_inverse=True)
    targets, t_index = np.unique(c["target"], return_inverse=True)
    if max(len(observers), len(targets)) > HEATMAP_MAX:
        raise ValueError(f"a heatmap draws at most {HEATMAP_MAX} nodes a side "
                         f"({len(observers)} observers, {len(targets)} targets)")
    grid = np.full((len(observers), len(targets)), np.nan)
    grid[o_index, t_index] = c[value]
    image = axes.imshow(grid, aspect="auto", interpolation="nearest", cmap="viridis")
    figure.colorbar(image, ax=axes, label=label)
    axes.set_xlabel(f"target ({len(targets)})")
    axes.set_ylabel(f"observer ({len(observers)})")


def _graph(figure, axes, privacy_map: PrivacyMap, graph: Graph | None, value: str,
           label: str) -> None:
    import networkx as nx

    if graph is None:
        raise ValueError("drawing the graph needs the graph")
    if graph.n > GRAPH_MAX_NODES:
        raise ValueError(f"the graph drawing is for at most {GRAPH_MAX_NODES} nodes, "
                         f"the graph has {graph.n}")
    key = {"epsilon": "worst_epsilon", "upper": "worst_upper", "lower": "worst_lower"}[value]
    worst = {r["target"]: r[key] for r in privacy_map.per_target()}
    G = nx.Graph()
    G.add_nodes_from(range(graph.n))
    upper = graph.adjacency.tocoo()
    G.add_edges_from((int(i), int(j)) for i, j in zip(upper.row, upper.col, strict=True) if i < j)
    positions = nx.spring_layout(G, seed=0)
    colours = [worst.get(label_, np.nan) for label_ in graph.ids_of(np.arange(graph.n)).tolist()]
    nx.draw_networkx_edges(G, positions, ax=axes, alpha=0.2, width=0.5)
    nodes = nx.draw_networkx_nodes(G, positions, ax=axes, node_size=20, node_color=colours,
                                   cmap="viridis")
    figure.colorbar(nodes, ax=axes, label=f"worst over the observers: {value}")
    axes.set_axis_off()
