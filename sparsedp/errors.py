"""Exception types raised for bad input.

Every error that a user can cause derives from :class:`SparseDPError`, so callers (and the CLI)
can report it as one clear line without a traceback.  They also derive from ``ValueError``
so that generic ``except ValueError`` handlers keep working.
"""


class SparseDPError(ValueError):
    """Base class for errors caused by the caller's input."""


class GraphError(SparseDPError):
    """The graph is unusable: empty, disconnected, malformed file, unknown node id."""


class GossipMatrixError(SparseDPError):
    """A gossip matrix fails a required property (named in the message, with the row)."""


class GraphGivenForMatrixError(GossipMatrixError, TypeError):
    """A graph was passed where a gossip matrix W is expected (also a ``TypeError``: the
    argument has the wrong type, not a wrong value)."""


class ParameterError(SparseDPError):
    """A scalar parameter is out of range (T < 1, sigma <= 0, delta outside (0, 1), ...)."""


class ResourceLimitError(SparseDPError):
    """A request would need more memory than the budget allows (estimate and what fits named)."""
