"""Sweeps on Dask: the same table as privacy_map point by point, resumption after kill -9
with no pair lost or duplicated, a separately started scheduler and worker, and refusals."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("dask.distributed")

import sparsedp  # noqa: E402
from sparsedp.errors import GraphError, ParameterError  # noqa: E402
from sparsedp.graphs.specs import graph_from_spec  # noqa: E402
from sparsedp.maps.sweep import read_sweep, sweep  # noqa: E402

COMMAND = [shutil.which("sparsedp")] if shutil.which("sparsedp") else [
    sys.executable, "-m", "sparsedp.cli"]
GRID = {"graphs": ["er:40:0.15:1", "ring:12"], "T": [4, 9], "sigma": [1.0, 2.0],
        "delta": [1e-5]}


def _table(out):
    return read_sweep(out).columns


def _assert_same(a: dict, b: dict):
    assert list(a) == list(b)
    for name in a:
        if a[name].dtype.kind == "f":
            np.testing.assert_array_equal(a[name], b[name])
        else:
            assert [str(v) for v in a[name].tolist()] == [str(v) for v in b[name].tolist()], name


@pytest.mark.slow  # a Dask cluster (the default tier's sweep: test_cli_boundary's schema check)
def test_a_sweep_is_privacy_map_at_every_grid_point_and_resumes(tmp_path):
    result = sweep(tmp_path / "s", **GRID, observer_block=7, workers=2, progress=False)
    assert (result.chunks, result.computed, result.skipped) == (32, 32, 0)
    table = _table(tmp_path / "s")
    assert result.rows == len(table["lower"]) == 2 * 2 * (40 * 39 + 12 * 11)  # no self pairs
    for spec in GRID["graphs"]:
        direct = sparsedp.privacy_map(graph_from_spec(spec), T=9, sigma=2.0, delta=1e-5,
                                      upper="none")
        rows = (table["graph"].astype(str) == spec) & (table["T"] == 9) & (table["sigma"] == 2)
        keys = list(zip(table["observer"][rows].tolist(), table["target"][rows].tolist(),
                        strict=True))
        assert len(set(keys)) == len(keys) == len(direct)
        order = np.lexsort([direct.columns["target"], direct.columns["observer"]])
        np.testing.assert_allclose(table["lower"][rows], direct.columns["lower"][order],
                                   rtol=1e-12, atol=1e-15)
    again = sweep(tmp_path / "s", **GRID, observer_block=7, workers=2, progress=False)
    assert (again.computed, again.skipped, again.rows) == (0, 32, result.rows)


@pytest.mark.slow  # Dask clusters and subprocesses: 10-60 s each
def test_a_sweep_over_families_is_each_family_map(tmp_path):
    """The family axis: each family's rows equal its map, the table names the family, and a
    gossip-only sweep records no family (sweeps stored before families resume)."""
    families = ["gossip", "gossip:neighbourhood", "random-walk", "mf:antipgd"]
    result = sweep(tmp_path / "f", ["ring:8"], [4], [4.0], [1e-5], families=families,
                   observer_block=5, workers=1, progress=False)
    assert result.chunks == 4 * 2
    table = _table(tmp_path / "f")
    graph = graph_from_spec("ring:8")
    direct = {
        "gossip": sparsedp.privacy_map(graph, T=4, sigma=4.0, delta=1e-5, upper="none"),
        "gossip:neighbourhood": sparsedp.privacy_map(graph, T=4, sigma=4.0, delta=1e-5,
                                                     upper="none", view="neighbourhood"),
        "random-walk": sparsedp.random_walk_map(graph, T=4, sigma=4.0, delta=1e-5),
        "mf:antipgd": sparsedp.mf_map(graph, T=4, sigma=4.0, delta=1e-5, algorithm="antipgd",
                                      scheme="metropolis"),
    }
    for family, m in direct.items():
        rows = table["family"].astype(str) == family
        order = np.lexsort([m.columns["target"], m.columns["observer"]])
        for name in ("observer", "target", "distance", "lower", "upper", "epsilon"):
            np.testing.assert_array_equal(table[name][rows], m.columns[name][order])
    sweep(tmp_path / "g", ["ring:8"], [4], [4.0], [1e-5], workers=1, progress=False)
    assert "families" not in json.loads((tmp_path / "g" / "sweep.json").read_text())
    with pytest.raises(ParameterError, match="unknown family 'mf:decor'"):
        sweep(tmp_path / "h", ["ring:8"], [4], [4.0], [1e-5], families=["mf:decor"],
              progress=False)


@pytest.mark.slow  # Dask clusters and subprocesses: 10-60 s each
def test_another_sweep_or_a_foreign_directory_is_refused(tmp_path):
    sweep(tmp_path / "s", ["ring:8"], [3], [1.0], [1e-5], workers=1, progress=False)
    with pytest.raises(ParameterError, match="other parameters"):
        sweep(tmp_path / "s", ["ring:8"], [4], [1.0], [1e-5], workers=1, progress=False)
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "notes.txt").write_text("mine")
    with pytest.raises(ParameterError, match="not a sweep directory"):
        sweep(tmp_path / "foreign", ["ring:8"], [3], [1.0], [1e-5], progress=False)
    with pytest.raises(GraphError):
        sweep(tmp_path / "u", ["ring:8"], [3], [1.0], [1e-5], observers=[0, 99], progress=False)
    with pytest.raises(ParameterError, match="at least one value"):
        sweep(tmp_path / "v", ["ring:8"], [], [1.0], [1e-5], progress=False)


@pytest.mark.slow  # Dask clusters and subprocesses: 10-60 s each
def test_an_unreachable_scheduler_is_one_line(tmp_path):
    run = subprocess.run([*COMMAND, "sweep", "--out", str(tmp_path / "s"), "--graph", "ring:8",
                          "--scheduler", "tcp://127.0.0.1:9"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2
    assert run.stderr.startswith("sparsedp: error: cannot reach the Dask scheduler")
    assert len(run.stderr.strip().splitlines()) == 1


@pytest.mark.slow  # Dask clusters and subprocesses: 10-60 s each
def test_a_sweep_killed_with_kill_9_resumes_to_the_same_table(tmp_path):
    """kill -9 of the command (and its Dask workers) once some chunks are written; the rerun
    finishes, and the table equals an uninterrupted run's: no pair lost, none twice."""
    args = ["sweep", "--graph", "er:80:0.1:1", "--rounds", "6,12,18", "--observer-block", "4",
            "--workers", "1", "--progress", "never"]
    killed = tmp_path / "killed"
    proc = subprocess.Popen([*COMMAND, *args, "--out", str(killed)], start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 600  # generous: a loaded 2-core machine starts slowly
    while time.monotonic() < deadline and proc.poll() is None:
        chunks = list((killed / "chunks").glob("[!.]*.parquet")) if killed.exists() else []
        if len(chunks) >= 3:
            break
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    done_before = len(list((killed / "chunks").glob("[!.]*.parquet")))  # finished chunks only:
    # a hidden temporary (.KEY-RANDOM.parquet) is a chunk being written when the kill came
    assert 3 <= done_before < 60, "the sweep was not interrupted mid-way"
    rerun = subprocess.run([*COMMAND, *args, "--out", str(killed), "--json"],
                           capture_output=True, text=True, timeout=900)
    assert rerun.returncode == 0, rerun.stderr
    record = json.loads(rerun.stdout)
    assert record["skipped"] >= done_before and record["chunks"] == 60
    fresh = tmp_path / "fresh"
    sweep(fresh, ["er:80:0.1:1"], [6, 12, 18], [1.0], [1e-5], observer_block=4, workers=2,
          progress=False)
    _assert_same(_table(killed), _table(fresh))
    keys = list(zip(*(_table(killed)[k].tolist() for k in ("T", "observer", "target")),
                    strict=True))
    assert len(keys) == len(set(keys)) == 3 * 80 * 79


@pytest.mark.slow  # Dask clusters and subprocesses: 10-60 s each
def test_a_separately_started_scheduler_and_worker_give_the_same_table(tmp_path):
    address_file = tmp_path / "scheduler.json"
    scheduler = subprocess.Popen(
        [sys.executable, "-m", "distributed.cli.dask_scheduler", "--scheduler-file",
         str(address_file), "--port", "0", "--no-dashboard"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    worker = None
    try:
        deadline = time.monotonic() + 300
        while not address_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert address_file.exists(), "the scheduler did not start in 300 s"
        worker = subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_worker", "--scheduler-file",
             str(address_file), "--nworkers", "1", "--nthreads", "1", "--no-dashboard"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        address = json.loads(address_file.read_text())["address"]
        remote = sweep(tmp_path / "remote", **GRID, observer_block=20, scheduler=address,
                       progress=False)
        local = sweep(tmp_path / "local", **GRID, observer_block=20, workers=2, progress=False)
        assert remote.rows == local.rows
        _assert_same(_table(tmp_path / "remote"), _table(tmp_path / "local"))
    finally:
        for proc in (worker, scheduler):
            if proc is not None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)


@pytest.fixture(scope="module")
def scheduler():
    """One in-process Dask cluster (a worker thread) for the resumption states: the sweeps
    connect to it instead of starting a cluster each."""
    from dask.distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster:
        yield cluster.scheduler_address


def _half_written(path, text: str = '{"graphs": ["ri'):
    """A temporary of ``write_atomically`` (``.STEM-RANDOM.SUFFIX``) holding a prefix of the
    content: what a kill while writing that file leaves."""
    from sparsedp.files import _create_temporary

    temporary = _create_temporary(path.parent, path)
    with open(temporary, "w") as handle:
        handle.write(text)
    return temporary


SMALL = (["ring:6"], [3], [1.0], [1e-5])


def _states(root):
    """Each state a kill of the first run can leave before its first chunk, built by hand
    (issue 33): the folder alone, ``chunks/`` before the manifest (the order of earlier
    versions; the issue's ``mkdir -p S/chunks``), a half-written manifest temporary, both
    with a half-written chunk temporary, the manifest without ``chunks/``."""
    states = {}
    states["empty folder"] = root / "a"
    states["empty folder"].mkdir()
    states["chunks, no manifest"] = root / "b"
    (root / "b" / "chunks").mkdir(parents=True)
    states["half-written manifest"] = root / "c"
    (root / "c").mkdir()
    _half_written(root / "c" / "sweep.json")
    states["both half-written"] = root / "d"
    (root / "d" / "chunks").mkdir(parents=True)
    _half_written(root / "d" / "sweep.json")
    _half_written(root / "d" / "chunks" / "0123.parquet", "PAR1")
    return states


def test_a_sweep_killed_before_its_manifest_was_whole_resumes(tmp_path, scheduler):
    """Every state a kill before the first chunk leaves is resumed to the table of a fresh
    run (and the temporaries removed); ``chunks/`` with a finished chunk but no manifest is
    not ours and stays refused.  On main the first three non-empty states were refused ("not a
    sweep directory")."""
    fresh = sweep(tmp_path / "fresh", *SMALL, scheduler=scheduler, progress=False)
    manifest_only = tmp_path / "e"
    manifest_only.mkdir()
    shutil.copy(tmp_path / "fresh" / "sweep.json", manifest_only / "sweep.json")
    states = {**_states(tmp_path), "manifest, no chunks": manifest_only}
    for name, out in states.items():
        result = sweep(out, *SMALL, scheduler=scheduler, progress=False)
        assert (result.computed, result.rows) == (fresh.chunks, fresh.rows), name
        _assert_same(_table(out), _table(tmp_path / "fresh"))
        leftovers = [p.name for p in out.rglob(".*")]
        assert leftovers == [], (name, leftovers)
    foreign = tmp_path / "foreign"
    (foreign / "chunks").mkdir(parents=True)
    shutil.copy(next((tmp_path / "fresh" / "chunks").glob("*.parquet")), foreign / "chunks")
    with pytest.raises(ParameterError, match="not a sweep directory"):
        sweep(foreign, *SMALL, scheduler=scheduler, progress=False)


@pytest.mark.slow  # a Dask cluster of two processes from a subprocess: 20-50 s
def test_the_issue_reproducer_chunks_before_the_manifest_resumes_on_the_command_line(
        tmp_path):
    """``mkdir -p S/chunks`` then ``sparsedp sweep --graph ring:12 --rounds 4
    --observer-block 6 --workers 2 --out S`` (issue 33; refused on main)."""
    out = tmp_path / "S"
    (out / "chunks").mkdir(parents=True)
    run = subprocess.run([*COMMAND, "sweep", "--graph", "ring:12", "--rounds", "4",
                          "--observer-block", "6", "--workers", "2", "--out", str(out),
                          "--json"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    record = json.loads(run.stdout)
    assert (record["chunks"], record["computed"], record["rows"]) == (2, 2, 12 * 11)


@pytest.mark.slow  # each refusal waits out the 5 s connection timeout
def test_a_refused_sweep_leaves_nothing_behind(tmp_path):
    """An unreachable scheduler is found before anything is written: no directory is
    created, and an existing one (empty, or a killed run's) is left as it was.  On main the
    refusal left ``chunks/`` and ``sweep.json``."""
    unreachable = "tcp://127.0.0.1:9"
    with pytest.raises(ParameterError, match="cannot reach the Dask scheduler"):
        sweep(tmp_path / "new", *SMALL, scheduler=unreachable, progress=False)
    assert not (tmp_path / "new").exists()
    states = {name: out for name, out in _states(tmp_path).items()
              if name in ("chunks, no manifest", "both half-written")}
    before = {name: sorted(p.relative_to(out) for p in out.rglob("*"))
              for name, out in states.items()}
    for name, out in states.items():
        with pytest.raises(ParameterError, match="cannot reach the Dask scheduler"):
            sweep(out, *SMALL, scheduler=unreachable, progress=False)
        assert sorted(p.relative_to(out) for p in out.rglob("*")) == before[name], name
