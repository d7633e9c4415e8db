import json
import math
import os
import pathlib
import signal
import subprocess
import sys
import time

import networkx as nx
import numpy as np
import pytest
from threadpoolctl import threadpool_limits

import sparsedp
from sparsedp.graphs.weights import gossip_matrix
from tests.interrupt_plugin import pytest_configure, pytest_runtest_protocol  # noqa: F401


@pytest.fixture(scope="session", autouse=True)
def single_threaded_blas():
    """The dense references (:mod:`sparsedp.testing`) run with one BLAS thread, as the engine
    does (:mod:`sparsedp.linalg.threads`): on the 2-core machine under load, multi-threaded
    OpenBLAS made one Zip-DL reference test take 94 s instead of about 1 s."""
    with threadpool_limits(1, user_api="blas"):
        yield



@pytest.fixture(autouse=True)
def a_new_progress_job(monkeypatch):
    """Each test starts a new job for the progress log (sparsedp.progress._LogClock): the
    session's tests follow one another without idle gaps, and would otherwise be one job
    whose log lines land, every 30 s, in whichever test's stderr is open then."""
    import sparsedp.progress
    monkeypatch.setattr(sparsedp.progress, "_LOG_CLOCK", sparsedp.progress._LogClock())

def bench_module(name: str):
    """``bench/<name>.py`` imported as the scripts import each other (bench/ on the path),
    registered in ``sys.modules`` under ``bench_<name>`` (its dataclasses need that)."""
    import importlib.util
    import pathlib
    import sys

    bench = pathlib.Path(__file__).resolve().parents[1] / "bench"
    spec = importlib.util.spec_from_file_location(f"bench_{name}", bench / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    sys.path.insert(0, str(bench))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(bench))
    return module


def slow_after(cases, keep: int) -> list:
    """Parametrize cases for the two tiers: the first ``keep`` in the default run, the rest
    marked ``slow`` (a case that is a tuple of arguments stays one)."""
    cases = list(cases)
    return [*cases[:keep], *(pytest.param(*(c if isinstance(c, tuple) else (c,)),
                                          marks=pytest.mark.slow) for c in cases[keep:])]


@pytest.fixture
def engine_serves_self_observation(monkeypatch):
    """For tests of the engine's numbers on instances whose observed set contains the target
    (a target among its own observers, a coalition around it): the public entries refuse
    them (one rule for every family, tests/test_self_observation.py), the engine itself
    serves them (the PNDP view of matrix factorisation observes the target's messages), and
    its values there still agree with the dense reference."""
    from sparsedp.gossip import sensitivity

    monkeypatch.setattr(sensitivity, "_refuse_target_among_observers",
                        lambda target, observers: None)


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


def random_doubly_stochastic(G, rng, kind: str = "sinkhorn"):
    """A random symmetric doubly stochastic W (CSR) on the pattern of G plus self-loops.

    ``"sinkhorn"``: random log-normal weights on the edges and on the diagonal (the diagonal
    scaled by a random factor in ``[1e-4, 1]``, so nearly periodic W occur), balanced by the
    symmetric Sinkhorn-Knopp iteration ``x <- sqrt(x / (A x))``, ``W = diag(x) A diag(x)``; the
    diagonal then absorbs the last rounding of the row sums.  ``"matchings"``: a random convex
    combination of the identity and of random matchings of G (each a symmetric permutation
    matrix), retried until the matchings cover a connected spanning subgraph (irreducible W);
    ``RuntimeError`` when that does not happen (stars).  Neither is a Metropolis or max-degree
    matrix: the spectra are irregular, often with a small gap."""
    import scipy.sparse as sp

    n = G.number_of_nodes()
    index = {v: i for i, v in enumerate(G.nodes())}
    edges = [(index[u], index[v]) for u, v in G.edges() if u != v]
    if kind == "sinkhorn":
        A = np.zeros((n, n))
        for u, v in edges:
            A[u, v] = A[v, u] = rng.lognormal(0.0, 1.0)
        A[np.arange(n), np.arange(n)] = (rng.lognormal(0.0, 1.0, size=n)
                                         * 10.0 ** -rng.uniform(0.0, 4.0))
        x = np.ones(n)
        for _ in range(20_000):
            x = np.sqrt(x / (A @ x))
            if np.abs(x * (A @ x) - 1.0).max() < 1e-15:
                break
        A = x[:, None] * A * x[None, :]
        A = (A + A.T) / 2.0
        A[np.arange(n), np.arange(n)] += 1.0 - A.sum(axis=1)
        if np.min(np.diag(A)) < 0 or np.abs(A.sum(axis=1) - 1.0).max() > 1e-13:
            raise RuntimeError("Sinkhorn scaling did not converge")
        return sp.csr_matrix(A)
    if kind == "matchings":
        for _attempt in range(100):
            k = int(rng.integers(2, 8))
            weights = rng.dirichlet(np.ones(k + 1))
            A = weights[0] * np.eye(n)
            union = nx.Graph()
            union.add_nodes_from(range(n))
            for w in weights[1:]:
                P = np.eye(n)
                used = set()
                for e in rng.permutation(len(edges)):
                    u, v = edges[e]
                    if u not in used and v not in used:
                        used |= {u, v}
                        P[u, u] = P[v, v] = 0.0
                        P[u, v] = P[v, u] = 1.0
                        union.add_edge(u, v)
                A += w * P
            if nx.is_connected(union):
                return sp.csr_matrix(A)
        raise RuntimeError("no irreducible combination of matchings")
    raise ValueError(kind)


def small_graph(rng):
    """A random small connected graph from a few families (cycles, paths, stars, trees,
    complete, Erdos-Renyi, Barabasi-Albert, barbells, wheels, the Petersen graph)."""
    family = rng.choice(["cycle", "path", "star", "tree", "complete", "er", "ba", "barbell",
                         "wheel", "petersen"])
    n = int(rng.integers(3, 26))
    s = int(rng.integers(1 << 30))
    if family == "cycle":
        return nx.cycle_graph(n)
    if family == "path":
        return nx.path_graph(n)
    if family == "star":
        return nx.star_graph(n - 1)
    if family == "tree":
        return nx.random_labeled_tree(n, seed=s) if hasattr(nx, "random_labeled_tree") \
            else nx.random_tree(n, seed=s)
    if family == "complete":
        return nx.complete_graph(min(n, 12))
    if family == "ba":
        return nx.barabasi_albert_graph(max(n, 4), 2, seed=s)
    if family == "barbell":
        return nx.barbell_graph(max(3, n // 3), int(rng.integers(0, 4)))
    if family == "wheel":
        return nx.wheel_graph(max(n, 4))
    if family == "petersen":
        return nx.petersen_graph()
    for _attempt in range(100):
        G = nx.erdos_renyi_graph(n, min(1.0, 2.5 * np.log(n) / n), seed=s)
        if nx.is_connected(G):
            return G
        s += 1
    return nx.cycle_graph(n)


def random_family_graph(k: int, seed_base: int, low: int = 20, high: int = 201) -> nx.Graph:
    """The k-th random connected graph of ``low`` to ``high - 1`` nodes, cycling through four
    families (Erdos-Renyi, random geometric, Barabasi-Albert, Watts-Strogatz); its size drawn
    from ``numpy.random.default_rng(seed_base + k)``; largest component, labels 0..n-1."""
    rng = np.random.default_rng(seed_base + k)
    n = int(rng.integers(low, high))
    family = k % 4
    if family == 0:
        G = nx.erdos_renyi_graph(n, min(1.0, 6.0 / n), seed=k)
    elif family == 1:
        G = nx.random_geometric_graph(n, math.sqrt(8.0 / (math.pi * n)), seed=k)
    elif family == 2:
        G = nx.barabasi_albert_graph(n, 2, seed=k)
    else:
        G = nx.watts_strogatz_graph(n, 4, 0.2, seed=k)
    G = G.subgraph(max(nx.connected_components(G), key=len)).copy()
    return nx.convert_node_labels_to_integers(G)


def killed_and_whole_runs(tmp_path, child: str, args: list, T: int, kill_after: int):
    """The kill -9 check of the accountants' checkpoints.  ``child`` is a script run as
    ``child DIR *args`` that resumes from its checkpoint in DIR if there is one, checkpoints
    every round, writes the rounds done to ``DIR/rounds`` and prints its answers as JSON.  It
    runs once killed with SIGKILL after ``kill_after`` rounds (fewer than T) and restarted,
    once straight through; returns both outputs, parsed."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
           "PYTHONPATH": str(pathlib.Path(sparsedp.__file__).parents[1])}
    script = tmp_path / "child.py"
    script.write_text(child)
    straight, interrupted = tmp_path / "straight", tmp_path / "interrupted"
    straight.mkdir()
    interrupted.mkdir()
    args = [str(a) for a in args]
    running = subprocess.Popen([sys.executable, str(script), str(interrupted), *args], env=env,
                               stdout=subprocess.DEVNULL)
    progress = interrupted / "rounds"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if progress.exists() and int(progress.read_text() or 0) >= kill_after:
            break
        time.sleep(0.02)
    os.kill(running.pid, signal.SIGKILL)
    running.wait()
    assert int(progress.read_text()) < T

    def run(directory):
        done = subprocess.run([sys.executable, str(script), str(directory), *args], env=env,
                              capture_output=True, text=True, check=True)
        return json.loads(done.stdout)

    return run(interrupted), run(straight)


def brute_force_rounds(make, epsilon: float, delta: float, limit: int) -> int:
    """The largest T <= limit whose fresh accountant (``make()`` stepped T rounds) keeps
    ``epsilon(delta)`` within the budget."""
    best = 0
    for T in range(1, limit + 1):
        accountant = make()
        accountant.step(T)
        if accountant.epsilon(delta) > epsilon:
            break
        best = T
    return best

