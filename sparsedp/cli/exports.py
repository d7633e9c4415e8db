"""``--csv FILE`` and ``--plot FILE`` for the commands that report many receivers or victims:
one row per node (its id, its graph distance from the source or attacker, its values) and a
figure of the main value against graph distance (matplotlib, the optional extra
``sparsedp[plot]``).  Both files are written whole or not at all
(:func:`sparsedp.files.write_atomically`)."""

from __future__ import annotations

import argparse
import csv
import math
from pathlib import Path

import numpy as np
from scipy.sparse.csgraph import shortest_path

from sparsedp.errors import ParameterError
from sparsedp.files import write_atomically


def add_export_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--csv", metavar="FILE",
                        help="also write one row per node (id, graph distance, values) to FILE")
    parser.add_argument("--plot", metavar="FILE",
                        help="also draw the values against graph distance to FILE (.png, .pdf, "
                             ".svg; needs matplotlib: pip install 'sparsedp[plot]')")


def graph_distances(adjacency, source: int, nodes) -> list:
    """Hop distance from ``source`` to each of ``nodes`` (``None`` when unreachable)."""
    hops = shortest_path(adjacency, directed=False, unweighted=True, indices=int(source))
    return [int(h) if math.isfinite(h) else None for h in hops[np.asarray(nodes, dtype=int)]]


def export(args: argparse.Namespace, columns: dict[str, list], *, x: str, y: str,
           title: str) -> None:
    """Write ``columns`` (equal-length lists, the first the node ids) to ``args.csv`` and a
    scatter of ``y`` against ``x`` to ``args.plot``, where given."""
    if args.csv:
        write_atomically(args.csv, lambda path: _write_csv(path, columns))
    if args.plot:
        write_atomically(args.plot, lambda path: _write_plot(path, columns, x, y, title))


def _write_csv(path: str, columns: dict[str, list]) -> None:
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        writer.writerows(zip(*columns.values(), strict=True))


def _write_plot(path: str, columns: dict[str, list], x: str, y: str, title: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ParameterError("--plot needs matplotlib: pip install 'sparsedp[plot]'") from None
    xs = np.array([np.nan if v is None else v for v in columns[x]], dtype=float)
    ys = np.asarray(columns[y], dtype=float)
    finite = np.isfinite(xs) & np.isfinite(ys)
    figure, axes = plt.subplots(figsize=(6, 4))
    axes.scatter(xs[finite], ys[finite], s=12, alpha=0.7)
    infinite = np.isfinite(xs) & np.isinf(ys)
    if infinite.any():
        top = ys[finite].max() if finite.any() else 1.0
        axes.scatter(xs[infinite], np.full(infinite.sum(), top * 1.5), marker="^", color="red",
                     label="infinite")
        axes.legend()
    if finite.any() and (ys[finite] > 0).all():
        axes.set_yscale("log")
    axes.set_xlabel(x.replace("_", " "))
    axes.set_ylabel(y.replace("_", " "))
    axes.set_title(title)
    figure.tight_layout()
    suffix = Path(path).suffix.lstrip(".") or "png"
    try:
        figure.savefig(path, format=suffix)
    except ValueError as exc:
        raise ParameterError(f"cannot draw {path}: {exc}") from None
    finally:
        plt.close(figure)
