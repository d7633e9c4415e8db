"""Graph input: networkx, sparse or dense matrices, SNAP-style edge-list files.

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

The generators live in :mod:`sparsedp.graphs.generators`.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, BinaryIO

import networkx as nx
import numpy as np
import scipy.io
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from sparsedp.errors import GraphError, NodeLabelError, ParameterError
from sparsedp.graphs.edge_list_fields import (
    _DIRECTED_HEADER,
    _blank_comments,
    _check_weights,
    _edge_weights,
    _header_candidate,
    _names_numeric_columns,
    _remap_ids,
    _warn_caller,
    _warn_header,
    _weight_column,
)
from sparsedp.reprs import short_repr

__all__ = [
    "Graph",
    "as_graph",
    "read_edge_list",
    "require_connected",
    "write_edge_list",
]


@dataclass(frozen=True, eq=False)
class Graph:
    """An undirected simple graph: ``adjacency[i, j] = 1`` iff nodes ``i`` and ``j`` are linked.

    ``adjacency`` is a symmetric ``scipy.sparse.csr_matrix`` with float64 data equal to 1, an
    empty diagonal and sorted indices; ``node_ids[i]`` is the caller's label of the node at
    position (row) ``i`` (see the module docstring on labels and positions).  Use
    :func:`as_graph` or a generator to build one; the constructor only validates.

    Parameters
    ----------
    adjacency : scipy.sparse.csr_matrix
        Symmetric ``n x n`` pattern: float64 ones, empty diagonal, canonical (sorted) indices.
    node_ids : numpy.ndarray
        1-D array of the ``n`` unique labels, in row order.

    Attributes
    ----------
    n : int
        Number of nodes.
    num_edges : int
        Number of undirected edges.
    degrees : numpy.ndarray
        Degree of every node, in row order.
    labels_are_positions : bool
        Whether the labels are ``0..n-1`` in row order.

    Raises
    ------
    GraphError
        If ``adjacency`` or ``node_ids`` breaks one of the rules above (empty graph,
        duplicate labels, self-loops, asymmetric pattern, ...).

    Examples
    --------
    >>> import networkx as nx, sparsedp
    >>> g = sparsedp.as_graph(nx.Graph([("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]))
    >>> g.n, g.num_edges, g.labels_are_positions
    (4, 4, False)
    >>> g.per_node(g.degrees)
    {'a': 2, 'b': 2, 'c': 3, 'd': 1}
    >>> g.index_of("c"), g.id_of(3)
    (2, 'd')
    """

    adjacency: sp.csr_matrix
    node_ids: np.ndarray

    __repr__ = short_repr

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

    def _unknown(self, label: Any, role: str) -> NodeLabelError:
        shown = repr(label) if isinstance(label, str) else str(label)
        where = "" if role == "node" else f" for {role}"
        sample = ", ".join(repr(v) for v in self.node_ids[:3].tolist())
        more = ", ..." if self.n > 3 else ""
        return NodeLabelError(f"unknown node id {shown}{where} (nodes are named by their "
                              f"labels: {sample}{more})")

    def index_of(self, label: Any, role: str = "node") -> int:
        """Row index of the node labelled ``label`` (any value equal to a label: python or
        numpy scalar).

        For integer labels a decimal string such as ``"42"`` (as typed on a command line) is
        accepted too.  ``role`` names the argument in the error: ``NodeLabelError("unknown
        node id 'x' for target (...)")`` (a ``GraphError`` and a ``KeyError``), which also
        shows a few of the graph's labels.
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


def as_graph(source: Any, *, largest_component: bool = False) -> Graph:
    """Normalise ``source`` into a :class:`Graph`.

    Accepted: a :class:`Graph` (returned as is); a networkx ``Graph``/``DiGraph`` (node ids and
    order kept; a ``DiGraph`` is symmetrised with a warning); a square scipy sparse matrix or
    array, or a dense array, used as adjacency (nonzero => edge, diagonal dropped, asymmetric
    pattern symmetrised with a warning, node ids ``0..n-1``); a path (``str`` /
    ``os.PathLike``) to an edge-list file or an open binary file (``sys.stdin.buffer``), read
    by :func:`read_edge_list`.

    Parameters
    ----------
    source : Graph, networkx.Graph, scipy.sparse matrix, numpy.ndarray, str, os.PathLike or file
        The graph, in any of the forms above.
    largest_component : bool, default False
        Keep only the largest connected component (ties: the one holding the earliest
        node), with a ``UserWarning`` saying how many nodes and components were dropped.
        The kept nodes keep their labels; their positions are renumbered ``0..k-1`` in the
        original order, so :meth:`Graph.index_of` / :meth:`Graph.id_of` of the result map
        between the two.  A connected graph is returned unchanged.

    Returns
    -------
    Graph
        The normalised graph (``source`` itself when it is a connected :class:`Graph`, or
        any :class:`Graph` without ``largest_component``).

    Raises
    ------
    GraphError
        If the graph is empty, the matrix is not square or has non-finite entries, or the
        edge-list file cannot be read (see :func:`read_edge_list`).
    TypeError
        For any other type of ``source``.

    Warns
    -----
    UserWarning
        When directed input (a ``DiGraph``, an asymmetric pattern) is symmetrised, or
        ``largest_component`` drops nodes.

    Examples
    --------
    >>> import networkx as nx, numpy as np, sparsedp
    >>> g = sparsedp.as_graph(nx.cycle_graph(5))
    >>> g.n, g.num_edges, g.labels_are_positions
    (5, 5, True)
    >>> g = sparsedp.as_graph(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]]))
    >>> g.node_ids.tolist(), g.degrees.tolist()
    ([0, 1, 2], [1, 2, 1])

    The largest component of a graph with an isolated node, labels kept:

    >>> import warnings
    >>> G = nx.Graph([(0, 1), (1, 2)]); G.add_node("lonely")
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     g = sparsedp.as_graph(G, largest_component=True)
    >>> g.node_ids.tolist()
    [0, 1, 2]
    >>> print(caught[0].message)
    kept the largest connected component: 3 of 4 nodes (1 node in 1 other component dropped)
    """
    if isinstance(source, Graph):
        graph = source
    elif isinstance(source, nx.Graph):
        graph = _from_networkx(source)
    elif isinstance(source, (str, os.PathLike)) or hasattr(source, "read"):
        graph = read_edge_list(source)
    elif sp.issparse(source) or isinstance(source, np.ndarray):
        graph = _from_matrix(source)
    else:
        raise TypeError("as_graph expects a Graph, networkx graph, scipy sparse matrix, numpy "
                        f"array or edge-list path, got {type(source).__name__}")
    return largest_component_of(graph)[0] if largest_component else graph


def largest_component_of(graph: Graph, *,
                         warn: bool = True) -> tuple[Graph, np.ndarray | None]:
    """``graph`` restricted to its largest connected component (ties: the one holding the
    earliest node) and the positions it kept, or ``(graph, None)`` when it is connected;
    with ``warn`` a ``UserWarning`` says how many nodes and components were dropped (see
    :func:`as_graph`)."""
    count, labels = connected_components(graph.adjacency, directed=False)
    if count == 1:
        return graph, None
    keep = np.flatnonzero(labels == np.argmax(np.bincount(labels)))
    dropped, others = graph.n - keep.size, count - 1
    if warn:
        _warn_caller(f"kept the largest connected component: {keep.size} of {graph.n} "
                     f"nodes ({dropped} node{'s' * (dropped != 1)} in {others} other "
                     f"component{'s' * (others != 1)} dropped)")
    adjacency = graph.adjacency[keep][:, keep].tocsr()
    adjacency.sort_indices()
    return Graph(adjacency, graph.node_ids[keep]), keep


def require_connected(graph: Any) -> None:
    """Raise ``GraphError("graph is disconnected: K connected components ...")`` unless
    connected; the message names ``largest_component=True`` / ``--largest-component``.

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
                         f"(the largest has {largest} of {adjacency.shape[0]} nodes); keep "
                         "only the largest with largest_component=True (sparsedp.as_graph, "
                         "gossip_matrix) or --largest-component on the command line")


# --------------------------------------------------------------------------------------------
# Edge-list files
# --------------------------------------------------------------------------------------------

_INT64 = np.iinfo(np.int64)


class _LabelledIds(Exception):
    """Some node id of the file is not an int64 integer: the file is read with string labels."""


def _malformed(path: str, lineno: int, line: bytes) -> GraphError:
    text = line.strip().decode(errors="replace")
    return GraphError(f"{path}, line {lineno}: malformed edge {text!r} (expected two node ids)")


def _field_lines(body: bytes, path: str):
    """``(lineno, fields)`` of each non-blank line; a line with a single field is malformed."""
    for lineno, line in enumerate(body.split(b"\n"), start=1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) < 2:
            raise _malformed(path, lineno, line)
        yield lineno, fields


def _parse_pairs_slow(body: bytes, path: str) -> np.ndarray:
    """Reference line-by-line parser: ``(m, 2)`` int64 ids; names the first line with a
    single field, and raises :class:`_LabelledIds` when an id is not an int64 integer."""
    pairs = []
    for _, fields in _field_lines(body, path):
        try:
            u, v = int(fields[0]), int(fields[1])
        except ValueError:
            raise _LabelledIds from None
        if not (_INT64.min <= u <= _INT64.max and _INT64.min <= v <= _INT64.max):
            raise _LabelledIds
        pairs.append((u, v))
    return np.array(pairs, dtype=np.int64).reshape(-1, 2)


def _parse_labels(body: bytes, path: str) -> tuple[np.ndarray, np.ndarray]:
    """Pairs of string labels: ``(m, 2)`` indices into the labels in order of first
    appearance, and those labels (UTF-8 text; a line with a single field is malformed)."""
    index: dict[str, int] = {}
    pairs = []
    for lineno, fields in _field_lines(body, path):
        try:
            u, v = fields[0].decode(), fields[1].decode()
        except UnicodeDecodeError:
            raise GraphError(f"{path}, line {lineno}: node ids are not UTF-8 text") from None
        pairs.append((index.setdefault(u, len(index)), index.setdefault(v, len(index))))
    return np.array(pairs, dtype=np.int64).reshape(-1, 2), np.array(list(index), dtype=str)


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


def read_edge_list(path: str | os.PathLike[str] | BinaryIO, *,
                   largest_component: bool = False) -> Graph:
    r"""Read a SNAP-style edge list into a :class:`Graph`.

    Format: lines starting with ``#`` or ``%`` are comments, blank lines are skipped, fields are
    separated by whitespace or commas, the first two fields are node ids and further fields
    are ignored.  Integer ids are remapped to ``0..n-1`` in increasing id order (``node_ids``
    keeps the originals); a file with any other id (``alice bob``) is read with string labels,
    numbered in order of first appearance.  Every id that appears is a node, also one seen
    only in a self-loop.  Duplicate edges and unweighted self-loops are dropped.

    A header line naming the columns (``source target`` or ``source,target,weight``, as
    pandas writes it) is recognised when its fields are not like those of the other lines:
    neither of its first two fields is a number, and the other lines have integer node ids
    or a number where it has a name (``source target weight`` above ``alice bob 0.5``).  It
    is skipped with a ``UserWarning`` naming the line; its names select the weight column of
    :func:`sparsedp.gossip_matrix`\ ``(path, weight=...)``.  (Above text ids without a
    numeric column a header cannot be told from an edge: comment it out with ``#``.)

    A numeric third column is read as edge weights and checked: ``nan``, ``inf``, a negative
    weight or a weighted self-loop is a ``GraphError`` naming the line; valid weights are
    ignored here with a ``UserWarning`` (the gossip scheme sets W;
    ``gossip_matrix(path, scheme="row-normalised", weight="weight")`` uses them).  A binary
    file, an empty file, a directory or a missing file is a ``GraphError`` naming the path.
    The graph is symmetrised with a ``UserWarning`` when a comment declares it directed
    (SNAP "Directed graph", KONECT "asym") or when the edges are partially reciprocal (some
    ``u v`` also appear as ``v u``, some do not); a list naming each edge once, or every edge
    in both directions, is read as undirected.  A Matrix Market file (``%%MatrixMarket``
    header) is read with ``scipy.io.mmread`` (its parse errors as ``GraphError``).
    Malformed lines raise ``GraphError`` with the line number.

    Parameters
    ----------
    path : str, os.PathLike or binary file
        The edge-list (or Matrix Market) file, or an open binary file such as
        ``sys.stdin.buffer`` (named in messages by its ``name``).
    largest_component : bool, default False
        Keep only the largest connected component, with a warning (see
        :func:`sparsedp.as_graph`).

    Returns
    -------
    Graph
        The undirected graph; ``node_ids`` holds the ids of the file.

    Raises
    ------
    GraphError
        For a missing, unreadable, binary or empty file, a malformed line, or an invalid
        weight (the path and line are named).

    Warns
    -----
    UserWarning
        When a header line is skipped, the graph is symmetrised, valid edge weights are
        ignored, or ``largest_component`` drops nodes.

    Examples
    --------
    >>> import os, tempfile, sparsedp
    >>> path = os.path.join(tempfile.mkdtemp(), "edges.txt")
    >>> with open(path, "w") as f:
    ...     _ = f.write("# Undirected graph\n10 20\n20 30\n30 10\n30 40\n")
    >>> g = sparsedp.read_edge_list(path)
    >>> g.n, g.num_edges, g.node_ids.tolist()
    (4, 4, [10, 20, 30, 40])
    >>> g.index_of(30), g.index_of("30")  # row of a label (a decimal string works too)
    (2, 2)
    """
    data, name = _read_source(path)
    if data.startswith(b"%%MatrixMarket"):
        graph = _read_matrix_market(data, name)
    else:
        edges = _parse_edge_file(data, name)
        _check_weights(edges.body, edges.index, name, edges.header)
        graph = edges.graph()
    return largest_component_of(graph)[0] if largest_component else graph


def read_weighted_edges(path: str | os.PathLike[str] | BinaryIO, weight: str, *,
                        largest_component: bool = False) -> tuple[Graph, sp.csr_matrix]:
    """The graph of an edge-list file (:func:`read_edge_list`) and its weighted adjacency
    ``A_w`` (rows in the graph's order, symmetric; a self-loop ``u u w`` is ``A_w[u, u] =
    w``), the weights read from the column that ``weight`` names: a name in the file's
    header line, or without a header ``"weight"`` for the third column (networkx's
    ``read_weighted_edgelist``).  An edge given twice (either direction) with two different
    weights, a line without a weight or a weight that is not a finite number > 0 is a
    ``GraphError`` naming the lines; an unknown column name a ``ParameterError``."""
    data, name = _read_source(path)
    if data.startswith(b"%%MatrixMarket"):
        raise ParameterError(f"weight={weight!r} reads a column of an edge list; {name} is a "
                             "Matrix Market file: build W from its values directly")
    edges = _parse_edge_file(data, name)
    column = _weight_column(weight, edges.header, name)
    weights, lines = _edge_weights(edges.body, column, len(edges.index), name)
    graph = edges.graph()
    adjacency = _weighted_adjacency(edges.index, weights, lines, graph.n, name)
    if largest_component:
        graph, keep = largest_component_of(graph)
        if keep is not None:
            adjacency = adjacency[keep][:, keep].tocsr()
    return graph, adjacency


def _weighted_adjacency(index: np.ndarray, weights: np.ndarray, lines: np.ndarray, n: int,
                        path: str) -> sp.csr_matrix:
    """Symmetric ``A_w`` from the pairs ``index`` and their weights; an edge listed twice
    must carry the same weight."""
    low, high = index.min(axis=1), index.max(axis=1)
    order = np.lexsort((high, low))
    low, high, weights, lines = low[order], high[order], weights[order], lines[order]
    again = np.flatnonzero((low[1:] == low[:-1]) & (high[1:] == high[:-1]))
    conflict = again[weights[again + 1] != weights[again]]
    if conflict.size:
        k = int(conflict[0])
        raise GraphError(f"{path}, lines {min(lines[k], lines[k + 1])} and "
                         f"{max(lines[k], lines[k + 1])}: the edge is given the weights "
                         f"{weights[k]:g} and {weights[k + 1]:g}")
    first = np.ones(low.size, dtype=bool)
    first[1:] = (low[1:] != low[:-1]) | (high[1:] != high[:-1])
    low, high, weights = low[first], high[first], weights[first]
    off = low != high
    rows = np.concatenate([low, high[off]])
    cols = np.concatenate([high, low[off]])
    adjacency = sp.csr_matrix((np.concatenate([weights, weights[off]]), (rows, cols)),
                              shape=(n, n))
    adjacency.sort_indices()
    return adjacency


def _read_source(source: Any) -> tuple[bytes, str]:
    """The bytes of a path or an open file, and the name to show in messages."""
    if hasattr(source, "read"):
        data = source.read()
        return (data.encode() if isinstance(data, str) else data,
                str(getattr(source, "name", "<stream>")))
    path = os.fspath(source)
    try:
        return Path(path).read_bytes(), path
    except OSError as exc:
        raise GraphError(f"cannot read edge list {path}: {exc.strerror}") from None


@dataclass(frozen=True)
class _EdgeFile:
    """An edge list parsed: ``body`` with its comments and header blanked (line numbers
    kept), the pairs as positions into ``ids``, the header's names (or None)."""

    name: str
    body: bytes
    index: np.ndarray
    ids: np.ndarray
    header: list[str] | None
    declared_directed: bool

    def graph(self) -> Graph:
        reason = f"{self.name} declares a directed graph" if self.declared_directed else None
        return _graph_from_pairs(self.index[:, 0], self.index[:, 1], self.ids,
                                 one_sided_ok=True, declared_directed=reason)


def _parse_edge_file(data: bytes, name: str) -> _EdgeFile:
    """Parse a text edge list (see :func:`read_edge_list`): comments, the header line,
    integer ids (fast path) or text labels."""
    if b"\0" in data[:65536]:
        raise GraphError(f"{name} is not a text edge list (binary content)")
    body = bytearray(data.replace(b",", b" "))
    comments = _blank_comments(body)
    candidate = _header_candidate(body)
    if candidate is not None:
        start, end, fields = candidate
        line = bytes(body[start:end])
        body[start:end] = b" " * (end - start)
    header = None
    try:
        pairs = _parse_pairs(bytes(body), name)
        if pairs.size == 0:
            if candidate is not None:
                raise _LabelledIds  # a single line: an edge of two text labels
            raise GraphError(f"graph is empty (no nodes): {name} lists no edges")
        ids, index = _remap_ids(pairs)
        header = None if candidate is None else fields  # text above integer ids
    except _LabelledIds:
        if candidate is not None and _names_numeric_columns(fields, bytes(body)):
            header = fields
        elif candidate is not None:
            body[start:end] = line  # an edge after all
        index, ids = _parse_labels(bytes(body), name)
    if header is not None:
        _warn_header(bytes(body), start, header, name)
    declared = any(_DIRECTED_HEADER.search(c) for c in comments)
    return _EdgeFile(name, bytes(body), index, ids, header, declared)


def _read_matrix_market(data: bytes, name: str) -> Graph:
    """A Matrix Market file through ``scipy.io.mmread``, its parse errors as ``GraphError``."""
    try:
        matrix = scipy.io.mmread(io.BytesIO(data))
    except (ValueError, TypeError, IndexError, OverflowError, EOFError) as exc:
        raise GraphError(f"{name}: not a valid Matrix Market file ({exc})") from None
    return _from_matrix(matrix)


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
