"""The PPAC protocol (Fereydounian et al., Algorithm 1) as a simulator for large sparse graphs.

Preparation phase.  Node ``k`` picks a designated neighbour ``m_k`` in ``N_k``, draws a pure
noise fragment ``Gamma_kl`` for every other neighbour ``l`` and sends

    Gamma_{k m_k} = u_k - sum_{l in N_k, l != m_k} Gamma_kl              (paper eq. 7)

to ``m_k``, so that the fragments of ``k`` sum to its private value ``u_k`` (eq. 6).  Node ``l``
starts the consensus from ``v_l(0) = sum_{k in N_l} Gamma_kl``, hence ``sum_l v_l(0) = sum_k u_k``.

Consensus phase.  ``v(t + 1) = W v(t)``; with ``W 1 = W^T 1 = 1`` and
``rho(W - 11^T/n) < 1`` every ``v_l(t)`` tends to the average ``u* = (1/n) sum_k u_k``.

Randomness sources (paper eq. 14): ``g = (u_1..u_n, Gamma_kl for (k, l) in S)`` with
``S = {(k, l): l in N_k, l != m_k}`` (``|S| = 2m - n``), and ``v(0) = C g`` with the
``n x 2m`` *source matrix* ``C``: column ``u_k`` is ``e_{m_k}``, column ``Gamma_kl`` is
``e_l - e_{m_k}`` (eq. 13 at t = 0).

Nodes.  Every node argument and every node in a result is a *label* of the graph (its
networkx node, its edge-list id; ``0..n-1`` for generators and matrices), see
:mod:`sparsedp.graphs.graph`.  Arrays with one entry per node (values, standard deviations,
``v(t)``) and the consensus matrix ``W`` are in the graph's node order (``list(G)`` for a
networkx graph, ``as_graph(G).node_ids``); :meth:`sparsedp.graphs.Graph.per_node` turns such an
array into a dict keyed by label.

Layout.  Directed edges ``e = (k, l)`` are numbered in the CSR order of the adjacency (row
``k``, sorted ``l``), so per-edge arrays (fragments, noise standard deviations) line up with
``graph.adjacency.indices``.  The preparation is O(edges) per realisation; realisations (and
the coordinates of vector values) are columns of one block, so a consensus round is one
sparse-times-dense product for all of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsedp import defaults, resources, validation
from sparsedp.errors import GossipMatrixError, GraphError, ParameterError
from sparsedp.graphs.graph import Graph, as_graph, require_connected
from sparsedp.linalg.kernels import spmm
from sparsedp.linalg.stochastic import as_square_sparse, check_gossip_matrix
from sparsedp.reprs import short_repr

__all__ = [
    "AttackerView",
    "PPACLayout",
    "Preparation",
    "laplacian_consensus_matrix",
    "ppac_layout",
    "random_designated",
]

SIMULATION_BATCH_FLOATS = 1 << 27  # numbers of one batch of simulated runs (1 GiB of float64)


def laplacian_consensus_matrix(graph: Any, scale: float | None = None) -> sp.csr_matrix:
    """The paper's consensus matrix ``W = I - L / c`` with ``L = D - A`` and ``c = d_max``.

    ``scale = c`` must be ``>= d_max`` (so that ``W >= 0``).  ``W`` is symmetric and doubly
    stochastic.  With ``c = d_max`` it has the eigenvalue ``-1`` exactly when the graph is
    bipartite and ``d_max``-regular (even cycles, hypercubes): W is then periodic and the
    consensus does not converge.  ``c = d_max + 1`` (or any ``c > d_max``) is aperiodic.
    The leakage does not depend on ``c``: ``span{(I - L/c)^s : s <= t} = span{L^s : s <= t}``.
    Rows and columns follow the graph's node order (``as_graph(graph).node_ids``).

    Parameters
    ----------
    graph : networkx.Graph, Graph, scipy.sparse matrix, numpy.ndarray, str or os.PathLike
        A connected graph with at least two nodes (anything :func:`sparsedp.as_graph`
        accepts).
    scale : float, optional
        ``c >= d_max`` (default ``d_max``).

    Returns
    -------
    scipy.sparse.csr_matrix
        ``W = I - L / c``.

    Raises
    ------
    GraphError
        For a single node or a disconnected graph.
    ParameterError
        If ``scale`` is below ``d_max`` or not finite.

    Examples
    --------
    On the 6-cycle (bipartite, 2-regular) ``c = d_max = 2`` is periodic; ``c = 3`` is not:

    >>> import networkx as nx, sparsedp
    >>> sparsedp.laplacian_consensus_matrix(nx.cycle_graph(6)).toarray()[0]
    array([0. , 0.5, 0. , 0. , 0. , 0.5])
    >>> W = sparsedp.laplacian_consensus_matrix(nx.cycle_graph(6), scale=3)
    >>> W.toarray()[0].round(4)
    array([0.3333, 0.3333, 0.    , 0.    , 0.    , 0.3333])
    >>> sparsedp.gossip_properties(W)["primitive"]
    True
    """
    g = as_graph(graph)
    if g.n < 2:
        raise GraphError("graph has a single node; consensus needs at least 2 nodes")
    require_connected(g)
    d = g.degrees.astype(np.float64)
    c = float(d.max()) if scale is None else float(scale)
    if not np.isfinite(c) or c < d.max():
        raise ParameterError(f"scale must be >= d_max = {int(d.max())}, got {scale!r}")
    W = sp.identity(g.n, format="csr") - (sp.diags(d) - g.adjacency) / c
    W = sp.csr_matrix(W)
    W.eliminate_zeros()
    W.sort_indices()
    return W


def random_designated(graph: Any, seed: int | None = None) -> dict[Any, Any]:
    """Designated neighbours ``m_k`` drawn uniformly from ``N_k`` (as in the paper's App. A):
    ``{k: m_k}`` keyed by node label, in node order, for :func:`ppac_layout`."""
    g = as_graph(graph)
    deg = g.degrees
    if np.any(deg == 0):
        raise GraphError(f"node {g.id_of(np.flatnonzero(deg == 0)[0])!r} has no neighbour")
    pick = np.floor(np.random.default_rng(seed).random(g.n) * deg).astype(np.int64)
    m = g.adjacency.indices[g.adjacency.indptr[:-1] + pick]
    return dict(zip(g.node_ids.tolist(), g.ids_of(m).tolist(), strict=True))


@dataclass(frozen=True, eq=False)
class PPACLayout:
    """A connected graph with designated neighbours: the indexing of PPAC's randomness.

    ``designated``: ``{k: m_k}`` by node label; the arrays below are by position (row index
    of ``graph``): ``designated_index[k]`` the position of ``m_k``, ``src[e], dst[e]``:
    directed edge ``e`` (CSR order); ``designated_edge[k]``: the edge ``(k, m_k)``;
    ``noise_edges``: the edges of ``S`` in increasing order; source ``n + s`` of ``g`` is the
    fragment of edge ``noise_edges[s]`` (sources ``0..n-1`` are the values, in node order).
    """

    graph: Graph
    designated_index: np.ndarray

    __repr__ = short_repr

    @property
    def designated(self) -> dict[Any, Any]:
        """The designated neighbours ``{k: m_k}``, keyed by node label."""
        g = self.graph
        return dict(zip(g.node_ids.tolist(), g.ids_of(self.designated_index).tolist(),
                        strict=True))

    @property
    def n(self) -> int:
        return self.graph.n

    @property
    def num_sources(self) -> int:
        """``2m``: n private values and ``2m - n`` pure noise fragments."""
        return self.graph.adjacency.nnz

    @cached_property
    def src(self) -> np.ndarray:
        A = self.graph.adjacency
        return np.repeat(np.arange(self.n, dtype=np.int64), np.diff(A.indptr))

    @cached_property
    def dst(self) -> np.ndarray:
        return self.graph.adjacency.indices.astype(np.int64)

    @cached_property
    def designated_edge(self) -> np.ndarray:
        keys = self.src * self.n + self.dst  # increasing: CSR rows with sorted indices
        return np.searchsorted(keys, np.arange(self.n) * self.n + self.designated_index)

    @cached_property
    def noise_edges(self) -> np.ndarray:
        mask = np.ones(self.num_sources, dtype=bool)
        mask[self.designated_edge] = False
        return np.flatnonzero(mask)

    @cached_property
    def edge_source(self) -> np.ndarray:
        """Source index of the fragment of each edge; ``-1`` for designated edges (not a source)."""
        out = np.full(self.num_sources, -1, dtype=np.int64)
        out[self.noise_edges] = self.n + np.arange(self.noise_edges.size)
        return out

    def source_matrix(self) -> sp.csr_matrix:
        """``C`` (n x 2m) with ``v(0) = C g``: column ``u_k`` = ``e_{m_k}``, column ``Gamma_kl``
        = ``e_l - e_{m_k}``."""
        n, e = self.n, self.noise_edges
        k, dst = self.src[e], self.dst[e]
        cols = self.n + np.arange(e.size)
        m = self.designated_index
        rows = np.concatenate([m, dst, m[k]])
        columns = np.concatenate([np.arange(n), cols, cols])
        data = np.concatenate([np.ones(n + e.size), -np.ones(e.size)])
        return sp.csr_matrix((data, (rows, columns)), shape=(n, self.num_sources))

    def source_std(self, value_std: Any, noise_std: Any) -> np.ndarray:
        """Standard deviations of the 2m sources: ``value_std`` (scalar or per node) and
        ``noise_std`` (scalar or per directed edge; designated edges are ignored)."""
        sv = _per_item("value_std", value_std, self.n)
        sn = _per_item("noise_std", noise_std, self.num_sources)
        return np.concatenate([sv, sn[self.noise_edges]])


def _in_node_order(g: Graph, values: Mapping, name: str) -> list:
    """The values of a dict ``{label: value}`` as a list in node order (every node once)."""
    if len(values) != g.n:
        raise ParameterError(f"{name} must give one entry per node ({g.n}), got {len(values)}")
    out = [None] * g.n
    for label, value in values.items():
        out[g.index_of(label, f"{name} (a key)")] = value
    if any(v is None for v in out):
        raise ParameterError(f"{name} names a node twice and misses another")
    return out


def _per_item(name: str, value: Any, size: int, positive: bool = True) -> np.ndarray:
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim == 0:
        arr = np.full(size, float(arr))
    if arr.shape != (size,):
        raise ParameterError(f"{name} must be a scalar or have {size} entries, got shape "
                             f"{arr.shape}")
    if not np.all(np.isfinite(arr)) or (positive and np.any(arr <= 0)):
        raise ParameterError(f"{name} must be finite{' and > 0' if positive else ''}")
    return arr


def _designated_positions(g: Graph, designated: Any) -> np.ndarray:
    """Positions of the designated neighbours from ``{k: m_k}`` by label (every node once)
    or a sequence of ``n`` labels in node order."""
    if isinstance(designated, Mapping):
        keys = g.indices_of(list(designated.keys()), "designated (a key)")
        values = g.indices_of(list(designated.values()), "designated (a value)")
        m = np.full(g.n, -1, dtype=np.int64)
        m[keys] = values
        if np.any(m < 0):
            raise ParameterError("designated has no neighbour for node "
                                 f"{g.id_of(np.flatnonzero(m < 0)[0])!r} (one per node)")
        return m
    if isinstance(designated, (str, bytes)) or not hasattr(designated, "__len__") \
            or len(designated) != g.n:
        raise ParameterError(f"designated must be a dict {{node: designated neighbour}} or "
                             f"{g.n} node labels in node order, got {designated!r:.80}")
    return g.indices_of(designated, "designated")


def ppac_layout(graph: Any, designated: Any) -> PPACLayout:
    """Validate ``m_k in N_k`` for every node ``k`` of a connected graph (n >= 2).

    ``designated``: ``{k: m_k}`` keyed by node label (as :func:`random_designated` returns),
    or a sequence of the ``m_k`` labels in node order (``as_graph(graph).node_ids``).

    Parameters
    ----------
    graph : networkx.Graph, Graph, scipy.sparse matrix, numpy.ndarray, str or os.PathLike
        A connected graph with at least two nodes.
    designated : dict or sequence
        The designated neighbour ``m_k`` of every node ``k`` (labels).

    Returns
    -------
    PPACLayout
        The graph with its designated neighbours, for :func:`sparsedp.ppac_leakage`.

    Raises
    ------
    GraphError
        For a single node, a disconnected graph, an unknown label, or an ``m_k`` that is
        not a neighbour of ``k``.
    ParameterError
        If ``designated`` does not give one neighbour per node.

    Examples
    --------
    >>> import networkx as nx, sparsedp
    >>> layout = sparsedp.ppac_layout(nx.cycle_graph(6), {k: (k + 1) % 6 for k in range(6)})
    >>> layout.designated_index.tolist()
    [1, 2, 3, 4, 5, 0]
    >>> try:
    ...     sparsedp.ppac_layout(nx.cycle_graph(6), [2, 2, 3, 4, 5, 0])
    ... except sparsedp.GraphError as err:
    ...     print(err)
    designated[0] = 2 is not a neighbour of node 0
    """
    g = as_graph(graph)
    if g.n < 2:
        raise GraphError("graph has a single node; PPAC needs at least 2 nodes")
    require_connected(g)
    m = _designated_positions(g, designated)
    A = g.adjacency
    ok = np.asarray(A[np.arange(g.n), m]).ravel() != 0
    if not ok.all():
        k = int(np.flatnonzero(~ok)[0])
        raise GraphError(f"designated[{g.id_of(k)!r}] = {g.id_of(m[k])!r} is not a neighbour "
                         f"of node {g.id_of(k)!r}")
    return PPACLayout(g, m)


@dataclass(frozen=True)
class Preparation:
    """Outcome of the preparation phase for ``c`` columns (coordinates x realisations).

    ``values`` (n, c), ``fragments`` (2m, c): ``Gamma_e`` of every directed edge in CSR order,
    ``v0`` (n, c); the ``n`` rows are in the graph's node order (``graph.per_node`` keys a
    column by label).  ``shape`` is ``(d, R)``: column ``a * R + r`` is coordinate ``a`` of
    realisation ``r``.
    """

    layout: PPACLayout
    values: np.ndarray
    fragments: np.ndarray
    v0: np.ndarray
    shape: tuple[int, int]

    def average(self) -> np.ndarray:
        """``u*`` per column (c,)."""
        return self.values.mean(axis=0)


def prepare(layout: PPACLayout, values: Any = None, *, realisations: int = 1,
            value_mean: float = 0.0, value_std: Any = defaults.PPAC_VALUE_STD,
            noise_mean: float = 0.0, noise_std: Any = defaults.PPAC_NOISE_STD,
            seed: int | np.random.SeedSequence | np.random.Generator | None = None
            ) -> Preparation:
    """Run the preparation phase (Algorithm 1, lines 1-8) for many realisations at once.

    ``values``: ``(n,)`` scalars or ``(n, d)`` vectors in node order (or a dict
    ``{label: value}`` covering every node), shared by all realisations; ``None``
    draws them i.i.d. ``N(value_mean, value_std^2)`` per realisation (``value_std`` scalar or
    per node).  Pure noises ``Gamma_kl ~ N(noise_mean, noise_std^2)`` independently for every
    coordinate and realisation (``noise_std`` scalar or per directed edge).  Then
    ``Gamma_{k m_k} = u_k - sum_{l != m_k} Gamma_kl`` and ``v_l(0) = sum_{k in N_l} Gamma_kl``.
    """
    if isinstance(realisations, bool) or not isinstance(realisations, (int, np.integer)) \
            or realisations < 1:
        raise ParameterError(f"realisations must be an integer >= 1, got {realisations!r}")
    n, R = layout.n, int(realisations)
    rng = np.random.default_rng(seed)
    if values is None:
        sv = _per_item("value_std", value_std, n)
        u = value_mean + sv[:, None] * rng.standard_normal((n, R))
        d = 1
    else:
        if isinstance(values, Mapping):
            values = _in_node_order(layout.graph, values, "values")
        u = np.asarray(values, dtype=np.float64)
        if u.ndim == 1:
            u = u[:, None]
        if u.ndim != 2 or u.shape[0] != n or not np.all(np.isfinite(u)):
            raise ParameterError(f"values must be finite with shape ({n},) or ({n}, d), got "
                                 f"shape {np.shape(values)}")
        d = u.shape[1]
        u = np.repeat(u, R, axis=1)
    sn = _per_item("noise_std", noise_std, layout.num_sources)
    fragments = noise_mean + sn[:, None] * rng.standard_normal((layout.num_sources, d * R))
    # Gamma_{k m_k} = u_k - (sum of k's pure noises): zero the designated rows, segment-sum.
    fragments[layout.designated_edge] = 0.0
    A = layout.graph.adjacency
    row_sums = np.add.reduceat(fragments, A.indptr[:-1], axis=0)
    fragments[layout.designated_edge] = u - row_sums
    incoming = sp.csr_matrix((np.ones(layout.num_sources), (layout.dst,
                              np.arange(layout.num_sources))), shape=(n, layout.num_sources))
    v0 = np.asarray(incoming @ fragments)
    return Preparation(layout, u, fragments, v0, (d, R))


def check_consensus_matrix(W: Any, n: int) -> sp.csr_matrix:
    """``W`` as CSR after checking it is n x n, non-negative and doubly stochastic (the sum
    ``sum_l v_l(t) = sum_k u_k`` is then preserved)."""
    M = as_square_sparse(W)
    if M.shape[0] != n:
        raise GossipMatrixError(f"W is {M.shape[0]} x {M.shape[0]} but the graph has {n} nodes")
    check_gossip_matrix(M, require=("nonnegative", "doubly_stochastic"))
    return M


def consensus_rounds(W: sp.csr_matrix, v0: np.ndarray, rounds: int,
                     record: np.ndarray | None = None):
    """Run ``v(t + 1) = W v(t)`` for ``t < rounds``; yield ``(t, v(t))`` for ``t = 0..rounds``
    (``v(t)`` restricted to the rows ``record`` when given; the full state is never stored)."""
    v = np.ascontiguousarray(v0, dtype=np.float64)
    for t in range(rounds + 1):
        yield t, (v if record is None else v[record])
        if t < rounds:
            v = spmm(W, v)


def consensus_errors(W: Any, prep: Preparation, rounds: int, max_memory=None) -> np.ndarray:
    """``||v(t) - u* 1||_2`` for ``t = 0..rounds`` per realisation, shape (rounds + 1, R).

    The table's ``8 (rounds + 1) R`` bytes are checked against the memory budget
    (``max_memory``, :func:`sparsedp.resources.memory_budget`) before any round runs.

    For vector values the norm is over nodes and coordinates together (Frobenius).
    """
    M = check_consensus_matrix(W, prep.layout.n)
    d, R = prep.shape
    rounds = validation.rounds(rounds)
    resources.require_within(  # the error table, before the rounds run
        8.0 * (rounds + 1) * R, resources.memory_budget(max_memory),
        f"{rounds} rounds x {R} realisations of errors", "use fewer rounds or realisations",
    )
    target = prep.average()
    out = np.empty((rounds + 1, R))
    for t, v in consensus_rounds(M, prep.v0, rounds):
        sq = ((v - target) ** 2).sum(axis=0).reshape(d, R).sum(axis=0)
        out[t] = np.sqrt(sq)
    return out


def convergence_times(errors: np.ndarray, eps: float) -> np.ndarray:
    """First ``t`` with ``errors[t] <= eps`` per column (Definition 7.1); ``-1`` if never."""
    hit = errors <= eps
    first = np.argmax(hit, axis=0)
    return np.where(hit.any(axis=0), first, -1)


@dataclass(frozen=True)
class AttackerView:
    """Everything node ``attacker`` holds up to round ``horizon`` (paper eq. 9), per column.

    ``attacker`` and ``neighbours`` are node labels (``neighbours`` in node order);
    ``own_value`` (c,), ``sent`` (deg, c): ``Gamma_{i l}`` for ``l`` in ``neighbours`` (the
    designated one included: it is ``u_i`` minus the others), ``received`` (deg, c):
    ``Gamma_{l i}``, ``messages`` (horizon + 1, deg, c): ``v_l(tau)``.
    """

    attacker: Any
    neighbours: np.ndarray
    own_value: np.ndarray
    sent: np.ndarray
    received: np.ndarray
    messages: np.ndarray

    def features(self) -> np.ndarray:
        """All observed numbers as rows (observations x columns), for estimators."""
        return np.vstack([self.own_value[None], self.sent, self.received,
                          self.messages.reshape(-1, self.messages.shape[-1])])


def attacker_view(W: Any, prep: Preparation, attacker: Any, horizon: int) -> AttackerView:
    """Collect the data ``D_i(horizon)`` of node ``attacker`` (a label) from a simulated run."""
    layout = prep.layout
    i = layout.graph.index_of(attacker, "attacker")
    return _collect_view(check_consensus_matrix(W, layout.n), prep, i, _horizon(horizon))


def _horizon(horizon: Any) -> int:
    """``horizon`` as an int >= 0, else ParameterError."""
    if isinstance(horizon, bool) or not isinstance(horizon, (int, np.integer)) or horizon < 0:
        raise ParameterError(f"horizon must be an integer >= 0, got {horizon!r}")
    return int(horizon)


def _collect_view(M: sp.csr_matrix, prep: Preparation, i: int, horizon: int) -> AttackerView:
    """:func:`attacker_view` of the node at position ``i``, ``M`` already checked."""
    layout = prep.layout
    A = layout.graph.adjacency
    lo, hi = A.indptr[i], A.indptr[i + 1]
    nbrs = A.indices[lo:hi].astype(np.int64)
    # Gamma_{l i}: the edge (l, i) sits in row l at the position of i.
    into = np.array([A.indptr[nb] + np.searchsorted(A.indices[A.indptr[nb]:A.indptr[nb + 1]], i)
                     for nb in nbrs], dtype=np.int64)
    messages = np.stack([v for _, v in consensus_rounds(M, prep.v0, horizon, nbrs)])
    g = layout.graph
    return AttackerView(g.id_of(i), g.ids_of(nbrs), prep.values[i].copy(),
                        prep.fragments[lo:hi].copy(), prep.fragments[into].copy(), messages)


@dataclass(frozen=True)
class _Reach:
    """The part of the protocol a simulation runs: ``nodes`` (sorted positions; all of them,
    or what can reach an attacker's data, :func:`_reach`), the graph, designated neighbours
    and consensus rows restricted to them (exact on the senders and on the cone), and the
    attacker's position there."""

    nodes: np.ndarray
    layout: PPACLayout
    M: sp.csr_matrix
    attacker: int


def _reach(layout: PPACLayout, M: sp.csr_matrix, i: int, horizon: int) -> _Reach | None:
    """The attacker's data ``D_i(t)`` holds ``v_l(tau)`` for its neighbours ``l``: ``v(tau)``
    is needed on ``S_tau = N(i) | {k : M[l, k] != 0, l in S_(tau+1)}`` (``S_t = N(i)``),
    ``v(0)`` on ``S_0`` needs the fragments sent into it, hence the values and every
    fragment of their senders ``K = S_0 | N(S_0)`` (a designated fragment is the value minus
    the sender's other fragments), and the attacker's own fragments are among them.  The
    run is then exact on ``K`` and its neighbours.  ``None`` when that is more than half
    the graph (simulate all of it)."""
    A, n = layout.graph.adjacency, layout.n
    nbrs = A.indices[A.indptr[i]:A.indptr[i + 1]]
    needed = np.zeros(n, dtype=bool)
    needed[nbrs] = True
    count = np.count_nonzero(needed)
    for _ in range(horizon):
        needed[M[np.flatnonzero(needed)].indices] = True
        previous, count = count, np.count_nonzero(needed)
        if 2 * count > n:
            return None
        if count == previous:  # the cone has stopped growing
            break
    needed[A[np.flatnonzero(needed)].indices] = True  # the senders K
    needed[A[np.flatnonzero(needed)].indices] = True  # ... and their neighbours
    nodes = np.flatnonzero(needed)
    if 2 * nodes.size > n:
        return None
    adjacency = A[nodes][:, nodes].tocsr()
    adjacency.sort_indices()
    graph = Graph(adjacency, layout.graph.node_ids[nodes])
    position = np.full(n, -1, dtype=np.int64)
    position[nodes] = np.arange(nodes.size)
    designated = position[layout.designated_index[nodes]]
    outside = np.flatnonzero(designated < 0)  # not a sender: any neighbour will do
    designated[outside] = adjacency.indices[adjacency.indptr[outside]]
    return _Reach(nodes, PPACLayout(graph, designated), M[nodes][:, nodes].tocsr(),
                  int(position[i]))


def simulated_data(layout: PPACLayout, W: Any, attacker: Any, victim: Any, horizon: int, *,
                   value_std: Any = 1.0, noise_std: Any = 1.0, runs: int = 20_000,
                   seed: int | None = None, bar=None) -> tuple[np.ndarray, np.ndarray]:
    """``runs`` independent runs of the protocol with Gaussian values and noises (mean 0):
    the attacker's data ``D_i(horizon)`` as rows ``(runs, observations)``
    (:meth:`AttackerView.features`) and the victim's values ``(runs,)``; labels name nodes.

    The runs are simulated in batches of :func:`simulation_batch` runs (all at once on graphs
    up to about 10^4 nodes; with the seed itself for one batch, else with seeds spawned from
    it), so memory stays near ``8 SIMULATION_BATCH_FLOATS`` bytes whatever the graph's size;
    ``bar`` (a progress bar, or ``None``) advances by the runs of each batch.

    With scalar standard deviations, when what can reach the attacker's data
    (:func:`_reach`: the consensus' light cone, the senders of its fragments and their
    neighbours) is at most half the graph, only that part is simulated: the same joint
    distribution of the data and the victim's value (drawn on its own when it cannot reach
    the data), from other draws.
    """
    j = layout.graph.index_of(victim, "victim")
    i = layout.graph.index_of(attacker, "attacker")
    if isinstance(runs, bool) or not isinstance(runs, (int, np.integer)) or runs < 1:
        raise ParameterError(f"runs must be an integer >= 1, got {runs!r}")
    horizon = _horizon(horizon)
    M = check_consensus_matrix(W, layout.n)
    part = None
    if np.ndim(value_std) == 0 and np.ndim(noise_std) == 0:
        part = _reach(layout, M, i, horizon)
    if part is None:
        part = _Reach(np.arange(layout.n), layout, M, i)
    at = int(np.searchsorted(part.nodes, j))
    victim_at = at if at < part.nodes.size and part.nodes[at] == j else None
    batch = simulation_batch(part.layout, runs)
    sizes = [min(batch, runs - first) for first in range(0, runs, batch)]
    if len(sizes) == 1:
        seeds = [seed]
    else:
        root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
        seeds = root.spawn(len(sizes))
    features, values = [], []
    for size, part_seed in zip(sizes, seeds, strict=True):
        rng = np.random.default_rng(part_seed)  # the protocol's draws, then the victim's
        prep = prepare(part.layout, None, realisations=size, value_std=value_std,
                       noise_std=noise_std, seed=rng)
        features.append(_collect_view(part.M, prep, part.attacker, horizon).features().T)
        if victim_at is not None:
            values.append(prep.values[victim_at].copy())
        else:  # beyond what reaches the data: independent of it
            values.append(float(value_std) * rng.standard_normal(size))
        del prep  # before the next batch is drawn: one preparation alive at a time
        if bar is not None:
            bar.update(size)
    return np.vstack(features), np.concatenate(values)


def simulation_batch(layout: PPACLayout, runs: int) -> int:
    """Runs of :func:`simulated_data` simulated at once: at most ``SIMULATION_BATCH_FLOATS``
    numbers, a run holding about ``2 sources + 6 n`` of them (the fragments and their row sums,
    the values, ``v(0)`` and the consensus state); it depends on the graph's size only."""
    per_run = 2 * layout.num_sources + 6 * layout.n
    return int(max(1, min(runs, SIMULATION_BATCH_FLOATS // per_run)))
