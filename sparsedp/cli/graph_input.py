"""The graph of a command: an edge-list file (``--graph``; ``--graph -`` reads it from standard
input), a generator spec (``--generator``, e.g. ``ring:100``, ``grid:45x45``, ``hypercube:11``,
``er:2048:0.0045:1``, ``rgg:2048:0.07:1``, ``complete:50``, ``star:20``) or by default the
embedded synthetic social graph (``synthetic_social_graph(n, seed=0)``, ``n`` chosen by the
command); ``--largest-component`` keeps the largest connected component of any of them, with a
warning saying how many nodes were dropped.  Commands with their own default graph take
``--graph`` and ``--largest-component`` from :func:`add_graph_file_options` and read them
with :func:`read_graph_file`."""

from __future__ import annotations

import argparse
import sys

from sparsedp import graphs, validation
from sparsedp.errors import ParameterError
from sparsedp.graphs.specs import generator


class StandardInput:
    """``--graph -``: the bytes of standard input, read while the command line is parsed
    (the command may run in a forked child, whose standard input is closed); an open binary
    file for :func:`sparsedp.read_edge_list`, named ``<stdin>``."""

    name = "<stdin>"

    def __init__(self) -> None:
        self.data = sys.stdin.buffer.read()

    def read(self) -> bytes:
        return self.data

    def __str__(self) -> str:
        return self.name


def graph_file(value: str) -> str | StandardInput:
    """The ``type`` of ``--graph``: a path, or ``-`` for standard input."""
    return StandardInput() if value == "-" else value


def add_graph_file_options(parser: argparse.ArgumentParser, default: str | None = None) -> None:
    """``--graph FILE`` (``-``: standard input; ``default`` names the graph without it) and
    ``--largest-component``."""
    parser.add_argument("--graph", type=graph_file,
                        help="edge-list file (SNAP style; '-' reads standard input)"
                             + ("" if default is None else f"; default: {default}"))
    parser.add_argument("--largest-component", action="store_true",
                        help="keep the largest connected component of the graph (a warning "
                             "says how many nodes were dropped)")


def add_graph_options(parser: argparse.ArgumentParser) -> None:
    """``--graph FILE``, ``--generator SPEC`` and ``--largest-component``."""
    add_graph_file_options(parser)
    parser.add_argument("--generator",
                        help="generator spec, e.g. ring:100, grid:45x45, er:2048:0.01:1")


def read_graph_file(args: argparse.Namespace) -> graphs.Graph:
    """The graph of ``--graph`` (with ``--largest-component``)."""
    return graphs.as_graph(args.graph, largest_component=args.largest_component)


def load_graph(args: argparse.Namespace, default_nodes: int) -> tuple[graphs.Graph, str]:
    """The command's graph and a name for reports (module docstring)."""
    if args.graph is not None and args.generator is not None:
        raise ParameterError("give --graph or --generator, not both")
    if args.graph is not None:
        return read_graph_file(args), str(args.graph)
    if args.generator is not None:
        graph, name = generator(args.generator), args.generator
    else:
        graph = graphs.synthetic_social_graph(default_nodes, seed=0)
        name = f"synthetic social graph (n={default_nodes}, seed=0)"
    return graphs.as_graph(graph, largest_component=args.largest_component), name


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
