"""What a map request will cost, stated before it starts: pairs, an estimated time, and the
size of its table in memory and as Parquet; and the pair limit of the library's maps.

The time is an **estimate** from the cost model of docs/privacy_maps.md ("Cost model") with
the rates measured there on the 2-core reference machine (section "Measured"): sparse
products at :data:`SPARSE_ENTRIES_PER_SECOND`, dense multiply-adds at
:data:`MULTIPLY_ADDS_PER_SECOND`, and the per-pair costs of the bound evaluations.  It is
within a factor of about two of every measured run of that page
(``tests/test_map_guards.py``), and moves with the machine and its load: it decides whether
a request is stated and refused before it starts (:func:`require_pairs`, the CLI's
``--yes``), never a number reported as a result.  The Parquet size is
:data:`PARQUET_ROW_BYTES` plus the bytes of each computed value column per row, measured on
tables written by :func:`sparsedp.maps.store.write_map` (integer node ids; string labels
take more).

:data:`DEFAULT_MAX_PAIRS` (10^7 pairs: 0.5 GB of float64 table in memory, about 0.1-0.3 GB
of Parquet) is the largest map :func:`sparsedp.privacy_map`, :func:`sparsedp.random_walk_map`
and :func:`sparsedp.mf_map` compute unless ``max_pairs`` is raised (``max_pairs=None``: no
limit).  :func:`sparsedp.per_target_worst_case` keeps no pair table and has no pair limit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from sparsedp.errors import ParameterError, ResourceLimitError
from sparsedp.graphs.graph import as_graph
from sparsedp.maps.selection import select_nodes
from sparsedp.resources import QUERY_OVERHEAD

__all__ = ["DEFAULT_MAX_PAIRS", "MapPlan", "map_plan", "require_pairs"]

DEFAULT_MAX_PAIRS = 10**7
FAMILIES = ("gossip", "random-walk", "mf", "per-target")
# Rates of the reference machine (docs/privacy_maps.md, "Measured"):
SPARSE_ENTRIES_PER_SECOND = 2e9  # batched W @ X: the c = 1 map of 10^8 pairs, T = 100: 151 s
MULTIPLY_ADDS_PER_SECOND = 7e9  # GEMM: marginal observer of that map, 32.6 ms less its spmv
BATCH_BYTES = 256 << 20  # lags and right-hand sides of one observer batch
MAX_BATCH = 32
#: T x T floats per target held by the secure-summation map's upper bounds: ``sum |M_T|``
#: for every target at once (entrywise: traced 1.3-1.5 with the numba Gram reduction, up to
#: 5.8 once; its numpy twin holds Y, the targets' Gram matrices and their absolute values),
#: the per-pair bounds (certified: traced 3.1-3.2); chung-lu and geometric graphs,
#: n = 240-1200, T = 20-40.
UPPER_SQUARES = {"none": 0.0, "entrywise": 7.0, "certified": 6.0}
ENTRYWISE_PAIR_SECONDS = 2e-6  # per target of an observer (its T x T Gram): 4e6 pairs, 25 s
CERTIFIED_PAIR_SECONDS_T30 = 1.3e-3  # single-pair bounds at T = 30, O(T^3) beyond; its
# Python overhead below (3.4 ms a pair at T = 10 on the loaded machine)
MF_PAIR_SECONDS = 7e-3  # mf_sensitivity's overhead a pair (8.1 ms at T = 20) ...
MF_PAIR_CUBE_SECONDS = 9.3e-8  # ... plus this times T^3 (0.1 s a pair at T = 100)
RANDOM_WALK_STEP_SECONDS = 3.2e-4  # one step of one target's column (2000 targets, T = 100:
# 64.9 s)
TABLE_PAIR_SECONDS = 3e-7  # epsilons, summaries and the Parquet file, per pair
PARQUET_ROW_BYTES = 2  # observer, target, distance and kind (run-length and dictionary
# encoded); plus 4 or 8 bytes per computed value column (measured: 9.3 bytes a row for
# lower only in float64, 6.1 in float32; 20.1 and 13.4 with upper and epsilon)


@dataclass(frozen=True)
class MapPlan:
    """A map request's size and estimated cost, known before any work.

    Attributes
    ----------
    what : str
        The request, in words (``"the map"``, ``"the random-walk map"``, ...).
    observers, targets : int
        Selected observers and targets.
    pairs : int
        Rows of the pair table (the pairs a per-target worst case considers).
    seconds : float
        Estimated wall time on the reference machine (module docstring): an estimate.
    memory_bytes : int
        Estimated peak memory of the call: the pair table while it is built (none for a
        per-target worst case) and the work of one observer batch
        (:func:`gossip_map_memory`, :func:`neighbourhood_map_memory`,
        :func:`worst_case_memory`; the random-walk and matrix-factorisation maps: the
        table, and each pair's own check).
    parquet_bytes : int
        Estimated size of the table as Parquet (0 where none is written).

    Examples
    --------
    >>> import networkx as nx
    >>> from sparsedp.maps.plan import map_plan
    >>> plan = map_plan(nx.cycle_graph(100), T=10, upper="none")
    >>> plan.pairs, plan.observers, plan.targets
    (9900, 100, 100)
    """

    what: str
    observers: int
    targets: int
    pairs: int
    seconds: float
    memory_bytes: int
    parquet_bytes: int

    def describe(self) -> str:
        """One line: the pairs, the estimated time and the sizes."""
        sizes = f"about {_size(self.memory_bytes)} in memory"
        if self.parquet_bytes:
            sizes += f", about {_size(self.parquet_bytes)} as Parquet"
        selves = self.observers * self.targets - self.pairs
        pairs = f"{self.pairs:,} pairs" + (f" ({selves:,} self pairs left out)" if selves else "")
        return (f"{self.what}: {self.observers:,} observers x {self.targets:,} targets = "
                f"{pairs}; estimated time about {_duration(self.seconds)} "
                f"(a rough estimate); {sizes}")

    def to_dict(self) -> dict:
        """The plan as plain data."""
        return dict(self.__dict__)


def map_plan(source, observers="all", targets="all", T: int = 100, *,
             family: str = "gossip", upper: str = "certified",
             view: str = "secure-summation", exact=False, float32: bool = False,
             epsilon: bool = True) -> MapPlan:
    """The :class:`MapPlan` of a map of ``source`` (module docstring), without computing it.

    Parameters
    ----------
    source : a gossip matrix W or a graph, as for :func:`sparsedp.privacy_map`.
    observers, targets : ``"all"``, a list of nodes or ``("sample", k, seed)``.
    T : rounds.
    family : ``"gossip"`` (:func:`sparsedp.privacy_map`), ``"random-walk"``, ``"mf"`` or
        ``"per-target"`` (:func:`sparsedp.per_target_worst_case`).
    upper, view, exact, float32 : as for :func:`sparsedp.privacy_map` (gossip only).
    epsilon : whether the table has an epsilon column (sigma and delta given).

    Returns
    -------
    MapPlan

    Raises
    ------
    ParameterError
        An unknown family, or a bad selection.
    GraphError
        An unknown node.

    Examples
    --------
    >>> import networkx as nx
    >>> from sparsedp.maps.plan import map_plan
    >>> map_plan(nx.cycle_graph(10_000), T=100, upper="none").describe()[:60]
    'the map: 10,000 observers x 10,000 targets = 99,990,000 pair'
    """
    if family not in FAMILIES:
        raise ParameterError(f"family must be one of {FAMILIES}, got {family!r}")
    if sp.issparse(source) or isinstance(source, (np.ndarray, list)):
        W = sp.csr_array(source)
        graph, n, nnz, degrees = None, W.shape[0], W.nnz, np.diff(W.indptr)
    else:
        graph = as_graph(source)
        n = graph.n
        nnz = graph.adjacency.nnz + n  # W's pattern: the edges both ways and the diagonal
        degrees = np.diff(graph.adjacency.tocsr().indptr) + 1
    obs = select_nodes(observers, graph, n, "observers")
    tgt = select_nodes(targets, graph, n, "targets")
    pairs = obs.size * tgt.size - np.intersect1d(obs, tgt).size  # no self pairs in any table
    return estimate(family, n, nnz, obs.size, tgt.size, pairs, T, upper=upper, view=view,
                    exact=exact, float32=float32, epsilon=epsilon,
                    set_size=float(degrees[obs].mean()) if view == "neighbourhood" else 1.0,
                    largest_set=int(degrees[obs].max()) if obs.size else 1)


def estimate(family: str, n: int, nnz: int, observers: int, targets: int, pairs: int, T: int,
             *, upper: str = "certified", view: str = "secure-summation", exact=False,
             float32: bool = False, epsilon: bool = True, set_size: float = 1.0,
             largest_set: int = 1) -> MapPlan:
    """The :class:`MapPlan` from the request's sizes (the cost model of the module docstring;
    ``set_size``, ``largest_set``: the observers' mean and largest closed-neighbourhood
    sizes, for the neighbourhood view)."""
    spmv, flops = SPARSE_ENTRIES_PER_SECOND, MULTIPLY_ADDS_PER_SECOND
    value_bytes = 4 if float32 else 8
    columns = 1  # the lower bound
    if family == "per-target":
        seconds = observers * (2 * T * nnz / spmv + (T * n + 20 * T**3) / flops)
        memory = worst_case_memory(n, targets, observers, T, default_batch(n, T, observers),
                                   kept=True)
        return MapPlan("the per-target worst case", observers, targets, pairs, seconds,
                       memory, 0)
    if family == "random-walk":
        seconds = targets * T * (RANDOM_WALK_STEP_SECONDS + nnz / spmv)
        columns = 1 + int(epsilon)  # upper (no lower) and epsilon
        what = "the random-walk map"
    elif family == "mf":
        seconds = pairs * (MF_PAIR_SECONDS + MF_PAIR_CUBE_SECONDS * T**3)
        columns = 2 + int(epsilon)
        what = "the matrix-factorisation map"
    else:
        m = set_size
        mT = m * T
        seconds = observers * (T * m * nnz / spmv + (mT * mT * targets + 2 * T * m * m * n
                                                   + mT**3) / flops)
        if upper == "entrywise":
            seconds += observers * T**3 * n / flops + pairs * ENTRYWISE_PAIR_SECONDS
        elif upper == "certified":
            per_pair = CERTIFIED_PAIR_SECONDS_T30 * max(1.0, (mT / 30) ** 3)
            if exact is True or (exact == "auto" and T <= 24):
                per_pair += 2.0 ** (T - 1) * mT / flops  # every sign vector, O(mT) each
            seconds += pairs * per_pair
        columns += (upper != "none") * (1 + int(epsilon))
        what = "the map" if view == "secure-summation" else "the neighbourhood map"
    seconds += pairs * TABLE_PAIR_SECONDS
    memory = pairs * table_bytes_per_pair(float32)
    if family == "gossip" and view == "neighbourhood":
        memory += neighbourhood_map_memory(n, largest_set, T)
    elif family == "gossip":
        memory += gossip_map_memory(n, targets, T, upper, default_batch(n, T, observers))
    parquet = pairs * (PARQUET_ROW_BYTES + columns * value_bytes)
    return MapPlan(what, observers, targets, pairs, seconds, memory, parquet)


def default_batch(n: int, T: int, observers: int) -> int:
    """Observers propagated together by default: as many as fit :data:`BATCH_BYTES` with
    their ``T n`` lags, at most :data:`MAX_BATCH`."""
    return int(max(1, min(MAX_BATCH, observers, BATCH_BYTES // (8 * T * n))))


def gossip_map_memory(n: int, targets: int, T: int, upper: str, batch: int) -> int:
    """Bytes the secure-summation map holds besides its table: the lags and right-hand sides
    of one observer batch (``3 b T n`` floats) and the upper bounds' T x T work per target
    (:data:`UPPER_SQUARES`), plus :data:`sparsedp.resources.QUERY_OVERHEAD`."""
    return int(8 * (3 * batch * T * n + UPPER_SQUARES[upper] * targets * T * T)
               + QUERY_OVERHEAD)


def neighbourhood_map_memory(n: int, m: int, T: int) -> int:
    """Bytes the neighbourhood map holds besides its table, for closed neighbourhoods of at
    most m nodes: ``8 (2 T m n + 4 (mT)^2)`` (the set's lags and right-hand sides; its K,
    factor and solves; traced 0.73-0.93 of it) plus
    :data:`sparsedp.resources.QUERY_OVERHEAD`."""
    return 8 * (2 * T * m * n + 4 * (m * T) ** 2) + QUERY_OVERHEAD


def worst_case_memory(n: int, targets: int, observers: int, T: int, batch: int,
                      kept: bool) -> int:
    """Bytes of :func:`sparsedp.per_target_worst_case`: one observer batch's lags
    (``3 b T n`` floats), 64 bytes per target, and with refinement or the exhaustive search
    (``kept``) a T x T matrix per observer, plus
    :data:`sparsedp.resources.QUERY_OVERHEAD`."""
    return (3 * 8 * batch * T * n + 64 * targets + (8 * T * T * observers if kept else 0)
            + QUERY_OVERHEAD)


def require_pairs(plan: MapPlan, max_pairs) -> None:
    """ResourceLimitError (one line: the pair count, the limit, how to raise it) when the
    plan has more than ``max_pairs`` pairs; ``max_pairs=None`` is no limit."""
    if max_pairs is None:
        return
    if isinstance(max_pairs, bool) or not isinstance(max_pairs, (int, np.integer)) \
            or max_pairs < 1:
        raise ParameterError(f"max_pairs must be an integer >= 1 or None, got {max_pairs!r}")
    if plan.pairs > max_pairs:
        raise ResourceLimitError(
            f"{plan.what} has {plan.pairs:,} pairs ({plan.observers:,} observers x "
            f"{plan.targets:,} targets), more than max_pairs={max_pairs:,}; estimated time "
            f"about {_duration(plan.seconds)}, table {_size(plan.memory_bytes)} in memory, "
            f"about {_size(plan.parquet_bytes)} as Parquet. Pass max_pairs={plan.pairs} (or "
            "None for no limit) to compute it, or select fewer observers or targets")


def table_bytes_per_pair(float32: bool) -> int:
    """The pair table's bytes per pair while it is built (as checked against the memory
    budget by :func:`sparsedp.privacy_map`): ids, distance, three value columns, the kind's
    code and string, and the epsilon conversion's work."""
    return 12 + 3 * (4 if float32 else 8) + 17 + 16


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{max(seconds, 1):.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 86400 * 2:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.0f} days"


def _size(size: float) -> str:
    for unit in ("bytes", "kB", "MB", "GB"):
        if size < 1000:
            return f"{size:.0f} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{size:.1f} TB"

