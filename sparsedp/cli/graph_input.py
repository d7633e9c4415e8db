"""The graph of a command: an edge-list file (``--graph``), a generator spec (``--generator``,
e.g. ``ring:100``, ``grid:45x45``, ``hypercube:11``, ``er:2048:0.0045:1``,
``rgg:2048:0.07:1``, ``complete:50``, ``star:20``) or by default the embedded synthetic
social graph (``synthetic_social_graph(n, seed=0)``, ``n`` chosen by the command)."""

from __future__ import annotations

import argparse

from sparsedp import graphs, validation
from sparsedp.errors import ParameterError
from sparsedp.graphs.specs import generator


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
    observers = [0] if args.observers is None else [graph.index_of(v, "observer")
                                                    for v in args.observers]
    # the library's rule, named by the labels as typed (the library names rows of W)
    validation.not_among(target, observers, "target", "observers", label=graph.id_of(target))
    return target, observers
