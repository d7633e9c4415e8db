"""``python -m sparsedp``: the ``sparsedp`` command, through its entry point
(:mod:`sparsedp_launcher`, the ``[project.scripts]`` target): same options, output, exit
statuses and Ctrl-C handling once the package is imported (``-m`` imports the package
first)."""

import sys

from sparsedp_launcher import main

sys.exit(main())
