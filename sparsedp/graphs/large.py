"""Graphs with millions of nodes, built with numpy in seconds, and their ``.npz`` storage.

The small-graph generators in :mod:`sparsedp.graphs` go through networkx; these go straight
from random integer arrays to a canonical CSR adjacency:

* :func:`erdos_renyi_large` — ``G(n, M)``: ``M = n d / 2`` uniformly random node pairs,
  self-loops and repeated pairs erased (so slightly fewer than M edges).
* :func:`random_regular_large` — the erased configuration model: every node gets ``d`` stubs,
  the stubs are paired at random, self-loops and multi-edges are erased (degrees ``<= d``,
  almost all exactly ``d``).
* :func:`chung_lu_large` — the erased Chung-Lu model with power-law expected degrees
  ``w_i ~ (i + i_0)^(-1/(gamma-1))`` scaled to mean ``d`` and capped at ``sqrt(sum w)``:
  ``M`` edges with both endpoints drawn proportionally to ``w`` (heavy tails like social
  networks).  It leaves small components; :func:`largest_component` keeps the giant one.

Indices are int32 (n < 2^31), data float64, so 10^8 edges take about 2.4 GB.
"""

from __future__ import annotations

import os

import numpy as np
import scipy.sparse as sp

from sparsedp import validation
from sparsedp.errors import ParameterError
from sparsedp.graphs.cost import require_generator_fits
from sparsedp.graphs.graph import Graph, largest_component_of


def adjacency_from_pairs(u: np.ndarray, v: np.ndarray, n: int) -> sp.csr_matrix:
    """Symmetric 0/1 CSR adjacency of the undirected pairs ``u[k] -- v[k]``.

    Self-loops and repeated pairs are erased.  Both directions of every edge are encoded as
    keys ``row * n + col`` and sorted once: the sorted keys are the CSR order.
    """
    keep = u != v
    u, v = u[keep].astype(np.int64), v[keep].astype(np.int64)
    keys = np.concatenate([u * n + v, v * n + u])
    del u, v, keep
    keys.sort()
    distinct = np.empty(keys.size, dtype=bool)
    distinct[0] = True
    np.not_equal(keys[1:], keys[:-1], out=distinct[1:])
    keys = keys[distinct]
    del distinct
    rows, cols = np.divmod(keys, n)
    del keys
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    index_type = np.int32 if indptr[-1] < 2**31 else np.int64
    return sp.csr_matrix(
        (np.ones(cols.size), cols.astype(index_type), indptr.astype(index_type)), shape=(n, n)
    )


def _rng(seed):
    return np.random.default_rng(seed)


def _check_size(n, average_degree):
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2:
        raise ParameterError(f"n must be an integer >= 2, got {n!r}")
    d = validation.real("average_degree", average_degree)
    if not 0 < d < n - 1:
        raise ParameterError(f"average_degree must lie in (0, n - 1), got {d!r}")
    require_generator_fits("large graph generator", n, n * d / 2, networkx=False)
    return int(n), d


def erdos_renyi_large(n: int, average_degree: float, seed=None) -> Graph:
    """``G(n, M)`` with ``M = round(n d / 2)`` random pairs (erased); see the module docstring."""
    n, d = _check_size(n, average_degree)
    rng = _rng(seed)
    m = int(round(n * d / 2))
    u = rng.integers(0, n, m, dtype=np.int64)
    v = rng.integers(0, n, m, dtype=np.int64)
    return Graph(adjacency_from_pairs(u, v, n), np.arange(n, dtype=np.int64))


def random_regular_large(n: int, degree: int, seed=None) -> Graph:
    """Erased configuration model with every degree ``<= degree`` (almost all equal)."""
    n, d = _check_size(n, degree)
    if int(d) != d or (n * int(d)) % 2:
        raise ParameterError(f"degree must be an integer with n * degree even, got {degree!r}")
    stubs = np.repeat(np.arange(n, dtype=np.int64), int(d))
    _rng(seed).shuffle(stubs)
    return Graph(adjacency_from_pairs(stubs[0::2], stubs[1::2], n), np.arange(n, dtype=np.int64))


def chung_lu_large(n: int, average_degree: float, exponent: float = 2.5, seed=None) -> Graph:
    """Erased Chung-Lu graph with a power-law (``exponent`` > 2) expected degree sequence."""
    n, d = _check_size(n, average_degree)
    if not exponent > 2:
        raise ParameterError(f"exponent must be > 2, got {exponent!r}")
    i0 = n ** (1.0 - (exponent - 2) / (exponent - 1)) / 10.0
    w = (np.arange(n) + 1.0 + i0) ** (-1.0 / (exponent - 1))
    w *= d / w.mean()
    np.minimum(w, np.sqrt(w.sum()), out=w)
    cdf = np.cumsum(w)
    cdf /= cdf[-1]
    rng = _rng(seed)
    m = int(round(n * d / 2))
    u = np.searchsorted(cdf, rng.random(m)).astype(np.int64)
    v = np.searchsorted(cdf, rng.random(m)).astype(np.int64)
    perm = rng.permutation(n)  # hubs are not the low ids
    return Graph(adjacency_from_pairs(perm[u], perm[v], n), np.arange(n, dtype=np.int64))


def largest_component(graph: Graph) -> Graph:
    """The subgraph induced by the largest connected component (original node ids kept),
    without a warning (:func:`sparsedp.graphs.graph.largest_component_of`)."""
    return largest_component_of(graph, warn=False)[0]


def save_graph(graph: Graph, path: str | os.PathLike) -> None:
    """Store the CSR arrays and node ids in a compressed ``.npz`` file."""
    A = graph.adjacency
    np.savez_compressed(path, indptr=A.indptr, indices=A.indices, node_ids=graph.node_ids)


def load_graph(path: str | os.PathLike) -> Graph:
    """Inverse of :func:`save_graph`."""
    with np.load(path, allow_pickle=False) as f:
        indptr, indices, node_ids = f["indptr"], f["indices"], f["node_ids"]
    n = node_ids.size
    A = sp.csr_matrix((np.ones(indices.size), indices, indptr), shape=(n, n))
    return Graph(A, node_ids)
