"""Fig. 1 of the random-walk paper: privacy loss against shortest-path distance, random walk
versus Muffliato gossip, on four graphs with n about 2048 (alpha = 2, losses in units of the
local-DP loss).  Writes ``randomwalk_fig1.json`` and ``randomwalk_fig1.png`` (default folder
``docs/figures``).

    python docs/scripts/randomwalk_fig1.py            # full size (a few minutes, 2 cores)
    python docs/scripts/randomwalk_fig1.py --quick    # n about 128 (seconds)
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import time

import numpy as np

from sparsedp import graphs
from sparsedp.errors import GraphError
from sparsedp.graphs.graph import require_connected
from sparsedp.randomwalk.gossip_comparison import compare_by_distance

FIGURES = pathlib.Path(__file__).resolve().parents[1] / "figures"


def connected(make, seed: int):
    """The first connected graph ``make(seed), make(seed + 1), ...``."""
    for s in range(seed, seed + 100):
        g = make(s)
        try:
            require_connected(g)
            return g, s
        except GraphError:
            continue
    raise RuntimeError("no connected sample in 100 seeds")


def build_graphs(quick: bool, seed: int) -> list[tuple[str, object]]:
    dim, side, n = (7, 11, 128) if quick else (11, 45, 2048)
    radius = 0.07 * math.sqrt(2048 / n)
    er, er_seed = connected(lambda s: graphs.erdos_renyi(n, 1.2 * math.log(n) / n, seed=s), seed)
    rgg, rgg_seed = connected(lambda s: graphs.random_geometric(n, radius, seed=s), seed)
    return [
        (f"hypercube (dimension {dim})", graphs.hypercube(dim)),
        (f"Erdos-Renyi (n={n}, p=1.2 ln(n)/n, seed={er_seed})", er),
        (f"grid {side} x {side}", graphs.grid(side, side)),
        (f"random geometric (n={n}, r={radius:.3g}, seed={rgg_seed})", rgg),
    ]


def run(quick: bool = False, seed: int = 0, out: pathlib.Path = FIGURES) -> dict:
    start = time.perf_counter()
    record = {"alpha": 2.0, "source": 0, "quick": quick, "graphs": []}
    for name, g in build_graphs(quick, seed):
        row = compare_by_distance(g, source=0, alpha=2.0)
        row["graph"] = name
        record["graphs"].append(row)
        print(f"{name}: gap {row['spectral_gap']:.4g}, rounds {row['rounds']}, "
              f"{row['seconds']:.1f} s", flush=True)
    record["seconds"] = time.perf_counter() - start
    out.mkdir(parents=True, exist_ok=True)
    stem = "randomwalk_fig1_quick" if quick else "randomwalk_fig1"
    (out / f"{stem}.json").write_text(json.dumps(record, indent=1))
    plot(record, out / f"{stem}.png")
    return record


def plot(record: dict, path: pathlib.Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(12, 5.5))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for row, color in zip(record["graphs"], colors, strict=False):
        for key, style, label in (("random_walk", "-", row["graph"]),
                                  ("gossip_chebyshev", "--", None)):
            rows = row["by_distance"][key]
            d = np.array([r["distance"] for r in rows])
            mean = np.array([r["mean"] for r in rows])
            lo = np.maximum(mean - np.array([r["min"] for r in rows]), 0.0)
            hi = np.maximum(np.array([r["max"] for r in rows]) - mean, 0.0)
            ax.errorbar(d, mean, yerr=[lo, hi], ls=style, color=color, capsize=3, lw=1.5,
                        label=label)
    ax.axhline(1.0, color="k", lw=1.2, label="local-DP loss")
    ax.plot([], [], "k-", label="random walk (solid)")
    ax.plot([], [], "k--", label="Muffliato gossip, Chebyshev (dashed)")
    ax.set_yscale("log", base=2)
    ax.set_ylim(2.0**-10, 1.5)
    ax.set_xlim(0.5, 25.5)
    ax.set_xlabel("shortest-path distance from the source")
    ax.set_ylabel("privacy loss / local-DP loss (alpha = 2)")
    ax.set_title("Random walk vs gossip: mean, min-max per distance")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n about 128 instead of 2048")
    parser.add_argument("--seed", type=int, default=0, help="first seed for ER and RGG")
    parser.add_argument("--out", type=pathlib.Path, default=FIGURES, help="output folder")
    args = parser.parse_args()
    record = run(args.quick, args.seed, args.out)
    print(f"total {record['seconds']:.1f} s")


if __name__ == "__main__":
    main()
