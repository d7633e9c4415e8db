"""Graphs and their gossip matrices: input (networkx, scipy matrices, SNAP edge lists),
generators from a few nodes to 10^7, and the gossip weight schemes W (Metropolis, max-degree,
row-normalised) that every protocol family runs on.

Imports ``sparsedp.linalg`` (the matrix checks), ``errors`` and ``validation``; never a family.
"""

from sparsedp.graphs import generators, graph, weights
from sparsedp.graphs.generators import *  # noqa: F403
from sparsedp.graphs.graph import *  # noqa: F403
from sparsedp.graphs.weights import *  # noqa: F403

__all__ = [*graph.__all__, *generators.__all__, *weights.__all__]
