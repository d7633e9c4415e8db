"""Entry point of the ``sparsedp`` command (``[project.scripts]`` in pyproject.toml).

It lives outside the ``sparsedp`` package so that it runs before the package (numpy, scipy,
numba, networkx: about a second) is imported: Ctrl-C while the command is still loading then
ends it the way Ctrl-C during a run does (:mod:`sparsedp.cli.main`): one line
``sparsedp: interrupted`` and exit status 130, with no traceback.  The process exits at once
(``os._exit``): an import cut short can leave library threads that would block a normal exit.

A KeyboardInterrupt raised inside a C extension's initialisation does not always arrive as
one: numpy's ``_multiarray_umath`` imports ``datetime`` through ``PyCapsule_Import``, which
turns the interrupt into an ``ImportError``.  So while the package loads, SIGINT is recorded
before it is raised, and any exception from the import after a recorded SIGINT counts as the
interrupt.
"""

import os
import signal
import sys
import threading
from typing import NoReturn


def _interrupted() -> NoReturn:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C: no traceback either
    sys.stderr.write("sparsedp: interrupted\n")
    sys.stderr.flush()
    os._exit(130)


def main() -> int:
    received = []

    def record_and_raise(signum, frame):
        received.append(signum)
        raise KeyboardInterrupt

    try:  # one boundary for the import, the handler's restore and the run
        loading = (threading.current_thread() is threading.main_thread()
                   and signal.getsignal(signal.SIGINT) is signal.default_int_handler)
        if loading:
            signal.signal(signal.SIGINT, record_and_raise)
        try:
            from sparsedp.cli.main import main as run
        except BaseException:
            if received:
                _interrupted()
            raise
        finally:
            if loading:
                signal.signal(signal.SIGINT, signal.default_int_handler)
        if received:  # the signal arrived after the last import statement had run
            _interrupted()
        return run()
    except KeyboardInterrupt:  # before or after the command's own error boundary
        _interrupted()


if __name__ == "__main__":
    sys.exit(main())
