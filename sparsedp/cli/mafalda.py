"""``sparsedp mafalda``: MAFALDA-SGD's optimised local noise correlation (Bellet et al.,
Sec. 6, Algorithm 2) for a graph and a (k, b) participation scheme, next to the baselines
DP-D-SGD, AntiPGD and D-MF, all scored with the LDP accounting (docs/mafalda.md).

With no graph it runs on the Florentine families graph with ``1/(d+1)`` weights, T = 380,
(k, b) = (20, 19), the paper's learning setting.
"""

from __future__ import annotations

import argparse
import time

import networkx as nx
import numpy as np

from sparsedp import defaults
from sparsedp.cli.graph_input import add_graph_file_options, read_graph_file
from sparsedp.cli.mf import participation_scheme
from sparsedp.cli.options import add_memory_option, add_progress_option
from sparsedp.errors import ParameterError
from sparsedp.graphs.graph import as_graph
from sparsedp.graphs.weights import SCHEMES, gossip_matrix
from sparsedp.mf.optimise import baselines, optimise_correlation
from sparsedp.mf.utility import METHODS, WORKLOADS, utility_gram


def add_parser(sub) -> None:
    """The ``mafalda`` subcommand."""
    p = sub.add_parser(
        "mafalda", help="MAFALDA-SGD: optimised local noise correlation and its baselines",
        description="Lemma 10's utility Gram matrix H of a graph, the correlation minimising "
        "sens^2 ||L C^+||_F^2 under (k, b)-cyclic participation (T = k b), and the baselines "
        "DP-D-SGD, AntiPGD and D-MF, each with the sensitivity recomputed by the LDP "
        "accounting (docs/mafalda.md).",
    )
    add_graph_file_options(p, "the Florentine families graph")
    p.add_argument("--scheme", default=defaults.MF_SCHEME, choices=SCHEMES,
                   help="gossip weights")
    p.add_argument("--rounds", "-T", type=int, default=defaults.MAFALDA_ROUNDS,
                   help="gradient steps T = k b")
    p.add_argument("--participation", default=defaults.MAFALDA_PARTICIPATION,
                   help="k,b for (k, b)-cyclic participation, or user-level, single")
    p.add_argument("--h-method", default=defaults.H_METHOD, choices=METHODS,
                   help="H: exact (trace moments / Krylov) or Hutchinson estimate")
    p.add_argument("--workload", default="post-average", choices=WORKLOADS,
                   help="H of the averaged models (Lemma 10) or of the messages (MFDL's "
                        "message workload)")
    p.add_argument("--probes", type=int, default=defaults.PROBES,
                   help="Hutchinson probes (estimate)")
    p.add_argument("--save", metavar="FILE.npy", help="write the optimised C_local (T x T, "
                   "lower triangular; the noise as applied is its inverse)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_memory_option(p)
    add_progress_option(p)
    p.set_defaults(run=run, report=format_report)


def run(args: argparse.Namespace) -> dict:
    start = time.perf_counter()
    if args.graph is None:
        graph = as_graph(nx.florentine_families_graph())
        name = "Florentine families (networkx)"
    else:
        graph, name = read_graph_file(args), str(args.graph)
    if args.save is not None and not args.save.endswith(".npy"):
        raise ParameterError(f"--save: expected a .npy file name, got {args.save!r}")
    W = gossip_matrix(graph, scheme=args.scheme)
    scheme = participation_scheme(args.participation)
    H = utility_gram(W, args.rounds, method=args.h_method, probes=args.probes,
                     progress=args.progress, workload=args.workload)
    best = optimise_correlation(H.H, scheme, progress=args.progress)
    table = {**baselines(H.H, scheme, progress=args.progress), "mafalda": best}
    if args.save is not None:
        np.save(args.save, best.C)
    return {"graph": {"source": name, "nodes": graph.n, "edges": graph.num_edges},
            "scheme": args.scheme, "rounds": args.rounds,
            "participation": scheme.to_dict(),
            "H": {"kind": H.kind, "method": H.method, "workload": H.workload,
                  "notes": list(H.notes),
                  "max_relative_error": None if H.error is None else
                  float(np.max(H.error / np.abs(H.H)))},
            "correlations": {k: v.to_dict() for k, v in table.items()},
            "saved": args.save, "elapsed_seconds": time.perf_counter() - start}


def format_report(record: dict) -> str:
    g = record["graph"]
    h = record["H"]
    lines = [f"graph     {g['source']}: {g['nodes']} nodes, {g['edges']} edges; "
             f"{record['scheme']} weights; T = {record['rounds']}, "
             f"{record['participation']['name']}",
             f"H         {h['kind']} ({h['method']})"
             + ("" if h["max_relative_error"] is None else
                f", stated error <= {h['max_relative_error']:.2g} relative (estimate)"),
             "correlation   sens^2 (certified)   ||L C^+||_F^2      objective    vs MAFALDA"]
    best = record["correlations"]["mafalda"]["objective"]
    for name, c in record["correlations"].items():
        lines.append(f"{name:12s}  {c['sens2']:18.10g}  {c['utility']:16.8g}  "
                     f"{c['objective']:12.6g}  {c['objective'] / best:9.3f}x")
    m = record["correlations"]["mafalda"]
    lines.append(f"optimiser {m['iterations']} iterations, relative duality gap "
                 f"{m['gap']:.2g}, stationarity {m['stationarity']:.2g} "
                 f"({record['elapsed_seconds']:.1f} s)")
    if record["saved"]:
        lines.append(f"saved     C_local to {record['saved']}")
    return "\n".join(lines)
