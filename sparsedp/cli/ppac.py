"""``sparsedp ppac``: leakage and convergence of private averaging consensus (PPAC).

    sparsedp ppac leakage [--graph F] [--attacker ID] [--victim ID ...] [--horizon T|inf] [--json]
    sparsedp ppac simulate [--graph F] [--rounds T] [--realisations R] [--eps E] [--json]

Without ``--graph`` both run on the paper's 6-node example (App. A; the edges are partly
assumed, see :func:`example_graph`) with its designated neighbours and, unless given, the
demonstration values ``--value-std 10 --noise-std 15`` (:mod:`sparsedp.defaults`; with a
graph the library's defaults, 1 and 1); with ``--graph`` the
designated neighbours are drawn uniformly (``--designated-seed``).  The consensus matrix is
``I - L / c`` with ``c = d_max`` (the paper's) or ``--scale``.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from sparsedp import defaults
from sparsedp.cli.exports import add_export_options, export, graph_distances
from sparsedp.cli.graph_input import add_graph_file_options, read_graph_file
from sparsedp.cli.options import add_memory_option, add_progress_option
from sparsedp.graphs.graph import Graph, as_graph
from sparsedp.ppac import (
    consensus_errors,
    convergence_bounds,
    convergence_times,
    laplacian_consensus_matrix,
    leakage,
    ppac_layout,
    prepare,
    random_designated,
)
from sparsedp.ppac.convergence import lemma_b5_bound

EXAMPLE_EDGES = ((1, 2), (2, 4), (4, 3), (3, 5), (5, 6), (6, 1), (4, 5))
EXAMPLE_DESIGNATED = (2, 4, 4, 3, 4, 1)
EXAMPLE_VALUES = (2.30, 4.40, -6.17, 2.75, 6.01, 0.92)


def example_graph() -> tuple[Graph, dict[int, int]]:
    """The 6-node example of App. A (nodes labelled 1..6) and its designated neighbours
    ``{k: m_k}`` (labels).

    The paper gives ``m = (2, 4, 4, 3, 4, 1)``, which forces the edges 1-2, 2-4, 3-4, 4-5 and
    1-6, and says the graph has no generalised leaf.  The figure is not reproduced in the text;
    we assume the Hamiltonian cycle 1-2-4-3-5-6-1 plus the forced chord 4-5 (7 edges,
    ``d_max = 3``), which has no generalised leaf.
    """
    import networkx as nx

    G = nx.Graph()
    G.add_nodes_from(range(1, 7))
    G.add_edges_from(EXAMPLE_EDGES)
    return as_graph(G), dict(zip(range(1, 7), EXAMPLE_DESIGNATED, strict=True))


def _horizon(text: str):
    if text.lower() in ("inf", "infinity"):
        return math.inf
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0 or inf, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"horizon must be >= 0, got {value}")
    return value


def _exact(text: str):
    choices = {"auto": "auto", "true": True, "false": False}
    if text.lower() not in choices:
        raise argparse.ArgumentTypeError(f"expected auto, true or false, got {text!r}")
    return choices[text.lower()]


def _common(p: argparse.ArgumentParser) -> None:
    add_graph_file_options(p, "the paper's 6-node example")
    p.add_argument("--designated-seed", type=int, default=0,
                   help="seed of the designated neighbours (with --graph)")
    p.add_argument("--scale", type=float, default=None,
                   help="W = I - L / scale (default d_max, the paper's choice)")
    p.add_argument("--value-std", type=float, default=None,
                   help=f"std of the private values (default {defaults.PPAC_VALUE_STD:g}; "
                        f"{defaults.DEMO_PPAC_VALUE_STD:g} on the paper's example)")
    p.add_argument("--noise-std", type=float, default=None,
                   help=f"std of the noise fragments (default {defaults.PPAC_NOISE_STD:g}; "
                        f"{defaults.DEMO_PPAC_NOISE_STD:g} on the paper's example)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_memory_option(p)


def add_parser(sub) -> None:
    """Register ``ppac leakage`` and ``ppac simulate`` on the top-level subparsers."""
    ppac = sub.add_parser("ppac", help="private averaging consensus: leakage, convergence",
                          description=__doc__.splitlines()[0])
    modes = ppac.add_subparsers(dest="ppac_command", required=True)
    leak = modes.add_parser("leakage", help="I(D_i(t); u_j) in nats for one attacker")
    _common(leak)
    leak.add_argument("--attacker", help="attacker node id (default: 4 on the example, else "
                      "the first node)")
    leak.add_argument("--victim", action="append", dest="victims", metavar="ID",
                      help="victim node id; repeat for several (default: all other nodes)")
    leak.add_argument("--horizon", type=_horizon, default=defaults.PPAC_HORIZON,
                      help="last round observed, or inf")
    leak.add_argument("--exact", type=_exact, default=defaults.EXACT,
                      help="exact integer arithmetic for ranks: auto, true, false")
    leak.add_argument("--top", type=int, default=10, help="victims listed in the text report")
    add_progress_option(leak)
    add_export_options(leak)
    leak.set_defaults(run=run_leakage, report=format_leakage)
    sim = modes.add_parser("simulate", help="run PPAC; convergence times against the bounds")
    _common(sim)
    sim.add_argument("--rounds", type=int, default=200, help="consensus rounds")
    sim.add_argument("--realisations", type=int, default=100, help="independent runs")
    sim.add_argument("--eps", type=float, default=1e-3, help="accuracy for t_eps")
    sim.add_argument("--seed", type=int, default=0, help="seed of values and noises")
    sim.set_defaults(run=run_simulate, report=format_simulate)


def resolve_defaults(args: argparse.Namespace) -> None:
    """The standard deviations left out: the library's (:mod:`sparsedp.defaults`), or on the
    paper's example (no ``--graph``) its demonstration values."""
    demo = args.graph is None
    if args.value_std is None:
        args.value_std = defaults.DEMO_PPAC_VALUE_STD if demo else defaults.PPAC_VALUE_STD
    if args.noise_std is None:
        args.noise_std = defaults.DEMO_PPAC_NOISE_STD if demo else defaults.PPAC_NOISE_STD


def _setup(args):
    resolve_defaults(args)
    graph = None if args.graph is None else read_graph_file(args)
    return ppac_instance(graph, str(args.graph), args.designated_seed, args.scale)


def ppac_instance(graph: Graph | None, name: str, designated_seed: int, scale):
    """``(graph, layout, W, info)`` of a command: the paper's example with its designated
    neighbours when ``graph`` is None, else ``graph`` with designated neighbours drawn
    uniformly (``designated_seed``); ``W = I - L / scale`` (``scale`` None: ``d_max``)."""
    if graph is None:
        graph, designated = example_graph()
        name = "paper's 6-node example (assumed edges: " + \
            ", ".join(f"{a}-{b}" for a, b in EXAMPLE_EDGES) + ")"
    else:
        designated = random_designated(graph, seed=designated_seed)
    layout = ppac_layout(graph, designated)
    W = laplacian_consensus_matrix(graph, scale=scale)
    info = {"source": name, "nodes": graph.n, "edges": graph.num_edges,
            "designated": layout.designated if graph.n <= 100 else None,
            "scale": scale if scale is not None else int(graph.degrees.max())}
    return graph, layout, W, info


def run_leakage(args: argparse.Namespace) -> dict:
    start = time.perf_counter()
    graph, layout, W, info = _setup(args)
    default_attacker = 4 if args.graph is None else graph.id_of(0)
    # labels as typed ("30" names the integer label 30): leakage reports the graph's labels
    result = leakage(layout, W, default_attacker if args.attacker is None else args.attacker,
                     args.horizon, value_std=args.value_std, noise_std=args.noise_std,
                     victims=args.victims, exact=args.exact, progress=args.progress)
    record = result.to_dict()
    finite = result.nats[np.isfinite(result.nats)]
    record.update({
        "graph": info, "units": "nats", "value_std": args.value_std,
        "noise_std": args.noise_std,
        "infinite_count": int(np.isinf(result.nats).sum()),
        "max_finite_nats": float(finite.max()) if finite.size else None,
        "top": args.top, "elapsed_seconds": time.perf_counter() - start,
    })
    if args.csv or args.plot:
        export(args, {
            "victim": record["victims"],
            "graph_distance": graph_distances(graph.adjacency,
                                              graph.index_of(result.attacker, "attacker"),
                                              graph.indices_of(result.victims, "victim")),
            "nats": [float(v) for v in result.nats], "kind": record["kind"],
            "status": record["status"],
        }, x="graph_distance", y="nats", title=f"PPAC leakage to attacker {record['attacker']}")
    return record


def format_leakage(record: dict) -> str:
    g = record["graph"]
    h = record["horizon"]
    lines = [f"graph     {g['source']}: {g['nodes']} nodes, {g['edges']} edges; "
             f"W = I - L/{g['scale']}",
             f"attacker  {record['attacker']}, horizon t = {h}, value std {record['value_std']:g},"
             f" noise std {record['noise_std']:g}  ({record['elapsed_seconds']:.2f} s)",
             f"method    {record['method']}",
             f"result    {record['infinite_count']} victim(s) recovered exactly (infinite), "
             f"largest finite leakage {record['max_finite_nats']} nats"]
    order = sorted(range(len(record["victims"])),
                   key=lambda k: -math.inf if record["nats"][k] == "infinity"
                   else -record["nats"][k])
    for k in order[:record["top"]]:
        value = record["nats"][k]
        shown = "infinite" if value == "infinity" else f"{value:.6g} nats"
        lines.append(f"  victim {record['victims'][k]!s:>8}: {shown}  ({record['kind'][k]}, "
                     f"{record['status'][k]})")
    lines.extend(f"note      {note}" for note in record["notes"])
    return "\n".join(lines)


def run_simulate(args: argparse.Namespace) -> dict:
    start = time.perf_counter()
    graph, layout, W, info = _setup(args)
    values = np.array(EXAMPLE_VALUES) if args.graph is None else None
    prep = prepare(layout, values, realisations=args.realisations, value_std=args.value_std,
                   noise_std=args.noise_std, seed=args.seed)
    bounds = convergence_bounds(layout, W, args.eps, value_std=args.value_std,
                                noise_std=args.noise_std)
    errors = consensus_errors(W, prep, args.rounds)
    times = convergence_times(errors, args.eps)
    per_run = lemma_b5_bound(bounds.alpha, errors[0], args.eps)
    reached = times >= 0
    return {
        "graph": info, "rounds": args.rounds, "realisations": args.realisations,
        "eps": args.eps, "values": "paper's u" if values is not None else "N(0, value_std^2)",
        "value_std": args.value_std, "noise_std": args.noise_std,
        "final_error_max": float(errors[-1].max()),
        "reached": int(reached.sum()),
        "t_eps_mean": float(times[reached].mean()) if reached.any() else None,
        "t_eps_max": int(times[reached].max()) if reached.any() else None,
        "lemma_b5_respected": bool(np.all(times[reached] <= per_run[reached])),
        "bounds": bounds.to_dict(),
        "elapsed_seconds": time.perf_counter() - start,
    }


def format_simulate(record: dict) -> str:
    g, b = record["graph"], record["bounds"]
    mean = record["t_eps_mean"]
    return "\n".join([
        f"graph     {g['source']}: {g['nodes']} nodes, {g['edges']} edges; "
        f"W = I - L/{g['scale']}",
        f"runs      {record['realisations']} x {record['rounds']} rounds, eps = "
        f"{record['eps']:g}: {record['reached']} reached eps; final error max "
        f"{record['final_error_max']:.3g}",
        f"t_eps     mean {mean if mean is None else f'{mean:.2f}'}, max {record['t_eps_max']};"
        f" Lemma B.5 per run respected: {record['lemma_b5_respected']}",
        f"bounds    E[t_eps] <= {b['expected_time_exact']:.2f} (eq. 133, exact initial error) "
        f"<= {b['expected_time_paper']:.2f} (eq. 145); alpha = {b['alpha']:.6f}",
    ])
