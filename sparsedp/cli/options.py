"""Options shared by the commands of every family."""

from __future__ import annotations

import argparse

from sparsedp.progress import MODES


def add_progress_option(parser: argparse.ArgumentParser) -> None:
    """``--progress auto|always|never`` (and ``--no-progress`` for never), see
    :mod:`sparsedp.progress`."""
    parser.add_argument(
        "--progress", choices=MODES, default="auto",
        help="auto: a bar on a terminal after 2 s, else one line every 30 s; always: from the "
             "start (a line every 5 s off a terminal); never (default: %(default)s)",
    )
    parser.add_argument("--no-progress", dest="progress", action="store_const", const="never",
                        help="the same as --progress never")
