"""Entry point of the ``sparsedp`` command (``[project.scripts]`` in pyproject.toml).

It lives outside the ``sparsedp`` package so that it runs before the package (numpy, scipy,
numba, networkx: about a second) is imported: Ctrl-C while the command is still loading then
ends it the way Ctrl-C during a run does (:mod:`sparsedp.cli.main`): one line
``sparsedp: interrupted`` and exit status 130, with no traceback.  The process exits at once
(``os._exit``): an import cut short can leave library threads that would block a normal exit.
"""

import os
import sys


def main() -> int:
    try:
        from sparsedp.cli.main import main as run

        return run()
    except KeyboardInterrupt:  # before or after the command's own error boundary
        sys.stderr.write("sparsedp: interrupted\n")
        sys.stderr.flush()
        os._exit(130)


if __name__ == "__main__":
    sys.exit(main())
