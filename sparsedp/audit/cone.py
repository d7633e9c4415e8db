"""The light cone of an attacker's records: the nodes a simulated run must compute.

The simulators (:mod:`~sparsedp.audit.simulate`, :mod:`~sparsedp.audit.simulate_sgd`) run
rounds ``r = 0..R-1`` of one linear step: the state ``y_r`` (plus the round's input, data
or noise) is multiplied by ``W_r``.  The attacker records some entries of ``y_r`` before the
product (``before[r]``), some of ``W_r y_r`` after it (``after[r]``), and some of the
round's input (``drawn[r]``).  Backwards from the last round, ``W_r y_r`` is needed on
``reached[r] = after[r] | nodes[r + 1]``, so ``y_r`` is needed on

    nodes[r] = before[r] | drawn[r] | {k : W_r[i, k] != 0 for some i in reached[r]},

the nodes within ``R - 1 - r`` hops of the records (exactly: through the nonzero patterns of
the ``W`` that follow); a round that needs more than half the graph runs on all of it, with
``W`` itself rather than a copy of most of it.  A run on these nodes computes every record
as the same sum of the same terms as a run on the whole graph, and inputs outside them,
which cannot reach a record, need not be drawn.  On a geometric graph that is a few
thousand nodes a round at ``n = 10^5``; on small-world graphs the first rounds still span
the graph.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

__all__ = ["LightCone", "light_cone"]


@dataclass(frozen=True)
class LightCone:
    """Per round ``r``: ``nodes[r]`` (sorted) on which ``y_r`` is computed;
    ``products[r] = W_r[reached[r], nodes[r]]`` (``None`` when nothing after round ``r``
    is needed); ``carried[r]``: the positions of ``nodes[r + 1]`` in ``reached[r]``;
    ``before[r]`` / ``drawn[r]``: the positions of those records in ``nodes[r]``;
    ``after[r]``: their positions in ``reached[r]``."""

    nodes: tuple[np.ndarray, ...]
    products: tuple[sp.csr_matrix | None, ...]
    carried: tuple[np.ndarray, ...]
    before: tuple[np.ndarray, ...]
    after: tuple[np.ndarray, ...]
    drawn: tuple[np.ndarray, ...]

    @property
    def size(self) -> int:
        """The most nodes a round holds (its state, or its product)."""
        return max(max(len(nodes) for nodes in self.nodes),
                   max((p.shape[0] for p in self.products if p is not None), default=0))

    def advance(self, r: int, state: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
        """``(W_r y_r on reached[r], y_{r+1} on nodes[r + 1])`` from ``state`` (``y_r`` on
        ``nodes[r]``); ``(None, empty)`` when nothing after round ``r`` is needed."""
        product = self.products[r]
        if product is None:
            return None, state[:0]
        reached = product @ state
        # all of it when it is nodes[r + 1] (nothing recorded after the round): no copy
        carried = self.carried[r]
        return reached, reached if carried.size == len(reached) else reached[carried]


def light_cone(products: Sequence[sp.csr_matrix], before: Sequence[np.ndarray],
               after: Sequence[np.ndarray], drawn: Sequence[np.ndarray]) -> LightCone:
    """The :class:`LightCone` of rounds with matrices ``products[r]`` (sparse, taken as CSR
    once per distinct matrix) and records
    ``before[r]``, ``after[r]``, ``drawn[r]`` (sorted node indices; module docstring)."""
    rounds = len(products)
    empty = np.empty(0, dtype=np.int64)
    nodes: list = [empty] * rounds
    subs: list = [None] * rounds
    carried: list = [empty] * rounds
    reached_at: list = [empty] * rounds
    as_csr: dict = {}  # one CSR form per distinct matrix (a list may repeat one W)
    needed_next = empty  # nodes[r + 1]
    for r in reversed(range(rounds)):
        if id(products[r]) not in as_csr:  # CSR: a row slice's indices are column indices
            as_csr[id(products[r])] = sp.csr_matrix(products[r])
        W = as_csr[id(products[r])]
        n = W.shape[0]
        reached = np.union1d(after[r], needed_next).astype(np.int64)
        in_round = np.zeros(n, dtype=bool)
        in_round[before[r]] = in_round[drawn[r]] = True
        if reached.size:
            if 2 * reached.size > n:  # most of the graph: all of it, W itself (no copy)
                reached = np.arange(n)
            rows = W if reached.size == n else W[reached]
            in_round[rows.indices] = True
        here = np.flatnonzero(in_round)
        if reached.size:
            if 2 * here.size > n:
                here = np.arange(n)
            subs[r] = rows if here.size == n else sp.csr_matrix(rows[:, here])
            carried[r] = np.searchsorted(reached, needed_next)
        nodes[r] = here.astype(np.int64)
        reached_at[r] = reached
        needed_next = nodes[r]
    return LightCone(
        tuple(nodes), tuple(subs), tuple(carried),
        tuple(np.searchsorted(nodes[r], before[r]) for r in range(rounds)),
        tuple(np.searchsorted(reached_at[r], after[r]) for r in range(rounds)),
        tuple(np.searchsorted(nodes[r], drawn[r]) for r in range(rounds)))
