"""Figures of a privacy map (matplotlib, the optional extra ``sparsedp[plot]``).

* ``"distance"``: the papers' figure -- epsilon (or, without sigma and delta, the squared
  sensitivity) against hop distance, the mean as a line in a min-max band, from
  :meth:`PrivacyMap.by_distance`; certified upper bounds where the map has them, lower
  bounds otherwise (the axis label says which);
* ``"heatmap"``: the observer x target table of the same value, for maps of at most
  :data:`HEATMAP_MAX` nodes a side;
* ``"graph"``: the graph drawn with each target coloured by its worst case over the observers
  (:meth:`PrivacyMap.per_target`), for graphs of at most :data:`GRAPH_MAX_NODES` nodes.

Self pairs (observer = target, distance 0) are left out of every kind: their value is the
largest of the map by far and would take over the heatmap's colour scale and the distance
axis.  :func:`check_plot` refuses, before a map is computed, what could not be drawn.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sparsedp.errors import ParameterError
from sparsedp.files import write_atomically
from sparsedp.graphs.graph import Graph
from sparsedp.maps.privacy_map import PrivacyMap

__all__ = ["PLOT_KINDS", "check_plot", "plot_map"]

PLOT_KINDS = ("distance", "heatmap", "graph")
HEATMAP_MAX = 500
GRAPH_MAX_NODES = 2000


def plot_map(privacy_map: PrivacyMap, path, kind: str = "distance", graph: Graph | None = None,
             title: str | None = None) -> None:
    """Draw ``kind`` (module docstring) of ``privacy_map`` to ``path`` (format from its
    suffix), written atomically (:func:`sparsedp.files.write_atomically`); ``graph`` (labels
    as in the map) is needed for ``"graph"``.  Self pairs (observer = target, distance 0)
    are left out.

    Parameters
    ----------
    privacy_map : PrivacyMap
        The map to draw.
    path : str or path-like
        The image file (``.png``, ``.pdf``, ``.svg``, ...).
    kind : str
        One of :data:`PLOT_KINDS`.
    graph : Graph, optional
        The map's graph, for ``kind="graph"``.
    title : str, optional
        The figure's title (default: T and the weight scheme).

    Raises
    ------
    ParameterError
        Everything :func:`check_plot` refuses, or a map with nothing to draw (naming
        ``path``).

    Examples
    --------
    >>> import os, tempfile, networkx as nx, sparsedp
    >>> from sparsedp.maps.plots import plot_map
    >>> m = sparsedp.privacy_map(nx.cycle_graph(8), T=4, upper="none")
    >>> path = os.path.join(tempfile.mkdtemp(), "map.png")
    >>> plot_map(m, path, "heatmap")
    >>> os.path.getsize(path) > 0
    True
    """
    c = privacy_map.columns
    check_plot(path, kind, observers=np.unique(c["observer"]).size,
               targets=np.unique(c["target"]).size,
               graph_nodes=None if graph is None else graph.n)
    import matplotlib.pyplot as plt

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
        suffix = _suffix(path)
        write_atomically(path, lambda temporary: figure.savefig(temporary, format=suffix,
                                                                dpi=120))
    except ValueError as exc:
        raise ParameterError(f"cannot draw {path}: {exc}") from None
    finally:
        plt.close(figure)


def check_plot(path, kind: str = "distance", *, observers: int, targets: int,
               graph_nodes: int | None) -> None:
    """Refuse, before any work, a plot that :func:`plot_map` could not draw.

    Parameters
    ----------
    path : str or path-like
        The image file asked for; its suffix names the format.
    kind : str
        One of :data:`PLOT_KINDS`.
    observers, targets : int
        How many observers and targets the map will have.
    graph_nodes : int or None
        The graph's node count (``None``: no graph, which ``kind="graph"`` needs).

    Raises
    ------
    ParameterError
        An unknown kind, matplotlib missing, a format matplotlib cannot write, a missing
        directory, a heatmap over :data:`HEATMAP_MAX` nodes a side, a graph drawing without
        the graph or over :data:`GRAPH_MAX_NODES` nodes; each message names ``path``.

    Examples
    --------
    >>> from sparsedp.maps.plots import check_plot
    >>> check_plot("map.png", "heatmap", observers=20, targets=20, graph_nodes=20)
    >>> check_plot("map.png", "graph", observers=5, targets=5000,
    ...            graph_nodes=5000)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    sparsedp.errors.ParameterError: cannot draw map.png: the graph drawing is for at most ...
    """
    if kind not in PLOT_KINDS:
        raise ParameterError(f"plot kind must be one of {PLOT_KINDS}, got {kind!r}")
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib.backend_bases import FigureCanvasBase
    except ImportError:
        raise ParameterError("plots need matplotlib: pip install 'sparsedp[plot]'") from None
    formats = FigureCanvasBase.get_supported_filetypes()
    problem = None
    if _suffix(path) not in formats:
        problem = (f"unknown image format {_suffix(path)!r} (the file's suffix; one of "
                   f"{', '.join(sorted(formats))})")
    elif not Path(path).parent.is_dir():
        problem = f"no directory {Path(path).parent}"
    elif kind == "heatmap" and max(observers, targets) > HEATMAP_MAX:
        problem = (f"a heatmap draws at most {HEATMAP_MAX} nodes a side ({observers} "
                   f"observers, {targets} targets; use --plot-kind distance or a sample)")
    elif kind == "graph" and graph_nodes is None:
        problem = "drawing the graph needs the graph"
    elif kind == "graph" and graph_nodes > GRAPH_MAX_NODES:
        problem = (f"the graph drawing is for at most {GRAPH_MAX_NODES} nodes, the graph has "
                   f"{graph_nodes} (the distance plot draws any size)")
    if problem is not None:
        raise ParameterError(f"cannot draw {path}: {problem}")


def _suffix(path) -> str:
    """The image format named by the path's suffix (``png`` without one)."""
    return Path(path).suffix.lstrip(".").lower() or "png"


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
    from matplotlib.ticker import MaxNLocator

    rows = [r for r in privacy_map.by_distance() if r["distance"] > 0 and r[value] is not None]
    if not rows:
        raise ValueError("the map has no pair of distinct nodes at a finite distance")
    d = [r["distance"] for r in rows]
    low, mean, high = ([r[value][k] for r in rows] for k in ("min", "mean", "max"))
    axes.fill_between(d, low, high, alpha=0.3, label="min - max over pairs")
    axes.plot(d, mean, "o-", label="mean")
    if min(low) > 0:
        axes.set_yscale("log")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))  # hop distances: whole numbers
    axes.set_xlabel("hop distance between observer and target")
    axes.set_ylabel(label)
    axes.legend(fontsize=8)


def _heatmap(figure, axes, privacy_map: PrivacyMap, value: str, label: str) -> None:
    c = privacy_map.columns
    observers, o_index = np.unique(c["observer"], return_inverse=True)
    targets, t_index = np.unique(c["target"], return_inverse=True)
    others = c["observer"] != c["target"]  # self pairs stay blank: they would set the scale
    grid = np.full((len(observers), len(targets)), np.nan)
    grid[o_index[others], t_index[others]] = c[value][others]
    image = axes.imshow(grid, aspect="auto", interpolation="nearest", cmap="viridis")
    figure.colorbar(image, ax=axes, label=label)
    axes.set_xlabel(f"target ({len(targets)})")
    axes.set_ylabel(f"observer ({len(observers)})")


def _graph(figure, axes, privacy_map: PrivacyMap, graph: Graph | None, value: str,
           label: str) -> None:
    import networkx as nx

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
