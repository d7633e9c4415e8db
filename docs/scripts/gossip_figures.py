"""Koskela & Kulkarni's gossip-averaging figures, recomputed with certified bounds.

Writes ``docs/figures/gossip_<figure>.png`` and ``.json`` (``gossip_<figure>_quick.*`` with
``--quick``):

* ``v2-fig1`` (v2 Sec. 4.1, Figure 1): Delta_T(j -> i)^2 / T against T, single observer,
  Metropolis weights, (a) Erdos-Renyi G(100, 0.15), (b) Barabasi-Albert n = 100 grown from a
  5-clique with 3 links per new node; a neighbour pair and a non-neighbour pair, with the
  Thm 13 limit 1/n.  Certified lower and upper bounds, and the exhaustive value for T <= 16.
* ``v2-fig2`` (v2 App. F, Figure 2): the spectral upper bound T lambda_max(M_T) against the
  c = 1 value and the best certified lower / upper bounds, same instances; per T the ratio
  spectral / lower and the status of the paper's claim "the upper bound is less than 10
  percent higher than the tight value" (verified when spectral <= 1.1 lower, refuted when
  spectral > 1.1 upper, undecided otherwise).
* ``v1-fig1`` (v1 Sec. 4, Figure 1 left): ER G(100, 0.2), max-degree weights, the v1
  secure-summation view (the observer sees e_i^T theta_t) with the observer's own noise
  removed (v1 Sec. 3.5).  Needs ``squared_sensitivity(..., view="secure-summation-v1",
  noise_removed=True)``; skipped with a message when the engine lacks that view.

Every JSON also carries, per figure instance, the certified gap ``upper - lower`` (absolute
and relative) at T = 100, 200, ..., 1000 (the T <= 60 grid points with ``--quick``).

    python docs/scripts/gossip_figures.py [--quick] [--figure all] [--seed 1] [--out DIR]
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
FIGURE_NAMES = ("v2-fig1", "v2-fig2", "v1-fig1")
CLAIM_FACTOR = 1.1  # v2 App. F: "less than 10 percent higher than the actual tight upper bound"
V1_VIEW = {"view": "secure-summation-v1", "noise_removed": True}
PAIRS = ("neighbour", "non-neighbour")


# ---------------------------------------------------------------- instances


def graph_instance(kind: str, seed: int) -> tuple[nx.Graph, dict]:
    """The paper's random graph of the given kind, drawn with ``seed`` (redrawn with seed + 1,
    ... until connected; the seed used is recorded)."""
    for s in range(seed, seed + 100):
        if kind == "er-0.15":
            G = nx.erdos_renyi_graph(100, 0.15, seed=s)
            spec = f"networkx.erdos_renyi_graph(100, 0.15, seed={s})"
        elif kind == "ba":
            G = nx.barabasi_albert_graph(100, 3, seed=s, initial_graph=nx.complete_graph(5))
            spec = (f"networkx.barabasi_albert_graph(100, 3, seed={s}, "
                    "initial_graph=networkx.complete_graph(5))")
        elif kind == "er-0.2":
            G = nx.erdos_renyi_graph(100, 0.2, seed=s)
            spec = f"networkx.erdos_renyi_graph(100, 0.2, seed={s})"
        else:
            raise ValueError(kind)
        if nx.is_connected(G):
            degrees = [d for _, d in G.degree()]
            return G, {"graph": spec, "graph_seed": s, "n": G.number_of_nodes(),
                       "edges": G.number_of_edges(), "min_degree": min(degrees),
                       "max_degree": max(degrees)}
    raise RuntimeError(f"no connected {kind} graph for seeds {seed}..{seed + 99}")


def choose_pairs(G: nx.Graph, seed: int) -> dict:
    """Observer i drawn at random, then a random neighbour j and a random non-neighbour j
    (j != i), as in the papers ("random nodes i and j"); reproducible from ``seed``."""
    rng = np.random.default_rng(seed)
    n = G.number_of_nodes()
    i = int(rng.integers(n))
    neighbours = sorted(G.neighbors(i))
    others = sorted(set(range(n)) - set(neighbours) - {i})
    far = int(rng.choice(others))
    return {"observer": i, "neighbour": int(rng.choice(neighbours)), "non-neighbour": far,
            "distance_non_neighbour": nx.shortest_path_length(G, i, far)}


def rounds_grid(quick: bool) -> list[int]:
    if quick:
        return [1, 2, 4, 8, 16, 30, 60]
    grid = {int(t) for t in np.geomspace(1, 1000, 36).round()}
    return sorted(grid | set(gap_rounds(quick)))


def gap_rounds(quick: bool) -> list[int]:
    return [30, 60] if quick else list(range(100, 1001, 100))


# ---------------------------------------------------------------- computation


def evaluate(W, target: int, observer: int, T: int, view: dict) -> dict:
    """One call of the engine, flattened into a JSON row (all bounds by name)."""
    start = time.perf_counter()
    r = sparsedp.squared_sensitivity(W, target, [observer], T, **view)
    return {"T": T, "lower": float(r.lower), "upper": float(r.upper),
            "exact": None if r.exact is None else float(r.exact),
            "exact_error": None if r.exact_error is None else float(r.exact_error),
            "bounds": {b.name: float(b.value) for b in r.bounds},
            "method": r.method, "seconds": time.perf_counter() - start}


def sweep(W, target: int, observer: int, rounds: list[int], view: dict) -> list[dict]:
    return [evaluate(W, target, observer, T, view) for T in rounds]


def instance(kind: str, scheme: str, seed: int, rounds: list[int], view: dict) -> dict:
    G, record = graph_instance(kind, seed)
    W = sparsedp.gossip_matrix(G, scheme=scheme)
    pairs = choose_pairs(G, seed)
    record.update(scheme=scheme, view=view or {"view": "v2 (S W^(t-k))"},
                  one_over_n=1 / G.number_of_nodes(), **pairs)
    record["curves"] = {}
    for pair in PAIRS:
        start = time.perf_counter()
        rows = sweep(W, pairs[pair], pairs["observer"], rounds, view)
        record["curves"][pair] = {"target": pairs[pair], "rows": rows}
        print(f"  {kind} {pair:13s} i={pairs['observer']} j={pairs[pair]}: "
              f"{len(rows)} values of T in {time.perf_counter() - start:.1f} s", flush=True)
    record["_W"] = W  # dropped before writing
    return record


def gap_table(record: dict, rounds: list[int]) -> list[dict]:
    """Per pair and T: the certified gap upper - lower, absolute and relative to upper."""
    out = []
    for pair in PAIRS:
        by_T = {row["T"]: row for row in record["curves"][pair]["rows"]}
        for T in rounds:
            row = by_T[T]
            gap = row["upper"] - row["lower"]
            out.append({"pair": pair, "T": T, "lower": row["lower"], "upper": row["upper"],
                        "gap": gap, "relative_gap": gap / row["upper"] if row["upper"] else 0.0})
    return out


def claim_status(spectral: float, lower: float, upper: float) -> str:
    """The paper's claim spectral <= 1.1 * tight, judged against the certified interval."""
    if upper == 0.0:
        return "zero"  # Delta = 0 (certified): the ratio is undefined
    if spectral <= CLAIM_FACTOR * lower:
        return "verified"
    if spectral > CLAIM_FACTOR * upper:
        return "refuted"
    return "undecided"


def _status_at(W, target, observer, T, view, cache) -> str:
    if T not in cache:
        cache[T] = evaluate(W, target, observer, T, view)
    row = cache[T]
    return claim_status(row["bounds"]["spectral"], row["lower"], row["upper"])


def claim_summary(record: dict, view: dict) -> dict:
    """Per pair: the status of the 10 % claim at every evaluated T, transitions between
    consecutive grid points located by bisection on integer T, and the longest run of
    evaluated T on which the claim is verified."""
    W = record["_W"]
    out = {}
    for pair in PAIRS:
        rows = record["curves"][pair]["rows"]
        cache = {row["T"]: row for row in rows}
        target, observer = record["curves"][pair]["target"], record["observer"]
        grid = [row["T"] for row in rows]
        for a, b in zip(grid, grid[1:], strict=False):
            sa = _status_at(W, target, observer, a, view, cache)
            sb = _status_at(W, target, observer, b, view, cache)
            while sa != sb and b - a > 1:  # one transition assumed between a and b
                mid = (a + b) // 2
                if _status_at(W, target, observer, mid, view, cache) == sa:
                    a = mid
                else:
                    b = mid
        evaluated = sorted(cache)
        statuses = [_status_at(W, target, observer, T, view, cache) for T in evaluated]
        runs, start = [], None
        for k, s in enumerate(statuses + ["end"]):
            if s == "verified" and start is None:
                start = k
            elif s != "verified" and start is not None:
                runs.append((evaluated[start], evaluated[k - 1], k - start))
                start = None
        longest = max(runs, key=lambda r: r[1] - r[0], default=None)
        ratio = [{"T": T, "spectral": cache[T]["bounds"]["spectral"],
                  "ones": cache[T]["bounds"]["ones"], "lower": cache[T]["lower"],
                  "upper": cache[T]["upper"],
                  "spectral_over_lower": (cache[T]["bounds"]["spectral"] / cache[T]["lower"]
                                          if cache[T]["lower"] > 0 else None),
                  "status": s} for T, s in zip(evaluated, statuses, strict=True)]
        out[pair] = {
            "rows": ratio,
            "verified_T": [T for T, s in zip(evaluated, statuses, strict=True) if s == "verified"],
            "refuted_T": [T for T, s in zip(evaluated, statuses, strict=True) if s == "refuted"],
            "undecided_T": [T for T, s in zip(evaluated, statuses, strict=True)
                            if s == "undecided"],
            "zero_T": [T for T, s in zip(evaluated, statuses, strict=True) if s == "zero"],
            "longest_verified_run": None if longest is None else
            {"from_T": longest[0], "to_T": longest[1], "evaluated_points": longest[2]},
        }
    return out


# ---------------------------------------------------------------- figures


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _log_T_axis(ax) -> None:
    from matplotlib.ticker import NullFormatter

    ax.set_xscale("log")
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("T (rounds)")


STYLE = {"neighbour": ("C0", "-"), "non-neighbour": ("C1", "--")}


def _plot_scaled(ax, record: dict, title: str, limit_label: str) -> None:
    for pair in PAIRS:
        color, ls = STYLE[pair]
        rows = record["curves"][pair]["rows"]
        T = np.array([r["T"] for r in rows], dtype=float)
        lo = np.array([r["lower"] for r in rows]) / T
        up = np.array([r["upper"] for r in rows]) / T
        label = f"{pair} (i={record['observer']}, j={record['curves'][pair]['target']})"
        ax.fill_between(T, lo, up, color=color, alpha=0.3, lw=0)
        ax.plot(T, up, ls, color=color, lw=1.4, label=f"{label}: certified upper")
        ax.plot(T, lo, ls, color=color, lw=0.8, alpha=0.7, label=f"{pair}: lower")
        ex = [(r["T"], r["exact"] / r["T"]) for r in rows if r["exact"] is not None]
        if ex:
            ax.plot(*zip(*ex, strict=True), "o", color=color, ms=3.5, mfc="none",
                    label=f"{pair}: exact (T <= 16)")
    ax.axhline(record["one_over_n"], color="k", lw=0.8, label=limit_label)
    _log_T_axis(ax)
    ax.set_ylabel(r"$\Delta_T(j \to i)^2 / T$")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7)


def plot_fig1(record: dict, path: pathlib.Path, titles: list[str], suptitle: str,
              limit_label: str) -> None:
    plt = _plt()
    instances = record["instances"]
    fig, axes = plt.subplots(1, len(instances), figsize=(6 * len(instances), 4.4), squeeze=False)
    for ax, inst, title in zip(axes[0], instances, titles, strict=True):
        _plot_scaled(ax, inst, title, limit_label)
    fig.suptitle(suptitle, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_fig2(record: dict, path: pathlib.Path, titles: list[str]) -> None:
    plt = _plt()
    instances = record["instances"]
    fig, axes = plt.subplots(2, len(instances), figsize=(6 * len(instances), 8), squeeze=False,
                             sharex=True)
    for col, (inst, title) in enumerate(zip(instances, titles, strict=True)):
        top, bottom = axes[0, col], axes[1, col]
        for pair in PAIRS:
            color, ls = STYLE[pair]
            rows = [r for r in inst["claim"][pair]["rows"] if r["lower"] > 0]
            T = np.array([r["T"] for r in rows], dtype=float)
            for key, lw, alpha, marker, label in (
                    ("spectral", 1.6, 1.0, "", "T lambda_max(M_T) (spectral)"),
                    ("ones", 0.8, 1.0, ".", "c = 1"),
                    ("lower", 0.8, 0.6, "", "best lower"),
                    ("upper", 0.8, 0.6, "", "best certified upper")):
                ax_style = ls if key != "ones" else ":"
                top.plot(T, np.array([r[key] for r in rows]) / T, ax_style, marker=marker,
                         ms=2.5, color=color, lw=lw, alpha=alpha, label=f"{pair}: {label}")
            bottom.plot(T, [r["spectral"] / r["lower"] for r in rows], ls, color=color,
                        label=f"{pair}: spectral / lower")
            bottom.plot(T, [r["spectral"] / r["upper"] for r in rows], ls, color=color,
                        lw=0.6, alpha=0.6, label=f"{pair}: spectral / upper")
        top.axhline(inst["one_over_n"], color="k", lw=0.8, label="1/n")
        top.set_ylabel(r"bound on $\Delta_T(j \to i)^2 / T$")
        top.set_title(title, fontsize=10)
        top.legend(fontsize=6.5)
        bottom.axhline(CLAIM_FACTOR, color="r", lw=0.8, label="1.1 (the paper's claim)")
        _log_T_axis(bottom)
        bottom.set_ylabel("spectral bound / certified bound")
        bottom.legend(fontsize=7)
    fig.suptitle("v2 App. F Fig. 2: spectral upper bound vs c = 1 and certified bounds",
                 fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ---------------------------------------------------------------- driver


V2_TITLES = ["(a) Erdos-Renyi G(100, 0.15), Metropolis",
             "(b) Barabasi-Albert n = 100 (5-clique core, 3 links), Metropolis"]


def _public(record: dict) -> dict:
    return {k: v for k, v in record.items() if not k.startswith("_")}


def _write(record: dict, out: pathlib.Path, stem: str) -> pathlib.Path:
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{stem}.json"
    path.write_text(json.dumps(record, indent=1))
    return path


def v2_instances(quick: bool, seed: int, cache: dict) -> list[dict]:
    if "v2" not in cache:
        rounds = rounds_grid(quick)
        cache["v2"] = [instance(kind, "metropolis", seed, rounds, {})
                       for kind in ("er-0.15", "ba")]
        for inst in cache["v2"]:
            inst["gap_table"] = gap_table(inst, gap_rounds(quick))
    return cache["v2"]


def figure_v2_fig1(quick: bool, seed: int, out: pathlib.Path, cache: dict) -> dict:
    stem = "gossip_v2_fig1" + ("_quick" if quick else "")
    instances = []
    for inst in v2_instances(quick, seed, cache):
        inst = _public(inst)
        inst["curves"] = {pair: {"target": c["target"],
                                 "rows": [{k: r[k] for k in ("T", "lower", "upper", "exact",
                                                              "exact_error", "method",
                                                              "seconds")}
                                          for r in c["rows"]]}
                          for pair, c in inst["curves"].items()}
        instances.append(inst)
    record = {"figure": "Koskela & Kulkarni v2, Sec. 4.1, Figure 1", "quick": quick,
              "seed": seed, "instances": instances}
    _write(record, out, stem)
    plot_fig1(record, out / f"{stem}.png", V2_TITLES,
              "v2 Fig. 1: single observer, certified bounds on Delta^2 / T (band)",
              "1/n (Thm 13)")
    return record


def figure_v2_fig2(quick: bool, seed: int, out: pathlib.Path, cache: dict) -> dict:
    stem = "gossip_v2_fig2" + ("_quick" if quick else "")
    instances = []
    for inst in v2_instances(quick, seed, cache):
        claim = claim_summary(inst, {})
        pub = {k: v for k, v in _public(inst).items() if k != "curves"}
        pub["targets"] = {pair: inst["curves"][pair]["target"] for pair in PAIRS}
        pub["claim"] = claim
        instances.append(pub)
    record = {"figure": "Koskela & Kulkarni v2, App. F, Figure 2", "quick": quick,
              "seed": seed, "claim_factor": CLAIM_FACTOR,
              "claim_rule": "verified: spectral <= 1.1 lower; refuted: spectral > 1.1 upper; "
                            "undecided otherwise; zero: certified Delta = 0",
              "instances": instances}
    _write(record, out, stem)
    plot_fig2(record, out / f"{stem}.png", V2_TITLES)
    return record


def figure_v1_fig1(quick: bool, seed: int, out: pathlib.Path, cache: dict) -> dict | None:
    stem = "gossip_v1_fig1" + ("_quick" if quick else "")
    G, _ = graph_instance("er-0.2", seed)
    W = sparsedp.gossip_matrix(G, scheme="max-degree")
    try:
        sparsedp.squared_sensitivity(W, 1, [0], 2, **V1_VIEW)
    except (TypeError, sparsedp.ParameterError) as err:
        print(f"  v1-fig1 skipped: it needs squared_sensitivity(..., view="
              f"'secure-summation-v1', noise_removed=True), which this engine lacks ({err})")
        return None
    inst = instance("er-0.2", "max-degree", seed, rounds_grid(quick), V1_VIEW)
    inst["gap_table"] = gap_table(inst, gap_rounds(quick))
    record = {"figure": "Koskela & Kulkarni v1, Sec. 4, Figure 1 (left)", "quick": quick,
              "seed": seed, "instances": [_public(inst)]}
    _write(record, out, stem)
    plot_fig1(record, out / f"{stem}.png",
              ["Erdos-Renyi G(100, 0.2), max-degree weights"],
              "v1 Fig. 1 left: secure summation (e_i^T theta_t), observer's noise removed",
              "1/n (central aggregation, the v1 claim)")
    return record


FIGURES_BY_NAME = {"v2-fig1": figure_v2_fig1, "v2-fig2": figure_v2_fig2,
                   "v1-fig1": figure_v1_fig1}


def run(figures=FIGURE_NAMES, quick: bool = False, seed: int = 1,
        out: pathlib.Path = FIGURES) -> dict:
    """Compute and write the named figures; returns {name: record or None (skipped)}."""
    cache: dict = {}
    records = {}
    for name in figures:
        start = time.perf_counter()
        print(f"{name}:", flush=True)
        records[name] = FIGURES_BY_NAME[name](quick, seed, pathlib.Path(out), cache)
        print(f"{name}: {time.perf_counter() - start:.1f} s", flush=True)
    return records


def summarise(records: dict) -> None:
    for name, record in records.items():
        if record is None:
            continue
        for inst in record["instances"]:
            if name == "v2-fig2":
                for pair in PAIRS:
                    c = inst["claim"][pair]
                    run_ = c["longest_verified_run"]
                    worst = max(c["refuted_T"], default=None)
                    print(f"{name} {inst['graph']} {pair}: 10 % claim verified on "
                          f"{'nothing' if run_ is None else [run_['from_T'], run_['to_T']]}, "
                          f"refuted at {len(c['refuted_T'])} T (largest {worst}), "
                          f"undecided at {len(c['undecided_T'])}")
            else:
                for pair in PAIRS:
                    last = inst["curves"][pair]["rows"][-1]
                    print(f"{name} {inst['graph']} {pair}: T={last['T']}: Delta^2/T in "
                          f"[{last['lower'] / last['T']:.7f}, {last['upper'] / last['T']:.7f}] "
                          f"(1/n = {inst['one_over_n']})")


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="T <= 60 on a few grid points (seconds; for CI)")
    parser.add_argument("--figure", choices=(*FIGURE_NAMES, "all"), default="all")
    parser.add_argument("--seed", type=int, default=1,
                        help="seed of the graphs and of the random pairs (i, j)")
    parser.add_argument("--out", type=pathlib.Path, default=FIGURES, help="output folder")
    args = parser.parse_args(argv)
    figures = FIGURE_NAMES if args.figure == "all" else (args.figure,)
    start = time.perf_counter()
    records = run(figures, quick=args.quick, seed=args.seed, out=args.out)
    summarise(records)
    print(f"total {time.perf_counter() - start:.1f} s")
    return records


if __name__ == "__main__":
    main()
