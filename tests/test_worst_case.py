"""The certified per-target worst case (sparsedp.per_target_worst_case) and the box bound
(sparsedp.gossip.batched_box): against dense exact values, single squared_sensitivity calls
and the unpruned computation."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

import sparsedp
from sparsedp.errors import GossipMatrixError, ParameterError
from sparsedp.gossip import batched
from sparsedp.gossip.batched_box import box_radius, box_upper
from sparsedp.testing import brute_force_max, dense_M
from tests.conftest import random_family_graph

SCHEMES = ("metropolis", "max-degree", "row-normalised", "row-normalised-self-loops")


def _graph(k: int, low: int = 20, high: int = 201) -> nx.Graph:
    """The k-th random connected graph (four families) of ``low`` to ``high - 1`` nodes."""
    return random_family_graph(k, 2000, low, high)


def _matrix(k: int, low: int = 20, high: int = 201) -> sp.csr_matrix:
    return sparsedp.gossip_matrix(_graph(k, low, high), scheme=SCHEMES[k % len(SCHEMES)])


def _exact(W, target: int, observer: int, T: int) -> float:
    """Delta_T^2(target -> observer) by exhaustive sign search on the dense M_T."""
    return brute_force_max(dense_M(W, target, [observer], T))


@pytest.mark.parametrize("k", range(8))
def test_box_bound_is_above_the_exact_value_of_every_pair(k):
    """Small graphs, four schemes, T <= 9: for two observers and every target, the box bound
    is at least the exhaustive-search value and at least the dense ``||b_j||^2 /
    lambda_min(K)``; its radius lies within 0.2% above ``1 / lambda_min(K)``."""
    W = _matrix(k, 12, 30)
    n, T = W.shape[0], 4 + k % 6
    lam = batched.lambda_min_lower_bound(W)
    batch = batched.observer_batch(W, [0, n - 1], T, lam)
    C = np.tril(np.ones((T, T)))
    for i, a in enumerate((0, n - 1)):
        radius = box_radius(batch, i)
        inverse_min = 1.0 / float(np.linalg.eigvalsh(batch.K[i])[0])
        assert inverse_min <= radius <= inverse_min * 1.002
        box = box_upper(batch, i, radius)
        for j in range(n):
            if j == a:
                continue
            b = C @ batch.lags[i][:, j]
            exact = _exact(W, j, a, T)
            assert exact <= b @ b * inverse_min * (1 + 1e-9) + 1e-15
            assert exact <= box[j], (a, j, exact, box[j])
            assert box[j] <= b @ b * inverse_min * 1.002 + 1e-300


def test_the_dense_check_would_catch_a_wrong_box_bound():
    """The check above can fail: a box bound that forgot the lag sums (``||r_j||^2`` for
    ``||b_j||^2 = ||C r_j||^2``) is below the exhaustive-search value for some pair."""
    W = sparsedp.gossip_matrix(_graph(1, 12, 30))
    n, T = W.shape[0], 8
    batch = batched.observer_batch(W, [0], T, batched.lambda_min_lower_bound(W))
    radius = box_radius(batch, 0)
    wrong = radius * np.einsum("tj,tj->j", batch.lags[0], batch.lags[0])
    assert any(wrong[j] < _exact(W, j, 0, T) for j in range(1, n))


def test_rounds_only_increase_the_sensitivity():
    """The pre-pass relies on ``Delta_T'^2 <= Delta_T^2`` (T' < T), pair by pair."""
    W = sparsedp.gossip_matrix(_graph(2, 12, 30))
    for a, j in ((0, 1), (3, 7), (5, 0)):
        values = [_exact(W, j, a, T) for T in range(1, 10)]
        assert all(x <= y * (1 + 1e-9) + 1e-15 for x, y in zip(values, values[1:], strict=False))


@pytest.mark.parametrize("k", range(6))
def test_worst_case_brackets_the_exhaustive_worst_case(k):
    """Every target of a small graph: lower <= max_a (exhaustive-search value) <= upper."""
    W = _matrix(k + 10, 10, 22)
    n, T = W.shape[0], 3 + k % 5
    w = sparsedp.per_target_worst_case(W, T, prepass_T=T // 2)
    assert len(w) == n
    for row in w.rows():
        j = row["target"]
        exact = max(_exact(W, j, a, T) for a in range(n) if a != j)
        assert row["lower"] <= exact * (1 + 1e-9) + 1e-15, (j, row, exact)
        assert exact <= row["upper"], (j, row, exact)
        assert row["observers"] == n - 1


@pytest.mark.parametrize("k", [*range(2), *(pytest.param(k, marks=pytest.mark.slow)
                                           for k in range(2, 8))])
def test_worst_case_against_single_calls_and_the_unpruned_value(k):
    """Random graphs up to 200 nodes, four schemes: the pruned result equals the unpruned one
    (every pair evaluated) to rounding (each pair's bounds are computed in blocks of other
    sizes: 1e-12 relative); the upper bound is at least every single call's lower
    bound; lower <= upper; and the lower bound is the map's largest c = 1 lower bound."""
    W = _matrix(k)
    n, T = W.shape[0], (6, 12, 30, 40)[k % 4]
    pruned = sparsedp.per_target_worst_case(W, T)
    full = sparsedp.per_target_worst_case(W, T, prune=False)
    assert pruned.info["evaluated_pairs"] < full.info["evaluated_pairs"]
    np.testing.assert_allclose(pruned.columns["upper"], full.columns["upper"], rtol=1e-12)
    np.testing.assert_allclose(pruned.columns["lower"], full.columns["lower"], rtol=1e-12)
    assert np.all(pruned.columns["lower"] <= pruned.columns["upper"])
    m = sparsedp.privacy_map(W, "all", "all", T, upper="entrywise")
    table = sorted(m.per_target(), key=lambda e: e["target"])  # rows of W, in target order
    worst_lower = np.array([e["worst_lower"] for e in table])
    worst_entrywise = np.array([e["worst_upper"] for e in table])
    np.testing.assert_allclose(pruned.columns["lower"], worst_lower, rtol=1e-12, atol=1e-300)
    assert np.all(pruned.columns["upper"] <= worst_entrywise * (1 + 1e-12))
    rng = np.random.default_rng(k)
    for j in rng.choice(n, 2, replace=False):
        single = max(sparsedp.squared_sensitivity(W, int(j), [a], T, exact=False).lower
                     for a in range(n) if a != j)
        assert single <= pruned.columns["upper"][j], (j, single)


@pytest.mark.slow  # a larger graph's exhaustive check
def test_pruning_is_tight_on_a_larger_graph():
    """A 600-node geometric graph at T = 40: few pairs evaluated, the same bounds as with
    every pair evaluated, and a small gap where M_T >= 0."""
    G = nx.random_geometric_graph(600, 0.08, seed=3)
    G = nx.convert_node_labels_to_integers(G.subgraph(max(nx.connected_components(G),
                                                          key=len)))
    W = sparsedp.gossip_matrix(G)
    pruned = sparsedp.per_target_worst_case(W, 40, observers=("sample", 150, 1))
    full = sparsedp.per_target_worst_case(W, 40, observers=("sample", 150, 1), prune=False)
    np.testing.assert_allclose(pruned.columns["upper"], full.columns["upper"], rtol=1e-12)
    assert pruned.info["evaluated_pairs"] < 0.2 * full.info["evaluated_pairs"]


def test_labels_sample_of_observers_and_epsilons():
    G = nx.relabel_nodes(nx.cycle_graph(9), {i: f"v{i}" for i in range(9)})
    w = sparsedp.per_target_worst_case(G, 5, 1.0, 1e-5, observers=["v0", "v4"],
                                       targets=["v0", "v1", "v8"])
    rows = w.rows()
    assert [r["target"] for r in rows] == ["v0", "v1", "v8"]
    assert [r["observers"] for r in rows] == [1, 2, 2]
    assert rows[0]["worst_observer"] == "v4" and rows[1]["worst_observer"] == "v0"
    for r in rows:
        assert r["epsilon"] == pytest.approx(sparsedp.gaussian_epsilon(r["upper"], 1.0, 1e-5))
    m = sparsedp.privacy_map(G, ["v0", "v4"], ["v0", "v1", "v8"], 5, upper="entrywise")
    table = {e["target"]: e for e in m.per_target()}
    for r in rows:
        assert r["lower"] == pytest.approx(table[r["target"]]["worst_lower"], rel=1e-12)
    import json
    json.dumps(w.to_dict(), allow_nan=False)


def test_far_targets_are_exact_zeros_and_a_lone_target_is_left_out():
    """On a path, targets more than T - 1 hops from every observer have Delta^2 = 0; a target
    whose only observer is itself has no row."""
    w = sparsedp.per_target_worst_case(nx.path_graph(12), 4, observers=[0])
    rows = {r["target"]: r for r in w.rows()}
    assert 0 not in rows
    for j in range(4, 12):
        assert rows[j]["upper"] == rows[j]["lower"] == 0.0 and rows[j]["kind"] == "exact"
        assert rows[j]["worst_observer"] is None
    assert rows[1]["upper"] > 0 and rows[1]["kind"] == "certified upper"


@pytest.mark.parametrize("kwargs, error, text", [
    ({"prepass_T": 5}, ParameterError, "prepass_T"),
    ({"prepass_T": -1}, ParameterError, "prepass_T"),
    ({"refine": -1}, ParameterError, "refine"),
    ({"sigma": 1.0, "delta": None}, ParameterError, "both sigma and delta"),
    ({"observers": [99]}, sparsedp.GraphError, "unknown node id 99"),
])
def test_bad_input(kwargs, error, text):
    with pytest.raises(error, match=text):
        sparsedp.per_target_worst_case(nx.cycle_graph(10), 5, **kwargs)


def test_negative_weights_are_refused():
    """The box bound needs W >= 0 (``|G c| <= G 1``): a matrix with a negative entry is
    refused before any work."""
    W = np.array([[0.5, 0.7, -0.2], [0.7, 0.3, 0.0], [-0.2, 0.0, 1.2]])
    with pytest.raises(GossipMatrixError):
        sparsedp.per_target_worst_case(W, 4)


# ---- the command line ------------------------------------------------------------------------

def _cli(capsys, *argv):
    from sparsedp.cli.main import main
    code = main(["map", "--no-progress", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_per_target_json_equals_the_library(capsys):
    import json
    code, out, _ = _cli(capsys, "--generator", "ring:12", "-T", "5", "--per-target", "--json")
    assert code == 0
    record = json.loads(out, parse_constant=lambda c: pytest.fail(f"non-strict JSON {c}"))
    direct = sparsedp.per_target_worst_case(nx.cycle_graph(12), 5, 1.0, 1e-5)
    assert [r["upper"] for r in record["rows"]] == pytest.approx(
        direct.columns["upper"].tolist(), rel=1e-12)
    code, out, _ = _cli(capsys, "--generator", "ring:12", "-T", "5", "--per-target")
    assert code == 0 and "least protected targets" in out and "certified upper" in out
    code, out, _ = _cli(capsys, "--generator", "ring:30", "-T", "20", "--per-target",
                        "--refine", "5", "--json")
    refined = sparsedp.per_target_worst_case(nx.cycle_graph(30), 20, 1.0, 1e-5, refine=5)
    assert json.loads(out)["parameters"]["refine"] == 5
    assert [r["upper"] for r in json.loads(out)["rows"]] == pytest.approx(
        refined.columns["upper"].tolist(), rel=1e-12)


def test_cli_per_target_refuses_a_table_output(capsys, tmp_path):
    code, _, err = _cli(capsys, "--generator", "ring:10", "-T", "3", "--per-target", "--out",
                        str(tmp_path / "m.parquet"))
    assert code == 2 and "--per-target" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "m.parquet").exists()


@pytest.mark.parametrize("k", [*range(2), *(pytest.param(k, marks=pytest.mark.slow)
                                           for k in range(2, 6))])
def test_refinement_tightens_and_stays_certified(k):
    """refine > 0 (single-pair sandwiches, multistart ascent, certified diagonal shift on the
    pairs that decide a target's upper bound): the bounds still bracket the exhaustive-search
    worst case on small graphs; on larger ones the upper bound is at most the unrefined one,
    the lower at least, the pruned result equals the unpruned one to rounding, and the
    upper is at least every single call's lower bound."""
    W = _matrix(k + 10, 10, 22)
    n, T = W.shape[0], 3 + k % 5
    w = sparsedp.per_target_worst_case(W, T, refine=5, prepass_T=T // 2)
    for row in w.rows():
        j = row["target"]
        exact = max(_exact(W, j, a, T) for a in range(n) if a != j)
        assert row["lower"] <= exact * (1 + 1e-9) + 1e-15 and exact <= row["upper"]
    W = _matrix(k, 60, 160)
    n, T = W.shape[0], (30, 40, 60)[k % 3]
    plain = sparsedp.per_target_worst_case(W, T)
    refined = sparsedp.per_target_worst_case(W, T, refine=5)
    full = sparsedp.per_target_worst_case(W, T, refine=5, prune=False)
    np.testing.assert_allclose(refined.columns["upper"], full.columns["upper"], rtol=1e-12)
    assert np.all(refined.columns["upper"] <= plain.columns["upper"] * (1 + 1e-12))
    assert np.all(refined.columns["lower"] >= plain.columns["lower"] * (1 - 1e-12))
    assert np.all(refined.columns["lower"] <= refined.columns["upper"])
    for j in np.random.default_rng(k).choice(n, 2, replace=False):
        single = max(sparsedp.squared_sensitivity(W, int(j), [a], T, exact=False).lower
                     for a in range(n) if a != j)
        assert single <= refined.columns["upper"][j], (j, single)


def test_refinement_narrows_the_gap_where_m_has_negative_entries():
    """A 300-node geometric graph at T = 60, where M_T of neighbours has negative entries:
    the refined pairs narrow the largest gap upper / lower - 1 by at least a third."""
    G = nx.random_geometric_graph(300, 0.1, seed=5)
    G = nx.convert_node_labels_to_integers(G.subgraph(max(nx.connected_components(G),
                                                          key=len)))
    W = sparsedp.gossip_matrix(G)
    plain = sparsedp.per_target_worst_case(W, 60, observers=("sample", 100, 2))
    refined = sparsedp.per_target_worst_case(W, 60, observers=("sample", 100, 2), refine=5)
    gap = lambda w: (w.columns["upper"] / w.columns["lower"] - 1).max()  # noqa: E731
    assert refined.info["refined_pairs"] > 0
    assert gap(refined) <= gap(plain) * 2 / 3, (gap(refined), gap(plain))


def _two_clusters(k: int, p: float, seed: int) -> nx.Graph:
    """Two connected G(k, p) clusters joined by one edge between random ends."""
    rng = np.random.default_rng(seed)
    while True:
        A, B = (nx.gnp_random_graph(k, p, seed=int(rng.integers(1 << 30))) for _ in range(2))
        if nx.is_connected(A) and nx.is_connected(B):
            break
    G = nx.disjoint_union(A, B)
    G.add_edge(int(rng.integers(k)), k + int(rng.integers(k)))
    return G


@pytest.mark.parametrize("seed", [1, 2])
def test_worst_case_is_exact_on_two_clusters_joined_by_a_bridge(seed):
    """Issue 33: on bridged clusters (row-normalised, T = 11) ``M_j`` has negative entries,
    so c = 1 and the entrywise bound are far apart: main reported [0.544, 1.006] around an
    exact worst case of 0.844 (seed 1; 55-70 % wide on such graphs).  With the exhaustive
    search of the deciding pairs (``exact="auto"`` for T <= 16) every target's interval is
    the brute-force maximum over all observers (dense M, all sign vectors) to 1e-8; without
    it (``exact=False``) the interval stays certified around it."""
    W = sparsedp.gossip_matrix(_two_clusters(8, 0.4, seed), scheme="row-normalised")
    n, T = W.shape[0], 11
    tight = sparsedp.per_target_worst_case(W, T)
    loose = sparsedp.per_target_worst_case(W, T, exact=False)
    assert tight.info["refined_pairs"] > 0
    widest = 0.0
    for row, wide in zip(tight.rows(), loose.rows(), strict=True):
        j = row["target"]
        exact = max(_exact(W, j, a, T) for a in range(n) if a != j)
        assert row["lower"] <= exact * (1 + 1e-9) and exact <= row["upper"], (j, row, exact)
        assert row["upper"] - row["lower"] <= 1e-8 * exact, (j, row, exact)
        assert wide["lower"] <= exact * (1 + 1e-9) and exact <= wide["upper"], (j, wide)
        widest = max(widest, (wide["upper"] - wide["lower"]) / exact)
    assert widest > 0.3  # the case needs the search: c = 1 and entrywise are far apart
