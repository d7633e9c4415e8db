"""What tracking privacy every round costs, against one from-scratch query (issue 34).

"Tracking" here: an :class:`sparsedp.Accountant` for one (target, observer) pair is stepped
every round for T rounds and asked ``epsilon(delta)`` every ``--every`` rounds (its running
certified bound), and asked for the full ``interval()`` once, at the end.  The reference is
one :func:`sparsedp.squared_sensitivity` at T (default method: its propagation stops where
the chain has mixed), in the same process, after one warm-up query (numba compilation out).
Graphs: ER (average degree 20) and the bench's Chung-Lu power-law graph
(``bench/realistic.py``), n = 10^4 by default; the target is node 0 and the observer the
node farthest from it in index order among its non-neighbours.  Writes
``accountant_cost.json`` (:mod:`outputs`): seconds of each part, the ratio, the bounds and
the sparse products each side did (the accountant stops propagating once the chain has
mixed, :mod:`sparsedp.accountant.lags`), per repeat (``--repeats``: the one-shot query and
the tracking measured again, in the same process, each repeat a fresh accountant), with the
median and largest CPU ratio.  One BLAS thread for both sides (``--blas-threads``).

``--tracked targets``: a :class:`sparsedp.TargetsAccountant` for the observer against every
target (the observer's neighbours tight, ``--tight``; the other targets with the running box
bound), stepped every round and asked ``epsilon(delta)`` (the worst target) every
``--every`` rounds, against the one-shot map of that observer against every target,
``sparsedp.privacy_map(W, [observer], "all", T, upper=...)`` (``--map-upper``, default
``"none"``: the c = 1 lower bound of every target; ``"entrywise"`` costs ``T^3 n``), in the
same process after a warm-up map; writes ``accountant_targets_cost.json``.  ``--tight
none``: no tight target (the box bound for every target, no factorisation).
"""

from __future__ import annotations

import argparse
import json
import time

import networkx as nx
import numpy as np
from blas_pinning import add_blas_option, pinned_blas
from outputs import add_output_options, output_path
from realistic import chung_lu
from timing import matvec_seconds, timed

import sparsedp
from sparsedp.graphs import as_graph


def _graphs(n: int, seed: int) -> dict:
    er = as_graph(nx.fast_gnp_random_graph(n, 20 / n, seed=seed), largest_component=True)
    return {"er": er, "chung-lu": chung_lu(n, seed)}


def _track(make, T: int, every: int, delta: float):
    """The tracking: an accountant built (``make()``), stepped every round for T rounds and
    asked ``epsilon(delta)`` every ``every`` rounds."""
    accountant = make()
    epsilons = []
    for t in range(1, T + 1):
        accountant.step()
        if t % every == 0:
            epsilons.append(accountant.epsilon(delta))
    return accountant, epsilons


def _cpu_timed(f):
    """``(wall seconds, CPU seconds of this process, value)`` of one call: on a shared
    machine the CPU time is the steadier measure (the wall clock waits for cores)."""
    cpu = time.process_time()
    wall, value = timed(f)
    return wall, time.process_time() - cpu, value


def measure(W, T: int, every: int, sigma: float, delta: float) -> dict:
    target = 0
    observer = _observer(W, target)
    sparsedp.squared_sensitivity(W, target, [observer], 20)  # warm-up (compilation)
    one_shot_s, one_shot_cpu, one_shot = _cpu_timed(
        lambda: sparsedp.squared_sensitivity(W, target, [observer], T))
    track_s, track_cpu, (accountant, epsilons) = _cpu_timed(
        lambda: _track(lambda: sparsedp.Accountant(W, target, [observer], sigma=sigma), T,
                       every, delta))
    interval_s, interval_cpu, interval = _cpu_timed(accountant.interval)
    return {
        "n": W.shape[0], "nnz": int(W.nnz), "T": T, "every": every, "target": target,
        "observer": observer, "matvec_s": matvec_seconds(W, np.ones(W.shape[0])),
        "one_shot_s": one_shot_s, "tracking_s": track_s, "final_interval_s": interval_s,
        "ratio_tracking": track_s / one_shot_s,
        "ratio_tracking_with_final_interval": (track_s + interval_s) / one_shot_s,
        "one_shot_cpu_s": one_shot_cpu, "tracking_cpu_s": track_cpu,
        "final_interval_cpu_s": interval_cpu, "ratio_tracking_cpu": track_cpu / one_shot_cpu,
        "one_shot": [one_shot.lower, one_shot.upper], "one_shot_method": one_shot.method,
        "one_shot_sparse_products": one_shot.solver.get("sparse_products"),
        "accountant_sparse_products": interval.solver["sparse_products"],
        "lower_relative_difference": abs(interval.lower - one_shot.lower) / one_shot.lower,
        "accountant_running_upper": accountant.upper,
        "accountant_interval": [interval.lower, interval.upper],
        "epsilon_final": epsilons[-1] if epsilons else None,
    }


def _observer(W, target: int = 0) -> int:
    neighbours = set(W[target].indices.tolist())
    return next(i for i in range(W.shape[0] - 1, 0, -1) if i not in neighbours)


def measure_targets(W, T: int, every: int, sigma: float, delta: float, map_upper: str,
                    tight: str) -> dict:
    observer = _observer(W)
    tight_targets = ([j for j in W[observer].indices.tolist() if j != observer]
                     if tight == "neighbours" else [])
    sparsedp.privacy_map(W, [observer], "all", 20, sigma, delta, upper=map_upper)  # warm-up
    map_s, map_cpu, one_shot = _cpu_timed(
        lambda: sparsedp.privacy_map(W, [observer], "all", T, sigma, delta, upper=map_upper))
    track_s, track_cpu, (accountant, epsilons) = _cpu_timed(
        lambda: _track(lambda: sparsedp.TargetsAccountant(W, [observer], sigma=sigma,
                                                          tight_targets=tight_targets),
                       T, every, delta))
    lower = np.asarray(one_shot.columns["lower"])
    targets = np.asarray(one_shot.columns["target"])
    upper = accountant.upper[targets]
    tight = accountant.tight_targets
    known = ~np.isnan(upper)
    worst_running, worst_tight = accountant.worst_upper, (
        float(np.max(accountant.upper[tight])) if tight.size else None)
    worst = int(targets[known][np.argmax(lower[known])])  # the map's worst target
    interval_s, interval_cpu, interval = _cpu_timed(lambda: accountant.interval([worst]))
    return {
        "n": W.shape[0], "nnz": int(W.nnz), "T": T, "every": every, "observer": observer,
        "tight_targets": tight.size, "map_upper": map_upper,
        "matvec_s": matvec_seconds(W, np.ones(W.shape[0])),
        "one_shot_map_s": map_s, "tracking_s": track_s, "ratio_tracking": track_s / map_s,
        "one_shot_map_cpu_s": map_cpu, "tracking_cpu_s": track_cpu,
        "ratio_tracking_cpu": track_cpu / map_cpu,
        "running_upper_below_map_lower": int(np.sum(upper[known] < lower[known])),
        "worst_map_lower": float(lower[known].max()),
        "worst_running_upper": worst_running, "worst_tight_upper": worst_tight,
        "worst_tight_map_lower": float(lower[np.isin(targets, tight)].max()) if tight.size
        else None,
        "epsilon_final": epsilons[-1] if epsilons else None,
        "worst_target": worst, "worst_target_running_upper": float(upper[targets == worst][0]),
        "worst_target_interval": [float(interval.lower[0]), float(interval.upper[0])],
        "worst_target_interval_s": interval_s, "worst_target_interval_cpu_s": interval_cpu,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--T", type=int, default=1000)
    ap.add_argument("--every", type=int, default=10)
    ap.add_argument("--sigma", type=float, default=1.0)
    ap.add_argument("--delta", type=float, default=1e-6)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--tracked", choices=("pair", "targets"), default="pair")
    ap.add_argument("--map-upper", choices=("none", "entrywise", "certified"), default="none")
    ap.add_argument("--tight", choices=("neighbours", "none"), default="neighbours",
                    help="targets with the tight running bound (--tracked targets)")
    add_output_options(ap)
    add_blas_option(ap)
    args = ap.parse_args()
    with pinned_blas(args.blas_threads):
        if args.tracked == "targets":
            record = {name: measure_targets(sparsedp.gossip_matrix(graph), args.T, args.every,
                                            args.sigma, args.delta, args.map_upper,
                                            args.tight)
                      for name, graph in _graphs(args.n, args.seed).items()}
        else:
            record = {}
            for name, graph in _graphs(args.n, args.seed).items():
                W = sparsedp.gossip_matrix(graph)
                repeats = [measure(W, args.T, args.every, args.sigma, args.delta)
                           for _ in range(args.repeats)]
                ratios = [r["ratio_tracking_cpu"] for r in repeats]
                record[name] = {"median_ratio_tracking_cpu": float(np.median(ratios)),
                                "max_ratio_tracking_cpu": max(ratios), "repeats": repeats}
    name = "accountant_cost.json" if args.tracked == "pair" else "accountant_targets_cost.json"
    output_path(args, name).write_text(json.dumps(record, indent=1))
    print(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
