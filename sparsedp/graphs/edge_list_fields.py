"""Helpers of :mod:`sparsedp.graphs.graph` for edge-list files: comment lines, a header line
naming the columns, the weight column, the remapping of integer ids, and warnings attributed to
the caller."""

from __future__ import annotations

import re
import sys
import warnings

import numpy as np

from sparsedp.errors import GraphError, ParameterError

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


def _column_numbers(body: bytes, column: int) -> tuple[np.ndarray, np.ndarray,
                                                     np.ndarray] | None:
    """Field ``column`` (0-based) of every line that has one, as floats, with its 1-based line
    number and the index of its line's pair (each non-blank line is one pair); ``None`` when
    no line has that field or some such field is not a number (a label or tag column)."""
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
    wanted = rank == column
    if not wanted.any():
        return None
    text = b" ".join(body[a:b] for a, b in zip(starts[wanted], ends[wanted], strict=True))
    try:
        values = np.fromstring(text, dtype=np.float64, sep=" ")
    except ValueError:
        return None
    if values.size != int(wanted.sum()):
        return None
    pair = np.cumsum(first) - 1
    return values, line[wanted] + 1, pair[wanted]


def _is_number(field: bytes) -> bool:
    try:
        float(field)
    except ValueError:
        return False
    return True


def _header_candidate(body: bytearray) -> tuple[int, int, list[str]] | None:
    """``(start, end, fields)`` of the first non-blank line when neither of its first two
    fields is a number (a line that may name the columns, ``source target``), else None."""
    found = re.search(rb"\S", body)
    if found is None:
        return None
    start = body.rfind(b"\n", 0, found.start()) + 1
    end = body.find(b"\n", start)
    end = len(body) if end == -1 else end
    fields = bytes(body[start:end]).split()
    if len(fields) < 2 or _is_number(fields[0]) or _is_number(fields[1]):
        return None
    return start, end, [f.decode(errors="replace") for f in fields]


def _names_numeric_columns(fields: list[str], rest: bytes) -> bool:
    """Whether the candidate header ``fields`` (above lines of labels, ``alice bob 0.5``)
    has a text field over a column that is a number on every other line: it then names
    that column, it is not an edge."""
    return any(not _is_number(field.encode()) and _column_numbers(rest, k) is not None
               for k, field in enumerate(fields) if k >= 2)


def _warn_header(body: bytes, start: int, fields: list[str], path: str) -> None:
    lineno = body.count(b"\n", 0, start) + 1
    _warn_caller(f"{path}, line {lineno}: {' '.join(fields)!r} is read as a header naming the "
                 "columns (its fields are not like those of the other lines) and skipped")


def _check_weights(body: bytes, pairs: np.ndarray, path: str,
                   header: list[str] | None) -> None:
    """A numeric third column is read as edge weights: ``nan``, ``inf``, a negative weight or
    a weighted self-loop is an error naming the line; valid weights are ignored with a
    warning (the gossip weights come from the scheme, or from ``weight=``)."""
    found = _column_numbers(body, 2)
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
    name = header[2] if header is not None and len(header) > 2 else "weight"
    _warn_caller(f"{path}: the third column (edge weights) is ignored; the gossip weights "
                 "come from the scheme (gossip_matrix(path, scheme='row-normalised', "
                 f"weight={name!r}) uses them)")


def _weight_column(weight: str, header: list[str] | None, path: str) -> int:
    """The column of an edge list that ``weight`` names: a name of its header line (after
    the two node columns), or without a header ``"weight"``, the third column (the name
    networkx's ``read_weighted_edgelist`` gives it)."""
    if header is None:
        if weight == "weight":
            return 2
        raise ParameterError(f"weight={weight!r}: {path} has no header line naming its "
                             "columns; its third column is called 'weight' (as networkx's "
                             "read_weighted_edgelist calls it)")
    if weight in header[2:]:
        return header.index(weight, 2)
    if weight in header[:2]:
        raise ParameterError(f"weight={weight!r} names a node column of {path}")
    raise ParameterError(f"weight={weight!r}: {path} has no such column; its columns are "
                         + ", ".join(header))


def _edge_weights(body: bytes, column: int, pairs: int, path: str) -> tuple[np.ndarray,
                                                                            np.ndarray]:
    """The weight of every pair (field ``column`` of its line) and its line number; a line
    without one, a weight that is not a finite number > 0, is an error naming the line."""
    found = _column_numbers(body, column)
    if found is None or found[0].size != pairs:
        for lineno, line in enumerate(body.split(b"\n"), start=1):
            fields = line.split()
            if fields and (len(fields) <= column or not _is_number(fields[column])):
                raise GraphError(f"{path}, line {lineno}: no edge weight in column "
                                 f"{column + 1} ({line.strip().decode(errors='replace')!r})")
    weights, lines, _ = found
    bad = np.flatnonzero(~(np.isfinite(weights) & (weights > 0)))
    if bad.size:
        k = int(bad[0])
        raise GraphError(f"{path}, line {lines[k]}: edge weight {weights[k]:g} is not a "
                         "finite number > 0")
    return weights, lines


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
