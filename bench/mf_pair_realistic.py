"""One matrix-factorisation pair on a power-law cluster graph and on its Erdos-Renyi twin
(issue 35): DP-D-SGD under PNDP, user level, vector gradients, T = 20.

    python bench/mf_pair_realistic.py [--n 10000] [--T 20] [--engine] [--others]

Graph: ``networkx.powerlaw_cluster_graph(n, 10, 0.1, seed=1)``, ``1/(d+1)`` weights
(``row-normalised-self-loops``); its twin ``networkx.gnm_random_graph(n, |E|, seed=1)``.
Attackers: the highest-degree node, node 0 and a lowest-degree node; target the last node.
Per pair: CPU time (``time.process_time``, all threads), tracemalloc peak, the certified
interval and the path.  ``--engine`` also runs the gossip engine's path (the previous
implementation) for the pairs where its estimate is below 60 s of Gram work; ``--others``
AntiPGD and Muffliato-SGD(2) for the low-degree pair.  Ratios are to the twin's pair with the
same attacker rank (highest / lowest degree), measured in one process.
"""

from __future__ import annotations

import argparse
import json
import time
import tracemalloc

import networkx as nx
import numpy as np
from outputs import add_output_options, output_path

import sparsedp
from sparsedp.errors import SparseDPError
from sparsedp.mf import antipgd, mf_sensitivity, muffliato_sgd


def run(W, target, attacker, T, **options):
    tracemalloc.start()
    start = time.process_time()
    try:
        r = mf_sensitivity(W, target, [attacker], T, **options)
        what = f"[{r.lower:.10g}, {r.upper:.10g}] ({r.method})"
    except SparseDPError as error:
        what = f"refused: {str(error)[:90]}"
    seconds = time.process_time() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return seconds, peak, what


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--T", type=int, default=20)
    parser.add_argument("--engine", action="store_true")
    parser.add_argument("--others", action="store_true")
    add_output_options(parser)
    args = parser.parse_args()
    plc = nx.powerlaw_cluster_graph(args.n, 10, 0.1, seed=1)
    twin = nx.gnm_random_graph(args.n, plc.number_of_edges(), seed=1)
    mf_sensitivity(sparsedp.gossip_matrix(nx.cycle_graph(30), scheme="row-normalised-self-loops"),
                   0, [20], 3)  # compile the kernels outside the timings
    times, records = {}, []
    for name, G in [("power-law cluster", plc), ("ER twin", twin)]:
        W = sparsedp.gossip_matrix(G, scheme="row-normalised-self-loops")
        degrees = np.array([d for _, d in sorted(G.degree())])
        attackers = {"hub": int(degrees.argmax()), "node 0": 0, "low": int(degrees.argmin())}
        target = args.n - 1
        for label, a in attackers.items():
            seconds, peak, what = run(W, target, a, args.T)
            times[name, label] = seconds
            records.append({"graph": name, "attacker": label, "node": a,
                            "degree": int(degrees[a]), "target": target, "T": args.T,
                            "cpu_seconds": seconds, "peak_bytes": peak, "result": what})
            print(f"{name:18s} {label:6s} a={a:5d} (degree {degrees[a]:4d}) -> {target}: "
                  f"{seconds:6.2f} s CPU, peak {peak / 2**20:7.1f} MiB, {what}")
            if args.engine and (degrees[a] + 1) * args.T <= 4000:
                seconds, peak, what = run(W, target, a, args.T, method="gram")
                print(f"{'':18s} engine (gram): {seconds:6.2f} s CPU, peak "
                      f"{peak / 2**20:7.1f} MiB, {what}")
        if args.others:
            for alg in (antipgd(), muffliato_sgd(2)):
                seconds, peak, what = run(W, target, attackers["low"], args.T, algorithm=alg)
                print(f"{'':18s} {alg.name} (low): {seconds:6.2f} s CPU, {what}")
    for label in ("hub", "low"):
        ratio = times["power-law cluster", label] / times["ER twin", label]
        print(f"ratio to the twin, {label} attacker: {ratio:.2f}")
    path = output_path(args, "mf_pair_realistic.json")
    path.write_text(json.dumps({"n": args.n, "pairs": records}, indent=1))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
