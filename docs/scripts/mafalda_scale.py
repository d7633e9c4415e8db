"""MAFALDA scale measurements (docs/mafalda.md, "Measured"; issue 15 acceptance):

    PYTHONPATH=. python docs/scripts/mafalda_scale.py [--out docs/figures/mafalda_scale.json]

1. H at n = 10^5, T = 1000 (ER(n, 16/n), Metropolis weights): Hutchinson estimate, 16 probes,
   time and the stated relative error;
2. the estimate against the exact path at n = 3000, T = 200 (ER, Metropolis): does the stated
   error cover the truth entrywise, and the actual relative error;
3. the optimiser at T = 380, (k, b) = (20, 19) on the three graphs of the figures, with the
   objective of every baseline (certified sens^2 recomputed by the accounting).
"""

from __future__ import annotations

import argparse
import json
import time

import networkx as nx
import numpy as np

import sparsedp
from sparsedp.graphs import erdos_renyi
from sparsedp.mf import cyclic
from sparsedp.mf.optimise import baselines, optimise_correlation
from sparsedp.mf.utility import utility_gram


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="docs/figures/mafalda_scale.json")
    args = ap.parse_args()
    rec = {}
    n, T = 100_000, 1000
    W = sparsedp.gossip_matrix(erdos_renyi(n, 16 / n, seed=1), scheme="metropolis")
    t = time.perf_counter()
    H = utility_gram(W, T, probes=16, progress=False)
    rec["H_1e5"] = {"n": n, "T": T, "nnz": int(W.nnz), "kind": H.kind, "probes": 16,
                    "seconds": round(time.perf_counter() - t, 2),
                    "stated_max_relative_error": float(np.max(H.error / np.abs(H.H))),
                    "stated_median_relative_error": float(np.median(H.error / np.abs(H.H)))}
    print(rec["H_1e5"])
    n, T = 3000, 200
    W = sparsedp.gossip_matrix(erdos_renyi(n, 16 / n, seed=2), scheme="metropolis")
    t = time.perf_counter()
    exact = utility_gram(W, T, method="exact").H
    te = time.perf_counter() - t
    t = time.perf_counter()
    est = utility_gram(W, T, method="estimate", probes=16, seed=5, progress=False)
    ts = time.perf_counter() - t
    rec["H_coverage_3000"] = {
        "n": n, "T": T, "exact_seconds": round(te, 2), "estimate_seconds": round(ts, 2),
        "covered_entrywise": bool(np.all(np.abs(est.H - exact) <= est.error)),
        "max_actual_relative_error": float(np.max(np.abs(est.H - exact) / np.abs(exact))),
        "max_stated_relative_error": float(np.max(est.error / np.abs(exact)))}
    print(rec["H_coverage_3000"])
    graphs = {"florentine": nx.florentine_families_graph(),
              "ego148-standin": sparsedp.synthetic_social_graph(148, seed=0),
              "peertube271-standin": sparsedp.synthetic_social_graph(271, seed=0)}
    rec["optimiser_T380"] = {}
    for name, G in graphs.items():
        W = sparsedp.gossip_matrix(G, scheme="row-normalised-self-loops")
        t = time.perf_counter()
        H = utility_gram(W, 380).H
        th = time.perf_counter() - t
        t = time.perf_counter()
        best = optimise_correlation(H, cyclic(20, 19), progress=False)
        to = time.perf_counter() - t
        table = {**baselines(H, cyclic(20, 19), progress=False), "mafalda": best}
        rec["optimiser_T380"][name] = {
            "H_seconds": round(th, 2), "optimiser_seconds": round(to, 2),
            "iterations": best.iterations, "gap": best.gap, "stationarity": best.stationarity,
            "table": {k: {"sens2": v.sens2, "utility": v.utility, "objective": v.objective}
                      for k, v in table.items()}}
        print(name, rec["optimiser_T380"][name])
    with open(args.out, "w") as fh:
        json.dump(rec, fh, indent=1)


if __name__ == "__main__":
    main()
