"""Map guard rails (issue 31): a map's pairs, estimated time and sizes stated before it
starts and refused above the limits (library ``max_pairs``, CLI ``--yes``); plots checked
before any work, naming the user's path; a sample without a seed refused naming the form;
written files follow the umask; self pairs left out of the plots, integer distance ticks."""

from __future__ import annotations

import os
import stat

import networkx as nx
import numpy as np
import pytest

import sparsedp
from sparsedp.cli.main import main
from sparsedp.errors import ParameterError, ResourceLimitError
from sparsedp.files import write_atomically
from sparsedp.graphs.graph import as_graph
from sparsedp.maps.plan import DEFAULT_MAX_PAIRS, estimate, map_plan

# --- the plan and the pair limit ----------------------------------------------------------


def test_the_plan_counts_pairs_as_the_tables_have_rows():
    G = nx.connected_watts_strogatz_graph(30, 4, 0.3, seed=2)
    for family, call in (("gossip", sparsedp.privacy_map), ("mf", sparsedp.mf_map)):
        plan = map_plan(G, [0, 3, 5], ("sample", 10, 1), 4, family=family, upper="none")
        kwargs = {"upper": "none"} if family == "gossip" else {}
        assert plan.pairs == len(call(G, [0, 3, 5], ("sample", 10, 1), 4, **kwargs))
    walk = map_plan(G, "all", [0, 1], 10, family="random-walk")
    assert walk.pairs == len(sparsedp.random_walk_map(G, "all", [0, 1], 10, sigma=10.0,
                                                      contributions=2))


@pytest.mark.parametrize("family, sizes, measured", [
    # docs/privacy_maps.md, "Measured": ER(10^4, 20/10^4), nnz(W) = 209,254
    ("gossip", dict(n=10**4, nnz=209_254, observers=10**4, targets=10**4, T=100,
                    upper="none"), 151.0),  # c = 1 for all 10^8 pairs, run in full
    ("gossip", dict(n=10**4, nnz=209_254, observers=10**4, targets=10**4, T=30,
                    upper="entrywise"), 448.0),  # entrywise certified uppers, in full
    ("gossip", dict(n=10**4, nnz=209_254, observers=1, targets=10**4, T=30,
                    upper="certified"), 13.0),  # per-pair certified uppers, one observer
    ("random-walk", dict(n=2000, nnz=2000 * 20, observers=2000, targets=2000, T=100), 64.9),
    ("mf", dict(n=500, nnz=5500, observers=5, targets=500, T=20), 20.2),
    ("per-target", dict(n=10**4, nnz=209_254, observers=10**4, targets=10**4, T=100), 133.0),
])
def test_the_time_estimate_is_within_a_factor_of_three_of_the_measured_runs(family, sizes,
                                                                            measured):
    sizes = dict(sizes)
    pairs = sizes["observers"] * sizes["targets"]
    n, nnz, obs, tgt, T = (sizes.pop(k) for k in ("n", "nnz", "observers", "targets", "T"))
    plan = estimate(family, n, nnz, obs, tgt, pairs, T, **sizes)
    assert measured / 3 <= plan.seconds <= 3 * measured, plan.seconds


@pytest.mark.slow  # writes maps of several sizes
def test_the_parquet_estimate_is_close_to_the_written_size(tmp_path):
    pytest.importorskip("pyarrow")
    G = nx.connected_watts_strogatz_graph(300, 6, 0.2, seed=1)
    for upper, float32 in (("none", False), ("none", True), ("entrywise", False)):
        m = sparsedp.privacy_map(G, "all", "all", 12, 1.0, 1e-5, upper=upper, float32=float32)
        path = tmp_path / f"{upper}{float32}.parquet"
        sparsedp.maps.store.write_map(m, path)
        plan = map_plan(G, "all", "all", 12, upper=upper, float32=float32)
        assert 0.8 <= plan.parquet_bytes / path.stat().st_size <= 1.6  # exact zeros compress


def test_the_readme_map_is_refused_by_the_library_naming_count_limit_and_remedy():
    ring = nx.cycle_graph(10_000)
    with pytest.raises(ResourceLimitError) as caught:
        sparsedp.privacy_map(ring, T=100, upper="none")
    message = str(caught.value)
    assert "100,000,000 pairs (10,000 observers x 10,000 targets)" in message
    assert "more than max_pairs=10,000,000" in message
    assert "Pass max_pairs=100000000 (or None for no limit)" in message
    assert "estimated time about" in message and "as Parquet" in message


@pytest.mark.parametrize("call", [
    lambda G, **kw: sparsedp.privacy_map(G, T=3, upper="none", **kw),
    lambda G, **kw: sparsedp.privacy_map(G, T=3, upper="none", view="neighbourhood", **kw),
    lambda G, **kw: sparsedp.random_walk_map(G, T=3, sigma=10.0, **kw),
    lambda G, **kw: sparsedp.mf_map(G, T=3, **kw),
])
def test_every_map_has_the_pair_limit_and_it_can_be_raised(call):
    G = nx.cycle_graph(12)
    with pytest.raises(ResourceLimitError, match="more than max_pairs=100"):
        call(G, observers=[0, 1, 2, 3, 4, 5, 6, 7, 8, 9], max_pairs=100)
    assert len(call(G, observers=[0, 1], max_pairs=None)) > 0
    with pytest.raises(ParameterError, match="max_pairs must be an integer >= 1 or None"):
        call(G, observers=[0], max_pairs=0)


def test_the_default_limit_admits_the_default_cli_graph():
    assert 2000 * 2000 < DEFAULT_MAX_PAIRS < 10**8


# --- the CLI: stated on stderr, refused without --yes --------------------------------------


def test_cli_refuses_the_readme_map_before_any_work(capfd, tmp_path):
    out = tmp_path / "map.parquet"
    code = main(["map", "--generator", "ring:10000", "-T", "100", "--upper", "none",
                 "--out", str(out)])
    err = capfd.readouterr().err
    assert code == 2 and not out.exists()
    first, second = err.splitlines()[:2]
    assert first.startswith("sparsedp: the map: 10,000 observers x 10,000 targets = "
                            "99,990,000 pairs (10,000 self pairs left out); estimated time "
                            "about ")
    assert "as Parquet" in first
    assert second.startswith("sparsedp: error:") and "add --yes to run it" in second


def test_cli_refuses_a_long_estimate_and_yes_lets_it_through(capfd, monkeypatch):
    argv = ["map", "--generator", "ring:16", "-T", "4", "--upper", "none", "--json"]
    monkeypatch.setattr("sparsedp.cli.maps.CONFIRM_SECONDS", 1e-9)  # any map is "long"
    assert main(argv) == 2
    assert "over the command's limits" in capfd.readouterr().err
    assert main([*argv, "--yes"]) == 0
    captured = capfd.readouterr()
    assert '"pairs": 240' in captured.out
    assert "16 observers x 16 targets = 240 pairs (16 self pairs left out)" in captured.err


def test_cli_states_nothing_with_progress_never(capsys):
    assert main(["map", "--generator", "ring:16", "-T", "4", "--upper", "none",
                 "--no-progress"]) == 0
    assert capsys.readouterr().err == ""


# --- plots checked before any work, naming the user's path ---------------------------------


def test_cli_refuses_a_graph_drawing_of_a_large_graph_before_computing(capsys, tmp_path,
                                                                       monkeypatch):
    pytest.importorskip("matplotlib")

    def never(*args, **kwargs):
        raise AssertionError("the map was computed")

    monkeypatch.setattr("sparsedp.cli.maps.privacy_map", never)
    path = tmp_path / "mine.png"
    assert main(["map", "--generator", "ring:2500", "-T", "3", "--plot", str(path),
                 "--plot-kind", "graph", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err == (f"sparsedp: error: cannot draw {path}: the graph drawing is for at most "
                   "2000 nodes, the graph has 2500 (the distance plot draws any size)\n")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name, kind, problem", [
    ("map.xyz", "distance", "unknown image format 'xyz'"),
    ("missing/map.png", "distance", "no directory"),
    ("map.png", "heatmap", "a heatmap draws at most 10 nodes a side (16 observers"),
])
def test_cli_plot_problems_are_found_before_work(capsys, tmp_path, monkeypatch, name, kind,
                                                 problem):
    pytest.importorskip("matplotlib")
    monkeypatch.setattr("sparsedp.maps.plots.HEATMAP_MAX", 10)
    monkeypatch.setattr("sparsedp.cli.maps.privacy_map", None)  # calling it would fail
    path = tmp_path / name
    assert main(["map", "--generator", "ring:16", "-T", "3", "--plot", str(path),
                 "--plot-kind", kind, "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"sparsedp: error: cannot draw {path}: {problem}")


def test_library_plot_errors_name_the_given_path(tmp_path):
    pytest.importorskip("matplotlib")
    from sparsedp.maps.plots import plot_map

    m = sparsedp.privacy_map(nx.cycle_graph(6), [0], [0], 3, upper="none")  # a self pair only
    path = tmp_path / "only-self.png"
    with pytest.raises(ParameterError, match=f"cannot draw {path}: the map has no pair of "
                                             "distinct nodes"):
        plot_map(m, path)
    assert list(tmp_path.iterdir()) == []


# --- sample without a seed -----------------------------------------------------------------


def test_cli_sample_without_seed_names_the_form(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["map", "--generator", "ring:16", "--observers", "sample:5"])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert "argument --observers: expected sample:K:SEED" in err and "None" not in err


def test_library_sample_without_seed_names_the_form():
    with pytest.raises(ParameterError, match=r"\('sample', k, seed\) with an integer seed, "
                                             r"e.g. \('sample', 50, 0\); got \('sample', 5\)"):
        sparsedp.privacy_map(nx.cycle_graph(16), observers=("sample", 5), T=3, upper="none")


# --- files follow the umask ----------------------------------------------------------------


@pytest.fixture(params=[0o022, 0o077, 0o002])
def umask(request):
    previous = os.umask(request.param)
    yield request.param
    os.umask(previous)


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_written_files_get_the_mode_of_a_plain_open(umask, tmp_path):
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    expected = _mode(plain)
    assert expected == 0o666 & ~umask
    written = write_atomically(tmp_path / "a.txt", lambda p: open(p, "w").write("y"))
    assert _mode(written) == expected


def test_the_map_store_and_plots_follow_the_umask(umask, tmp_path):
    pytest.importorskip("pyarrow")
    m = sparsedp.privacy_map(nx.cycle_graph(8), [0, 1], "all", 3, upper="none")
    sparsedp.maps.store.write_map(m, tmp_path / "map.parquet")
    assert _mode(tmp_path / "map.parquet") == 0o666 & ~umask
    pytest.importorskip("matplotlib")
    from sparsedp.maps.plots import plot_map

    plot_map(m, tmp_path / "map.svg")
    assert _mode(tmp_path / "map.svg") == 0o666 & ~umask
    assert sorted(p.name for p in tmp_path.iterdir()) == ["map.parquet", "map.svg"]


def test_cli_parquet_follows_the_umask(tmp_path, capsys):
    pytest.importorskip("pyarrow")
    previous = os.umask(0o022)
    try:
        assert main(["map", "--generator", "ring:12", "-T", "3", "--upper", "none",
                     "--no-progress", "--out", str(tmp_path / "m.parquet")]) == 0
    finally:
        os.umask(previous)
    assert _mode(tmp_path / "m.parquet") == 0o644


# --- self pairs out of the plots, integer ticks ----------------------------------------------


@pytest.fixture(scope="module")
def self_pair_map():
    graph = as_graph(nx.connected_watts_strogatz_graph(20, 4, 0.3, seed=3))
    return graph, sparsedp.privacy_map(graph, T=5, sigma=2.0, delta=1e-5, upper="entrywise")


def _drawn(monkeypatch, kind, result, graph, tmp_path):
    """The figure plot_map draws (kept open for inspection)."""
    import matplotlib.pyplot as plt

    from sparsedp.maps.plots import plot_map

    figures = []
    monkeypatch.setattr(plt, "close", figures.append)
    plot_map(result, tmp_path / f"{kind}.png", kind, graph)
    return figures[0]


def test_the_heatmap_leaves_self_pairs_blank(self_pair_map, monkeypatch, tmp_path):
    pytest.importorskip("matplotlib")
    graph, result = self_pair_map
    figure = _drawn(monkeypatch, "heatmap", result, graph, tmp_path)
    grid = figure.axes[0].images[0].get_array()
    c = result.columns
    others = c["observer"] != c["target"]
    assert np.all(np.ma.getmaskarray(grid).diagonal() | np.isnan(np.ma.getdata(grid).diagonal()))
    assert np.nanmax(np.ma.filled(grid, np.nan)) == c["epsilon"][others].max()
    assert others.all()  # the table holds no self pair (the one rule, validation.not_among)


def test_the_distance_plot_starts_at_one_hop_with_integer_ticks(self_pair_map, monkeypatch,
                                                                tmp_path):
    pytest.importorskip("matplotlib")
    graph, result = self_pair_map
    figure = _drawn(monkeypatch, "distance", result, graph, tmp_path)
    axes = figure.axes[0]
    line = axes.lines[0]
    distances = line.get_xdata()
    assert distances[0] == 1 and list(distances) == list(range(1, len(distances) + 1))
    ticks = [t for t in axes.get_xticks() if axes.get_xlim()[0] <= t <= axes.get_xlim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks)



def test_a_killed_writers_temporaries_are_skipped_by_read_sweep_and_removed_on_resume(tmp_path):
    """kill -9 while a chunk is written leaves its hidden temporary (``.KEY-RANDOM.parquet``,
    matched by ``*.parquet``): read_sweep must not read it as a chunk, and a resumed sweep
    deletes it before it starts."""
    pytest.importorskip("pyarrow")
    from sparsedp import files
    from sparsedp.maps import PrivacyMap, store, sweep

    chunks = tmp_path / "s" / "chunks"
    chunks.mkdir(parents=True)
    (tmp_path / "s" / sweep.MANIFEST).write_text("{}")
    m = sparsedp.privacy_map(nx.cycle_graph(6), [0], T=3, upper="none")
    grid = {"graph": "ring:6", "family": "gossip", "scheme": "metropolis", "T": 3,
            "sigma": 1.0, "delta": 1e-5}  # the columns a sweep adds to each chunk
    columns = {**m.columns, **{k: np.full(len(m), v) for k, v in grid.items()}}
    store.write_map(PrivacyMap(columns=columns, parameters=m.parameters), chunks / "done.parquet")
    half = chunks / ".pending-0123456789ab.parquet"
    half.write_bytes(b"PAR1 half a file")
    assert files.temporaries(chunks) == [half]
    assert len(sweep.read_sweep(tmp_path / "s")) == len(m)
    assert files.remove_stale_temporaries(chunks) == 1 and not half.exists()
    assert (chunks / "done.parquet").exists()
