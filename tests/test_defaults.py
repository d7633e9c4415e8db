"""Every job has one set of defaults (:mod:`sparsedp.defaults`): the library function's
signature and the command's parsed options agree, parameter by parameter (issue 31)."""

from __future__ import annotations

import inspect

import pytest

from sparsedp import defaults
from sparsedp.audit.gossip import audit_gossip
from sparsedp.audit.mf import audit_mf
from sparsedp.audit.ppac import audit_ppac
from sparsedp.audit.randomwalk import audit_random_walk
from sparsedp.cli import audit, maps, ppac
from sparsedp.cli.main import build_parser
from sparsedp.gossip.sensitivity import estimate_cost, squared_sensitivity
from sparsedp.graphs.weights import gossip_matrix
from sparsedp.maps.families import mf_map, random_walk_map
from sparsedp.maps.privacy_map import privacy_map
from sparsedp.maps.sweep import sweep
from sparsedp.maps.worst_case import per_target_worst_case
from sparsedp.mf.sensitivity import mf_sensitivity
from sparsedp.mf.utility import utility_gram
from sparsedp.ppac.convergence import convergence_bounds
from sparsedp.ppac.information import leakage
from sparsedp.ppac.protocol import prepare
from sparsedp.randomwalk.accounting import random_walk_rdp
from sparsedp.randomwalk.muffliato import muffliato_rdp

GRAPH = ["--generator", "ring:10"]  # a given graph: the defaults, not the embedded demo

# job: (library function, the command's minimal arguments, the command's resolution of the
# options left out or None, {library parameter: the command's option})
JOBS = {
    "account": (squared_sensitivity, ["account"], None,
                {"view": "view", "method": "method", "exact": "exact",
                 "truncation_rtol": "truncation_rtol", "preconditioner": "preconditioner"}),
    "account --dry-run": (estimate_cost, ["account", "--dry-run"], None,
                          {"view": "view", "method": "method",
                           "preconditioner": "preconditioner"}),
    "map": (privacy_map, ["map", *GRAPH], maps.resolve_defaults,
            {"observers": "observers", "targets": "targets", "T": "rounds", "sigma": "sigma",
             "delta": "delta", "scheme": "scheme", "upper": "upper", "view": "view",
             "exact": "exact"}),
    "map --per-target": (per_target_worst_case, ["map", *GRAPH, "--per-target"],
                         maps.resolve_defaults,
                         {"T": "rounds", "sigma": "sigma", "delta": "delta",
                          "observers": "observers", "targets": "targets", "scheme": "scheme",
                          "refine": "refine"}),
    "map --family random-walk": (random_walk_map, ["map", *GRAPH, "--family", "random-walk"],
                                 maps.resolve_defaults,
                                 {"observers": "observers", "targets": "targets", "T": "rounds",
                                  "sigma": "sigma", "alpha": "alpha", "delta": "delta",
                                  "scheme": "scheme", "contributions": "contributions"}),
    "map --family mf": (mf_map, ["map", *GRAPH, "--family", "mf"], maps.resolve_defaults,
                        {"observers": "observers", "targets": "targets", "T": "rounds",
                         "sigma": "sigma", "delta": "delta", "scheme": "scheme",
                         "algorithm": "algorithm", "trust_model": "trust",
                         "gradients": "gradients"}),
    "randomwalk": (random_walk_rdp, ["randomwalk", "-T", "5", "--sigma", "2"], None,
                   {"alpha": "alpha", "contributions": "contributions", "method": "method",
                    "column_method": "column_method", "tol": "tol"}),
    "muffliato": (muffliato_rdp, ["muffliato", "-T", "5", "--sigma", "2"], None,
                  {"alpha": "alpha", "row_norms": "row_norms", "method": "method"}),
    "ppac leakage": (leakage, ["ppac", "leakage", "--graph", "edges.txt"],
                     ppac.resolve_defaults,
                     {"horizon": "horizon", "value_std": "value_std", "noise_std": "noise_std",
                      "exact": "exact"}),
    "ppac simulate (prepare)": (prepare, ["ppac", "simulate", "--graph", "edges.txt"],
                                ppac.resolve_defaults,
                                {"value_std": "value_std", "noise_std": "noise_std"}),
    "ppac simulate (bounds)": (convergence_bounds, ["ppac", "simulate", "--graph", "edges.txt"],
                               ppac.resolve_defaults,
                               {"value_std": "value_std", "noise_std": "noise_std"}),
    "mf": (mf_sensitivity, ["mf"], None,
           {"algorithm": "algorithm", "trust_model": "trust",
            "participation_scheme": "participation", "gradients": "gradients",
            "exact": "exact", "method": "method"}),
    "mafalda": (utility_gram, ["mafalda"], None, {"method": "h_method", "probes": "probes"}),
    "sweep": (sweep, ["sweep", "--out", "d"], None,
              {"schemes": "scheme", "observers": "observers", "targets": "targets",
               "observer_block": "observer_block", "upper": "upper", "workers": "workers"}),
    "audit": (audit_gossip, ["audit"], audit.resolve_defaults,
              {"T": "rounds", "view": "view", "noise_removed": "noise_removed",
               "sigma": "sigma", "delta": "delta", "trials": "trials", "seed": "seed",
               "confidence": "confidence"}),
    "audit --family dp-d-sgd": (audit_mf, ["audit", "--family", "dp-d-sgd"],
                                audit.resolve_defaults,
                                {"T": "rounds", "trust_model": "trust",
                                 "participation_scheme": "participation", "sigma": "sigma",
                                 "delta": "delta", "trials": "trials", "seed": "seed",
                                 "confidence": "confidence"}),
    "audit --family randomwalk": (audit_random_walk, ["audit", "--family", "randomwalk"],
                                  audit.resolve_defaults,
                                  {"alpha": "alpha", "delta": "delta", "trials": "trials",
                                   "seed": "seed", "confidence": "confidence"}),
    "audit --family ppac": (audit_ppac, ["audit", "--family", "ppac"], audit.resolve_defaults,
                            {"noise_std": "sigma", "trials": "trials", "seed": "seed",
                             "confidence": "confidence"}),
}

# Parameters the library requires and the command defaults: the declared value of the job.
REQUIRED = {
    "account": {"rounds": defaults.ROUNDS, "sigma": defaults.SIGMA, "delta": defaults.DELTA},
    "randomwalk": {"delta": defaults.DELTA},
    "mf": {"rounds": defaults.MF_ROUNDS, "sigma": defaults.SIGMA, "delta": defaults.DELTA,
           "alpha": defaults.ALPHA},
    "mafalda": {"rounds": defaults.MAFALDA_ROUNDS,
                "participation": defaults.MAFALDA_PARTICIPATION},
    "sweep": {"rounds": [defaults.ROUNDS], "sigma": [defaults.SIGMA],
              "delta": [defaults.DELTA]},
    "audit --family randomwalk": {"rounds": defaults.AUDIT_ROUNDS,
                                  "sigma": defaults.RANDOM_WALK_SIGMA},
    "audit --family ppac": {"rounds": defaults.AUDIT_ROUNDS},
}


def parsed(argv, resolve):
    args = build_parser().parse_args(argv)
    if resolve is not None:
        resolve(args)
    return args


def signature_defaults(function) -> dict:
    return {name: p.default for name, p in inspect.signature(function).parameters.items()
            if p.default is not inspect.Parameter.empty}


def same(a, b) -> bool:
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return list(a) == list(b)
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("job", list(JOBS))
def test_library_and_command_share_the_defaults(job):
    function, argv, resolve, options = JOBS[job]
    library = signature_defaults(function)
    args = parsed(argv, resolve)
    differ = {name: (library.get(name, "<required>"), getattr(args, option))
              for name, option in options.items()
              if name not in library or not same(library[name], getattr(args, option))}
    assert differ == {}, f"{job}: library default vs command default differ: {differ}"
    for option, value in REQUIRED.get(job, {}).items():
        assert same(getattr(args, option), value), (job, option, getattr(args, option))


@pytest.mark.parametrize("argv, expected", [
    (["account"], defaults.SCHEME),
    (["randomwalk", "-T", "5", "--sigma", "2"], defaults.SCHEME),
    (["map", *GRAPH], defaults.SCHEME),
    (["audit"], defaults.SCHEME),
])
def test_the_gossip_weights_default_is_gossip_matrix_s(argv, expected):
    resolve = {"map": maps.resolve_defaults, "audit": audit.resolve_defaults}.get(argv[0])
    assert signature_defaults(gossip_matrix)["scheme"] == expected
    assert parsed(argv, resolve).scheme == expected


def test_the_matrix_factorisation_jobs_share_their_weights():
    assert signature_defaults(mf_map)["scheme"] == defaults.MF_SCHEME
    for argv, resolve in ((["mf"], None), (["mafalda"], None),
                          (["map", *GRAPH, "--family", "mf"], maps.resolve_defaults),
                          (["audit", "--family", "dp-d-sgd"], audit.resolve_defaults)):
        assert parsed(argv, resolve).scheme == defaults.MF_SCHEME, argv


def test_the_embedded_examples_use_their_documented_demo_values():
    demo = parsed(["map"], maps.resolve_defaults)
    assert (demo.rounds, demo.upper) == (defaults.DEMO_MAP_ROUNDS, defaults.DEMO_MAP_UPPER)
    # the user's own choice wins over the demo; entrywise is for the secure-summation view only
    chosen = parsed(["map", "-T", "7", "--upper", "none"], maps.resolve_defaults)
    assert (chosen.rounds, chosen.upper) == (7, "none")
    assert parsed(["map", "--view", "neighbourhood"], maps.resolve_defaults).upper == \
        defaults.MAP_UPPER
    example = parsed(["ppac", "leakage"], ppac.resolve_defaults)
    assert (example.value_std, example.noise_std) == (defaults.DEMO_PPAC_VALUE_STD,
                                                      defaults.DEMO_PPAC_NOISE_STD)
    help_text = build_parser()._subparsers._group_actions[0].choices["map"].format_help()
    assert f"{defaults.DEMO_MAP_ROUNDS} on the embedded graph" in " ".join(help_text.split())
