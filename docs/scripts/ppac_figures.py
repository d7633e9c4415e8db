"""PPAC (Fereydounian et al., App. A): the paper's experiments, as data and plots.

Writes ``docs/figures/ppac_*.json`` and ``docs/figures/ppac_*.png``:

* ``ppac_trajectories``: one run on the 6-node example, sigma_N = 15 (the paper's Fig. 3);
* ``ppac_convergence``: mean ||v(t) - u*|| over 100 runs for sigma_N = 15 .. 1.5e6 (Fig. 4),
  with the measured mean t_eps and the bounds eq. 133 (exact initial error) and eq. 145;
* ``ppac_leakage_example``: pi_4^(1)(inf) against sigma_N (Fig. 5), with its large-noise
  limit;
* ``ppac_leakage_cycles``: pi_1^(2)(inf) on C_n, n = 10, 20, 30, 40 (Fig. 7).

    python docs/scripts/ppac_figures.py
"""

from __future__ import annotations

import json
import math
import pathlib
import time

import numpy as np
from tqdm import tqdm

from sparsedp.cli.ppac import EXAMPLE_EDGES, EXAMPLE_VALUES, example_graph
from sparsedp.graphs.generators import ring
from sparsedp.ppac import (
    consensus_errors,
    convergence_bounds,
    convergence_times,
    laplacian_consensus_matrix,
    leakage,
    leakage_noise_limit,
    ppac_layout,
    prepare,
    random_designated,
)
from sparsedp.ppac.protocol import consensus_rounds

FIGURES = pathlib.Path(__file__).resolve().parents[1] / "figures"
SIGMA_0 = 10.0
SIGMAS_N = [15.0, 150.0, 1.5e3, 1.5e4, 1.5e5, 1.5e6]
EPS = 1e-3


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def trajectories(graph, layout, W) -> dict:
    prep = prepare(layout, np.array(EXAMPLE_VALUES), noise_std=15.0, seed=0)
    states = np.array([v[:, 0] for _, v in consensus_rounds(W, prep.v0, 40)])
    return {
        "sigma_N": 15.0,
        "values": list(EXAMPLE_VALUES),
        "average": float(np.mean(EXAMPLE_VALUES)),
        "v0": prep.v0[:, 0].tolist(),
        "states": states.tolist(),
        "final_max_deviation": float(np.abs(states[-1] - np.mean(EXAMPLE_VALUES)).max()),
    }


def convergence(graph, layout, W) -> dict:
    rows = []
    for s in tqdm(SIGMAS_N, desc="convergence (Fig. 4)"):
        prep = prepare(layout, np.array(EXAMPLE_VALUES), realisations=100, noise_std=s, seed=1)
        errors = consensus_errors(W, prep, 200)
        times = convergence_times(errors, EPS)
        # the values are the paper's fixed u: mean u, no value noise
        b = convergence_bounds(
            layout, W, EPS, value_mean=np.array(EXAMPLE_VALUES), value_std=0.0, noise_std=s
        )
        rows.append(
            {
                "sigma_N": s,
                "mean_error": errors.mean(axis=1).tolist(),
                "mean_t_eps": float(times.mean()),
                "max_t_eps": int(times.max()),
                "bound_eq133_exact": b.expected_time_exact,
                "bound_eq145_paper": b.expected_time_paper,
                "alpha": b.alpha,
            }
        )
    return {
        "eps": EPS,
        "realisations": 100,
        "rows": rows,
        "note": "bounds for the fixed values u of the paper (value mean u, value std 0)",
    }


def leakage_example(graph, layout, W) -> dict:
    i, j = 4, 1  # node labels: the example's nodes are 1..6
    rows = []
    for s in tqdm(SIGMAS_N, desc="leakage, 6-node example (Fig. 5)"):
        r = leakage(layout, W, i, math.inf, value_std=SIGMA_0, noise_std=s, victims=[j])
        rows.append(
            {"sigma_N": s, "nats": float(r.nats[0]), "kind": str(r.kind[0]), "notes": list(r.notes)}
        )
    limit = leakage_noise_limit(layout, W, i, j, value_std=SIGMA_0)
    n = graph.n
    return {
        "attacker": 4,
        "victim": 1,
        "sigma_0": SIGMA_0,
        "rows": rows,
        "noise_limit": limit,
        "average_only": 0.5 * math.log1p(1 / (n - 1)),
        "average_and_own_value": 0.5 * math.log1p(1 / (n - 2)),
    }


def leakage_cycles() -> dict:
    out = []
    for n in tqdm((10, 20, 30, 40), desc="leakage on cycles (Fig. 7)"):
        g = ring(n)
        designated = random_designated(g, seed=n)
        layout = ppac_layout(g, designated)
        paper_W = laplacian_consensus_matrix(g)  # I - L/2: periodic for even n
        lazy_W = laplacian_consensus_matrix(g, scale=3)
        rows = []
        for s in SIGMAS_N:
            paper = leakage(
                layout, paper_W, 0, math.inf, value_std=SIGMA_0, noise_std=s, victims=[1]
            )
            lazy = leakage(layout, lazy_W, 0, math.inf, value_std=SIGMA_0, noise_std=s, victims=[1])
            rows.append(
                {
                    "sigma_N": s,
                    "nats": float(paper.nats[0]),
                    "nats_lazy": float(lazy.nats[0]),
                    "kind": str(paper.kind[0]),
                }
            )
        out.append(
            {
                "n": n,
                "designated": list(designated.values()),  # m_k for k = 0..n-1
                "rows": rows,
                "informative_last_time": paper.informative.last_time,
                "noise_limit": leakage_noise_limit(layout, paper_W, 0, 1, value_std=SIGMA_0),
                "average_and_own_value": 0.5 * math.log1p(1 / (n - 2)),
            }
        )
    return {
        "attacker": 1,
        "victim": 2,
        "note": "nodes 0-based here: attacker 0, victim 1 "
        "(the paper's 1 and 2); designated neighbours random with seed n",
        "cycles": out,
    }


def _finish(fig, ax, xlabel: str, ylabel: str, title: str, name: str) -> None:
    """Label, legend and save one figure under docs/figures."""
    import matplotlib.pyplot as plt

    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(FIGURES / name, dpi=120)
    plt.close(fig)


def plot_all(rec: dict) -> None:
    plt = _plt()
    t = rec["trajectories"]
    fig, ax = plt.subplots(figsize=(6, 4))
    states = np.array(t["states"])
    for k in range(states.shape[1]):
        ax.plot(states[:, k], label=f"node {k + 1}")
    ax.axhline(t["average"], color="k", lw=0.8, ls="--", label="u*")
    _finish(
        fig,
        ax,
        "t",
        "$v_i(t)$",
        "PPAC on the 6-node example, $\\sigma_N = 15$",
        "ppac_trajectories.png",
    )

    c = rec["convergence"]
    fig, ax = plt.subplots(figsize=(6, 4))
    for row in c["rows"]:
        ax.semilogy(row["mean_error"], label=f"$\\sigma_N$ = {row['sigma_N']:g}")
    ax.axhline(c["eps"], color="k", lw=0.8, ls=":", label="eps")
    _finish(
        fig,
        ax,
        "t",
        "mean $\\|v(t) - u^*\\|_2$ (100 runs)",
        "Convergence error against noise level",
        "ppac_convergence.png",
    )

    e = rec["leakage_example"]
    fig, ax = plt.subplots(figsize=(6, 4))
    s = [r["sigma_N"] for r in e["rows"]]
    ax.semilogx(s, [r["nats"] for r in e["rows"]], "o-", label="$\\pi_4^{(1)}(\\infty)$")
    ax.axhline(e["noise_limit"], color="k", lw=0.8, label="large-noise limit")
    ax.axhline(
        e["average_and_own_value"],
        color="gray",
        ls="--",
        lw=0.8,
        label="$\\frac{1}{2}\\log(1 + 1/(n-2))$: u* and own value",
    )
    _finish(
        fig,
        ax,
        "$\\sigma_N$",
        "leakage (nats)",
        "Leakage saturates (6-node example, $\\sigma_0 = 10$)",
        "ppac_leakage_example.png",
    )

    cy = rec["leakage_cycles"]
    fig, ax = plt.subplots(figsize=(6, 4))
    for cyc in cy["cycles"]:
        (line,) = ax.semilogx(
            [r["sigma_N"] for r in cyc["rows"]],
            [r["nats"] for r in cyc["rows"]],
            "o-",
            label=f"$C_{{{cyc['n']}}}$",
        )
        ax.axhline(cyc["noise_limit"], color=line.get_color(), lw=0.6, ls=":")
    _finish(
        fig,
        ax,
        "$\\sigma_N$",
        "$\\pi_1^{(2)}(\\infty)$ (nats)",
        "Leakage to a neighbour on cycles (dotted: large-noise limits)",
        "ppac_leakage_cycles.png",
    )


def main() -> None:
    start = time.perf_counter()
    graph, designated = example_graph()
    layout = ppac_layout(graph, designated)
    W = laplacian_consensus_matrix(graph)
    rec = {
        "graph": {
            "edges": [list(e) for e in EXAMPLE_EDGES],
            "designated": [2, 4, 4, 3, 4, 1],
            "assumption": "Hamiltonian cycle 1-2-4-3-5-6-1 plus the forced chord 4-5",
        },
        "trajectories": trajectories(graph, layout, W),
        "convergence": convergence(graph, layout, W),
        "leakage_example": leakage_example(graph, layout, W),
        "leakage_cycles": leakage_cycles(),
    }
    FIGURES.mkdir(parents=True, exist_ok=True)
    for key in ("trajectories", "convergence", "leakage_example", "leakage_cycles"):
        (FIGURES / f"ppac_{key}.json").write_text(
            json.dumps({"graph": rec["graph"], key: rec[key]}, indent=1)
        )
    plot_all(rec)
    e = rec["leakage_example"]
    print(
        f"6-node example: pi_4^(1)(inf) from {e['rows'][0]['nats']:.6f} (sigma_N = 15) to "
        f"{e['rows'][-1]['nats']:.6f} nats; large-noise limit {e['noise_limit']:.6f}"
    )
    for cyc in rec["leakage_cycles"]["cycles"]:
        print(
            f"C_{cyc['n']}: pi_1^(2)(inf) = {cyc['rows'][0]['nats']:.6f} .. "
            f"{cyc['rows'][-1]['nats']:.6f} nats (limit {cyc['noise_limit']:.6f}); lazy W "
            f"max diff {max(abs(r['nats'] - r['nats_lazy']) for r in cyc['rows']):.1e}"
        )
    print(f"done in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
