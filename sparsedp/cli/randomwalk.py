"""Command-line subcommands ``sparsedp randomwalk`` and ``sparsedp muffliato``.

Both print the pairwise RDP losses of one source towards its receivers (every other node by
default; the text report shows the first ``SHOWN`` of them, ``--json`` all of them), their kind,
and the (epsilon, delta) obtained by optimising the RDP order.  The graph: ``--graph``,
``--generator`` or the embedded synthetic social graph (:mod:`sparsedp.cli.graph_input`).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from sparsedp import defaults, graphs, validation
from sparsedp.cli.exports import add_export_options, export, graph_distances
from sparsedp.cli.graph_input import add_graph_options, load_graph
from sparsedp.cli.options import add_memory_option, add_progress_option
from sparsedp.errors import ParameterError
from sparsedp.graphs.weights import SCHEMES, gossip_matrix
from sparsedp.randomwalk.accounting import METHODS, random_walk_rdp
from sparsedp.randomwalk.muffliato import muffliato_rdp
from sparsedp.randomwalk.pairwise import PairwiseLoss

DEFAULT_GRAPH_NODES = 2000
SHOWN = 10  # receivers listed in the text report (--json lists all)
CERTIFY = {"auto": "auto", "always": True, "never": False}  # --certify -> random_walk_rdp


def _common(p: argparse.ArgumentParser) -> None:
    add_graph_options(p)
    p.add_argument("--scheme", default=defaults.SCHEME, choices=SCHEMES, help="W weights")
    p.add_argument("--source", default=None, help="node whose data is accounted (default: first)")
    p.add_argument("--receiver", action="append", dest="receivers", metavar="ID",
                   help="receiving node; repeat for several (default: every other node)")
    p.add_argument("--rounds", "-T", type=int, required=True, help="walk steps / gossip rounds")
    p.add_argument("--sigma", type=float, required=True, help="noise std / sensitivity")
    p.add_argument("--alpha", type=float, default=defaults.ALPHA,
                   help="Renyi order of the reported RDP")
    p.add_argument("--delta", type=float, default=defaults.DELTA,
                   help="delta of the (eps, delta) column")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_progress_option(p)
    add_memory_option(p)
    add_export_options(p)


def add_parsers(sub) -> None:
    """Register the two subcommands on the ``sparsedp`` subparsers object."""
    rw = sub.add_parser("randomwalk", help="pairwise RDP of random-walk learning",
                        description="Pairwise network DP of a random walk (Cyffers, Bellet & "
                        "Upadhyay): one source against its receivers.")
    _common(rw)
    rw.add_argument("--contributions", type=float, default=None,
                    help="cap N_u on the source's contributions (default: T/n, an estimate)")
    rw.add_argument("--method", default=defaults.METHOD, choices=METHODS,
                    help="series or log-Green")
    rw.add_argument("--column-method", default=defaults.COLUMN_METHOD,
                    choices=("chebyshev", "lanczos", "quadrature"), help="for log-green")
    rw.add_argument("--tol", type=float, default=defaults.WALK_TOL,
                    help="error target of the L column")
    rw.add_argument("--certify", default="auto", choices=tuple(CERTIFY),
                    help="certify the upper end of W's spectrum for log-Green (auto: when the "
                         "sparse factorisation is cheap; without it the result is an estimate)")
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
    mf.add_argument("--row-norms", default=defaults.ROW_NORMS, choices=("exact", "bound"),
                    help="row norms ||P_t e_w||^2: propagated exactly, or the cheap lower "
                         "bound 1/n for t >= 2 (a looser upper bound on the loss)")
    mf.add_argument("--method", default=defaults.METHOD, choices=("auto", "dense", "propagation"),
                    help="dense eigendecomposition of W (small n) or matrix-free propagation")
    mf.set_defaults(run=run_muffliato, report=format_pairwise)


def _ids(graph: graphs.Graph, given, role: str) -> list[int] | None:
    """Rows of W of the node ids as typed (``"42"`` names the integer label 42)."""
    if given is None:
        return None
    return [graph.index_of(v, role) for v in given]


def _source_and(graph: graphs.Graph, args, *groups: str) -> tuple[int, ...]:
    """The source's row and those of each group of options (``receivers``, ``coalition``),
    the source refused among them by the library's rule, named by its label as typed."""
    source = 0 if args.source is None else graph.index_of(args.source, "source")
    rows = [_ids(graph, getattr(args, group), group.rstrip("s")) for group in groups]
    for group, members in zip(groups, rows, strict=True):
        validation.not_among(source, members, "source", group, label=graph.id_of(source))
    return (source, *rows)


def _record(graph, name, args, result: PairwiseLoss, start: float) -> dict:
    record = result.as_dict()  # rows of W, reported as the graph's labels
    record["source"] = graph.id_of(result.source)
    record["receivers"] = graph.ids_of(result.receivers).tolist()
    record["epsilon"] = [float(e) for e in result.epsilon(args.delta)]
    record.update({"graph": {"source": name, "nodes": graph.n, "edges": graph.num_edges},
                   "scheme": args.scheme, "rounds": args.rounds, "delta": args.delta,
                   "elapsed_seconds": time.perf_counter() - start})
    if args.csv or args.plot:
        if len(result.rdp) != len(result.receivers):
            raise ParameterError("--csv and --plot list receivers one by one; a coalition has "
                                 "one value (use --json)")
        export(args, {
            "receiver": record["receivers"],
            "graph_distance": graph_distances(graph.adjacency, result.source, result.receivers),
            "rdp": record["rdp"], "epsilon": record["epsilon"], "clipped": record["clipped"],
        }, x="graph_distance", y="rdp",
            title=f"{record['mechanism']} from source {record['source']}, T = {args.rounds}")
    return record


def run_randomwalk(args: argparse.Namespace) -> dict:
    start = time.perf_counter()
    graph, name = load_graph(args, DEFAULT_GRAPH_NODES)
    W = gossip_matrix(graph, scheme=args.scheme)
    source, receivers, coalition = _source_and(graph, args, "receivers", "coalition")
    result = random_walk_rdp(
        W, source, args.rounds, args.sigma, args.alpha, contributions=args.contributions,
        receivers=receivers, coalition=coalition,
        sender_known=args.sender_known, clip=not args.no_clip, method=args.method,
        column_method=args.column_method, tol=args.tol, certify=CERTIFY[args.certify],
        progress=args.progress)
    return _record(graph, name, args, result, start)


def run_muffliato(args: argparse.Namespace) -> dict:
    start = time.perf_counter()
    graph, name = load_graph(args, DEFAULT_GRAPH_NODES)
    W = gossip_matrix(graph, scheme=args.scheme)
    source, receivers = _source_and(graph, args, "receivers")
    result = muffliato_rdp(W, source, args.rounds, args.sigma, args.alpha,
                           receivers=receivers,
                           accelerated=args.accelerated, row_norms=args.row_norms,
                           method=args.method, progress=args.progress)
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
    order = [0] if coalition else np.argsort(-rdp, kind="stable")[:SHOWN]
    if not coalition and len(rdp) > len(order):
        lines.append(f"most exposed {len(order)} of {len(rdp)} receivers (--json lists all):")
    for j in order:
        who = record["receivers"] if coalition else record["receivers"][j]
        lines.append(f"  {label} {who}: RDP {rdp[j]:.6g}"
                     f"{' (clipped)' if record['clipped'][j] else ''}; "
                     f"epsilon {record['epsilon'][j]:.6g} at delta = {record['delta']:g}")
    lines.extend(_shared_values(record, rdp))
    lines.extend(f"note      {note}" for note in record["notes"])
    return "\n".join(lines)


def _shared_values(record: dict, rdp: np.ndarray) -> list[str]:
    """A line when many receivers share the largest value, saying why: the local-DP clip
    (each contribution's loss is capped at alpha / (2 sigma^2)) or the graph's symmetry."""
    if len(rdp) < 2:
        return []
    lines = []
    top = np.isclose(rdp, rdp.max(), rtol=1e-12, atol=0.0)
    if top.sum() >= 2:
        clipped = np.asarray(record["clipped"], dtype=bool)
        if clipped[top].all():
            why = ("all are clipped at the local-DP value: for them the bound is no better than "
                   "local DP")
        else:
            why = "they are equivalent under the graph's symmetry or equally far from the source"
        lines.append(f"note      {int(top.sum())} receivers share the largest RDP "
                     f"{rdp.max():.6g}: {why}")
    epsilon = np.asarray(record["epsilon"], dtype=float)
    if np.allclose(epsilon, epsilon[0], rtol=1e-12, atol=0.0) and not np.allclose(rdp, rdp[0]):
        why = ("the best Renyi order for this delta lies above alpha_max = "
               f"{record['alpha_max']:.4g}, where the pairwise bound does not hold and only the "
               "local-DP curve does" if record["alpha_max"] is not None else
               "the conversion is dominated by the local-DP curve")
        lines.append(f"note      every receiver has the same epsilon {epsilon[0]:.6g}: {why}; "
                     "compare receivers by their RDP at alpha, or raise sigma")
    return lines
