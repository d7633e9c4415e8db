"""Privacy maps of a whole graph: the secure-summation single-observer view for many
(observer, target) pairs at once, as a table and its summaries.

For every selected observer ``a`` and target ``j`` the map bounds ``Delta_T(j -> a)^2``
(v2 Lemma 10 with ``S = e_a^T``; :func:`sparsedp.squared_sensitivity` with
``observers=[a]``, the default view) by the batched engine of
:mod:`sparsedp.gossip.batched`: one propagation and one factorisation of ``K_T`` per observer
serve every target.

Columns of the table (one row per pair, observers major, targets in the given order):

``observer``, ``target``
    node names: rows of W (``0..n-1``, int32 below 2^31 nodes) for matrix input, the graph's
    labels for graph input (README, "Node labels and rows").
``distance``
    shortest-path hop distance in the (undirected) pattern of W (int32); ``-1`` when
    unreachable.
``lower``
    a certified lower bound on ``Delta^2``: the c = 1 value less its certified rounding
    (:func:`sparsedp.gossip.batched.ones_interval`), and with ``upper="certified"`` the best
    lower bound of the single-pair bound evaluation (local search, exhaustive search).
``upper``
    ``upper="certified"``: a certified upper bound (the single-pair path's bounds on the same
    certified sandwich, :func:`sparsedp.linalg.sign_bounds.evaluate_bounds`);
    ``upper="entrywise"``: the certified entrywise bound ``sum |M_T|`` of every target at once
    (:mod:`sparsedp.gossip.batched_entrywise`); ``upper="none"``: NaN (not computed).
``kind``
    ``"exact"``: the exhaustive search ran, or a closed form (distance > T - 1 or another
    component: ``G_T = 0``, ``Delta^2 = 0``), so ``[lower, upper]`` brackets the exact value
    to rounding; ``"certified upper"``: ``lower <= Delta^2 <= upper``; ``"lower"``: only the
    lower bound was computed.  A numpy ``StringDType`` array (16 bytes a pair, inline;
    ``.tolist()`` gives str, ``astype(str)`` needs a width such as ``"U15"``).
``epsilon``
    ``gaussian_epsilon(upper, sigma, delta)`` when sigma and delta are given and ``upper`` is
    certified (NaN otherwise): an upper bound on the pair's epsilon.

Summaries: ``per_target`` (worst case over the map's observers other than the target:
``max_a lower`` is a lower bound and ``max_a upper`` a certified upper bound on
``max_a Delta^2(j -> a)``, since each ``upper`` bounds its own pair; over the observers of
the map only — a sample of observers gives the worst case over that sample), and
``by_distance`` (count, min / mean / max of ``lower``, ``upper`` and ``epsilon`` per hop
distance).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import shortest_path

from sparsedp import defaults, resources, validation
from sparsedp.errors import ParameterError
from sparsedp.gossip import batched
from sparsedp.gossip.batched_entrywise import entrywise_upper
from sparsedp.gossip.batched_sets import set_ones
from sparsedp.gossip.certified_solve import doubly_stochastic_to_rounding
from sparsedp.gossip.one_to_all import one_to_all
from sparsedp.gossip.sensitivity import gossip_sequence, squared_sensitivity
from sparsedp.gossip.views import closed_neighbourhood
from sparsedp.graphs.graph import Graph, as_graph
from sparsedp.graphs.weights import gossip_matrix
from sparsedp.hints import ExactSearch, MapSource, MemorySize, NodeSelection, Progress
from sparsedp.linalg.matrix_facts import is_locked, one_query, reuse_scope
from sparsedp.linalg.stochastic import lock_gossip_matrix, matrix_facts
from sparsedp.linalg.threads import limit_blas_threads
from sparsedp.maps.plan import (
    DEFAULT_MAX_PAIRS,
    default_batch,
    estimate,
    gossip_map_memory,
    neighbourhood_map_memory,
    require_pairs,
    table_bytes_per_pair,
)
from sparsedp.maps.selection import select_nodes
from sparsedp.plain import plain
from sparsedp.privacy.gaussian import gaussian_epsilon
from sparsedp.progress import progress_bar
from sparsedp.reprs import short_repr
from sparsedp.tables import Rows, Tabular

UPPER_MODES = ("certified", "entrywise", "none")
MAP_VIEWS = ("secure-summation", "neighbourhood")
TRUNCATED_LAG_BYTES = 1 << 30  # one observer's T x n lags above which upper="none" truncates
SPARSE_BACKEND = "numpy"  # scipy's CSR x block: 0.12 ms a column at n = 10^4, b = 32 on the
# 2-core machine, against 0.25 ms for the parallel numba kernel (0.09 ms on one thread)
COLUMNS = ("observer", "target", "distance", "lower", "upper", "kind", "epsilon")
KINDS = ("exact", "certified upper", "lower", "estimate")  # estimate: the random-walk family
KIND_CODE = {name: code for code, name in enumerate(KINDS)}
KIND_NAMES = np.array(KINDS, dtype=np.dtypes.StringDType())  # 16 bytes a pair, inline
EXACT_EPSILONS = 20_000  # distinct upper bounds converted one by one (80 us each)
EPSILON_GRID_RATIO = 1.001
EPSILON_SLICE = 1 << 20  # pairs whose epsilons are looked up at once


@dataclass(frozen=True)
class PrivacyMap(Tabular):
    """The table (``columns``: name -> numpy array, one entry per pair) and the parameters.

    :meth:`per_target` and :meth:`by_distance` summarise it (both tables too);
    :meth:`to_dict` is strict-JSON plain data (non-finite numbers as strings,
    :func:`sparsedp.plain.plain`); :meth:`to_arrow` and :meth:`to_pandas` give the table
    (:mod:`sparsedp.tables`: ``kind`` and a sweep's ``graph``, ``family`` and ``scheme``
    categorical, NaN as null).

    Attributes
    ----------
    columns : dict
        ``observer``, ``target``, ``distance`` (hops; -1 in another component), ``lower``,
        ``upper`` (certified; NaN with ``upper="none"``), ``kind`` and ``epsilon``: numpy
        arrays, one entry per pair.
    parameters : dict
        The request (T, sigma, delta, upper mode, ...).
    notes : tuple of str
        What the numbers do and do not claim.
    info : dict
        Timing and batching details.

    Examples
    --------
    >>> import networkx as nx, sparsedp
    >>> m = sparsedp.privacy_map(nx.cycle_graph(8), observers=[0], T=6, sigma=2.0, delta=1e-5)
    >>> row = m.rows()[0]
    >>> row["target"], row["distance"], round(row["lower"], 6), row["kind"]
    (1, 1, 0.784149, 'certified upper')
    >>> [(d["distance"], d["pairs"]) for d in m.by_distance()]  # no self pair (0, 0)
    [(1, 2), (2, 2), (3, 2), (4, 1)]
    >>> m.by_distance().to_pandas()[["distance", "pairs", "upper_max"]].round(4).tail(2)
       distance  pairs  upper_max
    2         3      2     0.0135
    3         4      1     0.0028
    """

    columns: dict
    parameters: dict
    notes: tuple[str, ...] = ()
    info: dict = field(default_factory=dict)

    categorical = ("kind", "graph", "family", "scheme")
    __repr__ = short_repr

    def __len__(self) -> int:
        return len(self.columns["lower"])

    def table_columns(self) -> dict:
        """The pair table (``columns``)."""
        return self.columns

    def rows(self) -> list[dict]:
        """The table as a list of row dicts (plain Python values)."""
        return table_rows(self.columns)

    def per_target(self) -> Rows:
        """Per target, the worst case over the map's observers other than the target itself
        (module docstring): the largest lower bound (``None`` without lowers: the
        random-walk family), the largest certified upper bound (``None`` without uppers),
        the observer attaining it, and its epsilon.  A target whose only observer is itself
        is left out.  A list of row dicts with ``to_pandas()`` and ``to_arrow()``
        (:class:`sparsedp.tables.Rows`)."""
        c = self.columns
        targets, others = c["target"], c["observer"] != c["target"]
        uniq, first = np.unique(targets, return_index=True)
        out = []
        for label in uniq[np.argsort(first)]:
            rows = np.flatnonzero((targets == label) & others)
            if not rows.size:
                continue
            has_upper = not np.isnan(c["upper"][rows]).any()
            key = c["upper"] if has_upper else c["lower"]
            worst = rows[np.argmax(key[rows])]
            epsilon = c["epsilon"][rows]
            lows = c["lower"][rows]
            out.append({
                "target": _item(label),
                "observers": int(rows.size),
                "worst_lower": None if np.isnan(lows).all() else float(np.nanmax(lows)),
                "worst_upper": float(c["upper"][rows].max()) if has_upper else None,
                "worst_observer": _item(c["observer"][worst]),
                "worst_epsilon": None if np.isnan(epsilon).any() else float(epsilon.max()),
            })
        return Rows(out)

    def by_distance(self) -> Rows:
        """Per hop distance (``-1``: unreachable): pair count and min / mean / max of
        ``lower``, ``upper`` and ``epsilon`` (``None`` for a column not computed).  A list of
        row dicts with ``to_pandas()`` and ``to_arrow()`` (columns ``lower_min``, ...;
        :class:`sparsedp.tables.Rows`)."""
        c = self.columns
        out = []
        for d in np.unique(c["distance"]):
            rows = c["distance"] == d
            entry: dict[str, Any] = {"distance": int(d), "pairs": int(rows.sum())}
            for name in ("lower", "upper", "epsilon"):
                values = c[name][rows]
                entry[name] = None if np.isnan(values).any() else {
                    "min": float(values.min()), "mean": float(values.mean()),
                    "max": float(values.max())}
            out.append(entry)
        return Rows(out)

    def to_dict(self, table: bool = True) -> dict:
        """Parameters, summaries and (``table=True``) the rows, as strict-JSON plain data."""
        record = {"parameters": self.parameters, "pairs": len(self),
                  "per_target": self.per_target(), "by_distance": self.by_distance(),
                  "notes": list(self.notes), "info": self.info}
        if table:
            record["table"] = {k: v for k, v in self.columns.items()}
        return plain(record)


def table_rows(columns: dict) -> list[dict]:
    """A table of equal-length numpy columns as a list of row dicts (plain Python values)."""
    names = list(columns)
    values = [columns[n].tolist() for n in names]
    return [dict(zip(names, row, strict=True)) for row in zip(*values, strict=True)]


def _item(value):
    return value.item() if isinstance(value, np.generic) else value


@limit_blas_threads
@one_query
def privacy_map(
    source: MapSource,
    observers: NodeSelection = defaults.SELECTION,
    targets: NodeSelection = defaults.SELECTION,
    T: int = defaults.ROUNDS,
    sigma: float | None = defaults.SIGMA,
    delta: float | None = defaults.DELTA,
    *,
    scheme: str = defaults.SCHEME,
    upper: str = defaults.MAP_UPPER,
    view: str = defaults.VIEW,
    exact: ExactSearch = defaults.MAP_EXACT,
    batch_size: int | None = None,
    float32: bool = False,
    progress: Progress = None,
    backend: str = "auto",
    max_memory: MemorySize = None,
    max_pairs: int | None = DEFAULT_MAX_PAIRS,
) -> PrivacyMap:
    """Bounds on ``Delta_T(target -> observer)^2`` for every selected pair (module docstring).

    Parameters
    ----------
    source : a gossip matrix W (scipy sparse or dense; non-negative, row-stochastic, constant;
        nodes are its rows) or a graph (networkx graph, :class:`sparsedp.Graph`, edge-list
        path; nodes are its labels; W = ``gossip_matrix(graph, scheme)``).
    observers, targets : ``"all"``, a list of nodes, or ``("sample", k, seed)`` (k distinct
        nodes drawn uniformly with ``numpy.random.default_rng(seed)``, in increasing row
        order).  Unknown nodes raise ``GraphError``, a sample larger than the graph
        ``ParameterError`` (one line each).
    T : rounds.
    sigma, delta : noise and delta for the ``epsilon`` column (both or neither; default 1 and
        1e-5, :mod:`sparsedp.defaults`; ``None`` for no epsilon column).
    scheme : weight scheme for graph input.
    upper : ``"certified"`` (per-pair certified upper bounds: the cost of one T x T solve and
        bound evaluation per pair, the single-pair bounds), ``"entrywise"`` (the certified
        ``sum |M_T|`` for every target at once, :mod:`sparsedp.gossip.batched_entrywise`:
        ``T^3 n`` work per observer; tight when ``M_T >= 0`` entrywise) or
        ``"none"`` (the c = 1 lower bound only: one T x T by T x n product per observer;
        when one observer's lags would exceed :data:`TRUNCATED_LAG_BYTES` and W is symmetric
        and doubly stochastic, the lags are truncated where the chain has mixed, one observer
        at a time, :mod:`sparsedp.gossip.one_to_all`).
    view : ``"secure-summation"`` (the observer alone, the default) or ``"neighbourhood"``
        (the observer reads its closed neighbourhood's plain messages: the secure-summation
        view of that set, v2 Remark 11).  The neighbourhood view's c = 1 values come from one
        propagation and factorisation per observer for every target
        (:mod:`sparsedp.gossip.batched_sets`); its ``upper="certified"`` bounds are the
        single-pair ones (:func:`sparsedp.squared_sensitivity` per pair, the observer's work
        shared through :func:`sparsedp.linalg.matrix_facts.reuse_scope`);
        ``upper="entrywise"`` is for the secure-summation view only.
    exact : exhaustive search over sign vectors per pair (``"auto"``: T <= 24, ``True``,
        ``False``, the default); with ``upper="certified"`` only.
    float32 : store ``lower``, ``upper`` and ``epsilon`` as float32, rounded outward (lower
        bounds down, upper bounds and epsilons up: still bounds), halving the table.
    batch_size : observers propagated together (default: as many as fit
        :data:`sparsedp.maps.plan.BATCH_BYTES`, at most :data:`sparsedp.maps.plan.MAX_BATCH`).
    progress : a bar over the observers (:mod:`sparsedp.progress`).
    backend : ``"auto"``, ``"numba"`` or ``"numpy"`` for the kernels (the numpy twins give the
        same values; used by the tests).
    max_memory : memory budget; the table and one batch are checked against it before work.
    max_pairs : the most pairs (observers x targets) computed, checked before any work
        (default :data:`sparsedp.maps.plan.DEFAULT_MAX_PAIRS`, 10^7; ``None``: no limit).
        :func:`sparsedp.maps.plan.map_plan` states a request's pairs, estimated time and
        sizes without computing it.

    Returns
    -------
    PrivacyMap
        The pair table with its summaries.

    Raises
    ------
    ParameterError
        Bad T, upper mode, exact flag, sample size, or sigma without delta.
    GraphError
        An unknown node.
    GossipMatrixError
        W negative or not row-stochastic.
    ResourceLimitError
        The table or one batch does not fit in ``max_memory``, or more pairs than
        ``max_pairs`` (the message names both and the estimated time and sizes).

    Examples
    --------
    >>> import networkx as nx, sparsedp
    >>> m = sparsedp.privacy_map(nx.cycle_graph(8), observers=[0], T=6, sigma=2.0, delta=1e-5)
    >>> worst = m.per_target()[0]
    >>> worst["target"], worst["worst_observer"], round(worst["worst_upper"], 6)
    (1, 0, 0.784149)
    """
    T = validation.rounds(T)
    if upper not in UPPER_MODES:
        raise ParameterError(f"upper must be one of {UPPER_MODES}, got {upper!r}")
    if exact not in ("auto", True, False):
        raise ParameterError(f"exact must be 'auto', True or False, got {exact!r}")
    do_exact = bool(exact is True or (exact == "auto" and T <= 24))
    if do_exact and upper != "certified":
        raise ParameterError("exact search needs upper='certified'")
    if (sigma is None) != (delta is None):
        raise ParameterError("give both sigma and delta (for the epsilon column) or neither")
    if sigma is not None:
        sigma = validation.sigma(sigma)
        delta = validation.probability_delta(delta)
    if view not in MAP_VIEWS:
        raise ParameterError(f"the map's view must be one of {MAP_VIEWS}, got {view!r}")
    if view == "neighbourhood" and upper == "entrywise":
        raise ParameterError("upper='entrywise' is for the secure-summation view; use "
                             "'certified' or 'none' with the neighbourhood view")
    graph, W = _source(source, scheme)
    n = W.shape[0]
    obs = select_nodes(observers, graph, n, "observers")
    tgt = select_nodes(targets, graph, n, "targets")
    sizes = np.diff(W.indptr)[obs]
    set_size = float(sizes.mean()) if view == "neighbourhood" else 1.0
    require_pairs(estimate("gossip", n, W.nnz, obs.size, tgt.size, obs.size * tgt.size, T,
                           upper=upper, view=view, exact=exact, float32=float32,
                           epsilon=sigma is not None, set_size=set_size,
                           largest_set=int(sizes.max()) if obs.size else 1), max_pairs)
    if view == "neighbourhood":
        return _neighbourhood_map(graph, W, obs, tgt, T, sigma, delta, upper, do_exact,
                                  float32, progress, backend, max_memory,
                                  {"observers": _describe(observers),
                                   "targets": _describe(targets), "exact": exact,
                                   "scheme": scheme if graph is not None else None})
    facts = matrix_facts(W)
    # c = 1 only, on a large mixing graph: one observer at a time from truncated lags
    truncate = (upper == "none" and 8 * T * n > TRUNCATED_LAG_BYTES and facts.symmetric
                and doubly_stochastic_to_rounding(W))
    b = 1 if truncate else _batch_size(batch_size, n, T, tgt.size, obs.size)
    budget = resources.memory_budget(max_memory)
    table_bytes = obs.size * tgt.size * table_bytes_per_pair(float32)
    resources.require_within(table_bytes + gossip_map_memory(n, tgt.size, T, upper, b), budget,
                             f"the map of {obs.size} x {tgt.size} pairs at T = {T}",
                             "select fewer observers or targets")
    component = facts.weak_components
    pattern = hop_pattern(W, facts)
    lam = batched.lambda_min_lower_bound(W)
    symmetric = facts.symmetric
    every_target = tgt.size == n and bool(np.all(tgt == np.arange(n)))
    pairs = obs.size * tgt.size
    value_type = np.float32 if float32 else np.float64
    lower = np.empty(pairs, dtype=value_type)
    upper_col = np.full(pairs, np.nan, dtype=value_type)
    kind = np.empty(pairs, dtype=np.int8)  # codes into KINDS
    distance = np.empty(pairs, dtype=np.int32)
    buffer = None if truncate else np.empty(b * T * n)  # the lags of one batch, reused
    bar = progress_bar(progress, total=obs.size, desc="observers", unit="observer")
    products = 0
    try:
        for start in range(0, obs.size, b):
            chunk = obs[start:start + b]
            dist = shortest_path(pattern, unweighted=True, indices=chunk)[:, tgt]
            if truncate:  # upper="none": no batch needed after the lower bounds
                walk = one_to_all(W, int(chunk[0]), T)
                products += walk.products
                low = walk.low[None, tgt]
            else:
                batch = batched.observer_batch(W, chunk, T, lam, SPARSE_BACKEND, symmetric,
                                               buffer)
                products += batch.products * chunk.size
                low, _ = batched.ones_interval(batch, None if every_target else tgt)
            for i in range(chunk.size):
                rows = slice((start + i) * tgt.size, (start + i + 1) * tgt.size)
                d = dist[i]
                distance[rows] = np.where(np.isfinite(d), d, -1)
                zero = (component[tgt] != component[chunk[i]]) | (d > T - 1)
                low_i = low[i].copy()  # this observer's rows in float64, narrowed when stored
                up_i = np.full(tgt.size, np.nan)
                kind_i = np.full(tgt.size, KIND_CODE["lower"], dtype=np.int8)
                if upper == "certified":
                    _certify(batch, i, tgt, zero, do_exact, backend, low_i, up_i, kind_i)
                elif upper == "entrywise":
                    up_i = entrywise_upper(batch, i, None if every_target else tgt, backend)
                    kind_i[:] = KIND_CODE["certified upper"]
                _store_rows((lower, upper_col, kind), rows, zero, low_i, up_i, kind_i,
                            upper, float32)
            if bar is not None:
                bar.update(chunk.size)
    finally:
        if bar is not None:
            bar.close()
    parameters = {"T": T, "sigma": sigma, "delta": delta, "view": "secure-summation",
                  "upper": upper, "exact": exact, "nodes": n,
                  "observers": _describe(observers), "targets": _describe(targets),
                  "scheme": scheme if graph is not None else None, "float32": bool(float32)}
    info = {"sparse_matrix_vector_products": products, "batch_size": b,
            "lambda_min_lower_bound": lam, "truncated_lags": bool(truncate)}
    return _assemble(graph, n, obs, tgt, distance, lower, upper_col, kind, sigma, delta,
                     upper, float32, parameters, info)


def _assemble(graph, n, obs, tgt, distance, lower, upper_col, kind, sigma, delta, upper,
              float32, parameters, info) -> PrivacyMap:
    """The :class:`PrivacyMap` from the filled columns (observers major): names, epsilons
    from the stored (outward-rounded) uppers, notes.  The self pairs (observer = target) are
    left out, the rule of every family (:func:`sparsedp.validation.not_among`)."""
    rows_type = np.int32 if n < 2**31 else np.int64
    names = ((graph.ids_of(obs), graph.ids_of(tgt)) if graph is not None
             else (obs.astype(rows_type), tgt.astype(rows_type)))
    observer, target = np.repeat(names[0], tgt.size), np.tile(names[1], obs.size)
    if np.intersect1d(obs, tgt).size:
        keep = (obs[:, None] != tgt[None, :]).ravel()
        observer, target, distance, lower, upper_col, kind = (
            column[keep] for column in (observer, target, distance, lower, upper_col, kind))
    value_type = np.float32 if float32 else np.float64
    epsilon = np.full(lower.size, np.nan, dtype=value_type)
    epsilon_note = None
    if sigma is not None and upper != "none":
        epsilon, epsilon_note = upper_epsilons(upper_col, sigma, delta, float32)
    columns = {
        "observer": observer,
        "target": target,
        "distance": distance,
        "lower": lower,
        "upper": upper_col,
        "kind": KIND_NAMES[kind],
        "epsilon": epsilon,
    }
    notes = ("per-target worst case: max over the map's observers (the target itself "
             "excluded) of the certified upper bounds (each bounds its own pair, so their "
             "maximum bounds the worst case over these observers); lower: max of the lower "
             "bounds",) + ((epsilon_note,) if epsilon_note else ())
    return PrivacyMap(columns=columns, parameters=parameters, notes=notes, info=info)


def _neighbourhood_map(graph, W, obs, tgt, T, sigma, delta, upper, do_exact, float32,
                       progress, backend, max_memory, described) -> PrivacyMap:
    """:func:`privacy_map` with ``view="neighbourhood"``: per observer a, the c = 1 interval
    of every target against the set ``N[a]`` (:func:`batched_sets.set_ones`), and with
    ``upper="certified"`` the single-pair bounds of each pair (the observer's K shared by
    the memo).  ``G_T = 0`` (exact 0) when the hop distance exceeds T (the set reaches one
    hop further than a) or the target is in another component."""
    n = W.shape[0]
    if upper == "certified" and not is_locked(W):
        W = lock_gossip_matrix(W)  # a private copy that the memo may key on
    facts = matrix_facts(W)
    pattern = hop_pattern(W, facts)
    degrees = np.diff(pattern.indptr)
    m = int(degrees[obs].max()) + 1  # the chosen observers' largest closed neighbourhood
    work = neighbourhood_map_memory(n, m, T)
    resources.require_within(obs.size * tgt.size * table_bytes_per_pair(float32) + work,
                             resources.memory_budget(max_memory),
                             f"the neighbourhood map of {obs.size} x {tgt.size} pairs at T = "
                             f"{T}", "select fewer observers or targets")
    every_target = tgt.size == n and bool(np.all(tgt == np.arange(n)))
    value_type = np.float32 if float32 else np.float64
    pairs = obs.size * tgt.size
    lower = np.empty(pairs, dtype=value_type)
    upper_col = np.full(pairs, np.nan, dtype=value_type)
    kind = np.full(pairs, KIND_CODE["lower"], dtype=np.int8)
    distance = np.empty(pairs, dtype=np.int32)
    component = facts.weak_components
    bar = progress_bar(progress, total=obs.size, desc="observers", unit="observer")
    products = 0
    try:
        for i, a in enumerate(obs):
            rows = slice(i * tgt.size, (i + 1) * tgt.size)
            d = shortest_path(pattern, unweighted=True, indices=[int(a)])[0, tgt]
            distance[rows] = np.where(np.isfinite(d), d, -1)
            zero = (component[tgt] != component[a]) | (d > T)
            ones = set_ones(W, closed_neighbourhood(W, [int(a)]), T,
                            None if every_target else tgt, backend=backend,
                            symmetric=facts.symmetric)
            products += ones.products
            low_i, up_i = ones.low.copy(), np.full(tgt.size, np.nan)
            kind_i = np.full(tgt.size, KIND_CODE["lower"], dtype=np.int8)
            if upper == "certified":
                with reuse_scope():  # the observer's lags, K and factor: once (locked W)
                    for k in np.flatnonzero(~zero & (tgt != a)):  # self pair: left out
                        single = squared_sensitivity(W, int(tgt[k]), [int(a)], T,
                                                     view="neighbourhood", exact=do_exact,
                                                     backend=backend, max_memory=max_memory)
                        low_i[k] = max(low_i[k], single.lower)
                        up_i[k] = single.upper
                        kind_i[k] = KIND_CODE["exact" if single.exact is not None
                                              else "certified upper"]
            _store_rows((lower, upper_col, kind), rows, zero, low_i, up_i, kind_i, upper,
                        float32)
            if bar is not None:
                bar.update()
    finally:
        if bar is not None:
            bar.close()
    parameters = {"T": T, "sigma": sigma, "delta": delta, "view": "neighbourhood",
                  "upper": upper, "exact": described["exact"], "nodes": n,
                  "observers": described["observers"], "targets": described["targets"],
                  "scheme": described["scheme"], "float32": bool(float32)}
    info = {"sparse_matrix_vector_products": products, "batch_size": 1,
            "lambda_min_lower_bound": batched.lambda_min_lower_bound(W),
            "truncated_lags": False}
    return _assemble(graph, n, obs, tgt, distance, lower, upper_col, kind, sigma, delta,
                     upper, float32, parameters, info)


def _store_rows(columns, rows, zero, low, up, kind, upper: str, float32: bool) -> None:
    """One observer's rows into the table's ``(lower, upper, kind)`` columns: the pairs with
    ``G_T = 0`` set to the exact 0, float32 bounds rounded outward."""
    low[zero] = 0.0  # G_T = 0 exactly: Delta^2 = 0
    kind[zero] = KIND_CODE["exact"]
    if upper != "none":
        up[zero] = 0.0
    lower_col, upper_col, kind_col = columns
    lower_col[rows] = _narrow(low, down=True) if float32 else low
    upper_col[rows] = _narrow(up, down=False) if float32 else up
    kind_col[rows] = kind


def hop_pattern(W, facts=None):
    """W's pattern in both directions (hop distances ignore direction): W itself when
    symmetric."""
    facts = matrix_facts(W) if facts is None else facts
    return W if facts.symmetric else abs(W) + abs(W).T


def _narrow(values: np.ndarray, down: bool) -> np.ndarray:
    """float64 bounds as float32 rounded outward: every float32 lower bound is <= its float64
    value, every upper bound >= (NaN and infinities kept)."""
    narrow = values.astype(np.float32)
    wrong = (narrow > values) if down else (narrow < values)
    toward = np.float32(-np.inf if down else np.inf)
    narrow[wrong] = np.nextafter(narrow[wrong], toward)
    return narrow


def _certify(batch, i, tgt, zero, do_exact, backend, lower, upper, kind) -> None:
    """Per-pair certified bounds for observer ``i`` of the batch (the pairs with ``G_T = 0``
    skipped), written into its rows ``lower``, ``upper``, ``kind`` (codes into KINDS)."""
    todo = np.flatnonzero(~zero)
    if not todo.size:
        return
    sandwiches = batched.pair_sandwiches(batch, i, tgt[todo])
    for k, sandwich in zip(todo, sandwiches, strict=True):
        low, up, is_exact, _ = batched.pair_bounds(sandwich, do_exact, backend)
        lower[k] = max(lower[k], low)
        upper[k] = up
        kind[k] = KIND_CODE["exact" if is_exact else "certified upper"]


def upper_epsilons(upper: np.ndarray, sigma: float, delta: float, float32: bool = False
                   ) -> tuple[np.ndarray, str | None]:
    """``gaussian_epsilon`` of each certified upper bound (float32 rounded up when
    ``float32``), and a note when it is rounded up.

    Up to :data:`EXACT_EPSILONS` distinct values: each converted exactly.  Beyond (80 us a
    conversion), each value uses the epsilon of the next point above it on a geometric grid of
    ratio :data:`EPSILON_GRID_RATIO` reaching the largest value (values below its first
    point, ``1e-16`` of the largest, use that point): epsilon increases with the squared
    sensitivity, so this is still an upper bound on the pair's epsilon, at most the change of
    a 0.1% larger sensitivity above the exact conversion.  Distinct values, grid indices and
    the output are handled in slices of :data:`EPSILON_SLICE` pairs (no table-sized
    temporary)."""
    slices = [slice(k, k + EPSILON_SLICE) for k in range(0, upper.size, EPSILON_SLICE)]
    distinct = np.empty(0, dtype=upper.dtype)
    for part in slices:
        distinct = np.union1d(distinct, upper[part])
        if distinct.size > EXACT_EPSILONS:
            break
    if distinct.size <= EXACT_EPSILONS:
        points = distinct.astype(np.float64)
        note = None
    else:
        top = float(np.nanmax(upper))
        steps = int(math.ceil(math.log(1e16) / math.log(EPSILON_GRID_RATIO)))
        points = top * EPSILON_GRID_RATIO ** np.arange(-steps, 1, dtype=np.float64)
        points[-1] = top  # the largest value exactly
        note = (f"epsilon: more than {EXACT_EPSILONS} distinct upper bounds, each converted "
                f"at the next point above it of a geometric grid (ratio {EPSILON_GRID_RATIO}):"
                " an upper bound on the exact conversion")
    used = np.zeros(points.size, dtype=bool)
    for part in slices:
        used[_point_above(points, upper[part])] = True
    eps = np.full(points.size, np.nan)
    eps[used] = [gaussian_epsilon(float(p), sigma, delta) for p in points[used]]
    if float32:
        eps = _narrow(eps, down=False)
    out = np.empty(upper.size, dtype=eps.dtype)
    for part in slices:
        out[part] = eps[_point_above(points, upper[part])]
    return out, note


def _point_above(points: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Index of the first of the sorted ``points`` at or above each value (the last point for
    values above them all)."""
    index = np.minimum(np.searchsorted(points, values, side="left"), points.size - 1)
    while np.any(points[index] < values):  # guard the rounding of the comparison
        index = np.minimum(index + (points[index] < values), points.size - 1)
    return index


def _source(source, scheme: str) -> tuple[Graph | None, sp.csr_matrix]:
    """``(graph, W)``: graph input (labels) or a matrix (rows; ``graph`` None)."""
    if sp.issparse(source) or isinstance(source, (np.ndarray, list)):
        Ws, _ = gossip_sequence(source, 1)
        return None, Ws[0]
    graph = as_graph(source)
    return graph, gossip_matrix(graph, scheme=scheme)


def _batch_size(batch_size, n: int, T: int, targets: int, observers: int) -> int:
    if batch_size is not None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ParameterError(f"batch_size must be an integer >= 1, got {batch_size!r}")
        return batch_size
    return default_batch(n, T, observers)


def _describe(selection):
    """The selection argument as plain data (for the parameters)."""
    if isinstance(selection, str):
        return selection
    if isinstance(selection, tuple) and selection and selection[0] == "sample":
        return ["sample", *selection[1:]]
    return [_item(v) for v in np.asarray(selection, dtype=object).ravel().tolist()]
