"""Certified gap and time of one single-pair query on clustered and geometric graphs, each
next to an Erdos-Renyi twin (same n and edge count), in one process (issue 35).

Graphs (largest component, Metropolis weights): a stochastic block model (``--blocks``
communities, average degree about 20, four fifths of it inside the community), a random
geometric graph (radius for average degree 20) and their ER twins (networkx ``gnm`` with the
component's n and edge count).  Two pairs per graph, observer 0 in the default view: the
target ``n // 2`` (``far``) and the lowest-numbered neighbour of the observer (``adjacent``),
where ``M_T`` has negative entries and the maximiser is a square wave.  Every query is timed
(profiled: the share in :func:`sparsedp.linalg.sign_bounds.evaluate_bounds` and, with
``--gradients vector``, the SDP bounds) as a ratio to
its twin's query and to one scipy ``W @ x`` timed just before it.  One JSON line per query
on stdout and in ``--out``.

    OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python bench/realistic_gap.py --n 10000 --T 1000
    ... --gradients vector     # d-dimensional gradients clipped in norm: the SDP value
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import time

import networkx as nx
import numpy as np
from blas_pinning import add_blas_option, pinned_blas
from outputs import add_output_options, output_path
from timing import matvec_seconds

import sparsedp


def largest_component(graph: nx.Graph) -> nx.Graph:
    nodes = max(nx.connected_components(graph), key=len)
    return nx.convert_node_labels_to_integers(graph.subgraph(nodes).copy())


def stochastic_block_model(n: int, blocks: int, degree: float, seed: int) -> nx.Graph:
    size = n // blocks
    p_in, p_out = 0.8 * degree / (size - 1), 0.2 * degree / (n - size)
    probabilities = [[p_in if a == b else p_out for b in range(blocks)] for a in range(blocks)]
    return largest_component(nx.stochastic_block_model([size] * blocks, probabilities,
                                                       seed=seed))


def random_geometric(n: int, degree: float, seed: int) -> nx.Graph:
    return largest_component(nx.random_geometric_graph(n, np.sqrt(degree / (np.pi * n)),
                                                       seed=seed))


def twin(graph: nx.Graph, seed: int) -> nx.Graph:
    return largest_component(nx.gnm_random_graph(graph.number_of_nodes(),
                                                 graph.number_of_edges(), seed=seed))


def query(W, graph: nx.Graph, pair: str, T: int, gradients: str) -> dict:
    """One profiled query; its interval, time and the share of the sign bounds."""
    target = W.shape[0] // 2 if pair == "far" else min(graph.neighbors(0))
    calibration = matvec_seconds(W, np.random.default_rng(0).random(W.shape[0]))
    profile = cProfile.Profile()
    start = time.perf_counter()
    profile.enable()
    result = sparsedp.squared_sensitivity(W, target, [0], T, exact=False, progress=False,
                                          gradients=gradients)
    profile.disable()
    seconds = time.perf_counter() - start
    bounds_seconds = sum(v[3] for k, v in pstats.Stats(profile).stats.items()
                         if k[2] in ("evaluate_bounds", "for_vector_gradients"))
    return {"pair": pair, "target": int(target), "lower": result.lower, "upper": result.upper,
            "relative_gap": result.relative_gap, "seconds": seconds,
            "per_matvec": seconds / calibration, "bounds_seconds": bounds_seconds,
            "sparse_products": result.solver.get("sparse_products"),
            "best_lower": max((b for b in result.bounds if b.kind != "certified upper"),
                              key=lambda b: b.value).name,
            "best_upper": min((b for b in result.bounds if b.kind == "certified upper"),
                              key=lambda b: b.value).name}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10**4)
    parser.add_argument("--T", type=int, default=1000)
    parser.add_argument("--blocks", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--gradients", choices=("scalar", "vector"), default="scalar",
                        help="the target's per-round contribution: a value in [-1, 1] (the "
                             "sign problem) or a vector clipped in norm (the SDP)")
    parser.add_argument("--models", default="sbm,rgg", help="comma-separated: sbm, rgg")
    add_output_options(parser)
    add_blas_option(parser)
    args = parser.parse_args()
    path = output_path(args, "realistic_gap.jsonl")
    builders = {"sbm": lambda: stochastic_block_model(args.n, args.blocks, 20, args.seed),
                "rgg": lambda: random_geometric(args.n, 20, args.seed)}
    models = {name: builders[name]() for name in args.models.split(",")}
    warm = sparsedp.gossip_matrix(nx.cycle_graph(8))
    sparsedp.squared_sensitivity(warm, 0, [4], 30, exact=False)  # numba compiled or loaded
    with path.open("a") as out, pinned_blas(args.blas_threads):
        for name, graph in models.items():
            pair_graphs = {name: graph, f"er-twin-of-{name}": twin(graph, args.seed)}
            matrices = {key: sparsedp.gossip_matrix(g) for key, g in pair_graphs.items()}
            for pair in ("far", "adjacent"):
                rows = {key: query(matrices[key], g, pair, args.T, args.gradients)
                        for key, g in pair_graphs.items()}
                twin_seconds = rows[f"er-twin-of-{name}"]["seconds"]
                for key, row in rows.items():
                    row.update(graph=key, gradients=args.gradients, n=matrices[key].shape[0],
                               edges=pair_graphs[key].number_of_edges(), T=args.T,
                               time_over_twin=row["seconds"] / twin_seconds)
                    line = json.dumps(row)
                    print(line, flush=True)
                    out.write(line + "\n")


if __name__ == "__main__":
    main()
