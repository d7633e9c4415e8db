"""MAFALDA-SGD privacy-utility figures (Bellet et al., Figs. 3-5; issue 15, scope 5).

    PYTHONPATH=. python docs/scripts/mafalda_figures.py [--seeds 20] [--graphs ...] [--out DIR]
                                                        [--data synthetic|california]

For each graph: ``W`` with MFDL's ``1/(d+1)`` weights (``row-normalised-self-loops``), Lemma
10's H (exact), the MAFALDA correlation (``sparsedp.mf.optimise``), the baselines DP-D-SGD,
AntiPGD and D-MF, all scored and calibrated with the package's LDP accounting; then MF-D-SGD
runs (``sparsedp.learning``) of a one-hidden-layer MLP (width 64, ReLU, squared error) with
T = 380 steps, cyclic (20, 19) participation, per-example clipping 1, step size 0.05, at six
privacy levels ``mu in {0.25, 0.5, 1, 2, 4, 8}`` (reported as epsilon at delta = 1e-6), plus
non-private D-SGD (same clipping, no noise), each over ``--seeds`` seeds (the seed sets the
data split, the initialisation and the noise).

Stand-ins (documented in docs/mafalda.md): the Facebook Ego (148 nodes) and PeerTube (271
nodes) graphs are not bundled: ``synthetic_social_graph(148, seed=0)`` and
``synthetic_social_graph(271, seed=0)`` (Holme-Kim power-law cluster graphs) replace them;
California Housing needs scikit-learn, which is not installed here: the synthetic housing
stand-in of ``sparsedp.learning.data`` (8 features, 20 640 points) replaces it.

Writes ``mafalda_results.json`` (every curve mean and standard deviation, final losses, the
objective table, the claims check) and ``mafalda_fig3.png``, ``mafalda_fig4.png``,
``mafalda_fig5.png`` into ``--out`` (default docs/figures).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import networkx as nx  # noqa: E402
import numpy as np  # noqa: E402
from tqdm import tqdm  # noqa: E402

import sparsedp  # noqa: E402
from sparsedp.learning import (  # noqa: E402
    RunSpec,
    load_dataset,
    mlp,
    simulate_runs,
    split_uniform,
)
from sparsedp.mf import cyclic  # noqa: E402
from sparsedp.mf.optimise import evaluate, optimise_correlation, prefix_gram  # noqa: E402
from sparsedp.mf.utility import utility_gram  # noqa: E402
from sparsedp.privacy import gdp_epsilon  # noqa: E402

T, K, B = 380, 20, 19
MUS = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0]
DELTA = 1e-6
LR, CLIP = 0.05, 1.0
LAST = 50           # "final test loss": mean over the evaluations in the last 50 steps
EVAL_EVERY = 10
TEST_POINTS = 1000
ALGS = ["dp-d-sgd", "antipgd", "d-mf", "mafalda"]
GRAPHS = {
    "florentine": lambda: nx.florentine_families_graph(),
    "ego148-standin": lambda: sparsedp.synthetic_social_graph(148, seed=0),
    "peertube271-standin": lambda: sparsedp.synthetic_social_graph(271, seed=0),
}


def correlations(W, dmf_C):
    H = utility_gram(W, T, progress=False)
    scheme = cyclic(K, B)
    fm = optimise_correlation(H.H, scheme, progress=False)
    table = {
        "dp-d-sgd": evaluate("dp-d-sgd", np.eye(T), H.H, scheme),
        "antipgd": evaluate("antipgd", np.tril(np.ones((T, T))), H.H, scheme),
        "d-mf": evaluate("d-mf", dmf_C, H.H, scheme),
        "mafalda": fm,
    }
    return H, table


def run_graph(name, seeds, dmf_C, bar, data_name="synthetic"):
    t0 = time.perf_counter()
    G = GRAPHS[name]()
    W = sparsedp.gossip_matrix(G, scheme="row-normalised-self-loops")
    n = W.shape[0]
    H, table = correlations(W, dmf_C)
    Xtr, ytr, Xte, yte, task = load_dataset(data_name)
    keys = ["non-private"] + [f"{a}@{mu}" for a in ALGS for mu in MUS]
    runs = [RunSpec()] + [RunSpec(noise=None if a == "dp-d-sgd" else table[a].noise, mu=mu)
                          for a in ALGS for mu in MUS]
    curves = {key: [] for key in keys}
    steps = None
    for seed in range(seeds):
        data = split_uniform(Xtr, ytr, Xte[:TEST_POINTS], yte[:TEST_POINTS], n, task=task,
                             seed=seed)
        # all 25 runs of a seed advance together (one gradient pass, one W product a step)
        results = simulate_runs(W, data, mlp(64), T, runs, participation=(K, B), lr=LR,
                                clip=CLIP, seed=seed, eval_every=EVAL_EVERY, progress=False)
        for key, r in zip(keys, results, strict=True):
            curves[key].append(np.minimum(r.test_loss, 1e6))
        steps = results[0].steps
        bar.update(len(runs))
    last = steps > T - LAST
    out = {"n": n, "H_kind": H.kind, "seconds": round(time.perf_counter() - t0, 1),
           "objective": {a: table[a].to_dict() for a in ALGS}, "steps": steps.tolist(),
           "curves": {}}
    for key, cs in curves.items():
        cs = np.array(cs)
        out["curves"][key] = {"mean": cs.mean(0).tolist(), "std": cs.std(0).tolist(),
                              "final_mean": float(cs[:, last].mean()),
                              "final_std": float(cs[:, last].mean(1).std())}
    return out


def eps_at(loss, eps, target):
    """Epsilon at which a final-loss curve (decreasing in epsilon) reaches ``target``:
    log-linear interpolation between grid points; a string when the grid does not bracket it."""
    if loss[0] <= target:
        return f"<= {eps[0]:.3g} (reached at every level)"
    for i in range(len(eps) - 1):
        if loss[i] >= target >= loss[i + 1]:
            w = (loss[i] - target) / (loss[i] - loss[i + 1])
            return float(np.exp((1 - w) * np.log(eps[i]) + w * np.log(eps[i + 1])))
    return f"> {eps[-1]:.3g} (never reached)"


def claims(res):
    """The paper's two claims, checked on our numbers: the mean relative improvement of the
    final test loss over the privacy levels, and the epsilon needed to reach a test loss (the
    paper's 0.75, and the loss DP-D-SGD reaches at mu = 1, on our loss scale)."""
    eps = np.array([gdp_epsilon(mu, DELTA) for mu in MUS])
    out = {}
    for g, r in res.items():
        f = {a: np.array([r["curves"][f"{a}@{mu}"]["final_mean"] for mu in MUS]) for a in ALGS}
        best_base = np.min([f[a] for a in ALGS if a != "mafalda"], axis=0)
        impr = {a: float(np.mean(1 - f["mafalda"] / f[a])) for a in ALGS if a != "mafalda"}
        impr["best-baseline"] = float(np.mean(1 - f["mafalda"] / best_base))
        ref = float(f["dp-d-sgd"][MUS.index(1.0)])
        out[g] = {"mean_relative_improvement": impr,
                  "epsilon_at_loss_0.75": {a: eps_at(f[a], eps, 0.75) for a in ALGS},
                  "dp-d-sgd_loss_at_mu_1": ref,
                  "epsilon_at_that_loss": {a: eps_at(f[a], eps, ref) for a in ALGS}}
    return out


def plots(res, out_dir):
    eps = [gdp_epsilon(mu, DELTA) for mu in MUS]
    colors = {"non-private": "k", "dp-d-sgd": "C0", "antipgd": "C1", "d-mf": "C2",
              "mafalda": "C3"}

    def curve(ax, r, key, label, color):
        c = r["curves"][key]
        m, s = np.array(c["mean"]), np.array(c["std"])
        ax.plot(r["steps"], m, color=color, label=label)
        ax.fill_between(r["steps"], m - s, m + s, color=color, alpha=0.15)

    def tradeoff(ax, r, title):
        for a in ALGS:
            ax.plot(eps, [r["curves"][f"{a}@{mu}"]["final_mean"] for mu in MUS], "o-",
                    color=colors[a], label=a)
        ax.axhline(r["curves"]["non-private"]["final_mean"], color="k", ls="--",
                   label="non-private")
        ax.set(xscale="log", yscale="log", xlabel="epsilon (delta = 1e-6)",
               ylabel=f"test loss (last {LAST} steps)", title=title)

    if "ego148-standin" in res:
        r = res["ego148-standin"]
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        curve(axes[0], r, "non-private", "non-private", "k")
        for a in ALGS:
            curve(axes[0], r, f"{a}@1.0", a, colors[a])
        axes[0].set(yscale="log", xlabel="step", ylabel="test loss",
                    title="ego148 stand-in, mu = 1")
        axes[0].legend()
        tradeoff(axes[1], r, "ego148 stand-in")
        fig.tight_layout()
        fig.savefig(out_dir / "mafalda_fig3.png", dpi=120)
        plt.close(fig)
    fig, axes = plt.subplots(1, len(res), figsize=(5 * len(res), 4), squeeze=False)
    for ax, (g, r) in zip(axes[0], res.items(), strict=True):
        tradeoff(ax, r, g)
    axes[0][0].legend()
    fig.tight_layout()
    fig.savefig(out_dir / "mafalda_fig4.png", dpi=120)
    plt.close(fig)
    pairs = [(g, mu) for g, mu in (("ego148-standin", 0.5), ("peertube271-standin", 1.0))
             if g in res]
    if pairs:
        fig, axes = plt.subplots(1, len(pairs), figsize=(5.5 * len(pairs), 4), squeeze=False)
        for ax, (g, mu) in zip(axes[0], pairs, strict=True):
            r = res[g]
            curve(ax, r, "non-private", "non-private", "k")
            for a in ALGS:
                curve(ax, r, f"{a}@{mu}", a, colors[a])
            ax.set(yscale="log", xlabel="step", ylabel="test loss", title=f"{g}, mu = {mu}")
        axes[0][0].legend()
        fig.tight_layout()
        fig.savefig(out_dir / "mafalda_fig5.png", dpi=120)
        plt.close(fig)


def markdown(record) -> str:
    """The tables of docs/mafalda.md from a results record."""
    st = record["setup"]
    lines = ["| graph | algorithm | " + " | ".join(
        f"mu {mu:g} (eps {e:.3g})" for mu, e in zip(st["mus"], st["epsilons"], strict=True))
        + " |", "| --- | --- |" + " --- |" * len(st["mus"])]
    for g, r in record["graphs"].items():
        lines.append(f"| {g} (n = {r['n']}) | non-private | "
                     f"{r['curves']['non-private']['final_mean']:.4g} (all levels) |"
                     + " |" * (len(st["mus"]) - 1))
        for a in ALGS:
            cells = [f"{r['curves'][f'{a}@{mu}']['final_mean']:.4g} "
                     f"+- {r['curves'][f'{a}@{mu}']['final_std']:.2g}" for mu in st["mus"]]
            lines.append(f"| | {a} | " + " | ".join(cells) + " |")
    lines += ["", "| graph | MAFALDA vs DP-D-SGD | vs AntiPGD | vs D-MF | vs best baseline "
              "| eps at loss 0.75: DP-D-SGD / D-MF / MAFALDA | eps at DP-D-SGD's mu = 1 loss: "
              "DP-D-SGD / D-MF / MAFALDA |", "| --- | --- | --- | --- | --- | --- | --- |"]

    def e(x):
        return x if isinstance(x, str) else f"{x:.3g}"

    for g, c in record["claims"].items():
        i = c["mean_relative_improvement"]
        a, b = c["epsilon_at_loss_0.75"], c["epsilon_at_that_loss"]
        lines.append(f"| {g} | {i['dp-d-sgd']:.1%} | {i['antipgd']:.1%} | {i['d-mf']:.1%} | "
                     f"{i['best-baseline']:.1%} | {e(a['dp-d-sgd'])} / {e(a['d-mf'])} / "
                     f"{e(a['mafalda'])} | {e(b['dp-d-sgd'])} / {e(b['d-mf'])} / "
                     f"{e(b['mafalda'])} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--graphs", default=",".join(GRAPHS))
    ap.add_argument("--out", default="docs/figures")
    ap.add_argument("--data", default="synthetic", help="data set (sparsedp.learning."
                    "load_dataset): 'california' with a cached California Housing file")
    ap.add_argument("--tables", metavar="JSON", help="only print the markdown tables of an "
                    "existing mafalda_results.json")
    args = ap.parse_args()
    if args.tables:
        print(markdown(json.loads(Path(args.tables).read_text())))
        return
    graphs = args.graphs.split(",")
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    dmf = optimise_correlation(prefix_gram(T), cyclic(K, B), progress=False)
    res = {}
    with tqdm(total=len(graphs) * args.seeds * (1 + len(ALGS) * len(MUS)), unit="run",
              desc="MAFALDA runs") as bar:
        for g in graphs:
            res[g] = run_graph(g, args.seeds, dmf.C, bar, args.data)
    record = {"setup": {"T": T, "k": K, "b": B, "mus": MUS,
                        "epsilons": [gdp_epsilon(mu, DELTA) for mu in MUS], "delta": DELTA,
                        "lr": LR, "clip": CLIP, "seeds": args.seeds, "model": "mlp(64)",
                        "data": args.data, "weights": "1/(d+1)",
                        "test_points": TEST_POINTS, "seconds": None},
              "graphs": res, "claims": claims(res)}
    record["setup"]["seconds"] = round(time.perf_counter() - t0, 1)
    (out_dir / "mafalda_results.json").write_text(json.dumps(record, indent=1))
    plots(res, out_dir)
    print(json.dumps(record["claims"], indent=1))
    for g, r in res.items():
        print(g, {a: round(v["objective"], 1) for a, v in r["objective"].items()})


if __name__ == "__main__":
    main()
