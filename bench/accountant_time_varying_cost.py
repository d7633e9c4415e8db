"""What tracking one pair costs for time-varying gossip, against one from-scratch query (issue
34): an ``sparsedp.Accountant(None, ..., n=n)`` stepped with a new ER graph's Metropolis matrix
every round (average degree ``--degree``) and asked ``epsilon(delta)`` every ``--every``
rounds, against one ``sparsedp.squared_sensitivity([W_0..W_(T-1)], ...)`` at T (the
matrix-free path), CPU seconds in the same process after a warm-up query.  Target node 0,
observer node n/2.  Writes ``accountant_time_varying_cost.json`` (:mod:`outputs`) with the
seconds, the ratio and the bounds.
"""

from __future__ import annotations

import argparse
import json
import time

import networkx as nx
from blas_pinning import add_blas_option, pinned_blas
from outputs import add_output_options, output_path

import sparsedp
from sparsedp.testing import metropolis_round


def _cpu(f):
    start = time.process_time()
    value = f()
    return value, time.process_time() - start


def measure(n: int, T: int, degree: float, every: int, delta: float, seed: int) -> dict:
    Ws = [metropolis_round(nx.fast_gnp_random_graph(n, degree / n, seed=seed + t), n)
          for t in range(T)]
    observers = [n // 2]
    sparsedp.squared_sensitivity(Ws[:5], 0, observers, 5)  # warm-up
    one_shot, one_shot_seconds = _cpu(lambda: sparsedp.squared_sensitivity(Ws, 0, observers, T))

    def track():
        accountant = sparsedp.Accountant(None, 0, observers, sigma=1.0, n=n)
        for t in range(T):
            accountant.step(Ws[t])
            if (t + 1) % every == 0:
                accountant.epsilon(delta)
        return accountant

    accountant, tracking_seconds = _cpu(track)
    return {"n": n, "T": T, "one_shot_cpu_s": one_shot_seconds,
            "tracking_cpu_s": tracking_seconds,
            "ratio_tracking_cpu": tracking_seconds / one_shot_seconds,
            "one_shot_lower": one_shot.lower, "one_shot_upper": one_shot.upper,
            "running_upper": accountant.upper, "one_shot_method": one_shot.method}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--T", type=int, default=300)
    ap.add_argument("--degree", type=float, default=10.0)
    ap.add_argument("--every", type=int, default=10)
    ap.add_argument("--delta", type=float, default=1e-6)
    ap.add_argument("--seed", type=int, default=1)
    add_output_options(ap)
    add_blas_option(ap)
    args = ap.parse_args()
    with pinned_blas(args.blas_threads):
        record = measure(args.n, args.T, args.degree, args.every, args.delta, args.seed)
    output_path(args, "accountant_time_varying_cost.json").write_text(
        json.dumps(record, indent=1))
    print(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
