"""Memory of building a graph, checked before a generator allocates anything.

A generator asked for ``er:1000000000:0.5`` would otherwise run until the kernel kills it.
Each generator states the node count and the expected number of edges of its request and
calls :func:`require_generator_fits`; the estimate is a margin over peaks measured with
``tracemalloc`` (networkx graphs: about 450 bytes per node plus edge, through the networkx
dict-of-dicts and the conversion to CSR; the array generators: index pairs, both directions
in CSR and the sort).
"""

from __future__ import annotations

from sparsedp import resources

__all__ = ["generator_memory", "require_generator_fits"]

NETWORKX_NODE_BYTES = 600
NETWORKX_EDGE_BYTES = 600
ARRAY_NODE_BYTES = 24
ARRAY_EDGE_BYTES = 160


def generator_memory(n: float, edges: float, *, networkx: bool) -> float:
    """Estimated peak bytes of generating a graph with ``n`` nodes and ``edges`` edges:
    ``600 (n + m)`` through networkx, ``24 n + 160 m`` for the array generators."""
    if networkx:
        return NETWORKX_NODE_BYTES * n + NETWORKX_EDGE_BYTES * edges
    return ARRAY_NODE_BYTES * n + ARRAY_EDGE_BYTES * edges


def require_generator_fits(what: str, n: float, edges: float, *, networkx: bool,
                           max_memory=None) -> None:
    """Refuse (:class:`sparsedp.errors.ResourceLimitError`) a generator request whose
    estimated memory exceeds the budget (:func:`sparsedp.resources.memory_budget`)."""
    budget = resources.memory_budget(max_memory)
    needed = generator_memory(n, edges, networkx=networkx)
    resources.require_within(
        needed, budget, f"{what} ({n:.4g} nodes, about {edges:.4g} edges)",
        "ask for a smaller graph (or raise max_memory)",
    )
