"""Command line: one subcommand per protocol family, dispatched here, with one error boundary.

``sparsedp account`` (gossip averaging, :mod:`sparsedp.cli.account`), ``sparsedp randomwalk``
and ``sparsedp muffliato`` (:mod:`sparsedp.cli.randomwalk`), ``sparsedp ppac``
(:mod:`sparsedp.cli.ppac`).  Each module adds its parser and a ``run`` / ``report`` pair;
:func:`main` runs it.  User mistakes print one line ``sparsedp: error: ...`` and exit with
status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings

from sparsedp.cli import account, ppac, randomwalk
from sparsedp.errors import SparseDPError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sparsedp", description="Differential-privacy accounting for gossip on graphs."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    account.add_parser(sub)
    randomwalk.add_parsers(sub)
    ppac.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", UserWarning)
            record = args.run(args)
    except (SparseDPError, OSError) as exc:
        print(f"sparsedp: error: {exc}", file=sys.stderr)
        return 2
    for warning in caught:
        print(f"sparsedp: warning: {warning.message}", file=sys.stderr)
    print(json.dumps(record) if args.json else args.report(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
