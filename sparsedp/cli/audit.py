"""``sparsedp audit``: run gossip averaging literally, attack it, check the engine's bounds.

Prints the engine's interval on Delta_T^2, the attacker's estimate with its interval, the
empirical lower bounds on epsilon and mu against the certified upper bounds, and the verdict
(:mod:`sparsedp.audit`).  A failed audit (model mismatch or a violated bound) exits with
status 3 after printing its report, naming the instance.  The default graph is the embedded
synthetic social graph with 100 nodes.
"""

from __future__ import annotations

import argparse
import time

from sparsedp import validation
from sparsedp.audit.gossip import audit_gossip
from sparsedp.audit.simulate import THREATS
from sparsedp.cli.graph_input import add_graph_options, load_graph, target_and_observers
from sparsedp.cli.options import add_memory_option, add_progress_option
from sparsedp.gossip.views import VIEWS_WITHOUT_OBSERVERS
from sparsedp.graphs.weights import SCHEMES, gossip_matrix

DEFAULT_GRAPH_NODES = 100
EXIT_AUDIT_FAILED = 3


def add_parser(sub) -> None:
    """The ``audit`` subcommand."""
    p = sub.add_parser(
        "audit", help="empirical privacy audit of the gossip accounting",
        description="Simulate T rounds of noisy gossip averaging message by message, attack "
        "the attacker's records with a likelihood-ratio test built from simulations only, and "
        "check the engine's certified bounds against the empirical lower bounds. Exit status "
        "3 when the audit fails.")
    add_graph_options(p)
    p.add_argument("--scheme", default="metropolis", choices=SCHEMES, help="gossip weights")
    p.add_argument("--target", help="node id whose privacy is audited (default: last node)")
    p.add_argument("--observer", action="append", dest="observers", metavar="ID",
                   help="observing node id; repeat for a coalition (default: first node; not "
                        f"for the views {', '.join(VIEWS_WITHOUT_OBSERVERS)})")
    p.add_argument("--view", default="secure-summation", choices=THREATS, help="threat model")
    p.add_argument("--noise-removed", action="store_true",
                   help="the attacker knows its own noise")
    p.add_argument("--rounds", "-T", type=int, default=20, help="number of rounds T")
    p.add_argument("--sigma", type=float, default=1.0, help="noise standard deviation")
    p.add_argument("--delta", type=float, default=1e-5, help="delta of the epsilon bounds")
    p.add_argument("--trials", type=int, default=100_000,
                   help="simulated runs (half to train the attacker, half to test it)")
    p.add_argument("--seed", type=int, default=0, help="seed of the simulations")
    p.add_argument("--confidence", type=float, default=0.99,
                   help="confidence of the intervals and of the empirical lower bounds")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_progress_option(p)
    add_memory_option(p)
    p.set_defaults(run=run_audit, report=format_report, exit_status=exit_status)


def run_audit(args: argparse.Namespace) -> dict:
    """Run one audit; return the JSON-ready record."""
    start = time.perf_counter()
    validation.rounds(args.rounds)
    validation.sigma(args.sigma)
    validation.probability_delta(args.delta)
    graph, name = load_graph(args, DEFAULT_GRAPH_NODES)
    W = gossip_matrix(graph, scheme=args.scheme)
    target, observers = target_and_observers(graph, args, VIEWS_WITHOUT_OBSERVERS)
    result = audit_gossip(W, target, observers, args.rounds, view=args.view,
                          noise_removed=args.noise_removed, sigma=args.sigma, delta=args.delta,
                          trials=args.trials, seed=args.seed, confidence=args.confidence,
                          progress=args.progress)
    record = result.record()  # the JSON output goes through plain() in cli.main
    record.update(target=graph.id_of(result.target),
                  observers=[graph.id_of(i) for i in result.observers],
                  graph={"source": name, "nodes": graph.n, "edges": graph.num_edges},
                  scheme=args.scheme, elapsed_seconds=time.perf_counter() - start)
    return record


def exit_status(record: dict) -> int:
    """0 for a passed audit, :data:`EXIT_AUDIT_FAILED` otherwise."""
    return 0 if record["passed"] else EXIT_AUDIT_FAILED


def format_report(record: dict) -> str:
    g = record["graph"]
    observers = record["observers"]
    shown = observers if len(observers) <= 8 else f"{observers[:8]}... ({len(observers)} nodes)"
    return "\n".join([
        f"graph      {g['source']}: {g['nodes']} nodes, {g['edges']} edges; {record['scheme']} "
        f"weights; T = {record['T']} rounds",
        f"view       {record['view']}{' (noise removed)' if record['noise_removed'] else ''}: "
        f"target {record['target']} observed by {shown}; {record['trials']} runs, seed "
        f"{record['seed']} ({record['elapsed_seconds']:.1f} s)",
        f"Delta^2    engine [{record['engine_lower']:.8g}, {record['engine_upper']:.8g}]   "
        f"attacker {record['sensitivity_estimate']:.6g} in [{record['sensitivity_low']:.6g}, "
        f"{record['sensitivity_high']:.6g}] ({record['confidence']:.0%})",
        f"epsilon    empirical >= {record['epsilon_lower']:.4g}   certified <= "
        f"{record['epsilon_upper']:.4g}   (delta = {record['delta']:g}, sigma = "
        f"{record['sigma']:g})",
        f"mu (GDP)   empirical >= {record['mu_lower']:.4g}   certified <= "
        f"{record['mu_upper']:.4g}",
        f"verdict    {record['verdict']}",
    ])
