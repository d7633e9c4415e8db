"""``sparsedp audit``: run a protocol literally, attack it, check the accounting's bounds.

``--family`` picks what is audited (:mod:`sparsedp.audit`):

``gossip`` (default)  noisy gossip averaging in every view (``--view``, ``--observer``,
    ``--noise-removed``): the engine's interval on Delta_T^2 against the attacker's, the
    empirical lower bounds on epsilon and mu against the certified upper bounds;
``dp-d-sgd``, ``muffliato-sgd``  the matrix-factorisation accounting (``-K`` gossip rounds
    per step, ``--trust pndp|pndp-eq12``, ``--participation``; ``--observer`` the attacker
    set; scalar gradients): :func:`sparsedp.audit.mf.audit_mf`;
``randomwalk``  one contribution of ``--target`` towards the receiver ``--observer``
    (``--alpha``): the simulated walk's Renyi divergence and test against the engine's;
``ppac``  the PPAC leakage of ``--target`` to ``--observer`` after ``--rounds`` consensus
    rounds (``--sigma``: the noise's standard deviation; without a graph, the paper's 6-node
    example and its designated neighbours).

A failed audit (model mismatch or a violated bound) exits with status 3 after printing its
report, naming the instance.  The default graph is the embedded synthetic social graph with
100 nodes (``ppac``: the paper's example; ``dp-d-sgd``, ``muffliato-sgd``: the Florentine
families, as ``sparsedp mf``); the default target is the last node and the default observer
(attacker, receiver) the first.
"""

from __future__ import annotations

import argparse
import time

import networkx as nx

from sparsedp import defaults, validation
from sparsedp.audit.batches import signs_text
from sparsedp.audit.gossip import audit_gossip
from sparsedp.audit.mf import audit_mf
from sparsedp.audit.ppac import audit_ppac
from sparsedp.audit.randomwalk import audit_random_walk
from sparsedp.audit.simulate import THREATS
from sparsedp.audit.simulate_sgd import TRUST
from sparsedp.cli.graph_input import add_graph_options, load_graph, target_and_observers
from sparsedp.cli.mf import participation_scheme
from sparsedp.cli.options import add_memory_option, add_progress_option
from sparsedp.cli.ppac import ppac_instance
from sparsedp.errors import ParameterError
from sparsedp.gossip.views import VIEWS_WITHOUT_OBSERVERS
from sparsedp.graphs.graph import as_graph
from sparsedp.graphs.weights import SCHEMES, gossip_matrix
from sparsedp.mf.algorithms import dp_d_sgd, muffliato_sgd

DEFAULT_GRAPH_NODES = 100
EXIT_AUDIT_FAILED = 3
FAMILIES = ("gossip", "dp-d-sgd", "muffliato-sgd", "randomwalk", "ppac")
MF_FAMILIES = ("dp-d-sgd", "muffliato-sgd")
DEFAULT_SCHEME = {"gossip": defaults.SCHEME, "randomwalk": defaults.SCHEME,
                  "dp-d-sgd": defaults.MF_SCHEME, "muffliato-sgd": defaults.MF_SCHEME}
DEFAULT_SIGMA = {"randomwalk": defaults.RANDOM_WALK_SIGMA}  # else defaults.SIGMA
DEFAULT_TRIALS = {"randomwalk": defaults.RANDOM_WALK_AUDIT_TRIALS,
                  "ppac": defaults.PPAC_AUDIT_TRIALS}  # else defaults.AUDIT_TRIALS


def add_parser(sub) -> None:
    """The ``audit`` subcommand."""
    p = sub.add_parser(
        "audit", help="empirical privacy audit of the accounting of every family",
        description="Simulate the protocol (gossip averaging, DP-D-SGD, Muffliato-SGD, a "
        "random walk or PPAC) run by run, attack the attacker's records with a test built "
        "from simulations only, and check the accounting's bounds against the empirical "
        "ones. Exit status 3 when the audit fails.")
    p.add_argument("--family", default="gossip", choices=FAMILIES, help="what is audited")
    add_graph_options(p)
    p.add_argument("--scheme", default=None, choices=SCHEMES,
                   help="gossip weights (default: metropolis; row-normalised-self-loops for "
                        "dp-d-sgd and muffliato-sgd; not for ppac)")
    p.add_argument("--target", help="node id whose privacy is audited (default: last node)")
    p.add_argument("--observer", action="append", dest="observers", metavar="ID",
                   help="observing node id (the attacker; the receiver of a random walk); "
                        "repeat for a coalition (gossip, dp-d-sgd, muffliato-sgd); default: "
                        "the first node (none for the gossip views "
                        f"{', '.join(VIEWS_WITHOUT_OBSERVERS)})")
    p.add_argument("--view", default=None, choices=THREATS,
                   help="gossip threat model (default: secure-summation)")
    p.add_argument("--noise-removed", action="store_true",
                   help="gossip: the attacker knows its own noise")
    p.add_argument("--trust", default=None, choices=TRUST,
                   help="dp-d-sgd, muffliato-sgd: pndp (own noise known, App. A.2; default) "
                        "or pndp-eq12 (received messages only, eq. 12)")
    p.add_argument("-K", type=int, default=None,
                   help="muffliato-sgd: gossip rounds per gradient step (default 2)")
    p.add_argument("--participation", default=None,
                   help="dp-d-sgd, muffliato-sgd: user-level (default), single, or k,b")
    p.add_argument("--alpha", type=float, default=None,
                   help="randomwalk: Renyi order (default 2)")
    p.add_argument("--designated-seed", type=int, default=None,
                   help="ppac with a graph: seed of the designated neighbours (default 0)")
    p.add_argument("--rounds", "-T", type=int, default=defaults.AUDIT_ROUNDS,
                   help="rounds T (gradient steps for dp-d-sgd, muffliato-sgd; walk steps; "
                        "the PPAC horizon)")
    p.add_argument("--sigma", type=float, default=None,
                   help=f"noise standard deviation (default {defaults.SIGMA:g}; "
                        f"{defaults.RANDOM_WALK_SIGMA:g} for randomwalk, whose bound needs "
                        "sigma^2 >= 2 alpha (alpha - 1))")
    p.add_argument("--delta", type=float, default=defaults.DELTA,
                   help="delta of the epsilon bounds")
    p.add_argument("--trials", type=int, default=None,
                   help="simulated runs (split between training and testing the attacker; "
                        f"default {defaults.AUDIT_TRIALS:,}; "
                        f"{defaults.RANDOM_WALK_AUDIT_TRIALS:,} for randomwalk, "
                        f"{defaults.PPAC_AUDIT_TRIALS:,} for ppac)")
    p.add_argument("--precision", type=float, default=None,
                   help="ppac: the relative error of the leakage to catch; the run count is "
                        "chosen from it (at least --trials)")
    p.add_argument("--seed", type=int, default=defaults.SEED, help="seed of the simulations")
    p.add_argument("--confidence", type=float, default=defaults.CONFIDENCE,
                   help="confidence of the intervals and of the empirical lower bounds")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_progress_option(p)
    add_memory_option(p)
    p.set_defaults(run=run_audit, report=format_report, exit_status=exit_status)


FAMILY_OPTIONS = {  # option: (families that take it, its default)
    "view": (("gossip",), defaults.VIEW),
    "noise_removed": (("gossip",), False),
    "trust": (("dp-d-sgd", "muffliato-sgd"), defaults.TRUST_MODEL),
    "participation": (("dp-d-sgd", "muffliato-sgd"), defaults.PARTICIPATION),
    "K": (("muffliato-sgd",), 2),
    "alpha": (("randomwalk",), defaults.ALPHA),
    "designated_seed": (("ppac",), 0),
    "precision": (("ppac",), None),
    "scheme": (("gossip", "dp-d-sgd", "muffliato-sgd", "randomwalk"), None),
}


def resolve_defaults(args: argparse.Namespace) -> None:
    """Refuse an option the family does not take; fill in the family's defaults (those of its
    library function, :mod:`sparsedp.defaults`)."""
    if args.sigma is None:
        args.sigma = DEFAULT_SIGMA.get(args.family, defaults.SIGMA)
    if args.trials is None:
        args.trials = DEFAULT_TRIALS.get(args.family, defaults.AUDIT_TRIALS)
    for name, (families, default) in FAMILY_OPTIONS.items():
        given = getattr(args, name)
        if given not in (None, False) and args.family not in families:
            flag = "-K" if name == "K" else "--" + name.replace("_", "-")
            raise ParameterError(f"{flag} is not an option of --family {args.family} (only "
                                 f"{', '.join(families)})")
        if given is None:
            setattr(args, name, DEFAULT_SCHEME.get(args.family) if name == "scheme"
                    else default)


def run_audit(args: argparse.Namespace) -> dict:
    """Run one audit; return the JSON-ready record."""
    start = time.perf_counter()
    if args.family != "ppac":  # the PPAC horizon may be 0
        validation.rounds(args.rounds)
    resolve_defaults(args)
    validation.sigma(args.sigma)
    validation.probability_delta(args.delta)
    if args.family == "ppac":
        record = _ppac(args)
    else:
        if args.family in MF_FAMILIES and args.graph is None and args.generator is None:
            graph, name = as_graph(nx.florentine_families_graph()), "Florentine families"
        else:
            graph, name = load_graph(args, DEFAULT_GRAPH_NODES)
        W = gossip_matrix(graph, scheme=args.scheme)
        run = {"gossip": _gossip, "randomwalk": _random_walk}.get(args.family, _mf)
        record = run(args, graph, W)
        record.update(graph={"source": name, "nodes": graph.n, "edges": graph.num_edges},
                      scheme=args.scheme)
    record.update(family=args.family, elapsed_seconds=time.perf_counter() - start)
    return record


def _gossip(args, graph, W) -> dict:
    target, observers = target_and_observers(graph, args, VIEWS_WITHOUT_OBSERVERS)
    result = audit_gossip(W, target, observers, args.rounds, view=args.view,
                          noise_removed=args.noise_removed, sigma=args.sigma, delta=args.delta,
                          trials=args.trials, seed=args.seed, confidence=args.confidence,
                          progress=args.progress)
    record = result.record()  # the JSON output goes through plain() in cli.main
    record.update(target=graph.id_of(result.target),
                  observers=[graph.id_of(i) for i in result.observers])
    return record


def _mf(args, graph, W) -> dict:
    target, attackers = target_and_observers(graph, args, ())
    algorithm = dp_d_sgd() if args.family == "dp-d-sgd" else muffliato_sgd(args.K)
    result = audit_mf(W, target, attackers, args.rounds, algorithm=algorithm,
                      trust_model=args.trust,
                      participation_scheme=participation_scheme(args.participation),
                      sigma=args.sigma, delta=args.delta, trials=args.trials, seed=args.seed,
                      confidence=args.confidence, progress=args.progress)
    record = result.record()
    record.update(target=graph.id_of(result.target),
                  attackers=[graph.id_of(i) for i in result.attackers])
    return record


def _single_observer(graph, args) -> tuple[int, int]:
    target, observers = target_and_observers(graph, args, ())
    if len(observers) != 1:
        raise ParameterError(f"--family {args.family} audits one --observer, got "
                             f"{len(observers)}")
    return target, observers[0]


def _random_walk(args, graph, W) -> dict:
    source, receiver = _single_observer(graph, args)
    result = audit_random_walk(W, source, receiver, args.rounds, args.sigma,
                               alpha=args.alpha, delta=args.delta, trials=args.trials,
                               seed=args.seed, confidence=args.confidence,
                               progress=args.progress)
    record = result.to_dict()
    record.update(source=graph.id_of(source), receiver=graph.id_of(receiver))
    return record


def _ppac(args) -> dict:
    if args.rounds < 0:
        raise ParameterError(f"--rounds (the PPAC horizon) must be >= 0, got {args.rounds}")
    given, name = None, ""
    if args.graph is not None or args.generator is not None:
        given, name = load_graph(args, DEFAULT_GRAPH_NODES)
    graph, layout, W, info = ppac_instance(given, name, args.designated_seed, None)
    victim, attacker = _single_observer(graph, args)
    result = audit_ppac(layout, W, graph.id_of(attacker), graph.id_of(victim), args.rounds,
                        noise_std=args.sigma, trials=args.trials, seed=args.seed,
                        confidence=args.confidence, precision=args.precision,
                        progress=args.progress)
    return {**result.to_dict(), "attacker": graph.id_of(attacker),
            "victim": graph.id_of(victim), "graph": info, "scheme": f"I - L/{info['scale']}"}


def exit_status(record: dict) -> int:
    """0 for a passed audit, :data:`EXIT_AUDIT_FAILED` otherwise."""
    return 0 if record["passed"] else EXIT_AUDIT_FAILED


def format_report(record: dict) -> str:
    g = record["graph"]
    lines = [f"graph      {g['source']}: {g['nodes']} nodes, {g['edges']} edges; "
             f"{record['scheme']} weights"]
    family = record["family"]
    if family == "gossip":
        lines += _gossip_lines(record)
    elif family == "randomwalk":
        lines += [
            f"walk       source {record['source']} -> receiver {record['receiver']}, T = "
            f"{record['T']} steps, one contribution; {record['trials']} runs, seed "
            f"{record['seed']} ({record['elapsed_seconds']:.1f} s)",
            f"RDP        engine {_num(record['engine_rdp'])} ({record['engine_kind']})   "
            f"simulated {_num(record['rdp_estimate'])} in [{_num(record['rdp_low'])}, "
            f"{_num(record['rdp_high'])}] (alpha = {record['alpha']:g}, "
            f"{record['confidence']:.0%})",
            f"epsilon    empirical >= {_num(record['epsilon_lower'])}   engine <= "
            f"{_num(record['engine_epsilon'])}   (delta = {record['delta']:g}, sigma = "
            f"{record['sigma']:g})",
        ]
    elif family == "ppac":
        lines += [
            f"ppac       victim {record['victim']} -> attacker {record['attacker']}, horizon "
            f"{record['horizon']}; {record['trials']} runs, seed {record['seed']} "
            f"({record['elapsed_seconds']:.1f} s)",
            f"leakage    engine {_num(record['engine_nats'])} nats ({record['engine_kind']})   "
            f"simulated {_num(record['nats_estimate'])} in [{_num(record['nats_low'])}, "
            f"{_num(record['nats_high'])}] ({record['confidence']:.0%})",
        ]
    else:
        lines += [
            f"model      {record['algorithm']} (K = {record['K']}), {record['trust']}, "
            f"participation {record['participation']}, scalar gradients: target "
            f"{record['target']}, attackers {record['attackers']}; T = {record['T']} steps; "
            f"{record['trials']} runs, seed {record['seed']} "
            f"({record['elapsed_seconds']:.1f} s)",
            f"sens^2     engine [{record['engine_lower']:.8g}, {record['engine_upper']:.8g}]"
            f"   attacker {record['sensitivity_estimate']:.6g} in "
            f"[{record['sensitivity_low']:.6g}, {record['sensitivity_high']:.6g}] "
            f"({record['confidence']:.0%}) at steps {list(record['steps'])}, signs "
            f"{list(record['signs'])}",
        ] + _bound_lines(record)
    lines.append(f"verdict    {record['verdict']}")
    return "\n".join(lines)


def _gossip_lines(record: dict) -> list[str]:
    observers = record["observers"]
    shown = observers if len(observers) <= 8 else f"{observers[:8]}... ({len(observers)} nodes)"
    return [
        f"view       {record['view']}{' (noise removed)' if record['noise_removed'] else ''}: "
        f"target {record['target']} observed by {shown}; T = {record['T']} rounds; "
        f"{record['trials']} runs, seed {record['seed']} ({record['elapsed_seconds']:.1f} s)",
        f"Delta^2    engine [{record['engine_lower']:.8g}, {record['engine_upper']:.8g}]   "
        f"attacker {record['sensitivity_estimate']:.6g} in [{record['sensitivity_low']:.6g}, "
        f"{record['sensitivity_high']:.6g}] ({record['confidence']:.0%})",
        f"strongest  attacker {record['strongest_estimate']:.6g} in "
        f"[{record['strongest_low']:.6g}, {record['strongest_high']:.6g}] at its own signs "
        f"{signs_text(record['strongest_signs'])}",
    ] + _bound_lines(record)


def _bound_lines(record: dict) -> list[str]:
    return [
        f"epsilon    empirical >= {record['epsilon_lower']:.4g}   certified <= "
        f"{record['epsilon_upper']:.4g}   (delta = {record['delta']:g}, sigma = "
        f"{record['sigma']:g})",
        f"mu (GDP)   empirical >= {record['mu_lower']:.4g}   certified <= "
        f"{record['mu_upper']:.4g}",
    ]


def _num(x) -> str:
    return x if isinstance(x, str) else f"{x:.6g}"
