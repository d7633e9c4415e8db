"""``sparsedp account``: privacy of one node against an observer set.

With no arguments it runs on the embedded default: the deterministic synthetic social graph
(``synthetic_social_graph(n=2000, seed=0)``), Metropolis weights, observer node 0, target the
last node, and the defaults of :mod:`sparsedp.defaults` (T = 100 rounds, sigma = 1,
delta = 1e-5).

User mistakes print one line ``sparsedp: error: ...`` and exit with status 2.
"""

from __future__ import annotations

import argparse
import time

from sparsedp import defaults, validation
from sparsedp.cli.graph_input import (
    add_graph_file_options,
    read_graph_file,
    target_and_observers,
)
from sparsedp.cli.options import add_memory_option, add_progress_option, exact_flag
from sparsedp.gossip.sensitivity import (
    METHODS,
    PRECONDITIONERS,
    estimate_cost,
    squared_sensitivity,
)
from sparsedp.gossip.views import VIEWS, VIEWS_WITHOUT_OBSERVERS
from sparsedp.graphs.generators import synthetic_social_graph
from sparsedp.graphs.weights import SCHEMES, gossip_matrix
from sparsedp.privacy.gaussian import gaussian_epsilon
from sparsedp.resources import format_bytes

DEFAULT_GRAPH_NODES = 2000


def add_parser(sub) -> None:
    """The ``account`` subcommand."""
    acc = sub.add_parser(
        "account",
        help="(epsilon, delta) of one target node against an observer set",
        description="Certified bounds on the squared sensitivity Delta_T(target -> observers)^2 "
        "of T rounds of noisy gossip averaging, and the resulting epsilon.",
    )
    add_graph_file_options(acc, f"embedded synthetic social graph with {DEFAULT_GRAPH_NODES} "
                                "nodes")
    acc.add_argument("--scheme", default=defaults.SCHEME, choices=SCHEMES, help="gossip weights")
    acc.add_argument("--target", help="node id whose privacy is accounted (default: last node)")
    acc.add_argument("--observer", action="append", dest="observers", metavar="ID",
                     help="observing node id; repeat for a coalition (default: first node; "
                          f"not for the views {', '.join(VIEWS_WITHOUT_OBSERVERS)})")
    acc.add_argument("--view", default=defaults.VIEW, choices=VIEWS,
                     help="threat model (see sparsedp.gossip.views): what the observers see")
    acc.add_argument("--noise-removed", action="store_true",
                     help="the attacker knows its own noise (v2 Sec. 3.3, SecLDP); in the "
                          "neighbourhood view the given observers' noise only")
    acc.add_argument("--rounds", "-T", type=int, default=defaults.ROUNDS,
                     help="number of rounds T")
    acc.add_argument("--sigma", type=float, default=defaults.SIGMA, help="noise standard deviation")
    acc.add_argument("--delta", type=float, default=defaults.DELTA, help="target delta")
    acc.add_argument("--method", default=defaults.METHOD, choices=METHODS,
                     help="solver path: structured (symmetric W), gram (any constant W), "
                          "dense (K_T assembled from the operator, small mT), "
                          "matrix-free (PCG), or auto")
    acc.add_argument("--preconditioner", default=defaults.PRECONDITIONER, choices=PRECONDITIONERS,
                     help="matrix-free path: gram (Cholesky of the Gram-assembled K_T), "
                          "stationary, or auto (gram when it fits in memory)")
    acc.add_argument("--exact", type=exact_flag, default=defaults.EXACT,
                     help="exhaustive search over sign vectors: auto (T <= 24), true, false")
    acc.add_argument("--gradients", default=defaults.GOSSIP_GRADIENTS,
                     choices=defaults.GRADIENT_MODELS,
                     help="the target's per-round contribution: scalar (a value in [-1, 1], "
                          "the papers' model) or vector (d coordinates clipped in norm: the "
                          "SDP value)")
    acc.add_argument("--truncation-rtol", type=float, default=defaults.TRUNCATION_RTOL,
                     help="structured path: widening allowed by the mixing truncation, "
                          "relative to the lower bound")
    add_memory_option(acc)
    acc.add_argument("--dry-run", action="store_true",
                     help="print the method, estimated memory and sparse products of the "
                          "request (and the largest T that fits) without running it")
    acc.add_argument("--json", action="store_true", help="print one JSON object")
    add_progress_option(acc)
    acc.set_defaults(run=account, report=format_report)


def account(args: argparse.Namespace) -> dict:
    """Run one accounting query; return the JSON-ready record."""
    start = time.perf_counter()
    validation.sigma(args.sigma)
    validation.probability_delta(args.delta)
    validation.rounds(args.rounds)
    if args.graph is None:
        graph = synthetic_social_graph(DEFAULT_GRAPH_NODES, seed=0)
        graph_name = f"synthetic social graph (n={DEFAULT_GRAPH_NODES}, seed=0)"
    else:
        graph = read_graph_file(args)
        graph_name = str(args.graph)
    W = gossip_matrix(graph, scheme=args.scheme)  # row i is the node graph.id_of(i)
    # node ids as typed ("42" names the integer label 42), turned into rows of W
    target, observers = target_and_observers(graph, args, VIEWS_WITHOUT_OBSERVERS)
    if args.dry_run:
        plan = estimate_cost(
            W, target, observers, args.rounds, view=args.view,
            noise_removed=args.noise_removed, method=args.method,
            preconditioner=args.preconditioner, max_memory=args.max_memory,
        )
        return {"dry_run": True,
                "graph": {"source": graph_name, "nodes": graph.n, "edges": graph.num_edges},
                "scheme": args.scheme, "target": graph.id_of(target), "view": args.view,
                "rounds": args.rounds, **plan}
    result = squared_sensitivity(
        W,
        target=target,
        observers=observers,
        T=args.rounds,
        view=args.view,
        noise_removed=args.noise_removed,
        method=args.method,
        exact=args.exact,
        gradients=args.gradients,
        progress=args.progress,
        truncation_rtol=args.truncation_rtol,
        preconditioner=args.preconditioner,
        max_memory=args.max_memory,
    )
    return {
        "graph": {"source": graph_name, "nodes": graph.n, "edges": graph.num_edges},
        "scheme": args.scheme,
        "target": graph.id_of(result.target),
        "view": result.view,
        "noise_removed": result.noise_removed,
        "observers": [graph.id_of(i) for i in result.observers],
        "rounds": args.rounds,
        "gradients": args.gradients,
        "sigma": args.sigma,
        "delta": args.delta,
        "squared_sensitivity_lower": result.lower,
        "squared_sensitivity_upper": result.upper,
        "squared_sensitivity_exact": result.exact,
        "gap": result.gap,
        "relative_gap": result.relative_gap,
        "epsilon": gaussian_epsilon(result.upper, args.sigma, args.delta),
        "method": result.method,
        "bounds": [
            {"name": b.name, "value": b.value, "kind": b.kind} for b in result.bounds
        ],
        "solver": result.solver,
        "notes": list(result.notes),
        "elapsed_seconds": time.perf_counter() - start,
    }


def format_report(record: dict) -> str:
    if record.get("dry_run"):
        return format_dry_run(record)
    g = record["graph"]
    lines = [
        f"graph     {g['source']}: {g['nodes']} nodes, {g['edges']} edges; "
        f"{record['scheme']} weights; T = {record['rounds']} rounds",
        f"view      {record['view']}{' (noise removed)' if record['noise_removed'] else ''}"
        f": target {record['target']} observed by {_shorten(record['observers'])} "
        f"(method: {record['method']}, {record['elapsed_seconds']:.2f} s)",
        f"Delta^2   lower {record['squared_sensitivity_lower']:.10g}   "
        f"certified upper {record['squared_sensitivity_upper']:.10g}   "
        f"(relative gap {record['relative_gap']:.2e})",
    ]
    if record["squared_sensitivity_exact"] is not None:
        lines.append(f"          exact {record['squared_sensitivity_exact']:.10g}")
    lines.append(
        f"privacy   sigma = {record['sigma']:g}, delta = {record['delta']:g}:  "
        f"epsilon <= {record['epsilon']:.6g}  (from the certified upper bound)"
    )
    lines.extend(f"note      {note}" for note in record["notes"])
    return "\n".join(lines)


def format_dry_run(record: dict) -> str:
    g = record["graph"]
    fits = "fits" if record["fits"] else "does NOT fit"
    largest = record["largest_T"]
    lines = [
        f"graph     {g['source']}: {g['nodes']} nodes, {g['edges']} edges; "
        f"{record['scheme']} weights; T = {record['rounds']} rounds",
        f"plan      view {record['view']}, target {record['target']}: method "
        f"{record['method']}"
        + (f" ({record['preconditioner']} preconditioner)" if record.get("preconditioner")
           else "")
        + f", about {format_bytes(record['memory_bytes'])} peak memory, "
        f"{record['sparse_products']} sparse products"
        + (f" and {record['seconds']:.2g} s" if record.get("seconds") is not None else ""),
        f"budget    {format_bytes(record['budget_bytes'])}: the request {fits}"
        + (f"; at most T = {largest} rounds fit" if largest is not None else ""),
    ]
    lines.extend(f"note      {note}" for note in record["notes"])
    return "\n".join(lines)


def _shorten(ids: list, shown: int = 8) -> str:
    """``[a, b, c]``, or the first ``shown`` ids and a count for a large view."""
    if len(ids) <= shown:
        return str(ids)
    return f"{ids[:shown]}... ({len(ids)} nodes)"
