"""Every job of the package on the graphs users bring, as a ratio to an Erdos-Renyi twin
(issue 35).

    python bench/realistic.py [--n 10000 | --quick] [--limit 120] [--graphs a,b] [--jobs x,y]
                              [--record | --out PATH] [--update] [--blas-threads 1] [--threads 1]
    python bench/realistic.py --table docs/figures/realistic.json   # its markdown table

**Graphs** (:data:`GRAPHS`, deterministic given ``--seed``; each connected):

* ``chung-lu``: the erased Chung-Lu model, power-law exponent 2.3, average degree 20, its
  giant component (hubs of degree ~20x the median and a few degree-1 nodes; the graph of the
  issue's n = 10^6 query);
* ``powerlaw-cluster``: Holme-Kim, ``networkx.powerlaw_cluster_graph(n, 10, 0.1)`` (the
  issue's PPAC and MF graph: hubs, clustering, minimum degree 9: no pendants);
* ``sbm``: a stochastic block model, ``clamp(n / 200, 10, 100)`` equal communities (50 at
  10^4), expected degree 14 inside the community and 2 outside, giant component;
* ``geometric``: a random geometric graph in the unit square, expected degree 15, giant
  component (poor expansion, no hubs);
* ``edge-list-file``: a SNAP-like file (:func:`write_edge_list_file`): a header line
  ``source target``, large random integer ids, a Chung-Lu graph with exponent 2.2 and average
  degree 10 with its small components, and about 1 % isolated nodes (ids seen only in a
  self-loop), read with ``sparsedp.read_edge_list(path, largest_component=True)``.

Each is timed next to its **ER twin** (:func:`er_twin`): ``G(n, m)`` with the same n and edge
count, relabelled by a random permutation; its few stray components (sparse models) are joined
to the giant one by moving as many random non-bridge edges, so n and m stay equal.

**Jobs** (:data:`JOBS`; each with its own T, in the table): the single pair in every view
(neighbourhood with the highest-degree node and with a median-degree node as observer;
secure-summation at T = 1000 also with an adjacent target, the pair kind whose sign problem
keeps a gap, docs/bounds.md), one
observer against all targets, a sampled privacy map (20 observers x all targets,
``upper="entrywise"``), the per-target worst case on 20 sampled targets over 1,000 sampled
observers (its pre-pass costs about observers x T products: every observer at n = 10^4 ran
past a minute on the twins), random walks (series and log-Green; log-Green also with a
contribution cap, whose result is an upper bound only on a certified spectral interval), PPAC
leakage (hub and median attacker), MF accounting (DP-D-SGD with a hub and a median attacker,
AntiPGD, Muffliato-SGD(2), PNDP, one pair), MAFALDA's utility Gram matrix and optimiser, and
the gossip audit (2,000 trials: about 5 ms each at n = 10^4).  Nodes are chosen by degree
rank, the same ranks on the twin: the hub (highest degree), the median-degree node and the
node after it in degree order.

**Measurement.**  One child process per graph model (spawned fresh) builds the graph and its
twin, then for each job warms it up on a 60-node graph (numba compilation outside the
timings) and times it on the twin, then on the graph, up to three times while every run takes
under 10 s (the fastest run of each side is kept: the large-graph paths that the 60-node graph
does not take compile in the first run, once 8 s): CPU seconds (``time.process_time``)
and wall seconds, peak resident memory of the call (``VmHWM`` reset through
``/proc/self/clear_refs``; ``extra`` = peak minus the resident size before the call), the
certified interval and relative gap where the job has one.  Ratio = graph CPU / twin CPU,
measured in the same process.  BLAS and the numba kernels run on one thread (``--blas-threads``,
``--threads``).  A run past ``--limit`` seconds (wall), or a child resident above
``--max-rss`` GiB (default 4: the machine is shared), is recorded as over the limit: the
child is killed and a new one goes on with the next job.  A job refused by the
package (``SparseDPError``) is recorded with its message.  Writes
``bench/results/realistic.json`` (``--record``: the published folder) and prints a markdown
table; ``--update`` replaces the rows of the jobs run in an existing record with the same n,
seed and thread settings and keeps the others (each row carries its date, the record every
run's command and load), so a part can be re-run after a change.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import multiprocessing
import os
import pathlib
import resource
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import networkx as nx
import numpy as np
from blas_pinning import add_blas_option, pinned_blas
from outputs import add_output_options, output_path
from timing import timed

import sparsedp
from sparsedp.errors import SparseDPError
from sparsedp.graphs import Graph, as_graph, random_geometric, stochastic_block_model
from sparsedp.graphs.large import adjacency_from_pairs, chung_lu_large, largest_component

DEFAULT_N = 10_000
QUICK_N = 2_000
DEFAULT_LIMIT = 120.0
WARM_UP_NODES = 60
REPEATS = 3  # runs of a job on both sides while each takes under REPEAT_BELOW_S ...
REPEAT_BELOW_S = 10.0  # ... the fastest run of each side is kept (first-call compilation out)


# ----------------------------------------------------------------------------- the graphs
def chung_lu(n: int, seed: int) -> Graph:
    """Giant component of the erased Chung-Lu graph, exponent 2.3, average degree 20."""
    return largest_component(chung_lu_large(n, 20, 2.3, seed=seed))


def powerlaw_cluster(n: int, seed: int) -> Graph:
    """Holme-Kim: ``networkx.powerlaw_cluster_graph(n, 10, 0.1)`` (connected)."""
    return as_graph(nx.powerlaw_cluster_graph(n, 10, 0.1, seed=seed))


def communities(n: int, seed: int) -> Graph:
    """Giant component of an SBM with ``clamp(n // 200, 10, 100)`` equal blocks, expected
    degree 14 inside the block and 2 outside."""
    blocks = min(100, max(10, n // 200))
    size = n // blocks
    sizes = [size] * blocks
    return largest_component(stochastic_block_model(
        sizes, 14 / (size - 1), 2 / (size * (blocks - 1)), seed=seed))


def geometric(n: int, seed: int) -> Graph:
    """Giant component of a random geometric graph in the unit square, expected degree 15."""
    return largest_component(random_geometric(n, math.sqrt(15 / (math.pi * n)), seed=seed))


def write_edge_list_file(path: pathlib.Path, n: int, seed: int) -> pathlib.Path:
    """A SNAP-like edge list at ``path``: the header ``source target``, the edges of an erased
    Chung-Lu graph (exponent 2.2, average degree 10, every component) under random 9-digit
    ids, and ``n // 100`` isolated nodes (an id seen only in a self-loop ``u u``), in random
    line order."""
    rng = np.random.default_rng(seed)
    graph = chung_lu_large(n, 10, 2.2, seed=seed)
    isolated = n // 100
    ids = rng.choice(10**9, size=n + isolated, replace=False) + 10**8
    coo = graph.adjacency.tocoo()
    keep = coo.row < coo.col
    pairs = np.column_stack([ids[coo.row[keep]], ids[coo.col[keep]]])
    loops = np.column_stack([ids[n:], ids[n:]])
    lines = np.concatenate([pairs, loops])[rng.permutation(pairs.shape[0] + isolated)]
    with open(path, "w") as f:
        f.write("source target\n")
        np.savetxt(f, lines, fmt="%d")
    return path


def edge_list_file(n: int, seed: int) -> Graph:
    """The file of :func:`write_edge_list_file`, read as a user would:
    ``sparsedp.read_edge_list(path, largest_component=True)`` (its warnings silenced)."""
    with tempfile.TemporaryDirectory() as folder:
        path = write_edge_list_file(pathlib.Path(folder) / "edges.txt", n, seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return sparsedp.read_edge_list(path, largest_component=True)


GRAPHS: dict[str, Callable[[int, int], Graph]] = {
    "chung-lu": chung_lu,
    "powerlaw-cluster": powerlaw_cluster,
    "sbm": communities,
    "geometric": geometric,
    "edge-list-file": edge_list_file,
}


def er_twin(graph: Graph, seed: int) -> Graph:
    """``G(n, m)`` with the graph's n and edge count, connected, under a random permutation of
    the nodes.  Each stray component is joined to the giant one by an edge that replaces a
    random edge of the giant component whose removal leaves its ends connected (so n, m and
    connectivity hold; at average degree >= 10 there are a handful of such moves)."""
    n, m = graph.n, graph.num_edges
    rng = np.random.default_rng(seed)
    G = nx.gnm_random_graph(n, m, seed=seed)
    components = sorted(nx.connected_components(G), key=len, reverse=True)
    giant = np.array(sorted(components[0]))
    for stray in components[1:]:
        while True:
            u = int(rng.choice(giant))
            neighbours = list(G[u])
            if len(neighbours) < 2:
                continue
            v = neighbours[rng.integers(len(neighbours))]
            G.remove_edge(u, v)
            if nx.has_path(G, u, v):
                break
            G.add_edge(u, v)
        G.add_edge(int(rng.choice(list(stray))), int(rng.choice(giant)))
    assert nx.is_connected(G) and G.number_of_edges() == m
    edges = np.array(G.edges(), dtype=np.int64)
    perm = rng.permutation(n)
    return Graph(adjacency_from_pairs(perm[edges[:, 0]], perm[edges[:, 1]], n),
                 np.arange(n, dtype=np.int64))


@dataclass(frozen=True)
class Roles:
    """Nodes by degree rank (rows): the hub, a median-degree node and the next in order, and
    the median node's neighbour of the nearest degree (lowest id among ties: an adjacent
    pair on every graph, whose sign problem is the hard kind, docs/bounds.md)."""

    hub: int
    median: int
    target: int
    neighbour: int

    @classmethod
    def of(cls, graph: Graph) -> Roles:
        order = np.argsort(graph.degrees, kind="stable")
        mid = graph.n // 2
        median = int(order[mid])
        A = graph.adjacency.tocsr()
        around = A.indices[A.indptr[median]:A.indptr[median + 1]]
        around = np.sort(around)
        gaps = np.abs(graph.degrees[around] - graph.degrees[median])
        return cls(hub=int(order[-1]), median=median, target=int(order[mid + 1]),
                   neighbour=int(around[np.argmin(gaps)]))


def shape(graph: Graph) -> dict:
    """n, edges and the degree profile of a graph."""
    deg = graph.degrees
    return {"n": graph.n, "edges": graph.num_edges, "max_degree": int(deg.max()),
            "median_degree": float(np.median(deg)), "min_degree": int(deg.min()),
            "degree_1_nodes": int(np.sum(deg == 1))}


# ----------------------------------------------------------------------------- the jobs
def _interval(lower: float, upper: float) -> dict:
    gap = (upper - lower) / upper if upper > 0 and math.isfinite(upper) else 0.0
    return {"lower": float(lower), "upper": float(upper), "gap": float(gap)}


def _columns_interval(result) -> dict:
    """The widest relative gap over the rows of a map or worst-case table."""
    lower = np.asarray(result.columns["lower"], dtype=float)
    upper = np.asarray(result.columns["upper"], dtype=float)
    finite = np.isfinite(upper) & (upper > 0)
    gaps = (upper[finite] - lower[finite]) / upper[finite]
    return {"rows": int(lower.size), "max_gap": float(gaps.max()) if gaps.size else 0.0}


def _metropolis(graph):
    return sparsedp.gossip_matrix(graph)


def _mf_matrix(graph):
    return sparsedp.gossip_matrix(graph, scheme="row-normalised-self-loops")


def pair(view: str, observer: str | None, T: int, target: str = "target"):
    """``squared_sensitivity`` of one pair in ``view`` (observer role, or None for the views
    that fix their own; target role)."""
    def prepare(graph, roles):
        W = _metropolis(graph)
        observers = None if observer is None else [getattr(roles, observer)]
        node = getattr(roles, target)

        def run():
            r = sparsedp.squared_sensitivity(W, node, observers, T, view=view,
                                             progress=False)
            return {**_interval(r.lower, r.upper), "method": r.method}
        return run
    return prepare


def one_to_all(T: int):
    """``privacy_map``: the median-degree observer against every target (c = 1 values)."""
    def prepare(graph, roles):
        W = _metropolis(graph)

        def run():
            m = sparsedp.privacy_map(W, observers=[roles.median], targets="all", T=T,
                                     upper="none", progress=False)
            return {"rows": len(m.columns["lower"])}
        return run
    return prepare


def sampled_map(observers: int, T: int):
    """``privacy_map``: ``observers`` sampled observers x every target, entrywise upper."""
    def prepare(graph, roles):
        W = _metropolis(graph)

        def run():
            return _columns_interval(sparsedp.privacy_map(
                W, observers=("sample", observers, 0), targets="all", T=T, upper="entrywise",
                progress=False, max_pairs=None))
        return run
    return prepare


def worst_case(targets: int, observers: int | None, T: int):
    """``per_target_worst_case`` for ``targets`` sampled targets over ``observers`` sampled
    observers (``None``: every node; its pre-pass costs about ``observers x T`` products
    whatever the targets)."""
    def prepare(graph, roles):
        W = _metropolis(graph)

        def run():
            return _columns_interval(sparsedp.per_target_worst_case(
                W, T=T, targets=("sample", targets, 0),
                observers="all" if observers is None else ("sample", observers, 1),
                progress=False))
        return run
    return prepare


def random_walk(method: str, T: int, contributions: int | None = None):
    """``random_walk_rdp`` of the median-degree node towards every other node (with a cap on
    its contributions: an upper bound when the spectral interval is certified)."""
    def prepare(graph, roles):
        W = _metropolis(graph)

        def run():
            r = sparsedp.random_walk_rdp(W, roles.median, T, 10.0, 2.0, method=method,
                                         contributions=contributions)
            return {"kind": r.kind, "numerical_error": float(r.numerical_error)}
        return run
    return prepare


def ppac(attacker: str, horizon: int):
    """PPAC leakage of the ``attacker`` role towards every other node."""
    def prepare(graph, roles):
        from sparsedp.ppac import random_designated
        layout = sparsedp.ppac_layout(graph, random_designated(graph, seed=0))
        W = sparsedp.laplacian_consensus_matrix(graph)
        label = graph.id_of(getattr(roles, attacker))

        def run():
            r = sparsedp.ppac_leakage(layout, W, label, horizon, progress=False)
            return {"rank": int(r.rank), "method": r.method[:40],
                    "relative_accuracy": (float(r.relative_accuracy)
                                          if math.isfinite(r.relative_accuracy)
                                          else "infinity")}  # strict JSON
        return run
    return prepare


def mf(algorithm: str, attacker: str, T: int):
    """``mf_sensitivity`` under PNDP, user level, one pair (target: the rank after the
    median), ``1/(d+1)`` weights."""
    def prepare(graph, roles):
        from sparsedp.mf import antipgd, dp_d_sgd, muffliato_sgd
        algorithms = {"dp-d-sgd": dp_d_sgd, "antipgd": antipgd,
                      "muffliato-sgd(2)": lambda: muffliato_sgd(2)}
        W = _mf_matrix(graph)

        def run():
            r = sparsedp.mf_sensitivity(W, roles.target, [getattr(roles, attacker)], T,
                                        algorithm=algorithms[algorithm](), progress=False)
            return {**_interval(r.lower, r.upper), "method": str(r.method)[:40]}
        return run
    return prepare


def mafalda(T: int, scheme: tuple[int, int]):
    """MAFALDA: the utility Gram matrix H of W (``1/(d+1)`` weights) and the optimised
    correlation for ``(k, b)``-cyclic participation."""
    def prepare(graph, roles):
        from sparsedp.mf.optimise import optimise_correlation
        from sparsedp.mf.utility import utility_gram
        W = _mf_matrix(graph)

        def run():
            H = utility_gram(W, T, progress=False)
            best = optimise_correlation(H.H, scheme, progress=False)
            return {"H": H.kind, "objective": float(best.objective), "gap": float(best.gap)}
        return run
    return prepare


def audit(T: int, trials: int):
    """``sparsedp.audit.audit_gossip`` of the secure-summation pair (one thread)."""
    def prepare(graph, roles):
        from sparsedp.audit import audit_gossip
        W = _metropolis(graph)

        def run():
            a = audit_gossip(W, roles.target, [roles.median], T, trials=trials, threads=1,
                             progress=False)
            return {**_interval(a.engine_lower, a.engine_upper), "passed": bool(a.passed)}
        return run
    return prepare


#: name -> prepare(graph, roles) -> run() -> summary; the name states T and the roles.
JOBS: dict[str, Callable] = {
    "pair secure-summation T=1000": pair("secure-summation", "median", 1000),
    "pair secure-summation T=100": pair("secure-summation", "median", 100),
    "pair secure-summation adjacent T=1000": pair("secure-summation", "median", 1000,
                                                  target="neighbour"),
    "pair secure-summation-v1 T=100": pair("secure-summation-v1", "median", 100),
    "pair neighbourhood hub T=100": pair("neighbourhood", "hub", 100),
    "pair neighbourhood median T=100": pair("neighbourhood", "median", 100),
    "pair adaptive-v1 T=100": pair("adaptive-v1", None, 100),
    "pair target-v1 T=100": pair("target-v1", None, 100),
    "pair local-dp T=100": pair("local-dp", None, 100),
    "one observer x all targets T=100": one_to_all(100),
    "map 20 observers x all, entrywise T=30": sampled_map(20, 30),
    "worst case 20 targets x 1000 observers T=20": worst_case(20, 1000, 20),
    "random walk series T=1000": random_walk("series", 1000),
    "random walk log-green T=10000": random_walk("log-green", 10_000),
    "random walk log-green capped T=10000": random_walk("log-green", 10_000, contributions=1),
    "ppac hub attacker t=10": ppac("hub", 10),
    "ppac median attacker t=10": ppac("median", 10),
    "mf dp-d-sgd hub T=20": mf("dp-d-sgd", "hub", 20),
    "mf dp-d-sgd median T=20": mf("dp-d-sgd", "median", 20),
    "mf antipgd median T=20": mf("antipgd", "median", 20),
    "mf muffliato-sgd(2) median T=20": mf("muffliato-sgd(2)", "median", 20),
    "mafalda T=60 (6,10)": mafalda(60, (6, 10)),
    "audit gossip T=10 2000 trials": audit(10, 2_000),
}


# ----------------------------------------------------------------------------- one phase
def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def _reset_peak() -> bool:
    """Reset VmHWM (Linux >= 4.0); False where that is not allowed."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def measure(run: Callable[[], dict]) -> dict:
    """CPU and wall seconds, peak resident memory and the summary of one call ``run()``;
    a ``SparseDPError`` is a refusal with its message."""
    reset = _reset_peak()
    before = _status_kib("VmRSS")
    cpu = time.process_time()
    try:
        wall, summary = timed(run)
        status = "ok"
    except SparseDPError as error:
        wall, summary, status = math.nan, {}, f"refused: {type(error).__name__}: {error}"
    cpu = time.process_time() - cpu
    peak = _status_kib("VmHWM") if reset else \
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"status": status, "cpu_s": cpu, "wall_s": wall, "peak_mib": peak / 1024,
            "extra_mib": max(0, peak - before) / 1024, "summary": summary,
            "peak_reset": reset}


def run_job(job: str, graph: Graph, roles: Roles | None = None) -> dict:
    """Prepare (untimed) and measure one job on one graph."""
    return measure(JOBS[job](graph, roles or Roles.of(graph)))


# ----------------------------------------------------------------------------- processes
def _child(model: str, n: int, seed: int, jobs: list[str], threads: int, conn) -> None:
    """Build the graph and its twin, then warm up, time the twin and time the graph for each
    job, reporting each step to the parent."""
    with pinned_blas(threads):
        start = time.perf_counter()
        graph = GRAPHS[model](n, seed)
        twin = er_twin(graph, seed)
        conn.send(("ready", {"graph": shape(graph), "twin": shape(twin),
                             "build_s": time.perf_counter() - start}))
        small = powerlaw_cluster(WARM_UP_NODES, seed)
        for job in jobs:
            conn.send(("warm-up", job, None))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    run_job(job, small)
                except Exception:  # noqa: BLE001 (the timed run reports the error)
                    pass
            last: dict[str, dict] = {}
            for repeat in range(REPEATS):
                for side, g in (("twin", twin), ("graph", graph)):
                    conn.send(("start", job, side))
                    try:
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            record = run_job(job, g)
                    except Exception as error:  # noqa: BLE001 (recorded, the suite goes on)
                        record = {"status": f"error: {type(error).__name__}: {error}"}
                    conn.send(("result", job, side, {**record, "runs": repeat + 1}))
                    last[side] = record
                if not all(r["status"] == "ok" and r["wall_s"] < REPEAT_BELOW_S
                           for r in last.values()):
                    break
            conn.send(("finished", job, None))
    conn.send(("done",))


def _rss_gib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 2**20
    return 0.0


def _wait(receiver, pid: int, seconds: float, max_rss_gib: float) -> str:
    """Wait up to ``seconds`` for a message while the child's resident memory stays under
    ``max_rss_gib``: ``""`` when a message came, else what went over."""
    deadline = time.monotonic() + seconds
    while not receiver.poll(min(0.5, max(0.0, deadline - time.monotonic()))):
        if time.monotonic() >= deadline:
            return f"{seconds:.0f} s"
        try:
            rss = _rss_gib(pid)
        except OSError:  # the child has exited: its last message or EOF is there
            continue
        if rss > max_rss_gib:
            return f"{max_rss_gib:g} GiB resident"
    return ""


def run_model(model: str, n: int, seed: int, jobs: list[str], limit: float, threads: int,
              max_rss_gib: float = 4.0, log=print) -> tuple[dict, dict]:
    """All ``jobs`` on one graph model and its twin: ``(shapes, {job: {side: record}})``.
    A step silent for more than ``limit`` seconds (build: ``4 limit``) or a child resident
    above ``max_rss_gib`` kills the child; the step is recorded as over the limit and a new
    child goes on with the next job."""
    context = multiprocessing.get_context("spawn")
    records: dict[str, dict] = {}
    shapes: dict = {}
    pending = list(jobs)
    while pending:
        receiver, sender = context.Pipe(duplex=False)
        child = context.Process(target=_child, args=(model, n, seed, pending, threads, sender),
                                daemon=True)
        child.start()
        sender.close()
        step, job, side = ("build", None, None)
        while True:
            wait = 4 * limit if step == "build" else limit
            over = _wait(receiver, child.pid, wait, max_rss_gib)
            if over:
                child.kill()
                child.join()
                log(f"  {model}: {step} {job or ''} {side or ''} {over}: killed")
                if job is None:
                    raise RuntimeError(f"{model}: building the graphs went {over}")
                side_records = records.setdefault(job, {})
                over = {"status": f"over limit ({over}, {step})"}
                if step == "warm-up" or side == "twin":
                    side_records.setdefault("twin", over)
                side_records["graph"] = over  # also when an earlier run of it was kept
                log(format_row(model, job, side_records))
                pending = pending[pending.index(job) + 1:]
                break
            try:
                message = receiver.recv()
            except EOFError:  # the child died (e.g. out of memory)
                child.join()
                died = {"status": f"died (exit code {child.exitcode}) in {step}"}
                if job is None:
                    raise RuntimeError(f"{model}: the child died building the graphs") from None
                records.setdefault(job, {}).setdefault("twin", died)
                records[job].setdefault("graph", died)
                pending = pending[pending.index(job) + 1:]
                break
            kind = message[0]
            if kind == "ready":
                shapes = message[1]
                step = "warm-up"
            elif kind == "warm-up":
                step, job, side = "warm-up", message[1], None
            elif kind == "start":
                step, job, side = "timed run", message[1], message[2]
            elif kind == "result":  # keep the fastest run of each side
                _, job, side, record = message
                kept = records.setdefault(job, {}).get(side)
                if kept is None or record.get("cpu_s", math.inf) < kept.get("cpu_s", math.inf):
                    records[job][side] = record
            elif kind == "finished":
                log(format_row(model, job, records[job]))
                pending = pending[pending.index(job) + 1:]
            elif kind == "done":
                child.join()
                pending = []
                break
    return shapes, records


# ----------------------------------------------------------------------------- the report
def ratio(records: dict) -> float | str | None:
    """Graph CPU / twin CPU; the graph's status when it ran over the limit; else None."""
    twin, graph = records.get("twin", {}), records.get("graph", {})
    if twin.get("status") != "ok":
        return None
    if graph.get("status") == "ok":
        return graph["cpu_s"] / max(twin["cpu_s"], 1e-9)
    if str(graph.get("status", "")).startswith("over limit"):
        return graph["status"]
    return None


def _seconds(record: dict) -> str:
    if record.get("status") == "ok":
        return f"{record['cpu_s']:.3g}"
    if str(record.get("status", "")).startswith("over limit"):
        return "> limit"
    return "-"


def _gap(record: dict) -> str:
    summary = record.get("summary") or {}
    for key in ("gap", "max_gap"):
        if key in summary:
            return f"{summary[key]:.1e}"
    return ""


def format_row(model: str, job: str, records: dict) -> str:
    """One markdown row: CPU seconds of the twin and the graph, the ratio, the gaps, the peak
    memory and the status."""
    twin, graph = records.get("twin", {}), records.get("graph", {})
    r = ratio(records)
    shown = f"{r:.2f}" if isinstance(r, float) else ("> limit" if isinstance(r, str) else "-")
    status = graph.get("status", "not run")
    if twin.get("status") != "ok":
        status = f"twin: {twin.get('status', 'not run')}"
    mem = (f"{graph['extra_mib']:.0f} / {twin['extra_mib']:.0f}"
           if "extra_mib" in graph and "extra_mib" in twin else "")
    return (f"| {model} | {job} | {_seconds(twin)} | {_seconds(graph)} | {shown} | "
            f"{_gap(twin)} | {_gap(graph)} | {mem} | {status[:90]} |")


TABLE_HEADER = ("| graph | job | twin CPU s | graph CPU s | ratio | twin gap | graph gap | "
                "extra MiB graph / twin | status |\n|---|---|---|---|---|---|---|---|---|")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--n", type=int, default=DEFAULT_N, help="nodes (default %(default)s)")
    size.add_argument("--quick", action="store_const", const=QUICK_N, dest="n",
                      help=f"n = {QUICK_N}")
    parser.add_argument("--limit", type=float, default=DEFAULT_LIMIT,
                        help="seconds (wall) per timed run before it is killed")
    parser.add_argument("--max-rss", type=float, default=4.0, metavar="GIB",
                        help="resident memory (GiB) of a child before it is killed "
                             "(default %(default)s: the machine is shared)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--graphs", default=",".join(GRAPHS),
                        help="comma-separated models (default: all)")
    parser.add_argument("--jobs", default=None,
                        help="comma-separated job names, or substrings of them (default all)")
    parser.add_argument("--threads", type=int, default=1,
                        help="SPARSEDP_THREADS for the numba kernels (default %(default)s)")
    add_blas_option(parser)
    add_output_options(parser)
    parser.add_argument("--update", action="store_true",
                        help="replace the rows of the jobs run in the existing record (same "
                             "n, seed and threads) and keep the others")
    parser.add_argument("--table", type=pathlib.Path, metavar="RECORD",
                        help="print the markdown table of a record and exit")
    args = parser.parse_args(argv)
    if args.table is not None:
        print_table(args.table)
        return
    models = args.graphs.split(",")
    unknown = [m for m in models if m not in GRAPHS]
    if unknown:
        parser.error(f"unknown graph models {unknown}; choose from {list(GRAPHS)}")
    jobs = list(JOBS)
    if args.jobs:
        wanted = args.jobs.split(",")
        jobs = [j for j in JOBS if any(w in j for w in wanted)]
        if not jobs:
            parser.error(f"no job matches {wanted}; jobs: {list(JOBS)}")
    os.environ["SPARSEDP_THREADS"] = str(args.threads)
    path = output_path(args, "realistic.json")
    run = {"command": " ".join([os.path.basename(sys.argv[0]), *(argv or sys.argv[1:])]),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "load_before": os.getloadavg()}
    record = {"n": args.n, "seed": args.seed, "limit_s": args.limit,
              "max_rss_gib": args.max_rss, "blas_threads": args.blas_threads,
              "threads": args.threads, "cpus": os.cpu_count(), "graphs": {}, "rows": []}
    if args.update and path.exists():
        record = updatable(json.loads(path.read_text()), record)
    print(TABLE_HEADER, flush=True)
    for model in models:
        shapes, records = run_model(model, args.n, args.seed, jobs, args.limit,
                                    args.blas_threads, args.max_rss,
                                    log=lambda s: print(s, flush=True))
        record["graphs"][model] = shapes
        for job in jobs:
            r = ratio(records.get(job, {}))
            row = {"model": model, "job": job, "ratio": r if not isinstance(r, str) else None,
                   "over_limit": isinstance(r, str), "date": run["date"],
                   **records.get(job, {})}
            record["rows"] = [old for old in record["rows"]
                              if (old["model"], old["job"]) != (model, job)] + [row]
    run["load_after"] = os.getloadavg()
    record["runs"] = [*record.get("runs", []), run]
    path.write_text(json.dumps(record, indent=1, default=str))
    print("\ngraphs:", json.dumps(record["graphs"]))
    print(f"load {run['load_before']} -> {run['load_after']}; wrote {path}")


def updatable(old: dict, new: dict) -> dict:
    """The record ``old`` to be updated by a run with the settings of ``new``; refused when
    they differ (the rows would not be comparable)."""
    settings = ("n", "seed", "blas_threads", "threads")
    differ = [k for k in settings if old.get(k) != new[k]]
    if differ:
        raise SystemExit(f"--update: the record has other settings {differ}: "
                         f"{ {k: old.get(k) for k in differ} } against "
                         f"{ {k: new[k] for k in differ} }")
    if "runs" not in old:  # a record written by one run
        old["runs"] = [{k: old.pop(k) for k in ("command", "date", "load_before", "load_after")
                        if k in old}]
        for row in old["rows"]:
            row.setdefault("date", old["runs"][0].get("date"))
    return old


def print_table(path: pathlib.Path) -> None:
    """The markdown table of a record, rows in the suite's order."""
    record = json.loads(path.read_text())
    order = {job: i for i, job in enumerate(JOBS)}
    models = list(GRAPHS)
    rows = sorted(record["rows"], key=lambda r: (models.index(r["model"]) if r["model"] in
                                                  models else len(models),
                                                  order.get(r["job"], len(order))))
    print(TABLE_HEADER)
    for row in rows:
        print(format_row(row["model"], row["job"], row))


if __name__ == "__main__":
    main()
