"""What tracking the other families every step costs, against one from-scratch query (issue 34).

Matrix factorisation: an :class:`sparsedp.MFAccountant` (DP-D-SGD under ``pndp-eq12``, user
level) for one (target, attacker) pair stepped every gradient step for T steps and asked
``epsilon(delta)`` every ``--every`` steps, then ``interval()`` once at the end; the
reference is one :func:`sparsedp.mf.mf_sensitivity` at T. Random walk: a
:class:`sparsedp.RandomWalkAccountant` for one (source, receiver) pair stepped T times and
asked ``epsilon(delta)`` every ``--every`` steps (and, ``steps_only``, never); the reference
is one :func:`sparsedp.random_walk_rdp` (``method="series"``) at T and its epsilon. Both in
the same process after a warm-up of each side (a 3-step tracking, and the same query: a
first query at a smaller T leaves kernels of the larger one to compile in the timed query,
measured 60 s against 3 s at n = 10^4), on an ER graph (average degree ``--degree``,
Metropolis weights); target 0 and an attacker two hops away (the target's messages are not
among those it receives). Writes ``accountant_families_cost.json`` (:mod:`outputs`):
seconds, CPU seconds and their ratios. One BLAS thread for both sides (``--blas-threads``).
"""

from __future__ import annotations

import argparse
import json
import time

import networkx as nx
from blas_pinning import add_blas_option, pinned_blas
from outputs import add_output_options, output_path
from timing import timed

import sparsedp
from sparsedp.graphs import as_graph
from sparsedp.mf import mf_sensitivity


def _cpu_timed(f):
    """``(wall seconds, CPU seconds of this process, value)`` of one call."""
    cpu = time.process_time()
    wall, value = timed(f)
    return wall, time.process_time() - cpu, value


def _track(accountant, T: int, every: int, delta: float):
    epsilons = []
    for t in range(1, T + 1):
        accountant.step()
        if t % every == 0:
            epsilons.append(accountant.epsilon(delta))
    return accountant, epsilons


def _ratios(one_shot, tracking) -> dict:
    (one_s, one_cpu, _), (track_s, track_cpu, _) = one_shot, tracking
    return {"one_shot_s": one_s, "tracking_s": track_s, "ratio_tracking": track_s / one_s,
            "one_shot_cpu_s": one_cpu, "tracking_cpu_s": track_cpu,
            "ratio_tracking_cpu": track_cpu / one_cpu}


def measure_mf(W, target: int, attacker: int, T: int, every: int, sigma: float,
               delta: float) -> dict:
    options = {"trust_model": "pndp-eq12"}
    mf_sensitivity(W, target, [attacker], T, **options)  # warm-up: every kernel compiled
    _track(sparsedp.MFAccountant(W, target, [attacker], sigma=sigma, **options), 3, 1, delta)
    one_shot = _cpu_timed(lambda: mf_sensitivity(W, target, [attacker], T, **options))
    tracking = _cpu_timed(lambda: _track(sparsedp.MFAccountant(
        W, target, [attacker], sigma=sigma, **options), T, every, delta))
    accountant = tracking[2][0]
    interval = _cpu_timed(accountant.interval)
    return {**_ratios(one_shot, tracking), "final_interval_s": interval[0],
            "observed_rows": int(accountant.observation.observed.size),
            "one_shot": [one_shot[2].lower, one_shot[2].upper],
            "one_shot_method": one_shot[2].method,
            "accountant_running_upper": float(accountant.history[-1]),
            "accountant_interval": [interval[2].lower, interval[2].upper]}


def measure_walk(W, source: int, receiver: int, T: int, every: int, sigma: float,
                 delta: float) -> dict:
    options = {"sigma": sigma, "alpha": 2.0, "receivers": [receiver], "contributions": 10}
    sparsedp.random_walk_rdp(W, source, T, method="series", **options)  # warm-up
    _track(sparsedp.RandomWalkAccountant(W, source, **options), 3, 1, delta)
    one_shot = _cpu_timed(lambda: _with_epsilon(
        sparsedp.random_walk_rdp(W, source, T, method="series", **options), delta))
    tracking = _cpu_timed(lambda: _track(sparsedp.RandomWalkAccountant(W, source, **options),
                                         T, every, delta))
    steps_only = _cpu_timed(lambda: _track(sparsedp.RandomWalkAccountant(W, source, **options),
                                           T, T + 1, delta))
    accountant = tracking[2][0]
    return {**_ratios(one_shot, tracking), "steps_only_s": steps_only[0],
            "ratio_steps_only": steps_only[0] / one_shot[0],
            "equal": bool((accountant.loss.rdp == one_shot[2].rdp).all())}


def _with_epsilon(loss, delta: float):
    """The one-shot loss, its epsilon asked once (as the tracking asks it every few steps)."""
    loss.epsilon(delta)
    return loss


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--degree", type=float, default=10.0)
    ap.add_argument("--T", type=int, default=200)
    ap.add_argument("--every", type=int, default=10)
    ap.add_argument("--sigma", type=float, default=3.0)
    ap.add_argument("--delta", type=float, default=1e-6)
    ap.add_argument("--seed", type=int, default=1)
    add_output_options(ap)
    add_blas_option(ap)
    args = ap.parse_args()
    graph = as_graph(nx.fast_gnp_random_graph(args.n, args.degree / args.n, seed=args.seed),
                     largest_component=True)
    W = sparsedp.gossip_matrix(graph, scheme="metropolis")
    target = 0
    first = set(W[target].indices.tolist())
    attacker = next(j for i in sorted(first - {target}) for j in W[i].indices.tolist()
                    if j not in first)
    with pinned_blas(args.blas_threads):
        record = {"n": W.shape[0], "nnz": int(W.nnz), "T": args.T, "every": args.every,
                  "target": target, "attacker": attacker,
                  "mf": measure_mf(W, target, attacker, args.T, args.every, args.sigma,
                                   args.delta),
                  "random_walk": measure_walk(W, target, attacker, args.T, args.every,
                                              args.sigma, args.delta)}
    output_path(args, "accountant_families_cost.json").write_text(json.dumps(record, indent=1))
    print(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
