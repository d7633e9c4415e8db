"""Florentine families, DP-D-SGD under PNDP (user level, T = 8, scalar gradients): exact
sensitivity and Theorem 7's bound per shortest-path distance (docs/mf.md, "Measured")."""

import networkx as nx
import numpy as np

import sparsedp
from sparsedp.mf import mf_sensitivity

G = nx.florentine_families_graph()
W = sparsedp.gossip_matrix(G, scheme="row-normalised-self-loops")
dist = dict(nx.all_pairs_shortest_path_length(nx.convert_node_labels_to_integers(G)))
rows: dict[int, list] = {}
for a in range(15):
    for u in range(15):
        if u != a:
            r = mf_sensitivity(W, u, [a], 8, gradients="scalar")
            rows.setdefault(dist[a][u], []).append((r.exact, r.thm7))
print("distance pairs  exact(min/mean/max)            thm7 max  thm7/exact max")
for k in sorted(rows):
    e = np.array([x[0] for x in rows[k]])
    t = np.array([x[1] for x in rows[k]])
    print(f"{k:8d} {len(e):5d}  {e.min():.4g} / {e.mean():.4g} / {e.max():.4g}   "
          f"{t.max():.4g}   {np.max(t / e):.3f}")
