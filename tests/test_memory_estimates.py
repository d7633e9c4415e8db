"""Every memory estimate is at or above the peak that its call allocates (issue 35), on the
realistic bench graphs (bench/realistic.py: Chung-Lu, Holme-Kim, SBM, geometric, the edge-list
file) and their ER twins, at a small n.

Two kinds of estimate: :func:`sparsedp.estimate_cost` (what a single gossip query would
hold, before solving), and the budget checks that every heavy job makes before it allocates
(``resources.require_within``: maps, the per-target worst case, PPAC, matrix
factorisation: DP-D-SGD, AntiPGD and Muffliato-SGD(2) under PNDP, the audit).  The peak is
traced by ``tracemalloc`` on a second call, once numba has compiled (numpy's buffers
included; memory that numba kernels allocate outside numpy is not traced).  The first graph and its
twin run in the default tier (the budget checks: the first graph only), the others in the slow
tier.
"""

from __future__ import annotations

import functools
import tracemalloc

import pytest

import sparsedp
from sparsedp import resources
from tests.conftest import bench_module, slow_after

realistic = bench_module("realistic")
N = 240
T = 30
MF_T = 12  # matrix factorisation: B B^T has K T m rows


def _graphs() -> list[str]:
    names = []
    for model in realistic.GRAPHS:
        names += [model, f"{model} twin"]
    return names


@functools.cache
def _graph_of(name: str):
    model = name.removesuffix(" twin")
    graph = realistic.GRAPHS[model](N, 1)
    return realistic.er_twin(graph, 1) if name.endswith(" twin") else graph


def _traced(run, monkeypatch) -> tuple[int, list[float]]:
    """The traced peak of ``run()`` and the estimates its budget checks were given, from a
    second call: the first compiles what numba has not cached yet, and the compiler's own
    Python objects are traced too (a call's memory is what it holds once compiled)."""
    run()
    checked: list[float] = []
    check = resources.require_within

    def spy(needed, budget, what, advice=""):
        checked.append(float(needed))
        return check(needed, budget, what, advice)

    monkeypatch.setattr(resources, "require_within", spy)
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1], checked
    finally:
        tracemalloc.stop()


PAIR_VIEWS = [("secure-summation", "median"), ("secure-summation-v1", "median"),
              ("neighbourhood", "median"), ("neighbourhood", "hub"), ("adaptive-v1", None),
              ("target-v1", None), ("local-dp", None)]


@pytest.mark.parametrize("name", slow_after(_graphs(), 2))
def test_estimate_cost_is_at_or_above_the_traced_peak_of_each_view(name, monkeypatch):
    graph = _graph_of(name)
    roles = realistic.Roles.of(graph)
    W = sparsedp.gossip_matrix(graph)
    for (view, observer), method in [*((case, "auto") for case in PAIR_VIEWS),
                                     (("secure-summation", "median"), "gram"),
                                     (("neighbourhood", "median"), "gram"),
                                     (("neighbourhood", "median"), "matrix-free")]:
        observers = None if observer is None else [getattr(roles, observer)]
        plan = sparsedp.estimate_cost(W, roles.target, observers, T, view=view, method=method)
        peak, _ = _traced(functools.partial(
            sparsedp.squared_sensitivity, W, roles.target, observers, T, view=view,
            method=method, progress=False), monkeypatch)
        assert plan["memory_bytes"] >= peak, (view, observer, plan["method"], peak)


def _jobs(graph, roles) -> dict:
    """name -> (a call with a budget check before its work, its map plan or None)."""
    from sparsedp.maps.plan import map_plan
    from sparsedp.ppac import random_designated

    W = sparsedp.gossip_matrix(graph)
    layout = sparsedp.ppac_layout(graph, random_designated(graph, seed=0))
    W_ppac = sparsedp.laplacian_consensus_matrix(graph)
    sample = ("sample", 4, 0)
    jobs = {}
    for upper in ("none", "entrywise", "certified"):
        for observers in ([roles.median], sample):
            jobs[f"map {upper} {observers}"] = (
                functools.partial(sparsedp.privacy_map, W, observers=observers, targets="all",
                                  T=T, upper=upper, progress=False, max_pairs=None),
                map_plan(W, observers, "all", T, upper=upper, epsilon=False))
    for observers in ([roles.hub], sample):
        jobs[f"neighbourhood map {observers}"] = (
            functools.partial(sparsedp.privacy_map, W, observers=observers, targets="all",
                              T=T, upper="none", view="neighbourhood", progress=False,
                              max_pairs=None),
            map_plan(W, observers, "all", T, upper="none", view="neighbourhood",
                     epsilon=False))
    worst = {"targets": ("sample", 5, 0), "observers": ("sample", 40, 1)}
    jobs["per-target worst case"] = (
        functools.partial(sparsedp.per_target_worst_case, W, T=T, progress=False, **worst),
        map_plan(W, worst["observers"], worst["targets"], T, family="per-target"))
    for role in ("hub", "median"):
        jobs[f"ppac {role}"] = (functools.partial(
            sparsedp.ppac_leakage, layout, W_ppac, graph.id_of(getattr(roles, role)), 6,
            progress=False), None)
    for algorithm in (sparsedp.mf.dp_d_sgd(), sparsedp.mf.antipgd(),
                      sparsedp.mf.muffliato_sgd(2)):
        for role in ("hub", "median"):
            jobs[f"mf {algorithm.name} {role}"] = (functools.partial(
                sparsedp.mf_sensitivity, W, roles.target, [getattr(roles, role)], MF_T,
                algorithm=algorithm, progress=False), None)
    return jobs


@pytest.mark.parametrize("name", slow_after(_graphs(), 1))
def test_every_budget_check_and_map_plan_is_at_or_above_the_traced_peak_of_its_call(
        name, monkeypatch):
    graph = _graph_of(name)
    roles = realistic.Roles.of(graph)
    under = {}
    for job, (run, plan) in _jobs(graph, roles).items():
        peak, checked = _traced(run, monkeypatch)
        assert checked, f"{job}: no budget check before its work"
        if max(checked) < peak:
            under[job] = ("check", max(checked), peak)
        if plan is not None and plan.memory_bytes < peak:
            under[job] = ("plan", plan.memory_bytes, peak)
    assert not under, under
