"""Graph input (networkx, sparse or dense matrices, SNAP-style edge-list files) and generators.

Every graph is normalised into a :class:`Graph`: a symmetric 0/1 adjacency matrix in CSR form
(float64 data, no self-loops, sorted indices) plus the original node ids, so that row ``i`` of
the adjacency belongs to node ``node_ids[i]``.  Directed input is symmetrised (an undirected edge
``{u, v}`` exists when ``u -> v`` or ``v -> u`` was given) with a ``UserWarning``.

Labels and positions.  A node has a *label* (its networkx node, its id in an edge-list file,
``0..n-1`` for a matrix or a generator) and a *position* (its row ``i``: the order of
``G.nodes()`` for networkx, increasing ids for an edge list).  Every public function that takes
a graph speaks labels, in its arguments and in its results; matrices built from a graph
(gossip matrices, ``W = I - L/c``) and per-node arrays are in position order.
:meth:`Graph.index_of` / :meth:`Graph.indices_of` turn labels into positions (for the
functions that take only a matrix W, whose node arguments are row indices),
:meth:`Graph.id_of` / :meth:`Graph.ids_of` / :meth:`Graph.per_node` turn positions back into
labels.  When the labels are ``0..n-1`` in order (:attr:`Graph.labels_are_positions`) the two
coincide.

Generators are deterministic given ``seed`` and label nodes ``0..n-1``.  They do not enforce
connectivity; :func:`require_connected` (called by the gossip-matrix builders) does.
"""

from __future__ import annotations

import os
import re
import sys
import warnings
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import scipy.io
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

from sparsedp.errors import GraphError, ParameterError

__all__ = [
    "Graph",
    "as_graph",
    "barabasi_albert",
    "erdos_renyi",
    "grid",
    "hypercube",
    "random_geometric",
    "read_edge_list",
    "require_connected",
    "ring",
    "stochastic_block_model",
    "synthetic_social_graph",
    "write_edge_list",
]


@dataclass(frozen=True, eq=False)
class Graph:
    """An undirected simple graph: ``adjacency[i, j] = 1`` iff nodes ``i`` and ``j`` are linked.

    ``adjacency`` is a symmetric ``scipy.sparse.csr_matrix`` with float64 data equal to 1, an
    empty diagonal and sorted indices; ``node_ids[i]`` is the caller's label of the node at
    position (row) ``i`` (see the module docstring on labels and positions).  Use
    :func:`as_graph` or a generator to build one; the constructor only validates.
    """

    adjacency: sp.csr_matrix
    node_ids: np.ndarray

    def __post_init__(self) -> None:
        adjacency, node_ids = self.adjacency, self.node_ids
        if not isinstance(adjacency, sp.csr_matrix):
            raise GraphError(f"adjacency must be a scipy.sparse.csr_matrix, got {type(adjacency)}")
        if not isinstance(node_ids, np.ndarray) or node_ids.ndim != 1:
            raise GraphError("node_ids must be a 1-D numpy array")
        if len(node_ids) == 0:
            raise GraphError("graph is empty (no nodes)")
        n = len(node_ids)
        if adjacency.shape != (n, n):
            raise GraphError(f"adjacency has shape {adjacency.shape} but there are {n} node ids")
        increasing = node_ids.dtype.kind in "iu" and np.all(node_ids[1:] > node_ids[:-1])
        if not increasing and len(set(node_ids.tolist())) != n:
            raise GraphError("node ids are not unique")
        if adjacency.dtype != np.float64 or np.any(adjacency.data != 1.0):
            raise GraphError("adjacency data must be float64 ones")
        if adjacency.diagonal().any():
            raise GraphError("adjacency has self-loops (nonzero diagonal)")
        if not adjacency.has_canonical_format:
            raise GraphError("adjacency indices must be sorted and free of duplicates")
        transpose = adjacency.T.tocsr()  # canonical: compare the index arrays
        if not (np.array_equal(adjacency.indptr, transpose.indptr)
                and np.array_equal(adjacency.indices, transpose.indices)):
            raise GraphError("adjacency is not symmetric")

    @property
    def n(self) -> int:
        """Number of nodes."""
        return len(self.node_ids)

    @property
    def num_edges(self) -> int:
        """Number of undirected edges (each stored twice in ``adjacency``)."""
        return self.adjacency.nnz // 2

    @property
    def degrees(self) -> np.ndarray:
        """Degree ``d_i = sum_j A_ij`` of every node (int64)."""
        return np.diff(self.adjacency.indptr).astype(np.int64)

    @cached_property
    def _index(self) -> dict[Any, int]:
        return {node_id: i for i, node_id in enumerate(self.node_ids.tolist())}

    @cached_property
    def _id_order(self) -> np.ndarray:
        return np.argsort(self.node_ids, kind="stable")

    @cached_property
    def labels_are_positions(self) -> bool:
        """True when the labels are ``0..n-1`` in this order (label == row index), as for the
        generators, matrices and networkx graphs built on ``range(n)``."""
        ids = self.node_ids
        return (ids.dtype.kind in "iu" and ids[0] == 0 and ids[-1] == self.n - 1
                and bool(np.all(ids[1:] > ids[:-1])))

    def _unknown(self, label: Any, role: str) -> GraphError:
        shown = repr(label) if isinstance(label, str) else str(label)
        where = "" if role == "node" else f" for {role}"
        sample = ", ".join(repr(v) for v in self.node_ids[:3].tolist())
        more = ", ..." if self.n > 3 else ""
        return GraphError(f"unknown node id {shown}{where} (nodes are named by their labels: "
                          f"{sample}{more})")

    def index_of(self, label: Any, role: str = "node") -> int:
        """Row index of the node labelled ``label`` (any value equal to a label: python or
        numpy scalar).

        For integer labels a decimal string such as ``"42"`` (as typed on a command line) is
        accepted too.  ``role`` names the argument in the error: ``GraphError("unknown node id
        'x' for target (...)")``, which also shows a few of the graph's labels.
        """
        if self.labels_are_positions and isinstance(label, (int, np.integer)) \
                and not isinstance(label, bool):
            if 0 <= label < self.n:
                return int(label)
            raise self._unknown(label, role)
        try:
            return self._index[label]
        except (KeyError, TypeError):
            pass
        if isinstance(label, str) and self.node_ids.dtype.kind in "iu":
            try:
                number = int(label)
            except ValueError:
                pass
            else:
                if number in self._index:
                    return self._index[number]
                label = number  # reported as the number it names
        raise self._unknown(label, role)

    def __contains__(self, label: Any) -> bool:
        """Whether :meth:`index_of` knows ``label``."""
        try:
            self.index_of(label)
        except GraphError:
            return False
        return True

    def indices_of(self, labels: Any, role: str = "node") -> np.ndarray:
        """Row indices (int64 array) of a sequence of labels; see :meth:`index_of`."""
        if self.node_ids.dtype.kind in "iu" and np.asarray(labels).dtype.kind in "iu":
            # Vectorised lookup of integer labels: binary search in the sorted labels.
            labels = np.asarray(labels)
            order = self._id_order
            pos = np.minimum(np.searchsorted(self.node_ids, labels, sorter=order), self.n - 1)
            found = self.node_ids[order[pos]] == labels
            if not found.all():
                raise self._unknown(labels[~found].flat[0], role)
            return order[pos].astype(np.int64)
        return np.fromiter((self.index_of(v, role) for v in labels), dtype=np.int64)

    def id_of(self, index: Any) -> Any:
        """The label of row ``index``, as a plain Python value (``int``, ``str``, ...)."""
        value = self.node_ids[int(index)]
        return value.item() if isinstance(value, np.generic) else value

    def ids_of(self, indices: Any) -> np.ndarray:
        """The labels of the rows ``indices`` (an array of the labels' dtype)."""
        return self.node_ids[np.asarray(indices, dtype=np.int64)]

    def per_node(self, values: Any) -> dict[Any, Any]:
        """``{label: value}`` from an array (or sequence) in row order, e.g. a column of W."""
        values = values.tolist() if isinstance(values, np.ndarray) else list(values)
        if len(values) != self.n:
            raise ParameterError(f"per_node needs {self.n} values (one per node), got "
                                 f"{len(values)}")
        return dict(zip(self.node_ids.tolist(), values, strict=True))


# --------------------------------------------------------------------------------------------
# Building graphs from directed (row, col) pairs: the one place that canonicalises adjacency.
# --------------------------------------------------------------------------------------------

def _graph_from_pairs(rows: np.ndarray, cols: np.ndarray, node_ids: np.ndarray, *,
                      declared_directed: str | None = None,
                      one_sided_ok: bool = False) -> Graph:
    """Graph whose edges are the pairs ``rows[k] -- cols[k]`` (duplicates, self-loops dropped).

    With ``P`` the directed pattern of the pairs, the adjacency is ``A = P OR P^T``.  A
    ``UserWarning`` "directed input symmetrised" is issued when ``declared_directed`` names
    a reason, or when ``P`` is not symmetric -- except when ``one_sided_ok`` and no pair is
    reciprocated (an undirected edge list that names every edge once).
    """
    n = len(node_ids)
    keep = rows != cols
    pattern = sp.csr_matrix((np.ones(int(keep.sum())), (rows[keep], cols[keep])), shape=(n, n))
    pattern.data[:] = 1.0  # duplicates were summed
    adjacency = (pattern + pattern.T).tocsr()
    adjacency.data[:] = 1.0
    adjacency.sort_indices()
    reciprocated = 2 * pattern.nnz - adjacency.nnz  # |P AND P^T|
    reason = declared_directed
    if reason is None and reciprocated != pattern.nnz and not (one_sided_ok and reciprocated == 0):
        reason = (f"the pattern is not symmetric ({reciprocated} of {pattern.nnz} directed "
                  "pairs have their reverse)")
    if reason is not None:
        _warn_caller(f"directed input symmetrised: {reason}")
    return Graph(adjacency, node_ids)


def _warn_caller(message: str) -> None:
    """``UserWarning`` attributed to the first calling frame outside the sparsedp package."""
    frame, level = sys._getframe(1), 2
    while frame is not None and frame.f_globals.get("__name__", "").startswith("sparsedp."):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, UserWarning, stacklevel=level)


def _node_id_array(nodes: list[Any]) -> np.ndarray:
    """Node ids as int64 (all integers), str (all strings) or object array (anything else)."""
    ids = np.fromiter(nodes, dtype=object, count=len(nodes))
    if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in nodes):
        return ids.astype(np.int64)
    if all(isinstance(v, str) for v in nodes):
        return ids.astype(str)
    return ids


def _from_networkx(g: nx.Graph) -> Graph:
    nodes = list(g)
    if not nodes:
        raise GraphError("graph is empty (no nodes)")
    coo = nx.to_scipy_sparse_array(g, nodelist=nodes, weight=None, format="coo")
    directed = "networkx DiGraph" if g.is_directed() else None
    return _graph_from_pairs(coo.row, coo.col, _node_id_array(nodes), declared_directed=directed)


def _from_matrix(matrix: Any) -> Graph:
    """Adjacency from a square matrix: nonzero off-diagonal entry => edge."""
    if not sp.issparse(matrix):
        matrix = np.asarray(matrix)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise GraphError(f"adjacency matrix must be square, got shape {matrix.shape}")
    if matrix.shape[0] == 0:
        raise GraphError("graph is empty (no nodes)")
    m = sp.coo_matrix(matrix)
    if not np.all(np.isfinite(m.data)):
        raise GraphError("adjacency matrix has non-finite entries")
    nonzero = m.data != 0
    return _graph_from_pairs(m.row[nonzero], m.col[nonzero], np.arange(m.shape[0]))


def as_graph(source: Any) -> Graph:
    """Normalise ``source`` into a :class:`Graph`.

    Accepted: a :class:`Graph` (returned as is); a networkx ``Graph``/``DiGraph`` (node ids and
    order kept; a ``DiGraph`` is symmetrised with a warning); a square scipy sparse matrix or
    dense array used as adjacency (nonzero => edge, diagonal dropped, asymmetric pattern
    symmetrised with a warning, node ids ``0..n-1``); a path (``str`` / ``os.PathLike``) to an
    edge-list file, read by :func:`read_edge_list`.
    """
    if isinstance(source, Graph):
        return source
    if isinstance(source, nx.Graph):
        return _from_networkx(source)
    if isinstance(source, (str, os.PathLike)):
        return read_edge_list(source)
    if sp.issparse(source) or isinstance(source, np.ndarray):
        return _from_matrix(source)
    raise TypeError("as_graph expects a Graph, networkx graph, scipy sparse matrix, numpy array "
                    f"or edge-list path, got {type(source).__name__}")


def require_connected(graph: Any) -> None:
    """Raise ``GraphError("graph is disconnected: K connected components ...")`` unless connected.

    ``graph`` is a :class:`Graph`, an adjacency matrix (its pattern, read as undirected) or
    anything else :func:`as_graph` accepts.
    """
    if isinstance(graph, Graph):
        adjacency = graph.adjacency
    elif sp.issparse(graph) or isinstance(graph, np.ndarray):
        adjacency = sp.csr_matrix(graph)
    else:
        adjacency = as_graph(graph).adjacency
    if adjacency.shape[0] == 0:
        raise GraphError("graph is empty (no nodes)")
    count, labels = connected_components(adjacency, directed=False)
    if count > 1:
        largest = int(np.bincount(labels).max())
        raise GraphError(f"graph is disconnected: {count} connected components "
                         f"(the largest has {largest} of {adjacency.shape[0]} nodes)")


# --------------------------------------------------------------------------------------------
# Edge-list files
# --------------------------------------------------------------------------------------------

# SNAP "# Directed graph ..." (but not "Undirected"), KONECT "% asym ..." headers.
_DIRECTED_HEADER = re.compile(rb"(?<![a-z])directed\b|^%[ \t]*asym\b", re.IGNORECASE)
_INT64 = np.iinfo(np.int64)


def _blank_comments(body: bytearray) -> list[bytes]:
    """Overwrite with spaces every line whose first non-blank byte is ``#`` or ``%`` (newlines
    stay, so line numbers are preserved) and return those lines, from the comment mark on."""
    comments = []
    for mark in (b"#", b"%"):
        i = body.find(mark)
        while i != -1:
            line_start = body.rfind(b"\n", 0, i) + 1
            line_end = body.find(b"\n", i)
            line_end = len(body) if line_end == -1 else line_end
            if not body[line_start:i].strip():
                comments.append(bytes(body[i:line_end]))
                body[line_start:line_end] = b" " * (line_end - line_start)
            i = body.find(mark, line_end)
    return comments


def _parse_pairs_slow(body: bytes, path: str) -> np.ndarray:
    """Reference line-by-line parser: ``(m, 2)`` int64 ids; names the first malformed line."""
    pairs = []
    for lineno, line in enumerate(body.split(b"\n"), start=1):
        fields = line.split()
        if not fields:
            continue
        try:
            u, v = int(fields[0]), int(fields[1])
        except (ValueError, IndexError):
            text = line.strip().decode(errors="replace")
            raise GraphError(f"{path}, line {lineno}: malformed edge {text!r} "
                             "(expected two integer node ids)") from None
        if not (_INT64.min <= u <= _INT64.max and _INT64.min <= v <= _INT64.max):
            raise GraphError(f"{path}, line {lineno}: node id out of the int64 range")
        pairs.append((u, v))
    return np.array(pairs, dtype=np.int64).reshape(-1, 2)


def _parse_pairs(body: bytes, path: str) -> np.ndarray:
    """Vectorised parse of the first two integer fields of every non-blank line.

    Tokens are located with numpy: a token starts at a non-space byte that follows a space byte,
    and its line is the number of newlines before it.  Fields after the second of a line are
    blanked out and the rest is parsed by ``np.fromstring``.  Any irregularity (a line with one
    field, a non-integer id, an id at the int64 limits) defers to :func:`_parse_pairs_slow`,
    which reports the offending line.
    """
    buf = np.frombuffer(body, dtype=np.uint8)
    space = buf <= 32  # ASCII whitespace and control bytes (commas were turned into spaces)
    is_start = ~space
    is_start[1:] &= space[:-1]
    starts = np.flatnonzero(is_start)
    if starts.size == 0:
        return np.empty((0, 2), dtype=np.int64)
    line = np.searchsorted(np.flatnonzero(buf == 10), starts)
    first = np.ones(starts.size, dtype=bool)  # first field of its line
    first[1:] = line[1:] != line[:-1]
    last = np.ones(starts.size, dtype=bool)  # last field of its line
    last[:-1] = first[1:]
    if np.any(first & last):  # a line with a single field
        return _parse_pairs_slow(body, path)
    if np.all(first[0::2]) and not np.any(first[1::2]):  # exactly two fields on every line
        body_ids = body
    else:  # blank out the fields after the second one of each line
        rank = np.arange(starts.size)
        rank -= np.maximum.accumulate(np.where(first, rank, 0))  # position within the line
        extra = rank >= 2
        is_end = ~space
        is_end[:-1] &= space[1:]
        ends = np.flatnonzero(is_end) + 1
        mark = np.zeros(buf.size + 1, dtype=np.int8)
        mark[starts[extra]] = 1
        mark[ends[extra]] = -1
        cleaned = buf.copy()
        cleaned[np.cumsum(mark[:-1], dtype=np.int8).astype(bool)] = 32
        body_ids = cleaned.tobytes()
    try:
        values = np.fromstring(body_ids, dtype=np.int64, sep=" ")
    except ValueError:
        return _parse_pairs_slow(body, path)
    if values.size != 2 * int(first.sum()) or np.any(
            (values == _INT64.max) | (values == _INT64.min)):
        return _parse_pairs_slow(body, path)
    return values.reshape(-1, 2)


def _remap_ids(pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct ids and ``pairs`` rewritten as indices into them.

    Equivalent to ``np.unique(pairs, return_inverse=True)``; ids that are small non-negative
    integers (the usual case) are remapped in O(size + max id) with a presence table.
    """
    if pairs.min() >= 0 and pairs.max() < 4 * pairs.size + 1024:
        present = np.zeros(int(pairs.max()) + 1, dtype=bool)
        present[pairs] = True
        ids = np.flatnonzero(present)
        return ids, (np.cumsum(present) - 1)[pairs]
    ids, inverse = np.unique(pairs, return_inverse=True)
    return ids, inverse.reshape(pairs.shape)


def read_edge_list(path: str | os.PathLike[str]) -> Graph:
    """Read a SNAP-style edge list into a :class:`Graph`.

    Format: lines starting with ``#`` or ``%`` are comments, blank lines are skipped, fields are
    separated by whitespace or commas, the first two fields are integer node ids and further
    fields (weights, timestamps) are ignored.  Ids are remapped to ``0..n-1`` in increasing id
    order (``node_ids`` keeps the originals); every id that appears is a node, also one seen only
    in a self-loop.  Duplicate edges and self-loops are dropped.  The graph is symmetrised with a
    ``UserWarning`` when a comment declares it directed (SNAP "Directed graph", KONECT "asym") or
    when the edges are partially reciprocal (some ``u v`` also appear as ``v u``, some do not);
    a list naming each edge once, or every edge in both directions, is read as undirected.
    A Matrix Market file (``%%MatrixMarket`` header) is read with ``scipy.io.mmread``.
    Malformed lines raise ``GraphError`` with the line number.
    """
    path_str = os.fspath(path)
    try:
        data = Path(path_str).read_bytes()
    except OSError as exc:
        raise GraphError(f"cannot read edge list {path_str}: {exc.strerror}") from None
    if data.startswith(b"%%MatrixMarket"):
        return _from_matrix(scipy.io.mmread(path_str))
    body = bytearray(data.replace(b",", b" "))
    comments = _blank_comments(body)
    pairs = _parse_pairs(bytes(body), path_str)
    if pairs.size == 0:
        raise GraphError(f"graph is empty (no nodes): {path_str} lists no edges")
    ids, index = _remap_ids(pairs)
    declared = any(_DIRECTED_HEADER.search(c) for c in comments)
    return _graph_from_pairs(
        index[:, 0], index[:, 1], ids, one_sided_ok=True,
        declared_directed=f"{path_str} declares a directed graph" if declared else None)


def write_edge_list(graph: Any, path: str | os.PathLike[str]) -> None:
    """Write ``graph`` (anything :func:`as_graph` accepts) as a SNAP edge list.

    Each undirected edge is written once as ``u<TAB>v`` (original ids, ``u`` the lower row
    index) after a ``# Undirected graph`` header, so :func:`read_edge_list` reads it back
    unchanged.  Node ids must be integers; isolated nodes cannot be represented.
    """
    g = as_graph(graph)
    if g.node_ids.dtype.kind not in "iu":
        raise GraphError(f"edge lists need integer node ids, got dtype {g.node_ids.dtype}")
    upper = sp.triu(g.adjacency, k=1).tocoo()
    u, v = g.node_ids[upper.row].tolist(), g.node_ids[upper.col].tolist()
    header = (f"# Undirected graph: {g.n} nodes, {g.num_edges} edges\n"
              "# FromNodeId\tToNodeId\n")
    Path(path).write_text(header + "".join(map("{}\t{}\n".format, u, v)))


# --------------------------------------------------------------------------------------------
# Generators (deterministic given seed, node ids 0..n-1)
# --------------------------------------------------------------------------------------------

def _check_count(name: str, value: int, minimum: int) -> None:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < minimum:
        raise ParameterError(f"{name} must be an integer >= {minimum}, got {value!r}")


def _check_probability(name: str, value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise ParameterError(f"{name} must be in [0, 1], got {value!r}")


def _from_edges(n: int, edges: np.ndarray) -> Graph:
    """Undirected graph on ``0..n-1`` from an ``(m, 2)`` array of edges."""
    u, v = np.asarray(edges, dtype=np.int64).reshape(-1, 2).T
    return _graph_from_pairs(np.concatenate([u, v]), np.concatenate([v, u]), np.arange(n))


def erdos_renyi(n: int, p: float, seed: int | None = None) -> Graph:
    """G(n, p): each of the ``n (n - 1) / 2`` possible edges independently with probability p."""
    _check_count("n", n, 1)
    _check_probability("p", p)
    return as_graph(nx.fast_gnp_random_graph(n, p, seed=seed))


def barabasi_albert(n: int, m: int, seed: int | None = None,
                    initial_clique: int | None = None) -> Graph:
    """Preferential attachment: each new node links to ``m`` distinct nodes, chosen with
    probability proportional to their degree.

    With ``initial_clique = c`` the process starts from a complete graph on ``c >= m`` nodes
    (the variant of the paper, e.g. ``c = 5``); with ``None`` it starts from networkx's default
    star on ``m + 1`` nodes.
    """
    _check_count("m", m, 1)
    if initial_clique is None:
        _check_count("n", n, m + 1)
        return as_graph(nx.barabasi_albert_graph(n, m, seed=seed))
    _check_count("initial_clique", initial_clique, max(m, 2))
    _check_count("n", n, initial_clique)
    core = nx.complete_graph(initial_clique)
    return as_graph(nx.barabasi_albert_graph(n, m, seed=seed, initial_graph=core))


def ring(n: int) -> Graph:
    """Cycle ``0 - 1 - ... - (n-1) - 0`` (``n >= 3``)."""
    _check_count("n", n, 3)
    i = np.arange(n)
    return _from_edges(n, np.column_stack([i, (i + 1) % n]))


def grid(rows: int, cols: int, periodic: bool = False) -> Graph:
    """``rows x cols`` lattice, node ``r * cols + c`` at (r, c); ``periodic`` wraps it to a torus.

    Wrap-around links that duplicate an edge (a side of length 2) or form a self-loop (a side of
    length 1) are dropped.
    """
    _check_count("rows", rows, 1)
    _check_count("cols", cols, 1)
    r, c = np.divmod(np.arange(rows * cols), cols)
    node = r * cols + c
    if periodic:
        right, down = r * cols + (c + 1) % cols, ((r + 1) % rows) * cols + c
        edges = np.concatenate([np.column_stack([node, right]), np.column_stack([node, down])])
    else:
        has_right, has_down = c + 1 < cols, r + 1 < rows
        edges = np.concatenate([np.column_stack([node[has_right], node[has_right] + 1]),
                                np.column_stack([node[has_down], node[has_down] + cols])])
    return _from_edges(rows * cols, edges)


def hypercube(dim: int) -> Graph:
    """``dim``-dimensional hypercube: ``2**dim`` nodes, ``i ~ j`` iff they differ in one bit."""
    _check_count("dim", dim, 1)
    nodes = np.arange(2**dim)
    edges = np.concatenate([np.column_stack([nodes, nodes ^ (1 << b)]) for b in range(dim)])
    return _from_edges(2**dim, edges)


def random_geometric(n: int, radius: float, seed: int | None = None) -> Graph:
    """``n`` uniform points in the unit square, linked when their distance is at most ``radius``."""
    _check_count("n", n, 1)
    if radius < 0:
        raise ParameterError(f"radius must be >= 0, got {radius!r}")
    points = np.random.default_rng(seed).random((n, 2))
    return _from_edges(n, cKDTree(points).query_pairs(radius, output_type="ndarray"))


def stochastic_block_model(sizes: list[int], p_in: float, p_out: float,
                           seed: int | None = None) -> Graph:
    """Blocks of the given sizes (nodes numbered block by block); an edge inside a block with
    probability ``p_in``, between blocks with probability ``p_out``, independently."""
    if len(sizes) == 0:
        raise ParameterError("sizes must list at least one block")
    for size in sizes:
        _check_count("block size", size, 1)
    _check_probability("p_in", p_in)
    _check_probability("p_out", p_out)
    probs = np.full((len(sizes), len(sizes)), float(p_out))
    np.fill_diagonal(probs, p_in)
    return as_graph(nx.stochastic_block_model([int(s) for s in sizes], probs.tolist(), seed=seed))


def synthetic_social_graph(n: int = 2000, seed: int = 0) -> Graph:
    """The package's default test graph: Holme-Kim power-law cluster graph.

    ``networkx.powerlaw_cluster_graph(n, 4, 0.3, seed)``: preferential attachment with 4 links
    per new node (heavy-tailed degrees) and a triangle-closing step with probability 0.3
    (clustering).  Connected for every ``n >= 5`` and seed.
    """
    _check_count("n", n, 5)
    return as_graph(nx.powerlaw_cluster_graph(n, 4, 0.3, seed=seed))
