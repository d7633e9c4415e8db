"""squared_sensitivity against the independent dense reference (H^+ H by SVD)."""

import json

import networkx as nx
import numpy as np
import pytest

import sparsedp
from sparsedp import resources
from sparsedp.errors import GraphError, ParameterError, ResourceLimitError
from sparsedp.gossip import sensitivity
from sparsedp.gossip.cost import method_cost, minimal_memory, structured_memory
from sparsedp.gossip.views import VIEWS
from sparsedp.graphs.weights import gossip_matrix
from sparsedp.testing import dense_reference

from .conftest import connected_instance

pytestmark = pytest.mark.usefixtures("engine_serves_self_observation")

FAMILIES = ("er", "ba", "ring", "grid")


def random_instances(count=52):
    """Instances over the four families, n <= 60, T <= 12, with the view cases mixed in."""
    rng = np.random.default_rng(2026)
    cases = []
    for i in range(count):
        kind = FAMILIES[i % 4]
        n = int(rng.integers(6, 61))
        G = connected_instance(kind, n, i)
        n = G.number_of_nodes()
        T = int(rng.integers(1, 13))
        observer = int(rng.integers(n))
        relation = ("equal", "adjacent", "random", "random")[i % 4]
        if relation == "equal":
            target = observer
        elif relation == "adjacent":
            target = int(rng.choice(list(G.neighbors(observer))))
        else:
            target = int(rng.integers(n))
        observers = [observer]
        if i % 5 == 0:  # a coalition: the observer's closed neighbourhood
            observers = [observer, *sorted(G.neighbors(observer))]
        cases.append(pytest.param(G, target, observers, T, id=f"{kind}{n}-T{T}-{relation}-{i}"))
    return cases


def assert_close(a, b, rel=1e-8):
    assert a == pytest.approx(b, rel=rel, abs=1e-12)


@pytest.mark.parametrize("method", ["structured", "gram", "dense", "matrix-free"])
@pytest.mark.parametrize("G,target,observers,T", random_instances())
def test_agrees_with_dense_reference(G, target, observers, T, method):
    W = gossip_matrix(G, scheme="metropolis")
    r = sparsedp.squared_sensitivity(W, target, observers, T, method=method)
    ref = dense_reference(W, target, observers, T)
    assert r.exact is not None
    assert r.lower <= r.exact <= r.upper
    assert ref.ones <= ref.exact + 1e-12 <= ref.upper + 2e-12
    assert_close(r.exact, ref.exact)
    assert_close(r.lower, ref.lower)
    assert_close(r.upper, ref.upper)
    named = {b.name: b.value for b in r.bounds}
    assert_close(named["ones"], ref.ones)
    assert_close(named["spectral"], ref.spectral)
    assert_close(named["entrywise"], ref.entrywise)


@pytest.mark.parametrize("scheme", ["row-normalised", "row-normalised-self-loops"])
def test_non_symmetric_W_goes_gram_and_agrees(scheme):
    G = connected_instance("ba", 30, 11)
    W = gossip_matrix(G, scheme=scheme)
    r = sparsedp.squared_sensitivity(W, 3, [0, 5], 8)
    ref = dense_reference(W, 3, [0, 5], 8)
    assert r.method == "gram"
    assert any("not symmetric: using the Gram assembly" in note for note in r.notes)
    assert_close(r.exact, ref.exact)
    assert_close(r.upper, ref.upper)
    for preconditioner in ("gram", "stationary"):
        mf = sparsedp.squared_sensitivity(
            W, 3, [0, 5], 8, method="matrix-free", preconditioner=preconditioner
        )
        assert mf.solver["preconditioner"] == preconditioner
        assert_close(mf.exact, ref.exact)
        assert_close(mf.upper, ref.upper)
    with pytest.raises(ParameterError, match="symmetric"):
        sparsedp.squared_sensitivity(W, 3, [0, 5], 8, method="structured")


@pytest.mark.parametrize("method", ["structured", "gram", "matrix-free"])
@pytest.mark.parametrize("T", [1, 5, 12, 40])
def test_local_dp_oracle(method, T):
    """Observers = all nodes: H_T is square and invertible, M_T = I, Delta^2 = T exactly."""
    G = connected_instance("er", 25, 3)
    W = gossip_matrix(G)
    r = sparsedp.squared_sensitivity(W, 4, list(range(25)), T, method=method)
    assert r.lower <= T <= r.upper
    assert r.lower == pytest.approx(T, rel=1e-8)
    assert r.upper == pytest.approx(T, rel=1e-12)


def test_c_equals_ones_is_not_always_optimal():
    """Target inside the observer set: sign flips beat c = 1 (v1 App. B is wrong)."""
    G = connected_instance("er", 30, 7)
    W = gossip_matrix(G)
    i = 0
    observers = [i, *G.neighbors(i)]
    j = observers[1]
    r = sparsedp.squared_sensitivity(W, j, observers, 10)
    named = {b.name: b.value for b in r.bounds}
    assert r.exact > named["ones"] * (1 + 1e-6)
    assert r.exact == pytest.approx(dense_reference(W, j, observers, 10).exact, rel=1e-8)


def test_theorem_13_limit_on_er_100():
    """ER(100, 0.15), Metropolis, non-adjacent pair: Delta^2 / T -> 1/n (from below here)."""
    G = nx.erdos_renyi_graph(100, 0.15, seed=1)
    W = gossip_matrix(G)
    i = 0
    j = next(v for v in range(1, 100) if not G.has_edge(i, v))
    ratios = []
    for T in (50, 200, 800):
        r = sparsedp.squared_sensitivity(W, j, [i], T)
        assert r.relative_gap < 1e-3
        ratios.append(r.upper / T)
    distance = [abs(ratio - 1 / 100) for ratio in ratios]
    assert distance[0] > distance[1] > distance[2]
    assert distance[2] < 0.03 / 100  # within 3 % of 1/n at T = 800


def test_result_is_plain_data():
    import json

    W = gossip_matrix(connected_instance("er", 20, 0))
    r = sparsedp.squared_sensitivity(W, 1, 2, 5)
    data = json.loads(json.dumps(r.to_dict()))
    assert data["lower"] == r.lower and data["upper"] == r.upper
    assert {b["kind"] for b in data["bounds"]} >= {"lower", "exact", "certified upper"}


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("noise_removed", [False, True])
@pytest.mark.parametrize("target, observers", [(1, [2]), (2, [2])])
def test_to_dict_is_strict_json_for_every_view(view, noise_removed, target, observers):
    """Finite, infinite (target among noise-removed observers) and closed-form results all
    serialise with allow_nan=False, infinity as the string "infinity"."""
    W = gossip_matrix(nx.karate_club_graph())
    fixed = view in ("adaptive-v1", "target-v1", "local-dp")
    try:
        r = sparsedp.squared_sensitivity(W, target, None if fixed else observers, 4, view=view,
                                         noise_removed=noise_removed)
    except ParameterError:  # a view that has no noise-removed form
        return
    data = json.loads(json.dumps(r.to_dict(), allow_nan=False))
    assert float(data["upper"]) == r.upper and float(data["lower"]) == r.lower
    if r.upper == float("inf"):
        assert data["upper"] == "infinity"


def test_accepts_any_sparse_format_and_dense():
    import scipy.sparse as sp

    W = gossip_matrix(connected_instance("ring", 12, 0))
    ref = sparsedp.squared_sensitivity(W, 3, [0], 6)
    for form in (sp.coo_matrix(W), sp.csc_matrix(W), sp.lil_matrix(W), W.toarray()):
        assert sparsedp.squared_sensitivity(form, 3, [0], 6).exact == pytest.approx(ref.exact)


def test_exact_policy():
    W = gossip_matrix(connected_instance("er", 20, 0))
    assert sparsedp.squared_sensitivity(W, 1, [2], 25).exact is None
    assert sparsedp.squared_sensitivity(W, 1, [2], 17, exact=True).exact is not None
    assert sparsedp.squared_sensitivity(W, 1, [2], 5, exact=False).exact is None
    with pytest.raises(ParameterError, match="T <= 30"):
        sparsedp.squared_sensitivity(W, 1, [2], 40, exact=True)


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        ({"T": 0}, ParameterError, "T"),
        ({"T": 2.5}, ParameterError, "T"),
        ({"target": 20}, GraphError, "unknown node id 20"),
        ({"target": -1}, GraphError, "unknown node id -1"),
        ({"observers": [3, 99]}, GraphError, "unknown node id 99"),
        ({"observers": []}, ParameterError, "at least one"),
        ({"method": "magic"}, ParameterError, "method"),
        ({"preconditioner": "magic"}, ParameterError, "preconditioner"),
        ({"truncation_rtol": 0.0}, ParameterError, "truncation_rtol must be > 0"),
        ({"truncation_rtol": float("nan")}, ParameterError, "truncation_rtol"),
    ],
)
def test_bad_arguments(kwargs, error, match):
    W = gossip_matrix(connected_instance("er", 20, 0))
    args = {"W": W, "target": 1, "observers": [2], "T": 4, **kwargs}
    with pytest.raises(error, match=match):
        sparsedp.squared_sensitivity(**args)


def test_non_stochastic_W_is_refused():
    """A raw adjacency matrix is not a gossip matrix (review finding: it broke the bounds)."""
    import scipy.sparse as sp

    from sparsedp.errors import GossipMatrixError

    A = sp.csr_matrix(nx.to_numpy_array(nx.complete_graph(4)))
    with pytest.raises(GossipMatrixError, match="row 0"):
        sparsedp.squared_sensitivity(A, 0, [3], 14)


def test_no_truncation_when_W_is_only_nearly_doubly_stochastic():
    """Row sums off by 1e-12 (far above rounding): the lags would drift from 1/n."""
    import scipy.sparse as sp

    W = gossip_matrix(nx.complete_graph(5)) + 1e-12 * sp.eye(5)
    r = sparsedp.squared_sensitivity(W, 1, [0], 300, truncation_rtol=1e6)
    assert not r.solver["truncated"]
    reference = sparsedp.squared_sensitivity(W, 1, [0], 300, method="matrix-free")
    assert r.lower <= reference.upper and reference.lower <= r.upper


def test_auto_takes_the_structured_path_while_its_dense_work_fits(monkeypatch):
    """The rule is memory, not a fixed size: m T = 10000 (past the gram assembly's 8000) is
    structured when 2.5 GB fit in half the memory, matrix-free (with a note) when not."""
    from sparsedp.linalg.operators import GossipSystem

    W = gossip_matrix(connected_instance("er", 120, 2))
    system = GossipSystem([W], np.arange(50), 200)
    assert structured_memory(50, 200) == 8 * (3 * 10000**2 + 4 * 10000 * 200 + 16 * 200**2)
    monkeypatch.setattr(resources, "physical_memory", lambda: 8 * 2**30)
    notes = []  # on n = 120 the PCG's work is far below a Cholesky of m T = 10000
    assert sensitivity._auto_method(system, True, notes) == "matrix-free"
    assert "innovation-preconditioned PCG" in notes[0]
    monkeypatch.setattr(sensitivity, "_matrix_free_is_faster", lambda system: None)
    assert sensitivity._auto_method(system, True, []) == "structured"
    monkeypatch.setattr(resources, "physical_memory", lambda: 2 * 2**30)
    notes = []
    assert sensitivity._auto_method(system, True, notes) == "matrix-free"
    assert "dense work" in notes[0]


def test_requests_over_the_memory_budget_are_refused_before_any_work():
    """The cost model (sparsedp.gossip.cost) refuses at once, with the estimate and the
    largest T that fits; the estimate grows with T and the limit is exact for it."""
    W = gossip_matrix(nx.cycle_graph(5))
    with pytest.raises(ResourceLimitError, match=r"at most T = \d+ rounds fit"):
        sparsedp.squared_sensitivity(W, 0, [2], 10**9)
    budget = resources.parse_size("64M")
    largest = resources.largest_fitting(minimal_memory, budget)
    assert minimal_memory(largest) <= budget < minimal_memory(largest + 1)
    with pytest.raises(ResourceLimitError, match="64.0 MiB"):
        sparsedp.squared_sensitivity(W, 0, [2], largest + 1, max_memory="64M")
    r = sparsedp.squared_sensitivity(W, 0, [2], 40, max_memory="64M")
    assert r.solver["estimated_memory_bytes"] == method_cost("structured", 5, W.nnz, 1, 40).memory
    with pytest.raises(ParameterError, match="not understood"):
        sparsedp.squared_sensitivity(W, 0, [2], 4, max_memory="lots")


def test_memory_sizes_parse():
    assert resources.parse_size("8G") == 8 * 2**30 == resources.parse_size("8GiB")
    assert resources.parse_size("512m") == 512 * 2**20 and resources.parse_size(1000) == 1000
    with pytest.raises(ParameterError):
        resources.parse_size("-1G")


@pytest.mark.parametrize("view, T, method", [
    ("secure-summation", 50, "auto"),
    ("neighbourhood", 40, "auto"),
    ("neighbourhood", 30, "matrix-free"),
    ("secure-summation-v1", 20, "gram"),
])
def test_estimate_cost_is_what_the_solve_uses_and_refuses(view, T, method):
    """The dry run names the method and memory estimate that the solve then reports, and
    'fits' is False exactly when the same request is refused."""
    W = gossip_matrix(nx.karate_club_graph())
    plan = sparsedp.estimate_cost(W, 0, [5], T, view=view, method=method)
    result = sparsedp.squared_sensitivity(W, 0, [5], T, view=view, method=method)
    assert plan["fits"] and plan["method"] == result.method
    assert plan["memory_bytes"] == result.solver["estimated_memory_bytes"]
    assert plan["largest_T"] >= T
    small = plan["memory_bytes"] - 1
    tight = sparsedp.estimate_cost(W, 0, [5], T, view=view, method=method, max_memory=small)
    assert not tight["fits"] and tight["largest_T"] < T
    with pytest.raises(ResourceLimitError):
        sparsedp.squared_sensitivity(W, 0, [5], T, view=view, method=method, max_memory=small)


def test_estimate_cost_of_a_closed_form_is_its_overhead_and_no_products():
    from sparsedp.resources import QUERY_OVERHEAD

    W = gossip_matrix(nx.karate_club_graph())
    plan = sparsedp.estimate_cost(W, 5, [5], 10, noise_removed=True)
    assert plan["method"] == "closed form" and plan["fits"]
    assert plan["memory_bytes"] == QUERY_OVERHEAD and plan["sparse_products"] == 0


def test_large_T_stops_first_where_the_truncation_is_expected_to_suffice(monkeypatch):
    """The first stop is placed for truncation_rtol (T = 500, n = 10^4): deep enough, one
    sandwich and no wasted first one; with the first stop at FIRST_MIXING_LEVEL instead the
    prediction says it is too coarse, and the interval contains the same value."""
    import importlib

    from sparsedp.graphs import large

    certified_solve = importlib.import_module("sparsedp.gossip.certified_solve")
    graph = large.largest_component(large.erdos_renyi_large(10_000, 20, seed=1))
    W = sparsedp.gossip_matrix(graph)
    calls = []
    original = certified_solve._lag_sandwich

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(certified_solve, "_lag_sandwich", counting)
    deep = sparsedp.squared_sensitivity(W, 5000, [0], 500, exact=False)
    assert len(calls) == 1 and deep.relative_gap <= 1e-8
    monkeypatch.setattr(certified_solve, "_first_level",
                        lambda rtol: certified_solve.FIRST_MIXING_LEVEL)
    predictions = []
    predict = certified_solve._predicted_widening

    def predicting(*args, **kwargs):
        predictions.append(predict(*args, **kwargs))
        return predictions[-1]

    monkeypatch.setattr(certified_solve, "_predicted_widening", predicting)
    calls.clear()
    shallow = sparsedp.squared_sensitivity(W, 5000, [0], 500, exact=False)
    # the old first stop is too coarse: the prediction says so, and the only certified
    # sandwich is at the deeper stop (every stop is predicted; the last one passes)
    widening, lower, _ = predictions[0]
    assert widening > 1e-9 * lower
    widening, lower, _ = predictions[-1]
    assert widening <= 1e-9 * lower
    assert len(calls) == 1 and shallow.relative_gap <= 1e-8
    assert max(deep.lower, shallow.lower) <= min(deep.upper, shallow.upper)


@pytest.mark.parametrize("n, T, level", [(10_000, 500, 1e-6), (20_000, 300, 1e-8),
                                         (3_000, 100, 1e-4)])
def test_predicted_widening_is_the_first_order_part_of_the_certified_one(n, T, level):
    """The prediction that picks the truncation stop is the certified widening's first-order
    part: never above it, and within a factor 2 of it once the chain has mixed (the
    propagation's factor-2 margin relies on this); its c = 1 value is the sandwich's."""
    import importlib

    from sparsedp.graphs import large
    from sparsedp.linalg.moments import LagPropagator

    certified_solve = importlib.import_module("sparsedp.gossip.certified_solve")
    graph = large.largest_component(large.erdos_renyi_large(n, 20, seed=2))
    W = sparsedp.gossip_matrix(graph)
    propagator = LagPropagator(W, [0], graph.n // 2, T, progress=None)
    lags = propagator.advance(level).result()
    propagator.close()
    assert lags.truncated
    predicted, lower, solved = certified_solve._predicted_widening(lags, T)
    sandwich, widening = certified_solve._lag_sandwich(lags, T, 1e-3)
    assert 0.5 * widening <= predicted <= widening
    assert lower == pytest.approx(float(sandwich.low.sum()), rel=1e-9)
    # a stop that passes reuses the prediction's solve: the same sandwich, bit for bit
    reused, reused_widening = certified_solve._lag_sandwich(lags, T, 1e-3, solved)
    assert reused_widening == widening
    for field in ("low", "excess", "model"):
        np.testing.assert_array_equal(getattr(reused, field), getattr(sandwich, field))
    assert (reused.eta_low, reused.eta_excess) == (sandwich.eta_low, sandwich.eta_excess)


def test_prediction_resumes_only_where_the_certified_widening_would_fail(monkeypatch):
    """A first stop whose widening is within the allowance but above half of it (0.88 of it
    here) is kept: the prediction changes neither the products nor the interval."""
    import importlib

    from sparsedp.graphs import large

    certified_solve = importlib.import_module("sparsedp.gossip.certified_solve")
    graph = large.largest_component(large.erdos_renyi_large(20_000, 20, seed=4))
    W = sparsedp.gossip_matrix(graph)

    def query():
        return sparsedp.squared_sensitivity(W, 15941, [5927], 300, exact=False,
                                            truncation_rtol=1e-6)

    predicted = query()
    monkeypatch.setattr(certified_solve, "_predicted_widening",
                        lambda lags, T, model, progress: (0.0, 1.0, None))
    certified_only = query()
    assert predicted.solver["sparse_products"] == certified_only.solver["sparse_products"]
    assert (predicted.lower, predicted.upper) == (certified_only.lower, certified_only.upper)
