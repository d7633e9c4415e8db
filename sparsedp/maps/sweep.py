"""Sweeps: privacy maps over a grid of parameters, run as Dask tasks, stored chunk by chunk.

A sweep is the product of graph specs (an edge-list path or a generator spec,
:mod:`sparsedp.graphs.specs`), protocol families, gossip weight schemes, rounds ``T``, noise
``sigma`` and ``delta``, with the observers of each graph split into blocks of
``observer_block``.  A family is ``"gossip"`` (:func:`sparsedp.privacy_map`, the default),
``"gossip:neighbourhood"`` (its neighbourhood view), ``"random-walk"``
(:func:`sparsedp.random_walk_map` at ``alpha = 2``) or ``"mf:NAME"``
(:func:`sparsedp.mf_map` with the algorithm NAME: ``dp-d-sgd``, ``antipgd``, ``zip-dl``).
Each (grid point, observer block) is one task: the family's map of that block against the
targets, written as its own Parquet chunk ``DIR/chunks/<key>.parquet`` by
:func:`sparsedp.maps.store.write_map` (a temporary file, then ``os.replace``: a chunk is
either whole or absent).  ``key`` is a digest of the task's parameters.

* ``DIR/sweep.json`` records the sweep's parameters; it is written (atomically) before
  ``chunks/`` is created.  Re-running the same sweep skips the chunks already there, so a
  sweep killed at any moment (``kill -9`` included, before its manifest is whole too: a
  directory holding only the manifest's temporaries and a ``chunks/`` without a finished
  chunk is taken as such a start) finishes on the next run with every pair exactly once; a
  different sweep in the same directory is refused.  A sweep refused (bad parameters, an
  unreachable scheduler) writes nothing: the scheduler is reached before the directory is.
* Tasks run on ``dask.distributed`` (the optional extra ``sparsedp[sweep]``): a
  ``LocalCluster`` with ``workers`` single-threaded worker processes by default, or an
  existing cluster at ``scheduler`` (``tcp://host:port``).  No scheduler of our own.
* :func:`read_sweep` gives the whole table (every chunk, with the grid's columns ``graph``,
  ``family``, ``scheme``, ``T``, ``sigma``, ``delta``) in a fixed order, so two runs compare
  equal.  (A gossip-only sweep records no family in its task keys and manifest: sweeps
  stored before families existed resume unchanged.)
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import json
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sparsedp import defaults, files
from sparsedp.errors import ParameterError
from sparsedp.files import write_atomically
from sparsedp.graphs.specs import graph_from_spec
from sparsedp.maps import store
from sparsedp.maps.families import mf_map, random_walk_map
from sparsedp.maps.privacy_map import UPPER_MODES, PrivacyMap, privacy_map
from sparsedp.maps.selection import select_nodes
from sparsedp.progress import progress_bar
from sparsedp.reprs import short_repr

__all__ = ["SweepResult", "read_sweep", "sweep"]

MANIFEST = "sweep.json"
GRID_COLUMNS = ("graph", "family", "scheme", "T", "sigma", "delta")
FAMILIES = ("gossip", "gossip:neighbourhood", "random-walk", "mf:dp-d-sgd", "mf:antipgd",
            "mf:zip-dl")
CONNECT_TIMEOUT = "5s"


@dataclass(frozen=True)
class SweepResult:
    """What a run did: ``chunks`` in the sweep, ``computed`` now, ``skipped`` (already
    stored), and the table's ``rows``."""

    out: str
    chunks: int
    computed: int
    skipped: int
    rows: int

    __repr__ = short_repr

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def sweep(out, graphs, T, sigma, delta, *, schemes=(defaults.SCHEME,),
          observers=defaults.SELECTION, targets=defaults.SELECTION,
          observer_block: int = defaults.OBSERVER_BLOCK, upper: str = defaults.SWEEP_UPPER,
          families=("gossip",), scheduler: str | None = None, workers: int = defaults.WORKERS,
          progress=None) -> SweepResult:
    """Run (or finish) the sweep stored in the directory ``out`` (module docstring).

    ``graphs``: specs (strings); ``T``, ``sigma``, ``delta``, ``schemes``, ``families``
    (:data:`FAMILIES`): lists of values; ``observers`` and ``targets``: as for
    :func:`sparsedp.privacy_map` (labels of each graph); ``upper``: the gossip map's
    upper-bound mode.
    """
    store.require_pyarrow()
    grid = _grid(graphs, T, sigma, delta, schemes, upper, observer_block, workers, families)
    parameters = {**grid, "observers": _plain(observers), "targets": _plain(targets)}
    out = Path(out)
    chunks_dir = out / "chunks"
    _check_manifest(out, parameters)
    tasks = _tasks(grid, observers, targets)
    todo = [t for t in tasks if not (chunks_dir / f"{t['key']}.parquet").exists()]
    if todo:
        with _client(scheduler, workers) as client:  # refused before anything is written
            _prepare(out, parameters)
            _run(client, todo, chunks_dir, progress)
    rows = sum(store.stored_rows(chunks_dir / f"{t['key']}.parquet") for t in tasks)
    return SweepResult(str(out), len(tasks), len(todo), len(tasks) - len(todo), rows)


def read_sweep(out) -> PrivacyMap:
    """The sweep's whole table from its chunks, sorted by the grid columns, observer and
    target; ``parameters`` are the sweep's (from ``sweep.json``)."""
    out = Path(out)
    manifest = out / MANIFEST
    if not manifest.exists():
        raise ParameterError(f"no sweep at {out} (no {MANIFEST})")
    parameters = json.loads(manifest.read_text())
    stale = set(files.temporaries(out / "chunks"))
    tables = [store.read_map(path).columns
              for path in sorted((out / "chunks").glob("*.parquet")) if path not in stale]
    if not tables:
        raise ParameterError(f"the sweep at {out} has no finished chunk yet")
    columns = {name: np.concatenate([t[name] for t in tables]) for name in tables[0]}
    order = np.lexsort([columns[k].astype(str) if columns[k].dtype.kind in "OU" else columns[k]
                        for k in ("target", "observer", *reversed(GRID_COLUMNS))])
    return PrivacyMap(columns={k: v[order] for k, v in columns.items()}, parameters=parameters)


def _grid(graphs, T, sigma, delta, schemes, upper, observer_block, workers, families) -> dict:
    """The validated grid as plain lists (``families`` only when not gossip alone)."""
    lists = {"graphs": graphs, "T": T, "sigma": sigma, "delta": delta, "schemes": schemes,
             "families": families}
    grid = {}
    for name, values in lists.items():
        values = [values] if isinstance(values, (str, int, float)) else list(values)
        if not values:
            raise ParameterError(f"the sweep needs at least one value of {name}")
        grid[name] = values
    if upper not in UPPER_MODES:
        raise ParameterError(f"upper must be one of {UPPER_MODES}, got {upper!r}")
    if not isinstance(observer_block, int) or observer_block < 1:
        raise ParameterError(f"observer_block must be a positive integer, got {observer_block!r}")
    if not isinstance(workers, int) or workers < 1:
        raise ParameterError(f"workers must be a positive integer, got {workers!r}")
    unknown = [f for f in grid["families"] if f not in FAMILIES]
    if unknown:
        raise ParameterError(f"unknown family {unknown[0]!r}; known: {', '.join(FAMILIES)}")
    if grid["families"] == ["gossip"]:
        del grid["families"]
    return {**grid, "upper": upper, "observer_block": observer_block}


def _plain(selection):
    return list(selection) if isinstance(selection, (tuple, list)) else selection


def _tasks(grid: dict, observers, targets) -> list[dict]:
    """One task per (grid point, block of observers), each with the digest ``key`` of its
    parameters.  The graphs are loaded here once, to split their observers."""
    tasks = []
    for spec in grid["graphs"]:
        graph = graph_from_spec(spec)
        rows = select_nodes(observers, graph, graph.n, "observer")
        labels = graph.ids_of(rows).tolist()
        blocks = [labels[i:i + grid["observer_block"]]
                  for i in range(0, len(labels), grid["observer_block"])]
        for family, scheme, T, sigma, delta, block in itertools.product(
                grid.get("families", ["gossip"]), grid["schemes"], grid["T"], grid["sigma"],
                grid["delta"], blocks):
            task = {"graph": spec, "scheme": scheme, "T": T, "sigma": sigma, "delta": delta,
                    "upper": grid["upper"], "observers": block, "targets": _plain(targets)}
            if family != "gossip":
                task["family"] = family
            digest = hashlib.sha256(json.dumps(task, sort_keys=True).encode()).hexdigest()
            tasks.append({**task, "key": digest[:24]})
    return tasks


def _check_manifest(out: Path, parameters: dict) -> None:
    """Refuse a directory that holds another sweep or something else.  Without a manifest,
    what a run killed before its manifest was whole leaves is accepted: the manifest's
    temporaries and a ``chunks`` folder without a finished chunk (earlier versions created it
    before the manifest)."""
    manifest = out / MANIFEST
    if manifest.exists():
        store.refuse_other_parameters(out, "a sweep", json.loads(manifest.read_text()),
                                      parameters)
    elif out.exists() and not _unstarted(out):
        raise ParameterError(f"{out} exists and is not a sweep directory (no {MANIFEST}); "
                             "refusing to write into it")


def _unstarted(out: Path) -> bool:
    """Whether ``out`` (no manifest) holds nothing but what a sweep killed before its
    manifest was written leaves: temporaries of the manifest, an empty ``chunks`` folder or
    one with chunk temporaries only."""
    manifest_temporaries = set(files.temporaries(out, MANIFEST))
    for entry in out.iterdir():
        if entry in manifest_temporaries:
            continue
        if entry.name == "chunks" and entry.is_dir():
            if set(entry.iterdir()) <= set(files.temporaries(entry)):
                continue
        return False
    return True


def _prepare(out: Path, parameters: dict) -> None:
    """Remove what killed runs left half-written, then write the manifest before the chunks
    folder: a kill at any point leaves a state :func:`_check_manifest` accepts."""
    out.mkdir(parents=True, exist_ok=True)
    files.remove_stale_temporaries(out, MANIFEST)
    files.remove_stale_temporaries(out / "chunks")
    text = json.dumps(parameters, indent=1)
    write_atomically(out / MANIFEST, lambda temporary: Path(temporary).write_text(text))
    (out / "chunks").mkdir(exist_ok=True)


def compute_chunk(task: dict, chunks_dir: str) -> int:
    """One task, in a worker: the map of its observer block, with the grid's columns, written
    atomically to its chunk.  Returns its row count."""
    graph = _graph(task["graph"])
    family = task.get("family", "gossip")
    common = {"observers": task["observers"], "targets": _selection(task["targets"]),
              "T": task["T"], "sigma": task["sigma"], "delta": task["delta"],
              "scheme": task["scheme"], "progress": False,
              "max_pairs": None}  # the sweep's own block of observers
    if family.startswith("gossip"):
        view = "neighbourhood" if family == "gossip:neighbourhood" else "secure-summation"
        result = privacy_map(graph, upper=task["upper"], view=view, **common)
    elif family == "random-walk":
        result = random_walk_map(graph, **common)
    else:
        result = mf_map(graph, algorithm=family.split(":", 1)[1], **common)
    rows = len(result)
    columns = {name: np.full(rows, family if name == "family" else task[name])
               for name in GRID_COLUMNS}
    table = PrivacyMap(columns={**columns, **result.columns}, parameters=result.parameters)
    store.write_map(table, Path(chunks_dir) / f"{task['key']}.parquet",
                    parameters={k: v for k, v in task.items() if k != "key"})
    return rows


@functools.lru_cache(maxsize=4)
def _graph(spec: str):
    """The graph of ``spec``, loaded once per worker process for all its tasks."""
    return graph_from_spec(spec)


def _selection(targets):
    """A selection back from JSON: ``["sample", k, seed]`` is the tuple form."""
    if isinstance(targets, list) and targets and targets[0] == "sample":
        return tuple(targets)
    return targets


@contextlib.contextmanager
def _client(scheduler, workers: int):
    """A dask.distributed client: of a new ``LocalCluster`` with ``workers`` single-threaded
    worker processes, or connected to ``scheduler``; closed (the cluster too) on exit.
    ``ParameterError`` when dask.distributed is missing or the scheduler unreachable."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise ParameterError("sweeps run on dask.distributed, which is not installed: "
                             "pip install 'sparsedp[sweep]'") from None
    cluster = None
    try:
        if scheduler is None:
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                   dashboard_address=":0", silence_logs=logging.ERROR)
            client = Client(cluster)
        else:
            client = Client(scheduler, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError) as exc:
        if cluster is not None:
            cluster.close()
        raise ParameterError(f"cannot reach the Dask scheduler {scheduler!r}: {exc}") from None
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _run(client, todo: list[dict], chunks_dir: Path, progress) -> None:
    """Submit the tasks to the client and wait for them, with a progress bar."""
    from dask.distributed import as_completed

    bar = progress_bar(progress, total=len(todo), desc="sweep", unit="chunk")
    try:
        futures = [client.submit(compute_chunk, task, str(chunks_dir), key=f"chunk-{task['key']}",
                                 pure=False) for task in todo]
        for future in as_completed(futures):
            future.result()  # re-raises a task's error here
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
