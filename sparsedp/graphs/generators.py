"""Graph generators, deterministic given ``seed``, labelling nodes ``0..n-1``.

Each checks its memory estimate (:mod:`sparsedp.graphs.cost`) before allocating.  They do not
enforce connectivity; :func:`sparsedp.graphs.require_connected` (called by the gossip-matrix
builders) does.  :mod:`sparsedp.graphs.large` holds the array-only generators for 10^6-10^7
nodes.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
from scipy.spatial import cKDTree

from sparsedp.errors import ParameterError
from sparsedp.graphs.cost import require_generator_fits
from sparsedp.graphs.graph import Graph, _graph_from_pairs, as_graph

__all__ = [
    "barabasi_albert",
    "erdos_renyi",
    "grid",
    "hypercube",
    "random_geometric",
    "ring",
    "stochastic_block_model",
    "synthetic_social_graph",
]


def _check_count(name: str, value: int, minimum: int) -> None:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < minimum:
        raise ParameterError(f"{name} must be an integer >= {minimum}, got {value!r}")


def _check_probability(name: str, value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise ParameterError(f"{name} must be in [0, 1], got {value!r}")


def _from_edges(n: int, edges: np.ndarray) -> Graph:
    """Undirected graph on ``0..n-1`` from an ``(m, 2)`` array of edges."""
    u, v = np.asarray(edges, dtype=np.int64).reshape(-1, 2).T
    return _graph_from_pairs(np.concatenate([u, v]), np.concatenate([v, u]), np.arange(n))


def erdos_renyi(n: int, p: float, seed: int | None = None) -> Graph:
    """G(n, p): each of the ``n (n - 1) / 2`` possible edges independently with probability p."""
    _check_count("n", n, 1)
    _check_probability("p", p)
    require_generator_fits("erdos_renyi", n, p * n * (n - 1) / 2, networkx=True)
    return as_graph(nx.fast_gnp_random_graph(n, p, seed=seed))


def barabasi_albert(n: int, m: int, seed: int | None = None,
                    initial_clique: int | None = None) -> Graph:
    """Preferential attachment: each new node links to ``m`` distinct nodes, chosen with
    probability proportional to their degree.

    With ``initial_clique = c`` the process starts from a complete graph on ``c >= m`` nodes
    (the variant of the paper, e.g. ``c = 5``); with ``None`` it starts from networkx's default
    star on ``m + 1`` nodes.
    """
    _check_count("m", m, 1)
    require_generator_fits("barabasi_albert", n, n * m, networkx=True)
    if initial_clique is None:
        _check_count("n", n, m + 1)
        return as_graph(nx.barabasi_albert_graph(n, m, seed=seed))
    _check_count("initial_clique", initial_clique, max(m, 2))
    _check_count("n", n, initial_clique)
    core = nx.complete_graph(initial_clique)
    return as_graph(nx.barabasi_albert_graph(n, m, seed=seed, initial_graph=core))


def ring(n: int) -> Graph:
    """Cycle ``0 - 1 - ... - (n-1) - 0`` (``n >= 3``)."""
    _check_count("n", n, 3)
    require_generator_fits("ring", n, n, networkx=False)
    i = np.arange(n)
    return _from_edges(n, np.column_stack([i, (i + 1) % n]))


def grid(rows: int, cols: int, periodic: bool = False) -> Graph:
    """``rows x cols`` lattice, node ``r * cols + c`` at (r, c); ``periodic`` wraps it to a torus.

    Wrap-around links that duplicate an edge (a side of length 2) or form a self-loop (a side of
    length 1) are dropped.
    """
    _check_count("rows", rows, 1)
    _check_count("cols", cols, 1)
    require_generator_fits("grid", rows * cols, 2 * rows * cols, networkx=False)
    r, c = np.divmod(np.arange(rows * cols), cols)
    node = r * cols + c
    if periodic:
        right, down = r * cols + (c + 1) % cols, ((r + 1) % rows) * cols + c
        edges = np.concatenate([np.column_stack([node, right]), np.column_stack([node, down])])
    else:
        has_right, has_down = c + 1 < cols, r + 1 < rows
        edges = np.concatenate([np.column_stack([node[has_right], node[has_right] + 1]),
                                np.column_stack([node[has_down], node[has_down] + cols])])
    return _from_edges(rows * cols, edges)


def hypercube(dim: int) -> Graph:
    """``dim``-dimensional hypercube: ``2**dim`` nodes, ``i ~ j`` iff they differ in one bit."""
    _check_count("dim", dim, 1)
    require_generator_fits("hypercube", 2**dim, dim * 2 ** (dim - 1), networkx=False)
    nodes = np.arange(2**dim)
    edges = np.concatenate([np.column_stack([nodes, nodes ^ (1 << b)]) for b in range(dim)])
    return _from_edges(2**dim, edges)


def random_geometric(n: int, radius: float, seed: int | None = None) -> Graph:
    """``n`` uniform points in the unit square, linked when their distance is at most ``radius``."""
    _check_count("n", n, 1)
    if radius < 0:
        raise ParameterError(f"radius must be >= 0, got {radius!r}")
    area = min(1.0, np.pi * radius**2)  # of a disc, edge effects ignored: an over-estimate
    require_generator_fits("random_geometric", n, area * n * (n - 1) / 2, networkx=False)
    points = np.random.default_rng(seed).random((n, 2))
    return _from_edges(n, cKDTree(points).query_pairs(radius, output_type="ndarray"))


def stochastic_block_model(sizes: list[int], p_in: float, p_out: float,
                           seed: int | None = None) -> Graph:
    """Blocks of the given sizes (nodes numbered block by block); an edge inside a block with
    probability ``p_in``, between blocks with probability ``p_out``, independently."""
    if len(sizes) == 0:
        raise ParameterError("sizes must list at least one block")
    for size in sizes:
        _check_count("block size", size, 1)
    _check_probability("p_in", p_in)
    _check_probability("p_out", p_out)
    n = sum(int(s) for s in sizes)
    require_generator_fits("stochastic_block_model", n, max(p_in, p_out) * n * (n - 1) / 2,
                           networkx=True)
    probs = np.full((len(sizes), len(sizes)), float(p_out))
    np.fill_diagonal(probs, p_in)
    return as_graph(nx.stochastic_block_model([int(s) for s in sizes], probs.tolist(), seed=seed))


def synthetic_social_graph(n: int = 2000, seed: int = 0) -> Graph:
    """The package's default test graph: Holme-Kim power-law cluster graph.

    ``networkx.powerlaw_cluster_graph(n, 4, 0.3, seed)``: preferential attachment with 4 links
    per new node (heavy-tailed degrees) and a triangle-closing step with probability 0.3
    (clustering).  Connected for every ``n >= 5`` and seed.

    Parameters
    ----------
    n : int, default 2000
        Number of nodes (>= 5).
    seed : int, default 0
        Seed of the generator (the same seed gives the same graph).

    Returns
    -------
    Graph
        The graph, labels ``0..n-1``.

    Raises
    ------
    ParameterError
        If ``n`` is not an integer >= 5.
    ResourceLimitError
        If the graph would not fit the memory budget (:mod:`sparsedp.resources`).

    Examples
    --------
    >>> import sparsedp
    >>> g = sparsedp.synthetic_social_graph(50, seed=1)
    >>> g.n, g.num_edges, int(g.degrees.min()), int(g.degrees.max())
    (50, 181, 4, 24)
    """
    _check_count("n", n, 5)
    require_generator_fits("synthetic_social_graph", n, 4 * n, networkx=True)
    return as_graph(nx.powerlaw_cluster_graph(n, 4, 0.3, seed=seed))
