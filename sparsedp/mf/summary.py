"""Every target against one attacker set, summarised by shortest-path distance (the layout of
Bellet et al.'s Fig. 2: min / mean / max per distance)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.sparse.csgraph import shortest_path

from sparsedp import validation
from sparsedp.errors import ParameterError
from sparsedp.linalg.matrix_facts import is_locked, reuse_scope
from sparsedp.linalg.stochastic import check_gossip_matrix, lock_gossip_matrix
from sparsedp.mf.batched import scope_targets
from sparsedp.mf.result import MFResult
from sparsedp.mf.sensitivity import mf_sensitivity
from sparsedp.plain import plain
from sparsedp.progress import progress_bar
from sparsedp.reprs import short_repr
from sparsedp.tables import Tabular


@dataclass(frozen=True)
class DistanceSummary(Tabular):
    """Per-target results and, per distance d from the attacker set, the number of targets and
    the min / mean / max of the certified upper bound and of the lower bound (``by_distance``:
    ``{d: {"targets", "upper_min", "upper_mean", "upper_max", "lower_min", ...}}``; targets in
    another component have distance ``None`` and are left out of it).  :meth:`to_pandas` and
    :meth:`to_arrow` give the per-target table (:meth:`table_columns`)."""

    attackers: tuple[int, ...]
    targets: tuple[int, ...]
    distances: tuple[int | None, ...]
    results: tuple[MFResult, ...]
    by_distance: dict

    __repr__ = short_repr

    def table_columns(self) -> dict:
        """One row per target: ``target``, ``distance`` (hops from the nearest attacker, -1
        in another component), ``lower``, ``upper`` and ``thm7`` (NaN when not computed)."""
        return {
            "target": np.array(self.targets, dtype=np.int64),
            "distance": np.array([-1 if d is None else d for d in self.distances],
                                 dtype=np.int64),
            "lower": np.array([r.lower for r in self.results], dtype=np.float64),
            "upper": np.array([r.upper for r in self.results], dtype=np.float64),
            "thm7": np.array([np.nan if r.thm7 is None else r.thm7 for r in self.results],
                             dtype=np.float64),
        }

    def to_dict(self) -> dict:
        return plain({
            "attackers": self.attackers, "targets": self.targets, "distances": self.distances,
            "lower": [r.lower for r in self.results], "upper": [r.upper for r in self.results],
            "thm7": [r.thm7 for r in self.results],
            "by_distance": {str(d): v for d, v in self.by_distance.items()},
        })


def distance_summary(W, attackers, T: int, *, targets=None, progress=None,
                     **options) -> DistanceSummary:
    """:func:`mf_sensitivity` of every target (default: every node outside the attacker set)
    towards ``attackers``, grouped by hop distance from the nearest attacker; ``options`` are
    passed on (``algorithm``, ``trust_model``, ``participation_scheme``, ``gradients``,
    ``exact``, ``method``, ``max_memory``)."""
    W = check_gossip_matrix(W, require=("nonnegative", "row_stochastic"))
    if not is_locked(W):  # the shared work needs a W that cannot change in place
        W = lock_gossip_matrix(W)
    n = W.shape[0]
    if attackers is None or len(np.atleast_1d(attackers)) == 0:
        raise ParameterError("the distance summary needs a non-empty attacker set")
    attackers_t = tuple(int(a) for a in validation.node_set(attackers, n, "attackers"))
    if targets is None:
        targets = [u for u in range(n) if u not in set(attackers_t)]
    hops = shortest_path(W + W.T, directed=False, unweighted=True, indices=list(attackers_t))
    hops = np.atleast_2d(hops).min(axis=0)
    results, distances = [], []
    bar = progress_bar(progress, total=len(targets), desc="targets", unit="target")
    # the attackers' lags, K and lambda_min for every target, and on the operator path all
    # targets solved at once (sparsedp.mf.batched)
    with reuse_scope(len(targets)), scope_targets(targets):
        for u in targets:
            results.append(mf_sensitivity(W, u, list(attackers_t), T, **options))
            h = hops[int(u)]
            distances.append(int(h) if math.isfinite(h) else None)
            if bar is not None:
                bar.update()
    if bar is not None:
        bar.close()
    by_distance: dict = {}
    for d in sorted({d for d in distances if d is not None}):
        chosen = [r for r, e in zip(results, distances, strict=True) if e == d]
        up = np.array([r.upper for r in chosen])
        low = np.array([r.lower for r in chosen])
        by_distance[d] = {"targets": len(chosen),
                          "upper_min": float(up.min()), "upper_mean": float(up.mean()),
                          "upper_max": float(up.max()), "lower_min": float(low.min()),
                          "lower_mean": float(low.mean()), "lower_max": float(low.max())}
    return DistanceSummary(attackers=tuple(attackers_t), targets=tuple(int(u) for u in targets),
                           distances=tuple(distances), results=tuple(results),
                           by_distance=by_distance)
