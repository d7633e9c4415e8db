"""Privacy loss against shortest-path distance: random walk versus Muffliato gossip.

The comparison of Fig. 1 of the random-walk paper, on one graph and one source node u.
Both bounds are linear in ``alpha / sigma^2``, so every loss is reported in units of the
local-DP loss ``alpha / (2 sigma^2)`` of one release (the paper's "local-DP loss 1"); the
random-walk theorem additionally needs ``sigma^2 >= 2 alpha (alpha - 1)``, so it is evaluated
at that smallest admissible sigma (the ratio does not depend on sigma).

* random walk: one contribution per node (a cap, Remark 5) and a walk of ``walk_steps``
  steps (default ``ceil(n ln n)``, the order of the cover time of a well-mixing graph), the
  exact finite-T series, clipped at local DP; also the sender-known variant;
* gossip: Muffliato with Chebyshev acceleration (the paper's baseline) and plain gossip, each
  with the number of rounds of the published stopping rule
  (:func:`sparsedp.randomwalk.muffliato.muffliato_rounds` at ``sigma^2 = alpha / 2``, i.e. local-DP
  loss 1), exact row norms, clipped at local DP.

For every shortest-path distance d >= 1 from u: the number of nodes and the min / mean / max
of each loss (:func:`sparsedp.randomwalk.pairwise.loss_by_distance`).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
from scipy.sparse.csgraph import shortest_path

from sparsedp import validation
from sparsedp.graphs.graph import as_graph
from sparsedp.graphs.weights import gossip_matrix
from sparsedp.linalg.spectral import spectral_info
from sparsedp.randomwalk.accounting import random_walk_rdp
from sparsedp.randomwalk.muffliato import muffliato_rdp, muffliato_rounds
from sparsedp.randomwalk.pairwise import loss_by_distance, renyi_order

__all__ = ["compare_by_distance"]


def compare_by_distance(graph: Any, source: Any = None, alpha: float = 2.0,
                        walk_steps: int | None = None, scheme: str = "metropolis",
                        plain_gossip: bool = True) -> dict:
    """JSON-ready comparison record for one graph (see the module docstring).

    ``source`` is a node label (default: the first node, ``0`` for graphs on ``0..n-1``); the
    record names it by its label.
    """
    start = time.perf_counter()
    g = as_graph(graph)
    W = gossip_matrix(g, scheme=scheme)
    n = g.n
    u = 0 if source is None else g.index_of(source, "source")
    alpha = renyi_order(alpha)
    dist = shortest_path(g.adjacency, unweighted=True, indices=u).astype(np.int64)
    gap = 1.0 - spectral_info(W).lambda_2
    T_walk = (math.ceil(n * math.log(n)) if walk_steps is None
              else validation.rounds(walk_steps))
    sigma_rw = math.sqrt(2.0 * alpha * (alpha - 1.0))
    sigma_gossip = math.sqrt(alpha / 2.0)  # local-DP loss alpha / (2 sigma^2) = 1
    losses = {}
    for sender_known, name in ((False, "random_walk"), (True, "random_walk_sender_known")):
        r = random_walk_rdp(W, u, T_walk, sigma_rw, alpha, contributions=1,
                            sender_known=sender_known, method="series")
        losses[name] = (r.receivers, r.rdp / r.local_dp)
    rounds = {"random_walk": T_walk, "random_walk_sender_known": T_walk}
    variants = [(True, "gossip_chebyshev")] + ([(False, "gossip_plain")] if plain_gossip else [])
    for accelerated, name in variants:
        T = muffliato_rounds(n, gap, sigma_gossip, accelerated=accelerated)
        r = muffliato_rdp(W, u, T, sigma_gossip, alpha, accelerated=accelerated)
        losses[name] = (r.receivers, r.rdp / r.local_dp)
        rounds[name] = T
    by_distance = {name: loss_by_distance(dist[recv], vals)
                   for name, (recv, vals) in losses.items()}
    return {
        "nodes": n, "edges": g.num_edges, "scheme": scheme, "source": g.id_of(u), "alpha": alpha,
        "spectral_gap": gap, "rounds": rounds,
        "units": "loss / local-DP loss of one release (alpha / (2 sigma^2))",
        "sigma_random_walk": sigma_rw, "sigma_gossip": sigma_gossip,
        "by_distance": by_distance, "seconds": time.perf_counter() - start,
    }
