"""The benchmarks' groups and their BLAS pinning.

* ``quick``: seconds each (``pytest bench -m quick --benchmark-only``: under a minute in all);
* ``scale``: 10^5 to 10^7 nodes, minutes each: **deselected unless the ``-m`` expression
  names ``scale``** (``pytest bench -m scale --benchmark-only``), so that a plain
  ``pytest bench --benchmark-only`` never starts them.

Every benchmark runs with BLAS pinned to ``--blas-threads`` threads (default 1) for the engine
and for the dense references alike (:mod:`blas_pinning`); each records it in its
``extra_info``.
"""

import networkx as nx
import pytest
from blas_pinning import DEFAULT_BLAS_THREADS, pinned_blas

import sparsedp


def pytest_addoption(parser):
    parser.addoption("--blas-threads", type=int, default=DEFAULT_BLAS_THREADS,
                     help="BLAS threads for the engine and the dense references alike "
                          "(default %(default)s)")


def _scale_requested(config) -> bool:
    return "scale" in (config.getoption("markexpr") or "")


def pytest_report_header(config):
    scale = "selected" if _scale_requested(config) else "deselected (-m scale runs them)"
    return [f"bench: BLAS pinned to {config.getoption('blas_threads')} thread(s) for the engine "
            f"and the dense references; scale benchmarks {scale}"]


def pytest_collection_modifyitems(config, items):
    if _scale_requested(config):
        return
    scale = [item for item in items if item.get_closest_marker("scale")]
    if scale:
        config.hook.pytest_deselected(items=scale)
        items[:] = [item for item in items if not item.get_closest_marker("scale")]


@pytest.fixture(scope="session", autouse=True)
def blas_threads(pytestconfig):
    """BLAS pinned for the whole session (engine and dense references alike)."""
    with pinned_blas(pytestconfig.getoption("blas_threads")) as threads:
        yield threads


@pytest.fixture(autouse=True)
def _record_blas_threads(request, blas_threads):
    if "benchmark" in request.fixturenames:
        request.getfixturevalue("benchmark").extra_info["blas_threads"] = blas_threads


@pytest.fixture(scope="session")
def er200():
    """ER(200, 0.05) with Metropolis weights (connected for this seed)."""
    G = nx.erdos_renyi_graph(200, 0.05, seed=3)
    assert nx.is_connected(G)
    return sparsedp.gossip_matrix(G)
