"""The audit's power against a certified upper bound below the truth (issue 33, item 1).

On every instance of :data:`INSTANCES` (gossip in five views and DP-D-SGD / Muffliato-SGD
under both PNDP trust models, T = 30-60 rounds or steps, where the engine reports an interval
and not an exact value) the audit runs twice at its default run count:

* on the engine's own result: a sound upper bound, which must pass (at 99 % per check);
* on the engine's result with its interval scaled down until the upper bound is ``--factor``
  (default 90 %) of the best known value, the engine's certified lower bound (the value of a
  feasible sign pattern, so the truth is known to exceed the lowered bound): the audit must
  report an upper-bound violation (``upper_holds`` false).

Power is the share of instances whose lowered bound is reported as violated.

``--part ppac`` measures the PPAC audit's power (issue 33, item 2): on :data:`PPAC`
(random connected graphs, leakages 0.03-0.26 nats, 20,000 runs) the reported leakage
understated by 5, 10 and 20 %, and the leakage computed for a noise 10 % larger than the
protocol's, each audited on fresh runs; next to the reported interval's width, the width of
the residual interval alone (the audit's interval before issue 33) at the same confidence.

    python bench/audit_power.py                      # all 24 instances
    python bench/audit_power.py --only 3 --trials 40000
    python bench/audit_power.py --part ppac
    python bench/audit_power.py --part ppac --precision 0.1   # runs chosen per claim

Writes ``bench/results/audit_power.json`` (``audit_power_ppac.json`` for ``--part ppac``;
``--record``: ``docs/figures/``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math

import networkx as nx
import numpy as np
from outputs import add_output_options, output_path

import sparsedp
from sparsedp import defaults
from sparsedp.audit import audit_gossip, audit_mf, audit_ppac
from sparsedp.audit.statistics import chi2_quantile
from sparsedp.graphs.graph import as_graph
from sparsedp.mf import mf_sensitivity, muffliato_sgd
from sparsedp.ppac import laplacian_consensus_matrix, leakage, ppac_layout, random_designated


def _graphs() -> dict:
    florentine = nx.convert_node_labels_to_integers(nx.florentine_families_graph())
    return {
        "ba-30": sparsedp.gossip_matrix(nx.barabasi_albert_graph(30, 2, seed=960767),
                                        scheme="max-degree"),
        "ring-12": sparsedp.gossip_matrix(nx.cycle_graph(12), scheme="metropolis"),
        "ws-30": sparsedp.gossip_matrix(nx.connected_watts_strogatz_graph(30, 4, 0.3, seed=2),
                                        scheme="row-normalised-self-loops"),
        "florentine": sparsedp.gossip_matrix(florentine, scheme="metropolis"),
        "florentine-loops": sparsedp.gossip_matrix(florentine,
                                                   scheme="row-normalised-self-loops"),
        "ws-16": sparsedp.gossip_matrix(nx.connected_watts_strogatz_graph(16, 4, 0.3, seed=3),
                                        scheme="metropolis"),
        "ring-10": sparsedp.gossip_matrix(nx.cycle_graph(10), scheme="metropolis"),
    }


GRAPHS = _graphs()
GOSSIP = [  # (graph, target, observers, T, view, noise_removed)
    ("ba-30", 14, None, 30, "target-v1", False),
    ("ba-30", 14, [3], 45, "secure-summation", False),
    ("ba-30", 14, [3], 60, "secure-summation", True),
    ("ba-30", 14, None, 30, "adaptive-v1", False),
    ("ring-12", 3, [4], 60, "secure-summation", False),
    ("ring-12", 3, [6], 45, "secure-summation-v1", False),
    ("ring-12", 3, [4], 30, "neighbourhood", False),
    ("ring-12", 3, None, 60, "target-v1", False),
    ("ws-30", 28, [1], 30, "secure-summation", True),
    ("ws-30", 28, None, 45, "target-v1", False),
    ("ws-30", 28, [1], 40, "secure-summation-v1", False),
    ("florentine", 13, [0], 40, "secure-summation", False),
    ("florentine", 13, None, 30, "adaptive-v1", False),
    ("florentine", 13, [0], 30, "neighbourhood", True),
]
MF = [  # (graph, target, attackers, T, algorithm, trust, participation)
    ("ring-10", 0, [3], 40, "dp-d-sgd", "pndp", "user-level"),
    ("ring-10", 0, [1], 30, "dp-d-sgd", "pndp-eq12", "user-level"),
    ("ring-10", 0, [2], 30, muffliato_sgd(2), "pndp", "user-level"),
    ("florentine-loops", 1, [2], 30, "dp-d-sgd", "pndp", "user-level"),
    ("florentine-loops", 14, [2], 40, "dp-d-sgd", "pndp-eq12", "user-level"),
    ("florentine-loops", 1, [2, 7], 30, muffliato_sgd(2), "pndp", (2, 15)),
    ("ws-16", 5, [0], 30, muffliato_sgd(2), "pndp", "user-level"),
    ("ws-16", 9, [0, 12], 50, "dp-d-sgd", "pndp-eq12", "user-level"),
    ("ws-16", 9, [0], 60, "dp-d-sgd", "pndp", "user-level"),
    ("ba-30", 14, [3], 30, "dp-d-sgd", "pndp", "user-level"),
]
INSTANCES = [("gossip", case) for case in GOSSIP] + [("mf", case) for case in MF]


def _label(family: str, case: tuple) -> str:
    graph, target, observers, T, model, variant = case[:6]
    model = getattr(model, "name", model)
    extra = f" {case[6]}" if family == "mf" else ""
    return (f"{family} {graph} target={target} observers={observers} T={T} {model} "
            f"{variant}{extra}")


def engine_result(family: str, case: tuple):
    """The engine's result for one instance."""
    graph, target, observers, T = case[:4]
    W = GRAPHS[graph]
    if family == "gossip":
        return sparsedp.squared_sensitivity(W, target, observers, T, view=case[4],
                                            noise_removed=case[5], progress=False)
    return mf_sensitivity(W, target, observers, T, algorithm=case[4], trust_model=case[5],
                          participation_scheme=case[6], gradients="scalar")


def audit(family: str, case: tuple, engine, trials: int, seed: int):
    """The audit of one instance against ``engine``."""
    graph, target, observers, T = case[:4]
    W = GRAPHS[graph]
    if family == "gossip":
        return audit_gossip(W, target, observers, T, view=case[4], noise_removed=case[5],
                            trials=trials, seed=seed, engine=engine)
    return audit_mf(W, target, observers, T, algorithm=case[4], trust_model=case[5],
                    participation_scheme=case[6], trials=trials, seed=seed, engine=engine)


def lowered(engine, factor: float):
    """``engine`` with its interval scaled down until ``upper = factor * lower``."""
    scale = factor * engine.lower / engine.upper
    return dataclasses.replace(engine, lower=engine.lower * scale, upper=engine.upper * scale)


def measure(index: int, trials: int, factor: float) -> dict:
    """Both audits of instance ``index`` (seeded by it)."""
    family, case = INSTANCES[index]
    engine = engine_result(family, case)
    sound = audit(family, case, engine, trials, seed=1000 + index)
    wrong = audit(family, case, lowered(engine, factor), trials, seed=2000 + index)
    return {"index": index, "instance": _label(family, case), "family": family,
            "T": case[3], "engine_lower": engine.lower, "engine_upper": engine.upper,
            "lowered_upper": factor * engine.lower,
            "sound": {"passed": sound.passed, "upper_holds": sound.upper_holds,
                      "model_matches": sound.model_matches, "bound_holds": sound.bound_holds,
                      "strongest_low": sound.strongest[0], "strongest_high": sound.strongest[1],
                      "verdict": sound.verdict},
            "lowered": {"violation_reported": not wrong.upper_holds, "passed": wrong.passed,
                        "strongest_low": wrong.strongest[0],
                        "strongest_high": wrong.strongest[1]}}


def summary(rows: list[dict]) -> dict:
    """Power (lowered bounds reported as violated) and the sound bounds' pass rate."""
    return {"instances": len(rows),
            "lowered_reported": sum(r["lowered"]["violation_reported"] for r in rows),
            "lowered_failed": sum(not r["lowered"]["passed"] for r in rows),
            "sound_passed": sum(r["sound"]["passed"] for r in rows),
            "sound_upper_held": sum(r["sound"]["upper_holds"] for r in rows),
            "min_strongest_share": min(r["sound"]["strongest_low"] / r["engine_lower"]
                                       for r in rows)}


PPAC = [  # (graph seed, victim index, horizon): attacker node 0 of a random connected graph
    (0, 6, 3), (1, 1, 2), (2, 1, 3), (3, 2, 3), (4, 6, 1), (4, 9, 3), (5, 7, 2), (6, 0, 3),
    (9, 3, 3), (10, 2, 2),
]
PPAC_NOISE = 1.5
UNDERSTATEMENTS = (0.05, 0.1, 0.2)


def ppac_instance(seed: int):
    """A connected G(n, p) graph (n 6-13, p 0.25-0.6) from ``seed``, its layout with random
    designated nodes and its Laplacian consensus matrix."""
    rng = np.random.default_rng(seed)
    while True:
        n = int(rng.integers(6, 14))
        G = nx.gnp_random_graph(n, float(rng.uniform(0.25, 0.6)), seed=int(rng.integers(1 << 30)))
        if nx.is_connected(G):
            break
    graph = as_graph(G)
    return graph, ppac_layout(graph, random_designated(graph, seed=seed)), \
        laplacian_consensus_matrix(graph)


def measure_ppac(index: int, trials: int, precision: float | None = None) -> dict:
    """The PPAC audits of instance ``index``: the reported leakage, understatements of it and
    the leakage for a 10 % larger noise, each on its own runs (``precision``: the run count
    chosen from it, at least ``trials``)."""
    seed, victim_index, horizon = PPAC[index]
    graph, layout, W = ppac_instance(seed)
    attacker = graph.id_of(0)
    reported = leakage(layout, W, attacker, horizon, noise_std=PPAC_NOISE)
    victim, nats = reported.victims[victim_index], float(reported.nats[victim_index])
    wrong_noise = float(leakage(layout, W, attacker, horizon, noise_std=1.1 * PPAC_NOISE,
                                victims=[victim]).nats[0])
    claims = {"reported": nats, "noise+10%": wrong_noise,
              **{f"-{r:.0%}": (1 - r) * nats for r in UNDERSTATEMENTS}}
    row = {"index": index, "seed": seed, "n": graph.n, "victim": int(victim),
           "horizon": horizon, "nats": nats, "caught": {}}
    for k, (name, claim) in enumerate(claims.items()):
        result = audit_ppac(layout, W, attacker, victim, horizon, noise_std=PPAC_NOISE,
                            trials=trials, seed=100 * index + k, engine=claim,
                            precision=precision)
        row["caught"][name] = not result.passed
        row.setdefault("runs", {})[name] = result.trials
        if name == "reported":
            row["interval"] = [result.nats_low, result.nats_high]
            dof = result.trials - result.features
            q_low, q_high = chi2_quantile(np.array([1 - result.confidence,
                                                    1 + result.confidence]) / 2, dof)
            row["residual_width"] = 0.5 * math.log(q_high / q_low)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=None,
                        help="runs per audit (default: the audit's own default)")
    parser.add_argument("--factor", type=float, default=0.9)
    parser.add_argument("--only", type=int, nargs="*", default=None,
                        help="instance indices (default: all)")
    parser.add_argument("--part", choices=("upper", "ppac"), default="upper")
    parser.add_argument("--precision", type=float, default=None,
                        help="ppac: choose each audit's run count from this relative error")
    add_output_options(parser)
    args = parser.parse_args()
    if args.part == "ppac":
        ppac_main(args)
        return
    trials = args.trials or defaults.AUDIT_TRIALS
    indices = range(len(INSTANCES)) if args.only is None else args.only
    rows = []
    for index in indices:
        rows.append(measure(index, trials, args.factor))
        row = rows[-1]
        print(f"{row['instance']}: engine [{row['engine_lower']:.5g}, "
              f"{row['engine_upper']:.5g}], strongest low {row['sound']['strongest_low']:.5g}; "
              f"sound {'pass' if row['sound']['passed'] else 'FAIL'}, lowered to "
              f"{row['lowered_upper']:.5g}: "
              f"{'violation' if row['lowered']['violation_reported'] else 'MISSED'}",
              flush=True)
    record = {"trials": trials, "factor": args.factor, "confidence": defaults.CONFIDENCE,
              "summary": summary(rows), "rows": rows}
    path = output_path(args, "audit_power.json")
    path.write_text(json.dumps(record, indent=1))
    print(json.dumps(record["summary"]), "->", path)


def ppac_main(args: argparse.Namespace) -> None:
    trials = args.trials or defaults.PPAC_AUDIT_TRIALS
    indices = range(len(PPAC)) if args.only is None else args.only
    rows = []
    for index in indices:
        rows.append(measure_ppac(index, trials, args.precision))
        row = rows[-1]
        low, high = row["interval"]
        print(f"ppac seed {row['seed']} victim {row['victim']} horizon {row['horizon']}: "
              f"{row['nats']:.4f} nats, interval [{low:.4f}, {high:.4f}] (width "
              f"{high - low:.4f}, residual alone {row['residual_width']:.4f}); caught "
              f"{row['caught']}", flush=True)
    caught = {name: sum(r["caught"][name] for r in rows) for name in rows[0]["caught"]}
    record = {"trials": trials, "precision": args.precision,
              "confidence": defaults.CONFIDENCE, "instances": len(rows), "caught": caught,
              "rows": rows}
    suffix = "" if args.precision is None else f"_precision_{args.precision:g}"
    path = output_path(args, f"audit_power_ppac{suffix}.json")
    path.write_text(json.dumps(record, indent=1))
    print(json.dumps(caught), "of", len(rows), "->", path)


if __name__ == "__main__":
    main()
