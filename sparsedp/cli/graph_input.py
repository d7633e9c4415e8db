"""The graph of a command: an edge-list file (``--graph``), a generator spec (``--generator``,
e.g. ``ring:100``, ``grid:45x45``, ``hypercube:11``, ``er:2048:0.0045:1``,
``rgg:2048:0.07:1``, ``complete:50``, ``star:20``) or by default the embedded synthetic
social graph (``synthetic_social_graph(n, seed=0)``, ``n`` chosen by the command)."""

from __future__ import annotations

import argparse

import networkx as nx

from sparsedp import graphs
from sparsedp.errors import ParameterError, SparseDPError
from sparsedp.graphs.cost import require_generator_fits

GENERATORS = ("ring", "grid", "hypercube", "er", "rgg", "complete", "star")


def add_graph_options(parser: argparse.ArgumentParser) -> None:
    """``--graph FILE`` and ``--generator SPEC``."""
    parser.add_argument("--graph", help="edge-list file (SNAP style)")
    parser.add_argument("--generator",
                        help="generator spec, e.g. ring:100, grid:45x45, er:2048:0.01:1")


def load_graph(args: argparse.Namespace, default_nodes: int) -> tuple[graphs.Graph, str]:
    """The command's graph and a name for reports (module docstring)."""
    if args.graph is not None and args.generator is not None:
        raise ParameterError("give --graph or --generator, not both")
    if args.graph is not None:
        return graphs.as_graph(args.graph), str(args.graph)
    if args.generator is not None:
        return generator(args.generator), args.generator
    return (graphs.synthetic_social_graph(default_nodes, seed=0),
            f"synthetic social graph (n={default_nodes}, seed=0)")


def target_and_observers(graph: graphs.Graph, args: argparse.Namespace,
                         fixed_views) -> tuple[int, list[int] | None]:
    """Rows of ``--target`` (default: the last node) and ``--observer`` (default: the first
    node; ``None`` for the views in ``fixed_views``, which name their own observed set), the
    ids as typed (``"42"`` names the integer label 42)."""
    target = graph.n - 1 if args.target is None else graph.index_of(args.target, "target")
    if args.view in fixed_views:
        if args.observers:
            raise ParameterError(f"--view {args.view} fixes its own observers; drop --observer")
        return target, None
    if args.observers is None:
        return target, [0]
    return target, [graph.index_of(v, "observer") for v in args.observers]


def generator(spec: str) -> graphs.Graph:
    """A graph from ``name:arg[:arg...]`` (module docstring)."""
    name, _, rest = spec.partition(":")
    args = rest.split(":") if rest else []
    try:
        if name == "ring":
            return graphs.ring(int(args[0]))
        if name == "grid":
            rows, cols = args[0].lower().split("x")
            return graphs.grid(int(rows), int(cols))
        if name == "hypercube":
            return graphs.hypercube(int(args[0]))
        if name == "er":
            seed = int(args[2]) if len(args) > 2 else 0
            return graphs.erdos_renyi(int(args[0]), float(args[1]), seed=seed)
        if name == "rgg":
            seed = int(args[2]) if len(args) > 2 else 0
            return graphs.random_geometric(int(args[0]), float(args[1]), seed=seed)
        if name == "complete":
            n = int(args[0])
            require_generator_fits("complete", n, n * (n - 1) / 2, networkx=True)
            return graphs.as_graph(nx.complete_graph(n))
        if name == "star":
            require_generator_fits("star", int(args[0]), int(args[0]), networkx=True)
            return graphs.as_graph(nx.star_graph(int(args[0]) - 1))
    except SparseDPError:
        raise
    except (IndexError, ValueError) as exc:
        raise ParameterError(f"bad generator spec {spec!r}: {exc}") from None
    raise ParameterError(f"unknown generator {name!r} in {spec!r}; known: "
                         + ", ".join(GENERATORS))
