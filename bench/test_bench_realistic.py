"""The realistic-graph suite's quick tier (``quick``): a few jobs of ``bench/realistic.py`` on
a 1,500-node Chung-Lu graph and a 1,500-node stochastic block model, each next to its ER twin.

    python -m pytest bench/test_bench_realistic.py -m quick --benchmark-only

Each benchmark records the graph's shape and the job's summary (certified interval and gap
where there is one) in ``extra_info``; compare a graph's time with its twin's in the same run.
The full suite, with ratios measured in one process and a time limit per job, is
``python bench/realistic.py``.
"""

import pytest
from realistic import GRAPHS, JOBS, Roles, er_twin, shape

N = 1_500
QUICK_JOBS = ["pair secure-summation T=100", "one observer x all targets T=100",
              "ppac median attacker t=10", "mf dp-d-sgd median T=20"]  # seconds in all


@pytest.fixture(scope="module", params=["chung-lu", "sbm"])
def pair_of_graphs(request):
    graph = GRAPHS[request.param](N, 1)
    return {"graph": graph, "twin": er_twin(graph, 1)}


@pytest.mark.quick
@pytest.mark.parametrize("side", ["graph", "twin"])
@pytest.mark.parametrize("job", QUICK_JOBS)
def test_realistic_job(benchmark, pair_of_graphs, job, side):
    graph = pair_of_graphs[side]
    run = JOBS[job](graph, Roles.of(graph))
    summary = benchmark.pedantic(run, rounds=1, iterations=1, warmup_rounds=1)
    benchmark.extra_info.update({**shape(graph), **summary})
    if "gap" in summary:
        assert 0 <= summary["lower"] <= summary["upper"]
