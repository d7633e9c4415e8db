"""Type aliases of the public API's arguments (the package ships ``py.typed``, PEP 561).

They say what each kind of argument accepts; numpy is typed, scipy and networkx are not (their
matrices and graphs are ``Any`` to a type checker).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Literal, TypeAlias

import numpy as np
import scipy.sparse as sp

__all__ = ["ExactSearch", "GossipInput", "GossipMatrix", "GraphLike", "MapSource",
           "MemorySize", "NodeSelection", "Nodes", "PathLike", "Progress"]

GossipMatrix: TypeAlias = sp.spmatrix | sp.sparray | np.ndarray | Sequence[Sequence[float]]
"""A constant gossip matrix W: scipy sparse (any format), a dense array or a list of rows."""

GossipInput: TypeAlias = GossipMatrix | Sequence[GossipMatrix] | Callable[[int], GossipMatrix]
"""W, or time-varying gossip: the T matrices ``W_0 .. W_(T-1)`` or a callable ``t -> W_t``."""

GraphLike: TypeAlias = Any
"""A graph: a networkx graph, a :class:`sparsedp.Graph` or the path of an edge-list file."""

MapSource: TypeAlias = GossipMatrix | GraphLike
"""What a map reads: a gossip matrix (nodes are its rows) or a graph (nodes are its labels)."""

Nodes: TypeAlias = int | Sequence[int] | np.ndarray | None
"""A row of W, rows of W, or None (a view that fixes its own observers)."""

NodeSelection: TypeAlias = (Literal["all"] | Sequence[Hashable] | np.ndarray
                 | tuple[Literal["sample"], int, int])
"""``"all"``, a list of nodes, or ``("sample", k, seed)``."""

ExactSearch: TypeAlias = bool | Literal["auto"]
"""Whether the exhaustive search over sign vectors runs (``"auto"``: when T is small)."""

MemorySize: TypeAlias = int | float | str | None
"""A memory budget: bytes, a size string (``"8G"``), or None (the default budget)."""

Progress: TypeAlias = bool | Literal["auto", "always", "never"] | None
"""A progress bar: None (auto), True (always), False (never), or the mode's name."""

PathLike: TypeAlias = str | os.PathLike[str]
"""A file path."""
