"""Helpers of :mod:`sparsedp.graphs.graph` for edge-list files: comment lines, the optional
weight column, the remapping of integer ids, and warnings attributed to the caller."""

from __future__ import annotations

import re
import sys
import warnings

import numpy as np

from sparsedp.errors import GraphError

# SNAP "# Directed graph ..." (but not "Undirected"), KONECT "% asym ..." headers.
_DIRECTED_HEADER = re.compile(rb"(?<![a-z])directed\b|^%[ \t]*asym\b", re.IGNORECASE)


def _warn_caller(message: str) -> None:
    """``UserWarning`` attributed to the first calling frame outside the sparsedp package."""
    frame, level = sys._getframe(1), 2
    while frame is not None and frame.f_globals.get("__name__", "").startswith("sparsedp."):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, UserWarning, stacklevel=level)


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


def _third_fields(body: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The third field of every line that has one, as floats, with its 1-based line number
    and the index of its line's pair; ``None`` when some third field is not a number (a
    label or tag column, not weights)."""
    buf = np.frombuffer(body, dtype=np.uint8)
    space = buf <= 32
    is_start = ~space
    is_start[1:] &= space[:-1]
    is_end = ~space
    is_end[:-1] &= space[1:]
    starts, ends = np.flatnonzero(is_start), np.flatnonzero(is_end) + 1
    line = np.searchsorted(np.flatnonzero(buf == 10), starts)
    first = np.ones(starts.size, dtype=bool)
    first[1:] = line[1:] != line[:-1]
    rank = np.arange(starts.size)
    rank -= np.maximum.accumulate(np.where(first, rank, 0))
    third = rank == 2
    if not third.any():
        return None
    text = b" ".join(body[a:b] for a, b in zip(starts[third], ends[third], strict=True))
    try:
        values = np.fromstring(text, dtype=np.float64, sep=" ")
    except ValueError:
        return None
    if values.size != int(third.sum()):
        return None
    pair = np.cumsum(first) - 1  # each non-blank line is one pair
    return values, line[third] + 1, pair[third]


def _check_weights(body: bytes, pairs: np.ndarray, path: str) -> None:
    """A numeric third column is read as edge weights: ``nan``, ``inf``, a negative weight or
    a weighted self-loop is an error naming the line; valid weights are ignored with a
    warning (the gossip weights come from the scheme)."""
    found = _third_fields(body)
    if found is None:
        return
    weights, lines, pair = found
    bad = np.flatnonzero(~np.isfinite(weights) | (weights < 0))
    if bad.size:
        k = int(bad[0])
        raise GraphError(f"{path}, line {lines[k]}: edge weight {weights[k]:g} is not a finite "
                         "non-negative number")
    self_loop = np.flatnonzero(pairs[pair, 0] == pairs[pair, 1])
    if self_loop.size:
        raise GraphError(f"{path}, line {lines[self_loop[0]]}: a weighted self-loop; the "
                         "weight a node keeps (W_ii) comes from the gossip scheme, not the file")
    _warn_caller(f"{path}: the third column (edge weights) is ignored; the gossip weights "
                 "come from the scheme")


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
