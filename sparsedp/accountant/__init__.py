"""Online privacy accounting for training loops (issue 34): an accountant that a
decentralized-learning framework steps every round, with incremental certified bounds,
budgets, checkpoints and ``dp_accounting`` composition (``docs/accountant.md``).

Gossip averaging, one (target, observers) pair: :class:`~sparsedp.accountant.gossip.Accountant`.
Matrix factorisation: :class:`~sparsedp.accountant.mf.MFAccountant`; random walks:
:class:`~sparsedp.accountant.randomwalk.RandomWalkAccountant`.
One attacker against every target: :class:`~sparsedp.accountant.targets.TargetsAccountant`;
one target against every single-node attacker:
:class:`~sparsedp.accountant.observers.ObserversAccountant`.
Every node's worst case over single observers: :class:`~sparsedp.accountant.graph.GraphAccountant`.
"""

from sparsedp.accountant.checkpoint import load, save
from sparsedp.accountant.gossip import Accountant
from sparsedp.accountant.graph import GraphAccountant
from sparsedp.accountant.mf import MFAccountant
from sparsedp.accountant.observers import ObserversAccountant
from sparsedp.accountant.randomwalk import RandomWalkAccountant
from sparsedp.accountant.targets import TargetsAccountant

__all__ = ["Accountant", "GraphAccountant", "MFAccountant", "ObserversAccountant",
           "RandomWalkAccountant", "TargetsAccountant", "load", "save"]
