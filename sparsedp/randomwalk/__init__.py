"""Random-walk decentralized learning (Cyffers, Bellet & Upadhyay 2024): the pairwise-network-DP
series, the log-Green matrix ``-log(I - W + J/n)`` at scale, closed forms for named graphs,
pairwise losses, the Muffliato gossip baseline (Cyffers et al. 2022), and the comparison of
random walks with gossip by graph distance.

The functions that take a matrix W name nodes by its rows (``0..n-1``);
:func:`~sparsedp.randomwalk.gossip_comparison.compare_by_distance`, which takes a graph, by
the graph's labels.

Imports ``linalg``, ``graphs``, ``privacy``, ``errors``, ``validation``; no other family.
"""

from sparsedp.randomwalk.accounting import (
    METHODS,
    random_walk_mean_rdp,
    random_walk_rdp,
)
from sparsedp.randomwalk.log_green import log_green_columns, log_pseudo_determinant
from sparsedp.randomwalk.muffliato import muffliato_rdp
from sparsedp.randomwalk.muffliato_sgd import MuffliatoSGDBound, muffliato_sgd_rdp
from sparsedp.randomwalk.pairwise import PairwiseLoss

__all__ = [
    "METHODS",
    "MuffliatoSGDBound",
    "PairwiseLoss",
    "log_green_columns",
    "log_pseudo_determinant",
    "muffliato_rdp",
    "muffliato_sgd_rdp",
    "random_walk_mean_rdp",
    "random_walk_rdp",
]
