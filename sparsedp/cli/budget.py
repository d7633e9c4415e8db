"""``sparsedp budget``: how many rounds a privacy budget affords (issue 34).

For each view asked (``--view``, repeatable; default secure summation) the largest number of
gossip rounds T whose certified epsilon at ``--delta`` stays within ``--epsilon`` at noise
``--sigma``, for one target against one observer set
(:meth:`sparsedp.Accountant.rounds_within`, at most ``--limit`` rounds examined).

``--family mf`` (:class:`sparsedp.MFAccountant`: ``--algorithm`` by name, ``--trust-model``,
any of :func:`sparsedp.mf.mf_sensitivity`'s; the observers are the attackers) and
``--family random-walk`` (:class:`sparsedp.RandomWalkAccountant`: the observers are one
coalition of receivers, ``--contributions`` caps the target's) add a line each.
"""

from __future__ import annotations

import argparse
import time

from sparsedp import defaults, validation
from sparsedp.accountant import Accountant
from sparsedp.accountant.gossip import ROUNDS_WITHIN_LIMIT
from sparsedp.accountant.mf import MFAccountant
from sparsedp.accountant.randomwalk import RandomWalkAccountant
from sparsedp.cli.graph_input import add_graph_options, load_graph, target_and_observers
from sparsedp.gossip.views import VIEWS, VIEWS_WITHOUT_OBSERVERS
from sparsedp.graphs.weights import SCHEMES, gossip_matrix
from sparsedp.mf.trust import TRUST_MODELS

DEFAULT_GRAPH_NODES = 2000
FAMILIES = ("gossip", "mf", "random-walk")


def add_parser(sub) -> None:
    """The ``budget`` subcommand."""
    parser = sub.add_parser(
        "budget", help="the largest number of rounds within an (epsilon, delta) budget",
        description="For each view, the largest number of rounds of noisy gossip averaging "
        "whose certified epsilon stays within the budget (one target, one observer set).")
    add_graph_options(parser)
    parser.add_argument("--scheme", default="metropolis", choices=SCHEMES,
                        help="gossip weights (the accountant needs a symmetric W)")
    parser.add_argument("--target", help="node id whose privacy is accounted (default: last "
                                         "node)")
    parser.add_argument("--observer", action="append", dest="observers", metavar="ID",
                        help="observing node id; repeat for a coalition (default: first node)")
    parser.add_argument("--view", action="append", dest="views", choices=VIEWS,
                        help="threat model; repeat for several (default: secure-summation)")
    parser.add_argument("--epsilon", type=float, required=True, help="the epsilon budget")
    parser.add_argument("--delta", type=float, default=defaults.DELTA, help="target delta")
    parser.add_argument("--sigma", type=float, required=True,
                        help="noise standard deviation per round")
    parser.add_argument("--limit", type=int, default=ROUNDS_WITHIN_LIMIT,
                        help="most rounds examined")
    parser.add_argument("--family", action="append", dest="families", choices=FAMILIES,
                        help="protocol family; repeat for several (default: gossip)")
    parser.add_argument("--algorithm", default=defaults.ALGORITHM,
                        help="--family mf: dp-d-sgd, antipgd, sr, zip-dl or muffliato-sgd(K)")
    parser.add_argument("--trust-model", default=defaults.TRUST_MODEL, choices=TRUST_MODELS,
                        help="--family mf: trust model (default: %(default)s, as `sparsedp mf`)")
    parser.add_argument("--contributions", type=float,
                        help="--family random-walk: cap on the target's contributions "
                             "(default: the expected T/n, an estimate)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=budget, report=format_report)


def budget(args: argparse.Namespace) -> dict:
    """The largest affordable T per view; the JSON-ready record."""
    start = time.perf_counter()
    epsilon = validation.nonnegative("epsilon", args.epsilon)
    delta = validation.probability_delta(args.delta)
    graph, name = load_graph(args, DEFAULT_GRAPH_NODES)
    W = gossip_matrix(graph, scheme=args.scheme)
    rows = []
    families = args.families or ["gossip"]
    for view in (args.views or [defaults.VIEW]) if "gossip" in families else []:
        args.view = view
        target, observers = target_and_observers(graph, args, VIEWS_WITHOUT_OBSERVERS)
        accountant = Accountant(W, target, observers, sigma=args.sigma, view=view)
        rounds = accountant.rounds_within(epsilon, delta, limit=args.limit)
        rows.append({"family": "gossip", "view": view, "target": graph.id_of(target),
                     "observers": [graph.id_of(i) for i in accountant.model.observers],
                     "rounds": rounds, "reached_limit": rounds == args.limit})
    rows += _other_families(graph, W, args, families, epsilon, delta)
    return {"graph": {"source": name, "nodes": graph.n, "edges": graph.num_edges},
            "scheme": args.scheme, "epsilon": epsilon, "delta": delta, "sigma": args.sigma,
            "limit": args.limit, "budgets": rows,
            "elapsed_seconds": time.perf_counter() - start}


def _other_families(graph, W, args: argparse.Namespace, families: list[str], epsilon: float,
                    delta: float) -> list[dict]:
    """The lines of ``--family mf`` and ``--family random-walk``."""
    rows = []
    args.view = defaults.VIEW  # the observers as given (or the first node)
    for family in families:
        target, observers = target_and_observers(graph, args, ())
        accountant: MFAccountant | RandomWalkAccountant
        if family == "mf":
            if args.trust_model == "ldp":
                observers = []  # every message is public
            accountant = MFAccountant(W, target, observers or None, sigma=args.sigma,
                                      algorithm=args.algorithm, trust_model=args.trust_model)
            what = f"{accountant.algorithm.name}, {args.trust_model}"
        elif family == "random-walk":
            accountant = RandomWalkAccountant(W, target, sigma=args.sigma, coalition=observers,
                                              contributions=args.contributions)
            what = "random walk" + (", expected contributions (an estimate)"
                                    if args.contributions is None else "")
        else:
            continue
        rounds = accountant.rounds_within(epsilon, delta, limit=args.limit)
        rows.append({"family": family, "view": what, "target": graph.id_of(target),
                     "observers": [graph.id_of(i) for i in observers],
                     "rounds": rounds, "reached_limit": rounds == args.limit})
    return rows


def format_report(record: dict) -> str:
    g = record["graph"]
    lines = [f"graph     {g['source']}: {g['nodes']} nodes, {g['edges']} edges; "
             f"{record['scheme']} weights",
             f"budget    epsilon = {record['epsilon']:g}, delta = {record['delta']:g}, "
             f"sigma = {record['sigma']:g} ({record['elapsed_seconds']:.2f} s)"]
    for row in record["budgets"]:
        rounds = (f"every T up to the limit {row['rounds']} is within the budget (--limit "
                  "searches further)" if row["reached_limit"]
                  else f"at most {row['rounds']} rounds")
        lines.append(f"{row['family']:<9} {row['view']}: target {row['target']}: {rounds}")
    return "\n".join(lines)
