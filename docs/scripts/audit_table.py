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

MF table (``--part mf``): DP-D-SGD and Muffliato-SGD(K) under PNDP
(:func:`sparsedp.audit.audit_mf`): Florentine families (``1/(d+1)`` weights, and without
self-loops for the two PNDP variants), a 12-node ring, a Watts-Strogatz graph with 30 nodes,
T = 5 and 20, attacker row 0 and a target at distance 2, user-level participation unless
stated, 200,000 runs each, seed = row number; its figure: on the Florentine families, the
empirical epsilon lower bound and the epsilon of the attacker's sensitivity interval against
the certified epsilon for T = 1 .. 20 (500,000 runs each).

    python docs/scripts/audit_table.py              # both: docs/figures/audit{,_mf}.{json,png}
    python docs/scripts/audit_table.py --part mf    # the MF table and figure only (about 3 min)
"""

from __future__ import annotations

import argparse
import json
import pathlib
import time

import networkx as nx
import numpy as np

import sparsedp
from sparsedp.audit import audit_gossip, audit_mf
from sparsedp.audit.simulate_sgd import attackers_view, gradient_responses, noise_responses
from sparsedp.mf import muffliato_sgd

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


def mf_graphs() -> dict:
    """name: (graph, weights) of the MF table."""
    florentine = nx.convert_node_labels_to_integers(nx.florentine_families_graph())
    return {
        "florentine (15)": (florentine, "row-normalised-self-loops"),
        "florentine, no self-loops": (florentine, "row-normalised"),
        "ring (12)": (nx.cycle_graph(12), "metropolis"),
        "WS(30, 4, 0.3)": (nx.connected_watts_strogatz_graph(30, 4, 0.3, seed=1),
                           "row-normalised-self-loops"),
    }


MF_INSTANCES = [  # (graph, algorithm, trust, participation, attackers or None: [0], T values)
    ("florentine (15)", "dp-d-sgd", "pndp", "user-level", None, (5, 20)),
    ("florentine (15)", muffliato_sgd(2), "pndp", "user-level", None, (5, 20)),
    ("ring (12)", "dp-d-sgd", "pndp", "user-level", None, (5, 20)),
    ("ring (12)", muffliato_sgd(2), "pndp", "user-level", None, (5, 20)),
    ("WS(30, 4, 0.3)", "dp-d-sgd", "pndp", "user-level", None, (5, 20)),
    ("florentine, no self-loops", muffliato_sgd(2), "pndp", "user-level", None, (10,)),
    ("florentine, no self-loops", muffliato_sgd(2), "pndp-eq12", "user-level", None, (10,)),
    ("florentine (15)", muffliato_sgd(3), "pndp", (4, 5), [0, 3], (20,)),
]


def _distance_two(G, attacker: int) -> int:
    hops = nx.single_source_shortest_path_length(G, attacker)
    return min(v for v, d in hops.items() if d == 2)


def mf_table() -> list[dict]:
    rows = []
    instances = mf_graphs()
    for name, algorithm, trust, scheme, attackers, Ts in MF_INSTANCES:
        G, weights = instances[name]
        W = sparsedp.gossip_matrix(G, scheme=weights)
        target = _distance_two(G, 0)
        for T in Ts:
            start = time.perf_counter()
            r = audit_mf(W, target, attackers or [0], T, algorithm=algorithm, trust_model=trust,
                         participation_scheme=scheme, trials=200_000, seed=len(rows),
                         progress=False)
            rows.append({"graph": name, "weights": weights, **r.to_dict(),
                         "seconds": time.perf_counter() - start,
                         "chosen_share": chosen_share(W, r)})
    return rows


def chosen_share(W, r) -> float:
    """``c^T M c / sens^2`` at the attacker's chosen steps and signs, ``M`` from the
    simulator's exact covariance (:func:`noise_responses`): 1 when the attacker found the
    maximiser."""
    view = attackers_view(W, r.attackers, r.trust, r.target)
    J = noise_responses(W, r.T, r.K, view)
    S = gradient_responses(W, r.T, r.K, view, r.target)[:, list(r.steps)] @ np.array(r.signs)
    value = float(S @ np.linalg.pinv(J @ J.T, rcond=1e-10, hermitian=True) @ S)
    return value / r.engine_upper if r.engine_upper > 0 else 1.0


def mf_figure_series() -> list[dict]:
    G, weights = mf_graphs()["florentine (15)"]
    W = sparsedp.gossip_matrix(G, scheme=weights)
    target = _distance_two(G, 0)
    out = []
    for algorithm in ("dp-d-sgd", muffliato_sgd(2)):
        for T in (1, 2, 5, 10, 20):
            r = audit_mf(W, target, [0], T, algorithm=algorithm, trials=500_000, seed=T,
                         progress=False)
            eps = [sparsedp.gaussian_epsilon(v, 1.0, 1e-5)
                   for v in (r.sensitivity_low, r.sensitivity_high)]
            out.append({"algorithm": r.algorithm, "T": T, "target": target,
                        "epsilon_lower": r.epsilon_lower, "epsilon_upper": r.epsilon_upper,
                        "epsilon_of_attacker_interval": eps, "passed": r.passed})
    return out


def plot_mf(series: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for algorithm, colour in (("dp-d-sgd", "C0"), ("muffliato-sgd(2)", "C1")):
        points = [p for p in series if p["algorithm"] == algorithm]
        T = [p["T"] for p in points]
        low, high = np.array([p["epsilon_of_attacker_interval"] for p in points]).T
        ax.plot(T, [p["epsilon_upper"] for p in points], "-o", color=colour,
                label=f"{algorithm}: certified upper bound")
        ax.fill_between(T, low, high, color=colour, alpha=0.25,
                        label=f"{algorithm}: epsilon of the attacker's interval (99 %)")
        ax.plot(T, [p["epsilon_lower"] for p in points], "--s", color=colour,
                label=f"{algorithm}: empirical lower bound (LR test, 99 %)")
    ax.set_xscale("log")
    ax.set_xlabel("gradient steps T")
    ax.set_ylabel("epsilon (delta = 1e-5, sigma = 1)")
    ax.set_title("Audit: PNDP, Florentine families, attacker 0, target at distance 2, "
                 "5x10^5 runs", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(FIGURES / "audit_mf.png", dpi=120)


def gossip_part() -> None:
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


def mf_part() -> None:
    rows = mf_table()
    series = mf_figure_series()
    (FIGURES / "audit_mf.json").write_text(json.dumps(
        {"table": rows, "figure": series}, indent=1, allow_nan=False) + "\n")
    plot_mf(series)
    print("| graph | algorithm | trust | participation | attackers -> target | T | engine "
          "sens^2 | attacker sens^2 (99 %) | chosen signs' share | eps lower | eps upper | "
          "verdict |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['graph']} | {r['algorithm']} | {r['trust']} | {r['participation']} | "
              f"{','.join(map(str, r['attackers']))} -> {r['target']} | {r['T']} | "
              f"{float(r['engine_upper']):.5g} | [{float(r['sensitivity_low']):.5g}, "
              f"{float(r['sensitivity_high']):.5g}] | {r['chosen_share']:.4f} | "
              f"{r['epsilon_lower']:.3g} | "
              f"{float(r['epsilon_upper']):.3g} | {'pass' if r['passed'] else 'FAIL'} |")
    print(f"\n{sum(r['passed'] for r in rows)} of {len(rows)} pass; "
          f"{sum(r['seconds'] for r in rows):.0f} s")
    print("| algorithm | T | empirical epsilon lower bound (99 %) | epsilon of the attacker's "
          "sens^2 interval | certified epsilon |")
    print("| --- | --- | --- | --- | --- |")
    for p in series:
        low, high = p["epsilon_of_attacker_interval"]
        print(f"| {p['algorithm']} | {p['T']} | {p['epsilon_lower']:.4g} | [{low:.4g}, "
              f"{high:.4g}] | {p['epsilon_upper']:.4g} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("all", "gossip", "mf"), default="all")
    part = parser.parse_args().part
    if part in ("all", "gossip"):
        gossip_part()
    if part in ("all", "mf"):
        mf_part()


if __name__ == "__main__":
    main()
