"""Command-line subcommands ``sparsedp randomwalk`` and ``sparsedp muffliato``.

Both print the pairwise RDP losses of one source towards its receivers (every other node by
default; the text report shows the first ``SHOWN`` of them, ``--json`` all of them), their kind,
and the (epsilon, delta) obtained by optimising the RDP order.  The graph is an edge-list
file (``--graph``), a generator spec (``--generator``, e.g. ``ring:100``, ``grid:45x45``,
``hypercube:11``, ``er:2048:0.0045:1``, ``rgg:2048:0.07:1``, ``complete:50``, ``star:20``) or
by default the embedded synthetic social graph.
"""

from __future__ import annotations

import argparse
import time

import networkx as nx
import numpy as np

from sparsedp.errors import ParameterError
from sparsedp.graphs import graph as graphs
from sparsedp.graphs.weights import SCHEMES, gossip_matrix
from sparsedp.randomwalk.accounting import METHODS, random_walk_rdp
from sparsedp.randomwalk.muffliato import muffliato_rdp
from sparsedp.randomwalk.pairwise import PairwiseLoss

DEFAULT_GRAPH_NODES = 2000
SHOWN = 10  # receivers listed in the text report (--json lists all)
GENERATORS = ("ring", "grid", "hypercube", "er", "rgg", "complete", "star")


def _generator(spec: str) -> graphs.Graph:
    """A graph from ``name:arg[:arg...]`` (see the module docstring)."""
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
            return graphs.as_graph(nx.complete_graph(int(args[0])))
        if name == "star":
            return graphs.as_graph(nx.star_graph(int(args[0]) - 1))
    except (IndexError, ValueError) as exc:
        raise ParameterError(f"bad generator spec {spec!r}: {exc}") from None
    raise ParameterError(f"unknown generator {name!r} in {spec!r}; known: "
                         + ", ".join(GENERATORS))


def _load(args: argparse.Namespace) -> tuple[graphs.Graph, str]:
    if args.graph is not None and args.generator is not None:
        raise ParameterError("give --graph or --generator, not both")
    if args.graph is not None:
        return graphs.as_graph(args.graph), str(args.graph)
    if args.generator is not None:
        return _generator(args.generator), args.generator
    return (graphs.synthetic_social_graph(DEFAULT_GRAPH_NODES, seed=0),
            f"synthetic social graph (n={DEFAULT_GRAPH_NODES}, seed=0)")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--graph", help="edge-list file (SNAP style)")
    p.add_argument("--generator", help="generator spec, e.g. ring:100, grid:45x45, er:2048:0.01:1")
    p.add_argument("--scheme", default="metropolis", choices=SCHEMES, help="W weights")
    p.add_argument("--source", default=None, help="node whose data is accounted (default: first)")
    p.add_argument("--receiver", action="append", dest="receivers", metavar="ID",
                   help="receiving node; repeat for several (default: every other node)")
    p.add_argument("--rounds", "-T", type=int, required=True, help="walk steps / gossip rounds")
    p.add_argument("--sigma", type=float, required=True, help="noise std / sensitivity")
    p.add_argument("--alpha", type=float, default=2.0, help="Renyi order of the reported RDP")
    p.add_argument("--delta", type=float, default=1e-5, help="delta of the (eps, delta) column")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def add_parsers(sub) -> None:
    """Register the two subcommands on the ``sparsedp`` subparsers object."""
    rw = sub.add_parser("randomwalk", help="pairwise RDP of random-walk learning",
                        description="Pairwise network DP of a random walk (Cyffers, Bellet & "
                        "Upadhyay): one source against its receivers.")
    _common(rw)
    rw.add_argument("--contributions", type=float, default=None,
                    help="cap N_u on the source's contributions (default: T/n, an estimate)")
    rw.add_argument("--method", default="auto", choices=METHODS, help="series or log-Green")
    rw.add_argument("--column-method", default="chebyshev",
                    choices=("chebyshev", "lanczos", "quadrature"), help="for log-green")
    rw.add_argument("--tol", type=float, default=1e-10, help="error target of the L column")
    rw.add_argument("--sender-known", action="store_true", help="Section B.1 variant")
    rw.add_argument("--coalition", action="append", metavar="ID",
                    help="colluding receiver; repeat (one loss for the whole coalition)")
    rw.add_argument("--no-clip", action="store_true", help="do not clip at local DP")
    rw.set_defaults(run=run_randomwalk, report=format_pairwise)
    mf = sub.add_parser("muffliato", help="pairwise RDP of Muffliato gossip (baseline)",
                        description="The Muffliato gossip bound: one source against its "
                        "receivers, plain or Chebyshev-accelerated gossip.")
    _common(mf)
    mf.add_argument("--accelerated", action="store_true", help="Chebyshev acceleration")
    mf.add_argument("--row-norms", default="exact", choices=("exact", "bound"))
    mf.add_argument("--method", default="auto", choices=("auto", "dense", "propagation"))
    mf.set_defaults(run=run_muffliato, report=format_pairwise)


def _ids(graph: graphs.Graph, given, role: str) -> list[int] | None:
    """Rows of W of the node ids as typed (``"42"`` names the integer label 42)."""
    if given is None:
        return None
    return [graph.index_of(v, role) for v in given]


def _record(graph, name, args, result: PairwiseLoss, start: float) -> dict:
    record = result.as_dict()  # rows of W, reported as the graph's labels
    record["source"] = graph.id_of(result.source)
    record["receivers"] = graph.ids_of(result.receivers).tolist()
    record["epsilon"] = [float(e) for e in result.epsilon(args.delta)]
    record.update({"graph": {"source": name, "nodes": graph.n, "edges": graph.num_edges},
                   "scheme": args.scheme, "rounds": args.rounds, "delta": args.delta,
                   "elapsed_seconds": time.perf_counter() - start})
    return record


def run_randomwalk(args: argparse.Namespace) -> dict:
    start = time.perf_counter()
    graph, name = _load(args)
    W = gossip_matrix(graph, scheme=args.scheme)
    source = 0 if args.source is None else graph.index_of(args.source, "source")
    result = random_walk_rdp(
        W, source, args.rounds, args.sigma, args.alpha, contributions=args.contributions,
        receivers=_ids(graph, args.receivers, "receiver"),
        coalition=_ids(graph, args.coalition, "coalition"),
        sender_known=args.sender_known, clip=not args.no_clip, method=args.method,
        column_method=args.column_method, tol=args.tol)
    return _record(graph, name, args, result, start)


def run_muffliato(args: argparse.Namespace) -> dict:
    start = time.perf_counter()
    graph, name = _load(args)
    W = gossip_matrix(graph, scheme=args.scheme)
    source = 0 if args.source is None else graph.index_of(args.source, "source")
    result = muffliato_rdp(W, source, args.rounds, args.sigma, args.alpha,
                           receivers=_ids(graph, args.receivers, "receiver"),
                           accelerated=args.accelerated, row_norms=args.row_norms,
                           method=args.method)
    return _record(graph, name, args, result, start)


def format_pairwise(record: dict) -> str:
    g = record["graph"]
    rdp = np.asarray(record["rdp"])
    lines = [
        f"graph     {g['source']}: {g['nodes']} nodes, {g['edges']} edges; "
        f"{record['scheme']} weights; T = {record['rounds']}",
        f"mechanism {record['mechanism']}; source {record['source']}; alpha = "
        f"{record['alpha']:g}, sigma = {record['sigma']:g} ({record['elapsed_seconds']:.2f} s)",
        f"method    {record['method']}",
        f"RDP       kind {record['kind']}; local-DP value {record['local_dp']:.6g}; over "
        f"{len(rdp)} entries min {rdp.min():.6g}, mean {rdp.mean():.6g}, max {rdp.max():.6g}",
    ]
    coalition = record["mechanism"].endswith("coalition")
    label = "coalition" if coalition else "receiver"
    shown = 1 if coalition else min(SHOWN, len(rdp))
    for j in range(shown):
        who = record["receivers"] if coalition else record["receivers"][j]
        lines.append(f"  {label} {who}: RDP {rdp[j]:.6g}"
                     f"{' (clipped)' if record['clipped'][j] else ''}; "
                     f"epsilon {record['epsilon'][j]:.6g} at delta = {record['delta']:g}")
    lines.extend(f"note      {note}" for note in record["notes"])
    return "\n".join(lines)
