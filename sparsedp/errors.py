"""Exception types raised for bad input.

Every error that a user can cause derives from :class:`SparseDPError`, so callers (and the CLI)
can report it as one clear line without a traceback.  They also derive from ``ValueError``
so that generic ``except ValueError`` handlers keep working.
"""


class SparseDPError(ValueError):
    """Base class for errors caused by the caller's input.

    Derives from ``ValueError``; catch it to report any input error of the package as one
    line.

    Examples
    --------
    >>> import sparsedp
    >>> try:
    ...     sparsedp.gaussian_epsilon(1.0, sigma=-1.0, delta=1e-5)
    ... except sparsedp.SparseDPError as err:
    ...     print(type(err).__name__, "-", err)
    ParameterError - sigma must be > 0 and finite, got -1.0
    """


class GraphError(SparseDPError):
    """The graph is unusable: empty, disconnected, malformed file, unknown node id.

    Examples
    --------
    >>> import networkx as nx, sparsedp
    >>> W = sparsedp.gossip_matrix(nx.path_graph(3))
    >>> try:
    ...     sparsedp.squared_sensitivity(W, target=5, observers=[0], T=3)
    ... except sparsedp.GraphError as err:
    ...     print(err)
    unknown node id 5 for target: W has the rows 0..2
    """


class NodeIndexError(GraphError, IndexError):
    """A node index (a row of W) outside ``0..n-1``: also an ``IndexError``, as numpy raises
    for an index out of bounds.

    Examples
    --------
    >>> import networkx as nx, sparsedp
    >>> W = sparsedp.gossip_matrix(nx.path_graph(3))
    >>> try:
    ...     sparsedp.squared_sensitivity(W, target=10**6, observers=[0], T=3)
    ... except IndexError as err:
    ...     print(type(err).__name__, "-", err)
    NodeIndexError - unknown node id 1000000 for target: W has the rows 0..2
    """


class NodeLabelError(GraphError, KeyError):
    """A node label that the graph does not have: also a ``KeyError``, as a ``dict`` (and a
    networkx graph's ``G.nodes[label]``) raises for a missing key.

    Examples
    --------
    >>> import networkx as nx, sparsedp
    >>> g = sparsedp.as_graph(nx.Graph([("a", "b")]))
    >>> try:
    ...     g.index_of("z", "target")
    ... except KeyError as err:
    ...     print(type(err).__name__, "-", err)
    NodeLabelError - unknown node id 'z' for target (nodes are named by their labels: 'a', 'b')
    """

    __str__ = Exception.__str__  # the message as written, not KeyError's repr of it


class GossipMatrixError(SparseDPError):
    """A gossip matrix fails a required property (named in the message, with the row).

    Examples
    --------
    >>> import numpy as np, sparsedp
    >>> try:
    ...     sparsedp.check_gossip_matrix(np.array([[0.5, 0.4], [0.5, 0.5]]))
    ... except sparsedp.GossipMatrixError as err:
    ...     print(err)
    row 0 of W sums to 0.9, not 1 (not row-stochastic)
    """


class GraphGivenForMatrixError(GossipMatrixError, TypeError):
    """A graph was passed where a gossip matrix W is expected (also a ``TypeError``: the
    argument has the wrong type, not a wrong value)."""


class ParameterError(SparseDPError):
    """A scalar parameter is out of range (T < 1, sigma <= 0, delta outside (0, 1), ...).

    Examples
    --------
    >>> import sparsedp
    >>> try:
    ...     sparsedp.calibrate_sigma(1.0, epsilon=1.0, delta=2.0)
    ... except sparsedp.ParameterError as err:
    ...     print(err)
    delta must lie in (0, 1), got 2.0
    >>> issubclass(sparsedp.ParameterError, ValueError)
    True
    """


class MissingExtraError(ParameterError, ImportError):
    """An optional dependency is not installed; the message names the extra that installs it
    (``pip install 'sparsedp[pandas]'``).  Also an ``ImportError``, as numpy and pandas raise
    for a missing optional dependency.

    Examples
    --------
    >>> import sparsedp
    >>> issubclass(sparsedp.errors.MissingExtraError, ImportError)
    True
    """


class ResourceLimitError(SparseDPError):
    """A request would need more memory than the budget allows (estimate and what fits named)."""
