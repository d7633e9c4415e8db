"""The ``sparsedp`` command: a dispatcher (:mod:`sparsedp.cli.main`) and one module per
command family (``account``: gossip, ``randomwalk``: random walks and Muffliato, ``ppac``).

May import everything; nothing imports it.
"""

from sparsedp.cli.main import main

__all__ = ["main"]
