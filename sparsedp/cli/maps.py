"""``sparsedp map``: a privacy map of a whole graph (:func:`sparsedp.maps.privacy_map`).

Bounds on ``Delta_T(target -> observer)^2`` of gossip averaging (secure-summation view, one
observer) for every selected pair (``--family random-walk`` / ``mf``: the same table for
the random-walk and matrix-factorisation families, :mod:`sparsedp.maps.families`); prints
the summaries (per-target worst case over the observers, min / mean / max per hop distance)
and with ``--out PATH`` writes the whole pair table as Parquet (needs pyarrow: ``pip install
'sparsedp[map]'``).  A path holding a map with other parameters is refused before any work,
never overwritten.  ``--per-target``: only the
certified per-target worst case over the observers, without the pair table
(:func:`sparsedp.maps.worst_case.per_target_worst_case`: pruned, fast at large T).

Selections (``--observers``, ``--targets``): ``all``, a comma-separated list of node ids, or
``sample:K:SEED``.
"""

from __future__ import annotations

import argparse
import sys
import time

from sparsedp import defaults, validation
from sparsedp.cli.graph_input import add_graph_options, load_graph
from sparsedp.cli.options import add_memory_option, add_progress_option, exact_flag
from sparsedp.errors import ParameterError, ResourceLimitError
from sparsedp.graphs.weights import SCHEMES
from sparsedp.maps import store
from sparsedp.maps.families import mf_map, random_walk_map
from sparsedp.maps.plan import DEFAULT_MAX_PAIRS, MapPlan, map_plan
from sparsedp.maps.plots import PLOT_KINDS, check_plot, plot_map
from sparsedp.maps.privacy_map import MAP_VIEWS, UPPER_MODES, privacy_map
from sparsedp.maps.sweep import sweep
from sparsedp.maps.worst_case import per_target_worst_case
from sparsedp.mf.sensitivity import GRADIENTS
from sparsedp.mf.trust import TRUST_MODELS

FAMILIES = ("gossip", "random-walk", "mf")
MF_ALGORITHMS = ("dp-d-sgd", "antipgd", "zip-dl")  # the ones named by a plain string
DEFAULT_GRAPH_NODES = 2000  # the embedded synthetic social graph, as for randomwalk
SHOWN = 10  # rows of each summary in the text report (--json has all)
CONFIRM_SECONDS = 600  # an estimated time above this (or pairs above DEFAULT_MAX_PAIRS) needs
# --yes


def _selection(text: str):
    """``all`` | ``sample:K:SEED`` | ``a,b,c`` (node ids as typed)."""
    if text == "all":
        return "all"
    if text.startswith("sample:"):
        parts = text.split(":")
        try:
            if len(parts) == 3:
                return ("sample", int(parts[1]), int(parts[2]))
        except ValueError:
            pass
        raise argparse.ArgumentTypeError(
            f"expected sample:K:SEED (K nodes drawn with the integer seed SEED, e.g. "
            f"sample:50:0), got {text!r}")
    ids = [v.strip() for v in text.split(",") if v.strip()]
    if not ids:
        raise argparse.ArgumentTypeError("expected all, sample:K:SEED or a list of node ids")
    return ids


def add_parser(sub) -> None:
    """The ``map`` subcommand."""
    p = sub.add_parser(
        "map", help="privacy map of a graph: every (observer, target) pair",
        description="Certified bounds on Delta_T(target -> observer)^2 of noisy gossip "
        "averaging (secure-summation view, one observer) for many pairs at once, with "
        "per-target worst cases and per-distance summaries; the pair table as Parquet.")
    add_graph_options(p)
    p.add_argument("--scheme", default=None, choices=SCHEMES,
                   help=f"gossip weights (default {defaults.SCHEME}; {defaults.MF_SCHEME} for "
                        "--family mf)")
    p.add_argument("--observers", type=_selection, default=defaults.SELECTION,
                   help="all, sample:K:SEED or a comma-separated list of node ids")
    p.add_argument("--targets", type=_selection, default=defaults.SELECTION,
                   help="all, sample:K:SEED or a comma-separated list of node ids")
    p.add_argument("--rounds", "-T", type=int, default=None,
                   help=f"number of rounds T (default {defaults.ROUNDS}; {defaults.MF_ROUNDS} "
                        f"for --family mf; {defaults.DEMO_MAP_ROUNDS} on the embedded graph)")
    p.add_argument("--sigma", type=float, default=None,
                   help=f"noise standard deviation (default {defaults.SIGMA:g}; "
                        f"{defaults.RANDOM_WALK_SIGMA:g} for --family random-walk)")
    p.add_argument("--delta", type=float, default=defaults.DELTA, help="target delta")
    p.add_argument("--upper", choices=UPPER_MODES, default=None,
                   help=f"default: {defaults.MAP_UPPER}; on the embedded graph (secure-summation "
                        f"view) {defaults.DEMO_MAP_UPPER}. "
                        "entrywise: the certified sum |M_T| of every target at once (T^3 n "
                        "work per observer; tight when M_T >= 0 entrywise: all 4 million pairs "
                        "of the default graph in about 25 s); certified: the single-pair "
                        "bounds per pair (one T x T solve and bound evaluation each, about a "
                        "millisecond a pair: hours for all pairs of the default graph); none: "
                        "the c = 1 lower bound only (fastest)")
    p.add_argument("--exact", type=exact_flag, default=defaults.MAP_EXACT,
                   help="exhaustive sign search per pair: auto (T <= 24), true, false "
                        "(default: false)")
    p.add_argument("--view", choices=MAP_VIEWS, default=defaults.VIEW,
                   help="secure-summation (the observer alone) or neighbourhood (its closed "
                        "neighbourhood's plain messages: c = 1 batched per observer; "
                        "--upper certified per pair; no entrywise)")
    p.add_argument("--float32", action="store_true",
                   help="store lower, upper and epsilon as float32, rounded outward (still "
                        "bounds)")
    p.add_argument("--out", metavar="PATH",
                   help="write the pair table as Parquet (refused if PATH holds another map)")
    p.add_argument("--plot", metavar="FILE",
                   help="also draw the map to FILE (.png, .pdf, .svg; needs matplotlib: pip "
                        "install 'sparsedp[plot]')")
    p.add_argument("--plot-kind", choices=PLOT_KINDS, default="distance",
                   help="distance: epsilon against hop distance, min-mean-max; heatmap: "
                        "observer x target (<= 500 a side); graph: nodes coloured by their "
                        "worst case (<= 2000 nodes)")
    p.add_argument("--per-target", action="store_true",
                   help="only the certified worst case of each target over the observers, "
                        "without the pair table (box-bound pruning, entrywise bounds for the "
                        "few pairs that can be a target's worst; --upper, --exact, --float32, "
                        "--out and --plot do not apply)")
    p.add_argument("--refine", type=int, default=defaults.REFINE, metavar="N",
                   help="with --per-target: refine the pairs that decide each target's upper "
                        "bound (single-pair sandwich, multistart ascent, certified diagonal "
                        "shift with N eigen-decompositions; 0: off). Narrows the gap where "
                        "M_T has negative entries, at a few ms a refined pair")
    p.add_argument("--family", choices=FAMILIES, default="gossip",
                   help="gossip (default: bounds on Delta^2); random-walk (Renyi losses at "
                        "--alpha, one walk column per target: observer = receiver); mf "
                        "(matrix-factorisation bounds on sens^2 of --algorithm under --trust, "
                        "attacker set {observer}). --upper, --exact, --float32 and "
                        "--per-target are gossip options")
    p.add_argument("--alpha", type=float, default=defaults.ALPHA,
                   help="random-walk: Renyi order (sigma^2 >= 2 alpha (alpha - 1))")
    p.add_argument("--contributions", type=float, default=None,
                   help="random-walk: cap on each source's contributions (certified; default "
                        "the expectation T/n, an estimate)")
    p.add_argument("--algorithm", default=defaults.ALGORITHM, choices=MF_ALGORITHMS,
                   help="mf: the algorithm (muffliato-sgd(K) through the library)")
    p.add_argument("--trust", default=defaults.TRUST_MODEL, choices=TRUST_MODELS,
                   help="mf: trust model")
    p.add_argument("--gradients", default=defaults.GRADIENTS, choices=GRADIENTS,
                   help="mf: vector or scalar gradients (scalar: exact sign search at small T)")
    p.add_argument("--yes", action="store_true",
                   help=f"run a map over {DEFAULT_MAX_PAIRS:,} pairs or estimated to take over "
                        f"{CONFIRM_SECONDS // 60} minutes (refused without it; its pairs, "
                        "estimated time and sizes are printed on stderr before it starts "
                        "unless --progress never)")
    p.add_argument("--json", action="store_true", help="print one JSON object (summaries)")
    add_memory_option(p)
    add_progress_option(p)
    p.set_defaults(run=run, report=format_report)
    _add_sweep_parser(sub)


def _values(kind):
    """A comma-separated list of ``kind`` values (``--rounds 10,20``)."""
    def parse(text: str) -> list:
        try:
            return [kind(v) for v in text.split(",") if v.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a comma-separated list, got {text!r}") from None
    return parse


def _add_sweep_parser(sub) -> None:
    """The ``sweep`` subcommand: privacy maps over a grid, as Dask tasks."""
    p = sub.add_parser(
        "sweep", help="privacy maps over a parameter grid, on Dask, resumable",
        description="Privacy maps (secure-summation view) for every combination of graphs, "
        "schemes, rounds, sigma and delta, the observers split in blocks; each block is a "
        "Dask task whose table is written atomically as its own Parquet chunk in --out. "
        "Re-running the same command skips the finished chunks (a killed sweep resumes); "
        "another sweep's directory is refused. Needs sparsedp[sweep].")
    p.add_argument("--out", required=True, metavar="DIR", help="the sweep's directory")
    p.add_argument("--graph", action="append", dest="graphs", metavar="SPEC",
                   help="edge-list path or generator spec (ring:100, er:2048:0.01:1, ...); "
                        f"repeat for several (default: the example {defaults.DEMO_SWEEP_GRAPH})")
    p.add_argument("--scheme", type=_values(str), default=[defaults.SCHEME],
                   help="gossip weight schemes, comma-separated")
    p.add_argument("--rounds", "-T", type=_values(int), default=[defaults.ROUNDS],
                   help="T values")
    p.add_argument("--sigma", type=_values(float), default=[defaults.SIGMA], help="sigma values")
    p.add_argument("--delta", type=_values(float), default=[defaults.DELTA], help="delta values")
    p.add_argument("--observers", type=_selection, default=defaults.SELECTION,
                   help="all, sample:K:SEED or a comma-separated list of node ids")
    p.add_argument("--targets", type=_selection, default=defaults.SELECTION,
                   help="all, sample:K:SEED or a comma-separated list of node ids")
    p.add_argument("--observer-block", type=int, default=defaults.OBSERVER_BLOCK,
                   help="observers per task (one Parquet chunk each)")
    p.add_argument("--family", type=_values(str), default=["gossip"], dest="families",
                   help="families, comma-separated: gossip, gossip:neighbourhood, "
                        "random-walk, mf:dp-d-sgd, mf:antipgd, mf:zip-dl (default gossip)")
    p.add_argument("--upper", choices=UPPER_MODES, default=defaults.SWEEP_UPPER,
                   help="upper bounds of each map (see sparsedp map)")
    p.add_argument("--workers", type=int, default=defaults.WORKERS,
                   help="worker processes of the local Dask cluster")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="an existing Dask scheduler (tcp://host:port) instead of a local cluster")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_progress_option(p)
    p.set_defaults(run=run_sweep, report=format_sweep, in_process=True)


def run_sweep(args: argparse.Namespace) -> dict:
    """Run or finish the sweep; return what was done."""
    start = time.perf_counter()
    for value in args.sigma:
        validation.sigma(value)
    for value in args.delta:
        validation.probability_delta(value)
    for value in args.rounds:
        validation.rounds(value)
    result = sweep(args.out, args.graphs or [defaults.DEMO_SWEEP_GRAPH], args.rounds, args.sigma,
                   args.delta, schemes=args.scheme, observers=args.observers,
                   targets=args.targets, observer_block=args.observer_block, upper=args.upper,
                   families=args.families, scheduler=args.scheduler, workers=args.workers,
                   progress=args.progress)
    return {**result.to_dict(), "elapsed_seconds": time.perf_counter() - start}


def format_sweep(record: dict) -> str:
    return (f"sweep      {record['out']}: {record['chunks']} chunks ({record['computed']} "
            f"computed now, {record['skipped']} already there), {record['rows']} pairs "
            f"({record['elapsed_seconds']:.1f} s)")


def run(args: argparse.Namespace) -> dict:
    """Compute the map (and store it); return the JSON-ready summary record."""
    start = time.perf_counter()
    resolve_defaults(args)
    validation.sigma(args.sigma)
    validation.probability_delta(args.delta)
    validation.rounds(args.rounds)
    if args.family != "gossip":
        return _run_family(args, start)
    if args.per_target:
        return _run_per_target(args, start)
    graph, source = load_graph(args, DEFAULT_GRAPH_NODES)
    parameters = {"graph": source, "scheme": args.scheme, "observers": args.observers,
                  "targets": args.targets, "T": args.rounds, "sigma": args.sigma,
                  "delta": args.delta, "upper": args.upper, "exact": args.exact,
                  "view": args.view, "float32": args.float32}
    plan = map_plan(graph, args.observers, args.targets, args.rounds, upper=args.upper,
                    view=args.view, exact=args.exact, float32=args.float32)
    existed = _before_work(args, plan, graph, parameters)
    result = privacy_map(graph, observers=args.observers, targets=args.targets, T=args.rounds,
                         sigma=args.sigma, delta=args.delta, scheme=args.scheme,
                         upper=args.upper, view=args.view, exact=args.exact,
                         float32=args.float32,
                         progress=args.progress,
                         max_memory=args.max_memory, max_pairs=None)  # checked: _before_work
    return _finish(args, start, result, parameters, graph, source, existed)


def _before_work(args, plan: MapPlan, graph, parameters: dict | None) -> bool:
    """Everything checked before the map starts: the plot asked for (kind, size, path), the
    store at ``--out`` (``parameters``; ``None``: no table), then the plan, stated on stderr
    (unless ``--progress never``) and refused above the command's limits without ``--yes``.
    Returns whether ``--out`` holds this map already."""
    if getattr(args, "plot", None) is not None:
        check_plot(args.plot, args.plot_kind, observers=plan.observers, targets=plan.targets,
                   graph_nodes=graph.n)
    existed = False
    if parameters is not None and args.out is not None:
        store.require_pyarrow()
        existed = store.check_store(args.out, parameters)
    if args.progress != "never":
        print(f"sparsedp: {plan.describe()}", file=sys.stderr, flush=True)
    if not args.yes and (plan.pairs > DEFAULT_MAX_PAIRS or plan.seconds > CONFIRM_SECONDS):
        raise ResourceLimitError(
            f"{plan.describe()}: over the command's limits ({DEFAULT_MAX_PAIRS:,} pairs, "
            f"{CONFIRM_SECONDS // 60} minutes estimated); add --yes to run it, or select fewer "
            "observers or targets (e.g. --observers sample:K:SEED)")
    return existed
def resolve_defaults(args: argparse.Namespace) -> None:
    """The options left out that depend on the family: the library's defaults of that family
    (:mod:`sparsedp.defaults`), or on the embedded graph (no ``--graph``, no ``--generator``)
    the demonstration values that map all its 4 million pairs in about 25 s."""
    embedded = args.graph is None and args.generator is None
    if args.rounds is None:
        args.rounds = (defaults.DEMO_MAP_ROUNDS if embedded else
                       defaults.MF_ROUNDS if args.family == "mf" else defaults.ROUNDS)
    if args.sigma is None:
        args.sigma = defaults.RANDOM_WALK_SIGMA if args.family == "random-walk" else defaults.SIGMA
    if args.scheme is None:
        args.scheme = defaults.MF_SCHEME if args.family == "mf" else defaults.SCHEME
    if args.upper is None and args.family == "gossip":
        demo = embedded and args.view == "secure-summation"  # entrywise: this view only
        args.upper = defaults.DEMO_MAP_UPPER if demo else defaults.MAP_UPPER


def _finish(args, start, result, parameters, graph, source, existed) -> dict:
    """Store and draw the map as asked; the JSON-ready summary record."""
    if args.out is not None:
        store.write_map(result, args.out, parameters)
    if args.plot is not None:
        plot_map(result, args.plot, args.plot_kind, graph)
    record = result.to_dict(table=False)
    record["parameters"] = parameters
    record["graph"] = {"source": source, "nodes": graph.n, "edges": graph.num_edges}
    record["store"] = None if args.out is None else {"path": str(args.out),
                                                     "replaced": existed}
    record["elapsed_seconds"] = time.perf_counter() - start
    return record


def _run_family(args: argparse.Namespace, start: float) -> dict:
    """``--family random-walk`` or ``mf``: the same table for the other paper families."""
    gossip_only = [flag for flag, used in (("--per-target", args.per_target),
                                           ("--float32", args.float32),
                                           ("--upper", args.upper is not None),
                                           ("--view", args.view != "secure-summation"),
                                           ("--exact", args.exact is not False)) if used]
    if gossip_only:
        raise ParameterError(f"{', '.join(gossip_only)} is for --family gossip only")
    graph, source = load_graph(args, DEFAULT_GRAPH_NODES)
    parameters = {"family": args.family, "graph": source, "scheme": args.scheme,
                  "observers": args.observers, "targets": args.targets, "T": args.rounds,
                  "sigma": args.sigma, "delta": args.delta}
    if args.family == "random-walk":
        parameters.update(alpha=args.alpha, contributions=args.contributions)
    else:
        parameters.update(algorithm=args.algorithm, trust=args.trust, gradients=args.gradients)
    family = "random-walk" if args.family == "random-walk" else "mf"
    plan = map_plan(graph, args.observers, args.targets, args.rounds, family=family)
    existed = _before_work(args, plan, graph, parameters)
    common = {"observers": args.observers, "targets": args.targets, "T": args.rounds,
              "sigma": args.sigma, "delta": args.delta, "scheme": args.scheme,
              "progress": args.progress, "max_memory": args.max_memory,
              "max_pairs": None}  # checked: _before_work
    if args.family == "random-walk":
        result = random_walk_map(graph, alpha=args.alpha, contributions=args.contributions,
                                 **common)
    else:
        result = mf_map(graph, algorithm=args.algorithm, trust_model=args.trust,
                        gradients=args.gradients, **common)
    return _finish(args, start, result, parameters, graph, source, existed)


def _run_per_target(args: argparse.Namespace, start: float) -> dict:
    """``--per-target``: the worst case of every selected target over the observers."""
    if args.out is not None or args.plot is not None:
        raise ParameterError("--per-target writes no pair table: drop --out and --plot")
    graph, source = load_graph(args, DEFAULT_GRAPH_NODES)
    _before_work(args, map_plan(graph, args.observers, args.targets, args.rounds,
                                family="per-target"), graph, None)
    result = per_target_worst_case(graph, args.rounds, args.sigma, args.delta,
                                   observers=args.observers, targets=args.targets,
                                   scheme=args.scheme, refine=args.refine,
                                   progress=args.progress,
                                   max_memory=args.max_memory)
    record = result.to_dict()
    record["parameters"]["graph"] = source
    record["graph"] = {"source": source, "nodes": graph.n, "edges": graph.num_edges}
    record["elapsed_seconds"] = time.perf_counter() - start
    return record


def _format_per_target(record: dict) -> str:
    g, p, info = record["graph"], record["parameters"], record["info"]
    lines = [
        f"graph     {g['source']}: {g['nodes']} nodes, {g['edges']} edges; {p['scheme']} "
        f"weights; T = {p['T']} rounds; {record['targets']} targets, {info['pairs']} pairs, "
        f"{info['evaluated_pairs']} evaluated, {info['refined_pairs']} refined "
        f"({record['elapsed_seconds']:.2f} s)",
        "least protected targets (worst case over the observers: certified lower and upper "
        f"bounds on Delta^2; epsilon at sigma = {p['sigma']:g}, delta = {p['delta']:g}):",
    ]
    for row in sorted(record["rows"], key=lambda r: -r["upper"])[:SHOWN]:
        lines.append(f"  target {row['target']}: lower {row['lower']:.6g}  certified upper "
                     f"{row['upper']:.6g}  epsilon <= {row['epsilon']:.4g} "
                     f"(observer {row['worst_observer']})")
    lines.extend(f"note      {note}" for note in record["notes"])
    return "\n".join(lines)


def format_report(record: dict) -> str:
    if "rows" in record:
        return _format_per_target(record)
    g, p = record["graph"], record["parameters"]
    quantity = {"random-walk": f"Renyi loss at alpha = {p.get('alpha', 0):g}: min / mean / "
                               "max of the upper bounds",
                "mf": "sens^2: min / mean / max of the lower and certified upper bounds"}.get(
        p.get("family"), "Delta^2: min / mean / max of the lower and certified upper bounds")
    lines = [
        f"graph     {g['source']}: {g['nodes']} nodes, {g['edges']} edges; {p['scheme']} "
        f"weights; T = {p['T']} rounds; {record['pairs']} pairs "
        f"({record['elapsed_seconds']:.2f} s)",
        f"by hop distance ({quantity}; epsilon at sigma = {p['sigma']:g}, "
        f"delta = {p['delta']:g})",
    ]
    for row in record["by_distance"][:SHOWN]:
        parts = [f"  d = {row['distance']:>3}  {row['pairs']:>8} pairs"]
        for name in ("lower", "upper", "epsilon"):
            s = row[name]
            if s is not None:
                parts.append(f"{name} {s['min']:.3g} / {s['mean']:.3g} / {s['max']:.3g}")
        lines.append("   ".join(parts))
    worst = sorted(record["per_target"], key=lambda r: -(r["worst_upper"] or r["worst_lower"]))
    lines.append("least protected targets (worst case over the observers):")
    for row in worst[:SHOWN]:
        upper = "" if row["worst_upper"] is None else f"  certified upper {row['worst_upper']:.6g}"
        eps = "" if row["worst_epsilon"] is None else f"  epsilon <= {row['worst_epsilon']:.4g}"
        lower = "" if row["worst_lower"] is None else f"  lower {row['worst_lower']:.6g}"
        lines.append(f"  target {row['target']}:{lower}{upper}{eps} "
                     f"(observer {row['worst_observer']})")
    if record["store"] is not None:
        lines.append(f"table     written to {record['store']['path']} (Parquet)")
    lines.extend(f"note      {note}" for note in record["notes"])
    return "\n".join(lines)
