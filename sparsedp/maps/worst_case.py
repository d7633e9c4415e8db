"""The certified per-target worst case over observers, without the pair table.

For a target j and the selected observers A (secure-summation single-observer view, as in
:mod:`sparsedp.maps.privacy_map`):

    worst(j) = max_{a in A, a != j} Delta_T^2(j -> a).

:func:`per_target_worst_case` reports, per target,

* ``lower``: the largest certified lower bound over the pairs it evaluated (the c = 1
  value ``L(j, a)``, :func:`sparsedp.gossip.batched.ones_certified`, or a refined one);
* ``upper``: the largest of one certified upper bound ``u(j, a)`` per pair, over *every* pair:
  ``u = min(B, E)`` for the evaluated pairs (``min(B, E, R)`` for the refined ones), ``u =
  B`` for the others, where ``B`` is the box bound ``||b_j||^2 / lambda_min(K_a)``
  (:mod:`sparsedp.gossip.batched_box`, ``O(T n)`` per observer for all targets), ``E`` the
  entrywise bound ``sum |M_j|`` (:mod:`sparsedp.gossip.batched_entrywise`, ``T^3`` per
  pair) and ``R`` the refined bound below.  Each ``u(j, a)`` bounds ``Delta^2(j -> a)``, so
  their maximum bounds worst(j), whichever pairs were evaluated or refined: the result is
  certified regardless of the pruning.

Pruning: which pairs are evaluated.  ``B`` is loose (1.5-5 times the c = 1 value on the
benchmark graph) but tiny for all but a target's few strongest observers, so a pair is
evaluated only when ``B(j, a) > thr(j)``:

1. a pre-pass at ``T' < T`` (``prepass_T``; T' rounds of propagation and a T' x T' by
   T' x n product per observer) gives ``pre(j) = max_a L_T'(j, a)``.  The observations of
   the first T' rounds are a sub-vector of the T-round ones, with mean ``G_T' c[:T']`` and
   covariance the leading block ``K_T'``, and the Mahalanobis norm of a sub-vector under its
   marginal covariance is at most the full vector's: ``Delta_T'^2 <= Delta_T^2`` pair by
   pair, so ``pre(j) <= worst(j)``;
2. the main pass at T (observers in batches, as the map): per observer ``B`` for every
   target, ``thr(j) = max(pre(j), lower so far(j), upper so far(j))`` (without refinement),
   ``max(pre(j), lower so far(j))`` (with: the refinement lowers uppers afterwards); pairs
   with ``B > thr`` get ``L`` and ``E``.

Without refinement a skipped pair has ``u = B <= thr(j) <= final upper(j)`` (``pre(j) <=
worst(j) <= upper(j)``), so the result equals the unpruned ``max_a min(B, E)``; with it,
``B <= thr(j) <= worst(j)``, below every certified upper bound.  Equal to rounding: a pair's
bounds are computed in a block of other targets, whose size changes the rounding
(``prune=False`` evaluates every pair with ``B > 0``; ``B = 0`` means ``G_j = 0``:
``Delta^2 = 0``).

Refinement (``refine = N > 0``): where ``M_j`` has negative entries (a target's neighbours
at T = 100 on the benchmark graph) ``E`` is 5-20% above ``L``.  The evaluated pairs with ``u >
lower so far(j)`` are kept (their lags ``r_l[j]`` and their observer's ``K_hat``); after the
main pass, per target, the kept pairs are taken by decreasing ``u`` and each is refined while
its ``u`` exceeds the target's upper so far (the other pairs' ``u``, then the refined
values): the single-pair certified sandwich (:func:`sparsedp.gossip.batched.pair_sandwiches`)
and :func:`sparsedp.gossip.batched.refined_bounds` (multistart ascent for the lower bound,
the certified diagonal shift ``T lambda_max(M - diag d) + sum d`` with N eigen-decompositions
for the upper).  The pairs left have ``u`` at most the result, which therefore equals the
one with every pair refined.

Exhaustive search (``exact``; by default for T <= :data:`EXACT_AUTO_MAX_T`): the same
pairs, refined by :func:`sparsedp.gossip.batched.pair_bounds` with the exhaustive sign
search instead, so each refined pair's bounds are its exact value to rounding, and the
target's interval is exact to rounding too (its upper is the largest ``u``; the unrefined
pairs have ``u`` at most the refined values or within :data:`SETTLED` of their own lower
bound).  Where ``M_j`` has negative entries, on clustered and bridged graphs, c = 1 and the
entrywise bound are far apart: two 8-node G(8, 0.4) clusters joined by one edge,
row-normalised, T = 11, gave [0.544, 1.006] around an exact worst case of 0.844 (issue 33);
the exhaustive search closes it (``tests/test_worst_case.py``).

Cost: the c = 1 map's propagation (``T`` sparse products per observer) plus ``T' `` more,
``O(T n)`` for the box bounds, ``O(T^3)`` per observer (its smallest eigenvalue, and the
certified inverses of the c = 1 and entrywise bounds), ``T^3`` per evaluated pair and a few
ms per refined pair (T = 100).  Memory: one batch of lags, a few arrays of length n, and with
refinement the kept pairs' lags and one ``K_hat`` per observer (``8 T^2`` bytes).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from sparsedp import defaults, resources, validation
from sparsedp.errors import ParameterError
from sparsedp.gossip import batched
from sparsedp.gossip.batched_box import box_radius, box_upper
from sparsedp.gossip.batched_entrywise import entrywise_upper
from sparsedp.gossip.inputs import _resolve_exact
from sparsedp.hints import ExactSearch, MapSource, MemorySize, NodeSelection, Progress
from sparsedp.linalg.matrix_facts import one_query
from sparsedp.linalg.stochastic import matrix_facts
from sparsedp.linalg.threads import limit_blas_threads
from sparsedp.maps.plan import worst_case_memory
from sparsedp.maps.privacy_map import (
    SPARSE_BACKEND,
    _batch_size,
    _describe,
    _source,
    table_rows,
    upper_epsilons,
)
from sparsedp.maps.selection import select_nodes
from sparsedp.plain import plain
from sparsedp.progress import progress_bar
from sparsedp.reprs import short_repr
from sparsedp.tables import Tabular

SETTLED = 1e-6  # a pair whose upper bound is within this of its lower bound is not refined
EXACT_AUTO_MAX_T = 16  # exhaustive search of a deciding pair with exact="auto": 2 searches of
# 2^15 classes, 40 ms a pair at T = 16 on the loaded 2-core VM (0.18 s at 20, 1.5 s at 24)
COLUMNS = ("target", "observers", "lower", "upper", "kind", "worst_observer", "epsilon")


@dataclass(frozen=True)
class WorstCase(Tabular):
    """Per target: the worst case over the observers (module docstring).

    Attributes
    ----------
    columns : dict
        ``target`` (labels or rows), ``observers`` (how many, the target excluded),
        ``lower`` and ``upper`` (certified bounds on ``max_a Delta^2(target -> a)``),
        ``kind`` (``"certified upper"``; ``"exact"`` when both are 0: no observer within
        T - 1 hops), ``worst_observer`` (the observer of the largest lower bound; None when no
        pair of the target was evaluated) and ``epsilon`` (``gaussian_epsilon(upper, sigma,
        delta)``, NaN without sigma and delta): numpy arrays, one entry per target.
        Targets whose only observer is themselves are left out.  :meth:`to_arrow` and
        :meth:`to_pandas` give this table (``kind`` categorical, NaN as null).
    parameters : dict
        The request (T, sigma, delta, selections, prepass_T, prune).
    notes : tuple of str
        What the numbers claim.
    info : dict
        Timing, pair counts (``pairs``, ``evaluated_pairs``: those given the c = 1 and
        entrywise bounds) and batching.

    Examples
    --------
    >>> import networkx as nx, sparsedp
    >>> w = sparsedp.per_target_worst_case(nx.path_graph(5), T=4, sigma=1.0, delta=1e-5)
    >>> [(r["target"], r["worst_observer"]) for r in w.rows()][:2]
    [(0, 1), (1, 0)]
    >>> bool(w.columns["lower"][0] <= w.columns["upper"][0])
    True
    """

    columns: dict
    parameters: dict
    notes: tuple[str, ...] = ()
    info: dict = field(default_factory=dict)

    categorical = ("kind",)
    __repr__ = short_repr

    def __len__(self) -> int:
        return len(self.columns["target"])

    def table_columns(self) -> dict:
        """The per-target table (``columns``)."""
        return self.columns

    def rows(self) -> list[dict]:
        """One dict per target (plain Python values)."""
        return table_rows(self.columns)

    def to_dict(self) -> dict:
        """Parameters, notes, info and the rows, as strict-JSON plain data."""
        return plain({"parameters": self.parameters, "targets": len(self),
                      "notes": list(self.notes), "info": self.info, "rows": self.rows()})


@limit_blas_threads
@one_query
def per_target_worst_case(
    source: MapSource,
    T: int = defaults.ROUNDS,
    sigma: float | None = defaults.SIGMA,
    delta: float | None = defaults.DELTA,
    *,
    observers: NodeSelection = defaults.SELECTION,
    targets: NodeSelection = defaults.SELECTION,
    scheme: str = defaults.SCHEME,
    prepass_T: int | None = None,
    refine: int = defaults.REFINE,
    prune: bool = True,
    exact: ExactSearch = defaults.EXACT,
    batch_size: int | None = None,
    progress: Progress = None,
    backend: str = "auto",
    max_memory: MemorySize = None,
) -> WorstCase:
    """Certified bounds on ``max_a Delta_T^2(target -> a)`` for every selected target, over
    the selected observers (module docstring).

    Parameters
    ----------
    source : a gossip matrix W or a graph, as for :func:`sparsedp.privacy_map`.
    T : rounds.
    sigma, delta : for the ``epsilon`` column (both or neither; default 1 and 1e-5,
        :mod:`sparsedp.defaults`; ``None`` for no epsilon column).
    observers, targets : ``"all"``, a list of nodes, or ``("sample", k, seed)``.
    scheme : weight scheme for graph input.
    prepass_T : rounds of the pruning pre-pass (default ``T // 5``; 0: none).  Any value
        gives the same bounds; it only changes how many pairs are evaluated.
    refine : eigen-decompositions of the diagonal-shift search for each evaluated pair whose
        bounds would still raise its target's upper bound (``0``: no refinement; module
        docstring).
    prune : ``False`` evaluates every pair with a positive box bound (a reference for the
        tests: the same bounds, ``T^3`` work per pair).
    exact : the deciding pairs (those that ``refine`` would refine) resolved by the
        exhaustive sign search instead, their bounds then the exact value to rounding
        (``"auto"``: when ``T <= EXACT_AUTO_MAX_T``, 16; ``True``: up to T = 30; ``False``:
        never).  Where ``M_j`` has negative entries (clustered and bridged graphs) the
        entrywise bound and c = 1 leave intervals 50-70 % wide at T = 11.
    batch_size, progress, backend, max_memory : as for :func:`sparsedp.privacy_map`.

    Returns
    -------
    WorstCase

    Raises
    ------
    ParameterError
        Bad T, prepass_T, sample size, or sigma without delta.
    GraphError
        An unknown node.
    GossipMatrixError
        W negative or not row-stochastic (the box bound needs W >= 0).
    ResourceLimitError
        One batch does not fit in ``max_memory``.

    Examples
    --------
    >>> import networkx as nx, sparsedp
    >>> w = sparsedp.per_target_worst_case(nx.cycle_graph(8), T=6)
    >>> row = w.rows()[0]
    >>> row["target"], row["observers"], row["lower"] <= row["upper"], row["kind"]
    (0, 7, True, 'certified upper')
    """
    T = validation.rounds(T)
    if prepass_T is None:
        prepass_T = T // 5
    if isinstance(prepass_T, bool) or not isinstance(prepass_T, int) or not 0 <= prepass_T < T:
        raise ParameterError(f"prepass_T must be an integer in [0, T), got {prepass_T!r}")
    if isinstance(refine, bool) or not isinstance(refine, int) or refine < 0:
        raise ParameterError(f"refine must be an integer >= 0, got {refine!r}")
    do_exact = T <= EXACT_AUTO_MAX_T if exact == "auto" else _resolve_exact(exact, T)
    if (sigma is None) != (delta is None):
        raise ParameterError("give both sigma and delta (for the epsilon column) or neither")
    if sigma is not None:
        sigma = validation.sigma(sigma)
        delta = validation.probability_delta(delta)
    graph, W = _source(source, scheme)
    n = W.shape[0]
    obs = select_nodes(observers, graph, n, "observers")
    tgt = select_nodes(targets, graph, n, "targets")
    b = _batch_size(batch_size, n, T, tgt.size, obs.size)
    resources.require_within(worst_case_memory(n, tgt.size, obs.size, T, b,
                                               kept=bool(refine or do_exact)),
                             resources.memory_budget(max_memory),
                             f"the per-target worst case at T = {T}", "use a smaller batch_size")
    symmetric = matrix_facts(W).symmetric
    lam = batched.lambda_min_lower_bound(W)
    every_target = tgt.size == n and bool(np.all(tgt == np.arange(n)))
    position = np.full(n, -1, dtype=np.int64)
    position[tgt] = np.arange(tgt.size)
    passes = [prepass_T] if prune and prepass_T > 0 else []
    bar = progress_bar(progress, total=obs.size * (len(passes) + 1), desc="observers",
                       unit="observer")
    buffer = np.empty(b * T * n)
    start = time.perf_counter()
    try:
        pre = np.zeros(tgt.size)
        for rounds in passes:
            _prepass(W, obs, tgt, every_target, position, rounds, lam, symmetric, buffer,
                     pre, bar)
        prepass_seconds = time.perf_counter() - start
        lower, upper, worst, evaluated, refined, evaluating = _main_pass(
            W, obs, tgt, every_target, position, T, b, lam, symmetric, buffer,
            pre if prune else None, refine, do_exact, backend, bar)
    finally:
        if bar is not None:
            bar.close()
    seconds = time.perf_counter() - start
    counts = obs.size - np.isin(tgt, obs).astype(np.int64)
    keep = counts > 0
    lower, upper, worst = lower[keep], upper[keep], worst[keep]
    epsilon = np.full(upper.size, np.nan)
    if sigma is not None and delta is not None and upper.size:  # both or neither (checked)
        epsilon, _ = upper_epsilons(upper, sigma, delta)
    kind = np.where((upper == 0.0), "exact", "certified upper")
    names = graph.ids_of(tgt[keep]) if graph is not None else tgt[keep]
    observer_names = _observer_names(graph, worst)
    columns = {"target": np.asarray(names), "observers": counts[keep], "lower": lower,
               "upper": upper, "kind": kind, "worst_observer": np.asarray(observer_names),
               "epsilon": epsilon}
    parameters = {"T": T, "sigma": sigma, "delta": delta, "view": "secure-summation",
                  "nodes": n, "observers": _describe(observers), "targets": _describe(targets),
                  "scheme": scheme if graph is not None else None, "prepass_T": prepass_T,
                  "refine": refine, "exact": exact, "prune": bool(prune)}
    notes = ("upper: the largest over every (observer, target) pair of a certified upper "
             "bound on that pair (min of the box and entrywise bounds where evaluated, the "
             "box bound elsewhere): a certified upper bound on the worst case over the "
             "observers, whichever pairs were evaluated",
             "lower: the largest certified c = 1 lower bound over the evaluated pairs")
    info = {"seconds": seconds, "prepass_seconds": prepass_seconds,
            "evaluation_seconds": evaluating,
            "pairs": int(obs.size * tgt.size - np.isin(tgt, obs).sum()),
            "evaluated_pairs": int(evaluated), "refined_pairs": int(refined), "batch_size": b,
            "sparse_matrix_vector_products": int(obs.size * (T - 1 + sum(
                max(r - 1, 0) for r in passes))),
            "lambda_min_lower_bound": lam}
    return WorstCase(columns=columns, parameters=parameters, notes=notes, info=info)


def _observer_names(graph, rows: np.ndarray) -> np.ndarray:
    """Rows as labels (graph input) or rows; ``-1`` (no pair evaluated) as None."""
    defined = rows >= 0
    named = graph.ids_of(rows[defined]) if graph is not None else rows[defined]
    if defined.all():
        return np.asarray(named)
    out = np.full(rows.size, None, dtype=object)
    out[defined] = list(np.asarray(named).tolist())
    return out


def _prepass(W, obs, tgt, every_target, position, rounds, lam, symmetric, buffer, pre, bar
             ) -> None:
    """``pre = max(pre, max_a L_T'(j, a))`` over the observers (the target itself left out):
    certified c = 1 lower bounds at ``T' = rounds``, each at most ``Delta_T^2(j -> a)``."""
    n = W.shape[0]
    b = _batch_size(None, n, rounds, tgt.size, obs.size)
    for start in range(0, obs.size, b):
        chunk = obs[start:start + b]
        batch = batched.observer_batch(W, chunk, rounds, lam, SPARSE_BACKEND, symmetric, buffer)
        low, _ = batched.ones_interval(batch, None if every_target else tgt)
        own = position[chunk]
        inside = own >= 0
        low[np.flatnonzero(inside), own[inside]] = 0.0
        np.maximum(pre, low.max(axis=0), out=pre)
        if bar is not None:
            bar.update(chunk.size)


@dataclass
class _Pending:
    """Evaluated pairs kept for the refinement (``u > `` the target's largest lower bound at
    the time): target positions, observer rows, ``u`` and the pair's lags ``r_l[j]``; and the
    ``K_hat`` and ``dK`` of each of their observers."""

    targets: list = field(default_factory=list)
    observers: list = field(default_factory=list)
    uppers: list = field(default_factory=list)
    lags: list = field(default_factory=list)
    K: dict = field(default_factory=dict)


def _main_pass(W, obs, tgt, every_target, position, T, b, lam, symmetric, buffer, pre,
               refine, do_exact, backend, bar):
    """``(lower, upper, worst observer, evaluated pairs, refined pairs, seconds evaluating
    them)`` over the observers at T (module docstring); ``pre`` None: no pruning (every pair
    with a positive box bound is evaluated)."""
    refining = bool(refine) or do_exact
    lower = np.zeros(tgt.size)
    settled = np.zeros(tgt.size)  # the largest u of the pairs not kept for refinement
    worst = np.full(tgt.size, -1, dtype=np.int64)
    pending = _Pending()
    evaluated, evaluating = 0, 0.0
    lag_depth = 0
    for start in range(0, obs.size, b):
        chunk = obs[start:start + b]
        batch = batched.observer_batch(W, chunk, T, lam, SPARSE_BACKEND, symmetric, buffer)
        lag_depth = batch.lag_depth
        for i, a in enumerate(chunk):
            box = box_upper(batch, i, box_radius(batch, i), None if every_target else tgt)
            if position[a] >= 0:
                box[position[a]] = -np.inf  # the target itself is not an observer of it
            # refinement lowers the uppers later: prune against lower bounds only
            threshold = (0.0 if pre is None
                         else np.maximum(pre, lower if refining else np.maximum(lower, settled)))
            todo = np.flatnonzero(box > threshold)
            if todo.size:
                began = time.perf_counter()
                rows = tgt[todo]
                low, _ = batched.ones_certified(batch, i, rows)
                box[todo] = np.minimum(box[todo], entrywise_upper(batch, i, rows, backend))
                better = low > lower[todo]
                lower[todo[better]] = low[better]
                worst[todo[better]] = a
                if refining:
                    keep = ((box[todo] > lower[todo]) & (box[todo] > low * (1 + SETTLED)))
                    kept = todo[keep]
                    if kept.size:
                        pending.targets.append(kept)
                        pending.observers.append(np.full(kept.size, a))
                        pending.uppers.append(box[kept].copy())
                        pending.lags.append(batch.lags[i][:, tgt[kept]].T.copy())
                        pending.K[int(a)] = (batch.K[i].copy(), float(batch.dK[i]))
                        box[kept] = -np.inf  # kept: not settled
                evaluated += todo.size
                evaluating += time.perf_counter() - began
            np.maximum(settled, box, out=settled)
        if bar is not None:
            bar.update(chunk.size)
    upper, refined = settled, 0
    if refining and pending.targets:
        began = time.perf_counter()
        upper, refined = _refine(pending, settled, lower, worst, lam, lag_depth, refine,
                                 do_exact, backend)
        evaluating += time.perf_counter() - began
    return lower, upper, worst, evaluated, refined, evaluating


def _refine(pending: _Pending, settled, lower, worst, lam, lag_depth, refine, do_exact,
            backend):
    """Per target, the kept pairs by decreasing ``u``: each is refined
    (:func:`sparsedp.gossip.batched.refined_bounds` on its single-pair sandwich, or with
    ``do_exact`` :func:`sparsedp.gossip.batched.pair_bounds` with the exhaustive search) while its
    ``u`` exceeds the target's upper so far (``settled``, then the refined values); the rest
    have ``u`` at most that.  Returns ``(upper, refined pairs)``; ``lower`` and ``worst``
    are raised in place."""
    targets = np.concatenate(pending.targets)
    observers = np.concatenate(pending.observers)
    uppers = np.concatenate(pending.uppers)
    lags = np.concatenate(pending.lags)
    upper = settled.copy()
    refined = 0
    for k in np.lexsort((-uppers, targets)):
        j = targets[k]
        if uppers[k] <= upper[j]:
            continue  # this pair and the target's later (smaller) ones change nothing
        a = int(observers[k])
        K, dK = pending.K[a]
        single = batched.ObserverBatch(
            observers=np.array([a]), lags=lags[k].reshape(1, -1, 1), K=K[None],
            L=np.linalg.cholesky(K)[None], dK=np.array([dK]), lam=lam, lag_depth=lag_depth,
            products=0)
        sandwich = next(batched.pair_sandwiches(single, 0, np.array([0])))
        if do_exact:
            low, up, _, _ = batched.pair_bounds(sandwich, True, backend)
        else:
            low, up = batched.refined_bounds(sandwich, refine, backend)
        refined += 1
        upper[j] = max(upper[j], min(uppers[k], up))
        if low > lower[j]:
            lower[j], worst[j] = low, a
    return upper, refined
