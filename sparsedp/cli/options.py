"""Options shared by the commands of every family."""

from __future__ import annotations

import argparse

from sparsedp.progress import MODES


def exact_flag(text: str):
    """``--exact auto|true|false`` (also yes/no) as ``"auto"``, True or False."""
    choices = {"auto": "auto", "true": True, "yes": True, "false": False, "no": False}
    if text.lower() not in choices:
        raise argparse.ArgumentTypeError(f"expected auto, true or false, got {text!r}")
    return choices[text.lower()]


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


def add_memory_option(parser: argparse.ArgumentParser) -> None:
    """``--max-memory SIZE``: the budget of every cost check of the command
    (:func:`sparsedp.resources.memory_limit`)."""
    parser.add_argument("--max-memory", default=None, metavar="SIZE",
                        help="memory budget of the request, e.g. 8G (default: 80%% of the "
                             "physical memory); a larger request is refused before it starts")
