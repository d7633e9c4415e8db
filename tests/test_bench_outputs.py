"""The benchmarks leave the published records alone (issue 31): every script in ``bench/``
writes to ``bench/results/`` unless asked to ``--record``, its timings run on one pinned BLAS
thread count for the engine and the baselines alike, and ``pytest bench`` runs the 10^5-10^7
node benchmarks only when ``-m scale`` asks for them."""

from __future__ import annotations

import argparse
import ast
import os
import pathlib
import shutil
import subprocess
import sys

import pytest
from threadpoolctl import threadpool_info

from sparsedp.linalg.threads import blas_threads
from tests.conftest import bench_module

ROOT = pathlib.Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
HELPERS = {"outputs.py", "blas_pinning.py", "timing.py", "conftest.py"}
SCRIPTS = sorted(p for p in BENCH.glob("*.py")
                 if p.name not in HELPERS and not p.name.startswith("test_"))
TIMING_SCRIPTS = [p for p in SCRIPTS  # those that measure time
                  if "perf_counter" in p.read_text() or "from timing import" in p.read_text()]


def _called_names(tree: ast.AST) -> set[str]:
    return {node.func.id for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}


def _code_strings(tree: ast.AST) -> list[str]:
    """String constants other than docstrings."""
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef))
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    return [node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in docstrings]


def test_the_bench_scripts_are_found():
    assert {"scaling.py", "banded_scale.py", "mf_scale.py"} <= {p.name for p in TIMING_SCRIPTS}
    assert "moment_limit.py" in {p.name for p in SCRIPTS}


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_every_bench_script_chooses_its_output_through_the_shared_helper(script):
    tree = ast.parse(script.read_text())
    assert {"add_output_options", "output_path"} <= _called_names(tree), \
        f"{script.name} does not take --record / its output path from bench/outputs.py"
    hard_coded = [s for s in _code_strings(tree) if "docs" in s or "figures" in s]
    assert not hard_coded, f"{script.name} names a published folder itself: {hard_coded}"


@pytest.mark.parametrize("script", TIMING_SCRIPTS, ids=lambda p: p.name)
def test_every_timing_script_pins_blas_for_both_sides(script):
    source = script.read_text()
    assert "add_blas_option" in _called_names(ast.parse(source)), script.name
    assert "pinned_blas(" in source, script.name


def test_a_plain_run_writes_to_bench_results_and_record_to_docs_figures(tmp_path):
    outputs = bench_module("outputs")
    parser = argparse.ArgumentParser()
    outputs.add_output_options(parser)
    assert outputs.output_path(parser.parse_args([]), "x.json") == BENCH / "results" / "x.json"
    assert outputs.output_path(parser.parse_args(["--record"]), "x.json") == \
        ROOT / "docs" / "figures" / "x.json"
    chosen = tmp_path / "deep" / "y.json"
    assert outputs.output_path(parser.parse_args(["--out", str(chosen)]), "x.json") == chosen
    assert chosen.parent.is_dir()
    with pytest.raises(SystemExit):
        parser.parse_args(["--record", "--out", str(chosen)])


@pytest.mark.slow  # a bench script in a subprocess
def test_a_bench_script_run_in_a_copy_leaves_docs_alone(tmp_path):
    """``python bench/mf_scale.py`` (tiny sizes) in a copy of bench/ next to a docs/figures/
    folder: the record lands in bench/results/, docs/figures/ stays empty."""
    shutil.copytree(BENCH, tmp_path / "bench", ignore=shutil.ignore_patterns("results"))
    figures = tmp_path / "docs" / "figures"
    figures.mkdir(parents=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "bench/mf_scale.py", "--n", "300", "--T", "20"],
                   cwd=tmp_path, env=env, check=True, capture_output=True, timeout=300)
    assert list(figures.iterdir()) == []
    assert (tmp_path / "bench" / "results" / "mf_scale.json").is_file()
    assert '"blas_threads": 1' in (tmp_path / "bench" / "results" / "mf_scale.json").read_text()


@pytest.mark.parametrize("threads", [1, 2])
def test_pinned_blas_sets_the_baseline_and_the_engine_alike(threads):
    pinned_blas = bench_module("blas_pinning").pinned_blas
    before = os.environ.get("SPARSEDP_BLAS_THREADS")
    with pinned_blas(threads):
        assert blas_threads() == threads
        assert {pool["num_threads"] for pool in threadpool_info()
                if pool["user_api"] == "blas"} == {threads}
    assert os.environ.get("SPARSEDP_BLAS_THREADS") == before
    with pytest.raises(ValueError, match="BLAS threads must be >= 1, got 0"):
        with pinned_blas(0):
            pass


class _Item:
    def __init__(self, name: str, marker: str):
        self.name, self.marker = name, marker

    def get_closest_marker(self, name: str):
        return name if name == self.marker else None


class _Config:
    def __init__(self, markexpr: str):
        self.markexpr, self.deselected = markexpr, []
        self.hook = self

    def getoption(self, name: str):
        assert name == "markexpr"
        return self.markexpr

    def pytest_deselected(self, items):
        self.deselected += items


@pytest.mark.parametrize("markexpr, kept", [
    ("", ["small"]), ("quick", ["small"]), ("scale", ["small", "large"]),
    ("quick or scale", ["small", "large"]), ("not quick", ["small"])])
def test_scale_benchmarks_are_deselected_unless_the_marker_expression_names_scale(markexpr,
                                                                                   kept):
    conftest = bench_module("conftest")
    items = [_Item("small", "quick"), _Item("large", "scale")]
    config = _Config(markexpr)
    conftest.pytest_collection_modifyitems(config, items)
    assert [item.name for item in items] == kept
    assert [item.name for item in config.deselected] == (["large"] if len(kept) == 1 else [])


@pytest.mark.slow  # pytest collection in a subprocess
def test_every_benchmark_is_quick_or_scale():
    """Without ``-m scale`` the scale benchmarks are deselected and ``not quick`` removes the
    rest: nothing may be left (a benchmark with neither marker would be)."""
    neither = subprocess.run(
        [sys.executable, "-m", "pytest", "bench", "--collect-only", "-q", "-p",
         "no:cacheprovider", "-m", "not quick"], cwd=ROOT, capture_output=True, text=True,
        timeout=300)
    assert neither.returncode == 5, neither.stdout + neither.stderr  # no tests collected
    assert "deselected" in neither.stdout
