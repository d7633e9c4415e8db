"""Gossip averaging (Koskela & Kulkarni, v2 and v1): the threat models as views, the squared
sensitivity ``max_c c^T G^T K_T^{-1} G c`` with certified bounds, its certified solve paths,
and the closed-form theorems as checked calculators.

Nodes are rows of the gossip matrix W (``0..n-1``); for a graph whose labels are not its
positions, ``sparsedp.as_graph(G).index_of(label)`` gives the row of a label.

Imports ``linalg``, ``graphs``, ``privacy``, ``errors``, ``validation``; no other family.
"""

from sparsedp.gossip.sensitivity import (
    Bound,
    SensitivityResult,
    estimate_cost,
    squared_sensitivity,
)
from sparsedp.gossip.views import VIEWS, closed_neighbourhood

__all__ = [
    "VIEWS",
    "Bound",
    "SensitivityResult",
    "closed_neighbourhood",
    "estimate_cost",
    "squared_sensitivity",
]
