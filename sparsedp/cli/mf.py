"""``sparsedp mf``: matrix-factorisation accounting (Bellet et al.) of one target against an
attacker set, or (``--summary``) of every target, by distance from the attackers.

With no graph it runs on the Florentine families graph (15 nodes, networkx) with ``1/(d+1)``
weights (``row-normalised-self-loops``, the weights of the paper's Fig. 2), attacker the first
node, target the last, DP-D-SGD under PNDP, user-level participation, T = 20.
"""

from __future__ import annotations

import argparse
import time

import networkx as nx

from sparsedp import defaults, validation
from sparsedp.cli.exports import add_export_options, export
from sparsedp.cli.graph_input import add_graph_file_options, read_graph_file
from sparsedp.cli.options import add_memory_option, add_progress_option, exact_flag
from sparsedp.errors import ParameterError
from sparsedp.graphs.graph import as_graph
from sparsedp.graphs.weights import SCHEMES, gossip_matrix
from sparsedp.mf import algorithms, participation
from sparsedp.mf.sensitivity import GRADIENTS, mf_sensitivity
from sparsedp.mf.summary import distance_summary
from sparsedp.mf.trust import TRUST_MODELS
from sparsedp.privacy.gaussian import gaussian_epsilon, rdp_epsilon

ALGORITHMS = ("dp-d-sgd", "muffliato-sgd", "antipgd", "decor", "zip-dl", "sr", "bsr")


def add_parser(sub) -> None:
    """The ``mf`` subcommand."""
    p = sub.add_parser(
        "mf", help="matrix-factorisation accounting (Bellet et al.) of DP decentralized SGD",
        description="Certified bounds on Theorem 7's squared sensitivity sens^2 of one target "
        "against an attacker set, for DP-D-SGD, Muffliato-SGD(K), AntiPGD, DECOR, Zip-DL or MFDL's "
        "SR / BSR under "
        "LDP, PNDP or SecLDP (docs/mf.md), and the resulting mu-GDP, RDP and epsilon.",
    )
    add_graph_file_options(p, "the Florentine families graph")
    p.add_argument("--scheme", default=defaults.MF_SCHEME, choices=SCHEMES,
                   help="gossip weights")
    p.add_argument("--target", help="node id whose record is protected (default: last node)")
    p.add_argument("--attacker", action="append", dest="attackers", metavar="ID",
                   help="attacker node id; repeat for a colluding set (default: first node; "
                        "none with --trust ldp)")
    p.add_argument("--algorithm", default=defaults.ALGORITHM, choices=ALGORITHMS,
                   help="DP-D-SGD, Muffliato-SGD(K) (with -K), AntiPGD, DECOR (with "
                   "--secret-scale) or Zip-DL (noise per message)")
    p.add_argument("-K", type=int, default=1, help="gossip rounds per gradient step "
                   "(muffliato-sgd)")
    p.add_argument("--secret-scale", type=float, default=None,
                   help="DECOR: standard deviation of the edge secrets, relative to the noise")
    p.add_argument("--band", type=int, default=None,
                   help="BSR: band width b of MFDL's banded square-root encoder (T // epochs)")
    p.add_argument("--reset-every", type=int, default=None, metavar="P",
                   help="restart the noise correlation every P steps (MFDL's resets)")
    p.add_argument("--own-copy-noise", action="store_true",
                   help="Zip-DL: the node's own copy also gets a message noise (App. A.6's "
                        "self slot)")
    p.add_argument("--trust", default=defaults.TRUST_MODEL, choices=TRUST_MODELS,
                   help="ldp; pndp (own noise known, App. A.2); pndp-eq12 (eq. 12); "
                        "pndp-eq12-no-own (eq. 12, own messages not observed: MFDL's code); secldp "
                        "(every message public, own noise and, for DECOR, shared secrets known)")
    p.add_argument("--participation", default=defaults.PARTICIPATION,
                   help="user-level, single, or k,b for (k, b)-cyclic participation")
    p.add_argument("--gradients", default=defaults.GRADIENTS, choices=GRADIENTS,
                   help="vector (norm-clipped d-dimensional) or scalar (sign search exact)")
    p.add_argument("--rounds", "-T", type=int, default=defaults.MF_ROUNDS, help="gradient steps T")
    p.add_argument("--sigma", type=float, default=defaults.SIGMA, help="noise multiplier")
    p.add_argument("--delta", type=float, default=defaults.DELTA, help="target delta")
    p.add_argument("--alpha", type=float, default=defaults.ALPHA,
                   help="Renyi order of the RDP value")
    p.add_argument("--exact", type=exact_flag, default=defaults.EXACT,
                   help="exhaustive sign search (scalar gradients): auto, true, false")
    p.add_argument("--method", default=defaults.METHOD,
                   help="DP-D-SGD under PNDP: innovations, or a gossip engine path (as "
                   "sparsedp account); auto chooses by cost")
    p.add_argument("--summary", action="store_true",
                   help="every target against the attackers, min/mean/max per distance")
    add_export_options(p)
    add_memory_option(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_progress_option(p)
    p.set_defaults(run=run, report=format_report)


def participation_scheme(text: str):
    """``--participation user-level|single|k,b`` as a :class:`sparsedp.mf.Participation`."""
    if text in ("user-level", "single"):
        return participation.resolve(text)
    try:
        k, b = (int(x) for x in text.split(","))
    except ValueError:
        raise ParameterError(f"--participation: expected user-level, single or k,b, got "
                             f"{text!r}") from None
    return participation.cyclic(k, b)


def run(args: argparse.Namespace) -> dict:
    start = time.perf_counter()
    validation.sigma(args.sigma)
    validation.probability_delta(args.delta)
    if args.graph is None:
        graph = as_graph(nx.florentine_families_graph())
        name = "Florentine families (networkx)"
    else:
        graph, name = read_graph_file(args), str(args.graph)
    W = gossip_matrix(graph, scheme=args.scheme)
    if args.K != 1 and args.algorithm != "muffliato-sgd":
        raise ParameterError("-K is for --algorithm muffliato-sgd")
    if (args.secret_scale is None) != (args.algorithm != "decor"):
        raise ParameterError("--algorithm decor needs --secret-scale, and --secret-scale is "
                             "for --algorithm decor only")
    if args.own_copy_noise and args.algorithm != "zip-dl":
        raise ParameterError("--own-copy-noise is for --algorithm zip-dl only")
    if (args.band is None) != (args.algorithm != "bsr"):
        raise ParameterError("--algorithm bsr needs --band, and --band is for --algorithm bsr "
                             "only")
    if args.algorithm == "muffliato-sgd":
        algorithm = algorithms.muffliato_sgd(args.K)
    elif args.algorithm == "decor":
        algorithm = algorithms.decor(args.secret_scale)
    elif args.algorithm == "zip-dl":
        algorithm = algorithms.zip_dl(args.own_copy_noise)
    elif args.algorithm == "bsr":
        algorithm = algorithms.banded_square_root(args.band)
    else:
        algorithm = algorithms.resolve(args.algorithm)
    if args.reset_every is not None:
        algorithm = algorithms.with_resets(algorithm, args.reset_every)
    if args.trust == "ldp":
        if args.attackers:
            raise ParameterError("--trust ldp makes every message public; drop --attacker")
        attackers = None
    else:
        attackers = [0] if args.attackers is None else [
            graph.index_of(a, "attacker") for a in args.attackers]
    options = dict(algorithm=algorithm, trust_model=args.trust,
                   participation_scheme=participation_scheme(args.participation),
                   gradients=args.gradients, exact=args.exact, method=args.method,
                   max_memory=args.max_memory)
    header = {"graph": {"source": name, "nodes": graph.n, "edges": graph.num_edges},
              "scheme": args.scheme, "rounds": args.rounds, "sigma": args.sigma,
              "delta": args.delta, "alpha": args.alpha}
    if args.summary:
        if attackers is None:
            raise ParameterError("--summary needs an attacker set (not --trust ldp)")
        summary = distance_summary(W, attackers, args.rounds, progress=args.progress, **options)
        record = summary.to_dict()
        record["attackers"] = [graph.id_of(a) for a in summary.attackers]
        record["targets"] = [graph.id_of(u) for u in summary.targets]
        record["rdp_upper"] = [rdp_epsilon(u, args.sigma, args.alpha)
                               for u in record.pop("upper")]
        export(args, {"node": record["targets"], "distance": list(summary.distances),
                      "rdp_upper": record["rdp_upper"]},
               x="distance", y="rdp_upper", title=f"{algorithm.name}, {args.trust}")
        return {**header, "summary": True, **record,
                "elapsed_seconds": time.perf_counter() - start}
    target = graph.n - 1 if args.target is None else graph.index_of(args.target, "target")
    validation.not_among(target, attackers, "target", "attackers", label=graph.id_of(target))
    r = mf_sensitivity(W, target, attackers, args.rounds, progress=args.progress, **options)
    record = r.to_dict()
    record["target"] = graph.id_of(r.target)
    record["attackers"] = [graph.id_of(a) for a in r.attackers]
    record["observed"] = [graph.id_of(a) for a in r.observed]
    record["mu"] = r.mu(args.sigma)
    record["rdp"] = r.rdp(args.alpha, args.sigma)
    record["epsilon"] = gaussian_epsilon(r.upper, args.sigma, args.delta)
    return {**header, "summary": False, **record, "elapsed_seconds": time.perf_counter() - start}


def format_report(record: dict) -> str:
    g = record["graph"]
    lines = [f"graph     {g['source']}: {g['nodes']} nodes, {g['edges']} edges; "
             f"{record['scheme']} weights; T = {record['rounds']} gradient steps"]
    if record["summary"]:
        lines.append(f"attackers {record['attackers']}: RDP (alpha = {record['alpha']:g}, "
                     f"sigma = {record['sigma']:g}) of the certified upper bound by distance")
        for d, row in record["by_distance"].items():
            scale = record["alpha"] / (2 * record["sigma"] ** 2)
            lines.append(f"  d = {d:>3}: {row['targets']:5d} targets   min "
                         f"{row['upper_min'] * scale:.4g}   mean {row['upper_mean'] * scale:.4g}"
                         f"   max {row['upper_max'] * scale:.4g}")
        return "\n".join(lines)
    alg = record["algorithm"]
    lines += [
        f"model     {alg['name']}, {record['trust']}, participation "
        f"{record['participation']['name']}, {record['gradients']} gradients: target "
        f"{record['target']}, attackers {record['attackers']} ({record['method']}, "
        f"{record['elapsed_seconds']:.2f} s)",
        f"sens^2    lower {_num(record['lower'])}   certified upper {_num(record['upper'])}"
        + (f"   exact {_num(record['exact'])}" if record["exact"] is not None else "")
        + (f"   Thm 7 {_num(record['thm7'])}" if record["thm7"] is not None else ""),
        f"privacy   sigma = {record['sigma']:g}: mu = {_num(record['mu'])}, RDP(alpha = "
        f"{record['alpha']:g}) = {_num(record['rdp'])}, epsilon(delta = {record['delta']:g}) "
        f"<= {_num(record['epsilon'])}  (from the certified upper bound)",
    ]
    lines.extend(f"note      {note}" for note in record["notes"])
    return "\n".join(lines)


def _num(x) -> str:
    return x if isinstance(x, str) else f"{x:.10g}"
