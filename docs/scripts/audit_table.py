"""The empirical audit over views, graphs and T, and its figure (docs/audit.md).

Table: every simulated gossip view (single observer, coalition, noise removed or not) on three
graphs (Florentine families, a 12-node ring, the embedded synthetic social graph with 100
nodes), T = 5 and 20, 200,000 runs each at confidence 0.99, each instance with its own seed
(its row number).  Figure: on the synthetic social
graph, observer 0 and target 99 in the secure-summation view, the empirical epsilon lower
bound and the epsilon of the attacker's sensitivity interval against the certified epsilon,
for T = 1 .. 50 (10^6 runs each).  Also times one 10^6-run audit at T = 50 on a 100-node graph
against a calibration measured in the same process (50 rounds of ``W @ X`` on a batch of
8192 runs: the sparse products of one simulated batch).

    python docs/scripts/audit_table.py          # writes docs/figures/audit.{json,png}
"""

from __future__ import annotations

import json
import pathlib
import time

import networkx as nx
import numpy as np

import sparsedp
from sparsedp.audit import audit_gossip

FIGURES = pathlib.Path(__file__).resolve().parents[1] / "figures"
VIEWS = [  # (view, observers, noise_removed): observers are rows of W
    ("secure-summation", [0], False),
    ("secure-summation", [0], True),
    ("secure-summation", [0, 2], False),
    ("secure-summation-v1", [0], False),
    ("neighbourhood", [0], False),
    ("neighbourhood", [0], True),
    ("adaptive-v1", None, False),
    ("target-v1", None, False),
    ("local-dp", None, False),
]


def graphs() -> dict:
    florentine = nx.convert_node_labels_to_integers(nx.florentine_families_graph())
    social = sparsedp.synthetic_social_graph(100, seed=0)
    return {
        "florentine (15)": sparsedp.gossip_matrix(florentine, scheme="metropolis"),
        "ring (12)": sparsedp.gossip_matrix(nx.cycle_graph(12), scheme="metropolis"),
        "social (100)": sparsedp.gossip_matrix(social, scheme="metropolis"),
    }


def table() -> list[dict]:
    rows = []
    for name, W in graphs().items():
        target = W.shape[0] - 1
        for view, observers, removed in VIEWS:
            for T in (5, 20):
                start = time.perf_counter()
                r = audit_gossip(W, target, observers, T, view=view, noise_removed=removed,
                                 trials=200_000, seed=len(rows), progress=False)
                rows.append({"graph": name, **r.to_dict(),
                             "seconds": time.perf_counter() - start})
    return rows


def figure_series() -> list[dict]:
    W = graphs()["social (100)"]
    out = []
    for T in (1, 2, 5, 10, 20, 50):
        r = audit_gossip(W, 99, [0], T, trials=1_000_000, seed=T, progress=False)
        eps = [sparsedp.gaussian_epsilon(v, 1.0, 1e-5)
               for v in (r.sensitivity_low, r.sensitivity_high)]
        out.append({"T": T, "epsilon_lower": r.epsilon_lower, "epsilon_upper": r.epsilon_upper,
                    "epsilon_of_attacker_interval": eps, "passed": r.passed})
    return out


def timing() -> dict:
    W = sparsedp.gossip_matrix(nx.connected_watts_strogatz_graph(100, 6, 0.2, seed=1))
    batch = np.random.default_rng(0).standard_normal((100, 8192))
    start = time.perf_counter()
    for _ in range(50):
        W @ batch
    calibration = time.perf_counter() - start
    start = time.perf_counter()
    r = audit_gossip(W, 50, [0], 50, trials=1_000_000, seed=1, progress=False)
    seconds = time.perf_counter() - start
    return {"trials": 1_000_000, "n": 100, "T": 50, "seconds": seconds,
            "calibration_seconds": calibration, "ratio": seconds / calibration,
            "passed": r.passed}


def plot(series: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    T = [p["T"] for p in series]
    low, high = np.array([p["epsilon_of_attacker_interval"] for p in series]).T
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(T, [p["epsilon_upper"] for p in series], "k-o", label="certified upper bound")
    ax.fill_between(T, low, high, alpha=0.3, label="Gaussian epsilon of the attacker's "
                    "sensitivity interval (99 %)")
    ax.plot(T, [p["epsilon_lower"] for p in series], "r-s",
            label="empirical lower bound (LR test, 99 %)")
    ax.set_xscale("log")
    ax.set_xlabel("rounds T")
    ax.set_ylabel("epsilon (delta = 1e-5, sigma = 1)")
    ax.set_title("Audit: secure summation, social graph n = 100, 10^6 runs", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(FIGURES / "audit.png", dpi=120)


def main() -> None:
    rows = table()
    series = figure_series()
    clock = timing()
    (FIGURES / "audit.json").write_text(json.dumps(
        {"table": rows, "figure": series, "timing": clock}, indent=1, allow_nan=False) + "\n")
    plot(series)
    print("| graph | view | T | engine Delta^2 | attacker Delta^2 (99 %) | eps lower | "
          "eps upper | verdict |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        view = r["view"] + (" (noise removed)" if r["noise_removed"] else "")
        if r["view"] == "secure-summation" and len(r["observers"]) > 1:
            view += " coalition"
        print(f"| {r['graph']} | {view} | {r['T']} | {float(r['engine_upper']):.5g} | "
              f"[{float(r['sensitivity_low']):.5g}, {float(r['sensitivity_high']):.5g}] | "
              f"{r['epsilon_lower']:.3g} | {float(r['epsilon_upper']):.3g} | "
              f"{'pass' if r['passed'] else 'FAIL'} |")
    print(f"\n{sum(r['passed'] for r in rows)} of {len(rows)} pass")
    print(json.dumps(series, indent=1))
    print(json.dumps(clock, indent=1))


if __name__ == "__main__":
    main()
