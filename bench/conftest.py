import networkx as nx
import pytest

import sparsedp


@pytest.fixture(scope="session")
def er200():
    """ER(200, 0.05) with Metropolis weights (connected for this seed)."""
    G = nx.erdos_renyi_graph(200, 0.05, seed=3)
    assert nx.is_connected(G)
    return sparsedp.gossip_matrix(G)
