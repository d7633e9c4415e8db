"""Graphs named by a string, so that a graph can be given on the command line or shipped to a
worker process: an edge-list path, or a generator spec ``name:arg[:arg...]`` (``ring:100``,
``grid:45x45``, ``hypercube:11``, ``er:2048:0.0045:1``, ``rgg:2048:0.07:1``, ``complete:50``,
``star:20``; the last argument of ``er`` and ``rgg`` is the seed, default 0)."""

from __future__ import annotations

import os

import networkx as nx

from sparsedp.errors import ParameterError, SparseDPError
from sparsedp.graphs import generators
from sparsedp.graphs.cost import require_generator_fits
from sparsedp.graphs.graph import Graph, as_graph

__all__ = ["GENERATORS", "generator", "graph_from_spec"]

GENERATORS = ("ring", "grid", "hypercube", "er", "rgg", "complete", "star")


def graph_from_spec(spec: str) -> Graph:
    """The graph of ``spec``: an existing file is an edge list, anything else a generator."""
    return as_graph(spec) if os.path.exists(spec) else generator(spec)


def generator(spec: str) -> Graph:
    """A graph from a generator spec ``name:arg[:arg...]`` (module docstring)."""
    name, _, rest = spec.partition(":")
    args = rest.split(":") if rest else []
    try:
        if name == "ring":
            return generators.ring(int(args[0]))
        if name == "grid":
            rows, cols = args[0].lower().split("x")
            return generators.grid(int(rows), int(cols))
        if name == "hypercube":
            return generators.hypercube(int(args[0]))
        if name == "er":
            seed = int(args[2]) if len(args) > 2 else 0
            return generators.erdos_renyi(int(args[0]), float(args[1]), seed=seed)
        if name == "rgg":
            seed = int(args[2]) if len(args) > 2 else 0
            return generators.random_geometric(int(args[0]), float(args[1]), seed=seed)
        if name == "complete":
            n = int(args[0])
            require_generator_fits("complete", n, n * (n - 1) / 2, networkx=True)
            return as_graph(nx.complete_graph(n))
        if name == "star":
            require_generator_fits("star", int(args[0]), int(args[0]), networkx=True)
            return as_graph(nx.star_graph(int(args[0]) - 1))
    except SparseDPError:
        raise
    except (IndexError, ValueError) as exc:
        raise ParameterError(f"bad generator spec {spec!r}: {exc}") from None
    raise ParameterError(f"unknown generator {name!r} in {spec!r}; known: "
                         + ", ".join(GENERATORS))
