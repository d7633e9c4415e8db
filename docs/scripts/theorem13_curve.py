"""Theorem 13 (Koskela & Kulkarni v2): Delta_T(j -> i)^2 / T -> 1/n for a single observer.

Erdos-Renyi G(100, 0.15), Metropolis weights, one non-adjacent and one adjacent pair;
certified lower and upper bounds of Delta^2 / T for T up to 1000.  Writes
``docs/figures/theorem13.json`` and ``docs/figures/theorem13.png``.

    python docs/scripts/theorem13_curve.py [--max-T 1000] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import time

import networkx as nx
import numpy as np

import sparsedp

FIGURES = pathlib.Path(__file__).resolve().parents[1] / "figures"


def curve(W, target: int, observer: int, rounds: list[int]) -> list[dict]:
    rows = []
    for T in rounds:
        start = time.perf_counter()
        r = sparsedp.squared_sensitivity(W, target, [observer], T, exact=False)
        rows.append({"T": T, "lower_over_T": r.lower / T, "upper_over_T": r.upper / T,
                     "relative_gap": r.relative_gap, "seconds": time.perf_counter() - start})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-T", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    n = 100
    G = nx.erdos_renyi_graph(n, 0.15, seed=args.seed)
    W = sparsedp.gossip_matrix(G, scheme="metropolis")
    i = 0
    non_neighbour = next(v for v in range(1, n) if not G.has_edge(i, v))
    neighbour = next(iter(G.neighbors(i)))
    rounds = sorted({int(t) for t in np.unique(np.geomspace(1, args.max_T, 30).round())})
    record = {
        "graph": f"erdos_renyi(100, 0.15, seed={args.seed})",
        "scheme": "metropolis",
        "observer": i,
        "one_over_n": 1 / n,
        "non_adjacent": {"target": non_neighbour, "rows": curve(W, non_neighbour, i, rounds)},
        "adjacent": {"target": neighbour, "rows": curve(W, neighbour, i, rounds)},
    }
    FIGURES.mkdir(parents=True, exist_ok=True)
    (FIGURES / "theorem13.json").write_text(json.dumps(record, indent=1))
    plot(record, FIGURES / "theorem13.png")
    for name in ("non_adjacent", "adjacent"):
        last = record[name]["rows"][-1]
        print(f"{name:13s} T={last['T']}: Delta^2/T in [{last['lower_over_T']:.6f}, "
              f"{last['upper_over_T']:.6f}]  (1/n = {1 / n})")


def plot(record: dict, path: pathlib.Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for name, style in (("non_adjacent", "-"), ("adjacent", "--")):
        rows = record[name]["rows"]
        T = [r["T"] for r in rows]
        ax.plot(T, [r["upper_over_T"] for r in rows], style, label=f"{name} (certified upper)")
        ax.plot(T, [r["lower_over_T"] for r in rows], style, alpha=0.5, label=f"{name} (lower)")
    ax.axhline(record["one_over_n"], color="k", lw=0.8, label="1/n")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("T (rounds)")
    ax.set_ylabel(r"$\Delta_T(j \to i)^2 / T$")
    ax.set_title("Theorem 13 on ER(100, 0.15), Metropolis weights")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
