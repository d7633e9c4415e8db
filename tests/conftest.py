import networkx as nx
import numpy as np
import pytest

from sparsedp.graphs.weights import gossip_matrix


def connected_instance(kind: str, n: int, seed: int):
    """A connected networkx graph of the given family with about n nodes."""
    rng = np.random.default_rng(seed)
    for _attempt in range(100):
        s = int(rng.integers(1 << 30))
        if kind == "er":
            G = nx.erdos_renyi_graph(n, min(1.0, 3.0 * np.log(n) / n), seed=s)
        elif kind == "ba":
            G = nx.barabasi_albert_graph(n, 2, seed=s)
        elif kind == "ring":
            G = nx.cycle_graph(n)
        elif kind == "grid":
            side = max(2, int(np.sqrt(n)))
            G = nx.convert_node_labels_to_integers(nx.grid_2d_graph(side, side))
        else:
            raise ValueError(kind)
        if nx.is_connected(G):
            return G
    raise RuntimeError("no connected instance")


@pytest.fixture
def er_metropolis():
    G = connected_instance("er", 40, 0)
    return gossip_matrix(G, scheme="metropolis")
