"""Where the bench scripts write: ``bench/results/`` (git-ignored) unless asked to record.

A plain run never touches the published records in ``docs/figures/``; ``--record`` writes
there (the figures and JSON that the docs cite), ``--out PATH`` writes to PATH.  Every script
adds these options with :func:`add_output_options` and names its files with
:func:`output_path`, so the choice is made here only.
"""

from __future__ import annotations

import argparse
import pathlib

BENCH = pathlib.Path(__file__).resolve().parent
RESULTS = BENCH / "results"
FIGURES = BENCH.parent / "docs" / "figures"


def add_output_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--record`` and ``--out PATH`` (exclusive) to a bench script's parser."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--record", action="store_true",
                       help="write the published record in docs/figures/ (default: "
                            "bench/results/, git-ignored)")
    where.add_argument("--out", type=pathlib.Path, default=None,
                       help="write the (main) record to this path instead")


def output_path(args: argparse.Namespace, name: str) -> pathlib.Path:
    """The path a script writes its file ``name`` to: ``args.out`` when given, else
    ``docs/figures/name`` with ``--record`` and ``bench/results/name`` without; its folder
    is created."""
    if args.out is not None:
        path = args.out
    else:
        path = (FIGURES if args.record else RESULTS) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    return path
