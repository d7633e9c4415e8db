"""Command line: one subcommand per protocol family, dispatched here, with one error boundary.

``sparsedp account`` (gossip averaging, :mod:`sparsedp.cli.account`), ``sparsedp randomwalk``
and ``sparsedp muffliato`` (:mod:`sparsedp.cli.randomwalk`), ``sparsedp ppac``
(:mod:`sparsedp.cli.ppac`), ``sparsedp mf`` (:mod:`sparsedp.cli.mf`), ``sparsedp mafalda``
(:mod:`sparsedp.cli.mafalda`), ``sparsedp map``
and ``sparsedp sweep`` (privacy maps, :mod:`sparsedp.cli.maps`), ``sparsedp audit``
(:mod:`sparsedp.cli.audit`).  Each module adds its parser and a ``run`` / ``report`` pair
(and an ``exit_status(record)`` where a result can be a failure: a failed audit exits with
status 3); :func:`main` runs it inside the one error boundary of the command line:

* a user mistake (:class:`sparsedp.errors.SparseDPError`, a file that cannot be read): one
  line ``sparsedp: error: ...``, exit status 2;
* out of memory: one line, exit status 1;
* Ctrl-C: ``sparsedp: interrupted``, exit status 130;
* a closed standard output (``sparsedp ... | head -1``): quiet exit (the recipe of Python's
  signal documentation), exit status 1 as ``head``'s callers expect from a broken pipe;
* ``--debug``: the full traceback instead, for bug reports.

``--json`` prints strict JSON (:func:`sparsedp.plain.plain`: infinity as ``"infinity"``).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import signal
import sys
import traceback
import warnings

import sparsedp
from sparsedp import resources
from sparsedp.cli import account, audit, budget, mafalda, maps, mf, ppac, randomwalk
from sparsedp.errors import SparseDPError
from sparsedp.plain import plain

EXIT_ERROR, EXIT_USAGE, EXIT_INTERRUPTED = 1, 2, 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sparsedp", description="Differential-privacy accounting for gossip on graphs."
    )
    parser.add_argument("--version", action="version", version=f"sparsedp {sparsedp.__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="show the full traceback of an error (for bug reports)")
    sub = parser.add_subparsers(dest="command", required=True)
    account.add_parser(sub)
    randomwalk.add_parsers(sub)
    ppac.add_parser(sub)
    mf.add_parser(sub)
    mafalda.add_parser(sub)
    maps.add_parser(sub)
    audit.add_parser(sub)
    budget.add_parser(sub)
    _show_defaults(parser)
    return parser


class _DefaultsFormatter(argparse.HelpFormatter):
    """Appends ``(default: ...)`` to an option's help unless the help already states its
    default or there is none to state (a flag, or no value given)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        silent = action.default in (None, False, argparse.SUPPRESS) or not action.option_strings
        if silent or "default" in text:
            return text
        return text + " (default: %(default)s)"


def _show_defaults(parser: argparse.ArgumentParser) -> None:
    """Every (sub)command's ``--help`` shows each option's default (:class:`_DefaultsFormatter`)."""
    parser.formatter_class = _DefaultsFormatter
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _show_defaults(child)


def main(argv: list[str] | None = None) -> int:
    """Run one command; return its exit status (module docstring)."""
    args = build_parser().parse_args(argv)
    try:
        record, warning_lines = _run(args)
        for line in warning_lines:
            print(f"sparsedp: warning: {line}", file=sys.stderr)
        output = json.dumps(plain(record), allow_nan=False) if args.json else args.report(record)
        print(output, flush=True)
        status = getattr(args, "exit_status", None)
        if status is not None:
            return status(record)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)  # no second error when Python flushes
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_ERROR
    except Exception as exc:
        if args.debug:
            raise
        return _report_error(exc)
    except KeyboardInterrupt:
        if args.debug:
            raise
        print("sparsedp: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    return 0


def _run(args: argparse.Namespace) -> tuple[dict, list[str]]:
    """The command's record and its warnings.

    Where processes can be forked (and no numba threads run here yet), the work runs in a
    child process and this one waits for its
    result: a long numba or LAPACK call defers Python's signal handling until it returns
    (minutes, for a large factorisation), so Ctrl-C could not stop it in time, whereas the
    waiting parent is interrupted at once and kills the child.  ``--debug`` runs in this
    process, for a traceback of the original frames; so do commands that set ``in_process``
    (``sweep``: its Dask cluster starts worker processes, which a daemonic child may not, and
    it waits in Python, where Ctrl-C is handled at once).
    """
    if (args.debug or getattr(args, "in_process", False)
            or "fork" not in multiprocessing.get_all_start_methods() or _threads_started()):
        return _run_here(args)
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(args, sender), daemon=True)
    child.start()
    sender.close()
    try:
        outcome, payload, warning_lines = receiver.recv()
    except EOFError:  # the child died without answering: killed, e.g. by the kernel's OOM killer
        child.join()
        raise MemoryError(f"the computation was killed (signal {-child.exitcode})") from None
    finally:
        if child.is_alive() and child.exitcode is None:
            child.kill()
    child.join()
    if outcome == "error":
        raise payload
    return payload, warning_lines


def _threads_started() -> bool:
    """Whether numba's parallel threads already run in this process (``main`` called from a
    program that has used the kernels): forking it is unsafe (GNU OpenMP aborts the child),
    so the command then runs here.  The ``sparsedp`` command itself starts without them."""
    parallel = sys.modules.get("numba.np.ufunc.parallel")
    return bool(parallel is not None and getattr(parallel, "_is_initialized", True))


def _run_here(args: argparse.Namespace) -> tuple[dict, list[str]]:
    with warnings.catch_warnings(record=True) as caught, \
            resources.memory_limit(getattr(args, "max_memory", None)):
        warnings.simplefilter("always", UserWarning)
        record = args.run(args)
    return record, [str(w.message) for w in caught]


def _child(args: argparse.Namespace, sender) -> None:
    """The forked worker: run the command, send ``(outcome, payload, warnings)`` back."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and kills us
    try:
        record, warning_lines = _run_here(args)
        sender.send(("ok", record, warning_lines))
    except Exception as exc:
        try:
            sender.send(("error", exc, []))
        except Exception:  # an exception that does not pickle: its text and traceback
            sender.send(("error", RuntimeError("".join(traceback.format_exception(exc))), []))


def _report_error(exc: Exception) -> int:
    """One line for an error the user can act on, and its exit status; anything else is a
    bug and keeps its traceback."""
    if isinstance(exc, SparseDPError):
        print(f"sparsedp: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if isinstance(exc, OSError) and exc.filename is not None:
        print(f"sparsedp: error: {exc.filename}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    if isinstance(exc, MemoryError):
        print("sparsedp: error: out of memory (rerun with fewer rounds or observers, or --debug "
              "for the traceback)", file=sys.stderr)
        return EXIT_ERROR
    raise exc


if __name__ == "__main__":
    sys.exit(main())
