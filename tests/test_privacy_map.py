"""Privacy maps (sparsedp.privacy_map, sparsedp.gossip.batched): pair by pair against single
squared_sensitivity calls, the summaries, node labels, bad input and the Parquet store."""

from __future__ import annotations

import json

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

import sparsedp
from sparsedp.errors import GraphError, ParameterError, SparseDPError
from sparsedp.gossip import batched
from sparsedp.maps import store
from tests.conftest import random_family_graph


def _random_graph(k: int) -> nx.Graph:
    """The k-th of 20 random connected graphs of 20 to 200 nodes (four families)."""
    return random_family_graph(k, 1000)


def _ones_bound(result) -> float:
    return next(b.value for b in result.bounds if b.name == "ones")


def _close(a: float, b: float, rtol: float = 1e-9, atol: float = 1e-13) -> bool:
    """Equal to ``rtol`` relative; values below ``atol`` are at the certified rounding slack
    of both computations (the far pairs of the larger graphs)."""
    return abs(a - b) <= rtol * max(abs(a), abs(b)) + atol


@pytest.mark.parametrize("k", range(20))
def test_map_agrees_with_single_calls_pair_by_pair(k):
    """On 20 random graphs (20-200 nodes): the map's c = 1 lower bound equals the single
    call's ``ones`` bound, and with certified uppers the map's lower equals the single
    call's lower (both with the exhaustive search, T <= 24), to 1e-9 relative; each
    certified upper is at least the other side's lower bound."""
    G = _random_graph(k)
    W = sparsedp.gossip_matrix(G)
    n = W.shape[0]
    T = 3 + k % 4
    rng = np.random.default_rng(k)
    observers = [int(v) for v in rng.choice(n, 2, replace=False)]
    targets = [int(v) for v in rng.choice(n, 5, replace=False)] + [observers[0]]
    fast = sparsedp.privacy_map(W, observers, "all", T, upper="none")
    certified = sparsedp.privacy_map(W, observers, targets, T, 1.0, 1e-5, exact="auto")
    fast_rows = {(r["observer"], r["target"]): r for r in fast.rows()}
    assert len(fast_rows) == 2 * (n - 1)  # no self pairs
    for row in certified.rows():
        a, j = row["observer"], row["target"]
        single = sparsedp.squared_sensitivity(W, j, [a], T)
        assert _close(fast_rows[a, j]["lower"], _ones_bound(single)), (a, j)
        assert _close(row["lower"], single.lower), (a, j, row, single.lower)
        assert row["upper"] >= single.lower
        assert single.upper >= row["lower"]
        assert row["lower"] <= row["upper"]
        assert row["kind"] == "exact"
        assert row["epsilon"] == pytest.approx(
            sparsedp.gaussian_epsilon(row["upper"], 1.0, 1e-5))


@pytest.mark.parametrize("k", range(20))
def test_neighbourhood_map_agrees_with_single_calls_pair_by_pair(k):
    """The neighbourhood view (the observer's closed neighbourhood as one colluding set) on
    20 random graphs, symmetric and not: the batched c = 1 lower bound equals the single
    call's ``ones`` bound to 1e-9 relative, and the certified rows are the single call's
    bounds; pairs beyond T hops are the exact 0."""
    G = _random_graph(k)
    scheme = "metropolis" if k % 2 else "row-normalised-self-loops"
    W = sparsedp.gossip_matrix(G, scheme=scheme)
    n = W.shape[0]
    T = 2 + k % 4
    rng = np.random.default_rng(100 + k)
    observers = [int(v) for v in rng.choice(n, 2, replace=False)]
    targets = [int(v) for v in rng.choice(n, 4, replace=False)] + [observers[0]]
    fast = sparsedp.privacy_map(W, observers, "all", T, view="neighbourhood", upper="none")
    certified = sparsedp.privacy_map(W, observers, targets, T, view="neighbourhood",
                                     exact="auto")
    fast_rows = {(r["observer"], r["target"]): r for r in fast.rows()}
    assert fast.parameters["view"] == "neighbourhood" and len(fast_rows) == 2 * (n - 1)
    for row in fast_rows.values():
        if row["distance"] > T:
            assert row["lower"] == 0.0 and row["kind"] == "exact"
    for row in certified.rows():
        a, j = row["observer"], row["target"]
        single = sparsedp.squared_sensitivity(W, j, [a], T, view="neighbourhood")
        assert _close(fast_rows[a, j]["lower"], _ones_bound(single)), (a, j)
        if row["distance"] <= T:
            assert (row["lower"], row["upper"]) == (single.lower, single.upper)
            assert row["kind"] == "exact"



def _exact_set_ones(W, observers, target: int, T: int, digits: int = 40) -> float:
    """``1^T M_j 1 = b^T K^{-1} b`` of the secure-summation view of ``observers`` in
    ``digits``-digit arithmetic from the definition (v2 Lemma 10): ``K = H H^T`` with H's
    blocks ``S W^(t-k)``, ``b = sum_k`` of the target's columns; independent of the
    engine's float path."""
    import mpmath

    with mpmath.workdps(digits):
        Wm = mpmath.matrix(W.toarray().tolist())
        n, m = W.shape[0], len(observers)
        rows = [mpmath.matrix([[1 if v == a else 0 for v in range(n)]]) for a in observers]
        lags = [rows]  # lags[l][i] = e_(a_i)^T W^l
        for _ in range(1, T):
            lags.append([r * Wm for r in lags[-1]])
        H = mpmath.zeros(T * m, T * n)
        for t in range(T):
            for k in range(t + 1):
                for i in range(m):
                    for v in range(n):
                        H[t * m + i, k * n + v] = lags[t - k][i][v]
        b = mpmath.matrix([sum(H[r, k * n + target] for k in range(T))
                           for r in range(T * m)])
        return float((b.T * mpmath.lu_solve(H * H.T, b))[0])


@pytest.mark.parametrize("scheme", ["row-normalised-self-loops", "row-normalised"])
def test_neighbourhood_map_keeps_its_precision_where_m_is_the_identity(scheme):
    """Issue 33: the hub of a 15-leaf star reads every node, so M = I for every target and
    ``Delta^2 = 1^T M 1 = T`` exactly; the map lost 2.7e-8 relative (row-normalised; the
    issue's 12.999999766 was the hub itself, now refused as a target) through the
    ``mT x mT`` sandwich of ``C^T K^{-1} C``.  Now within 1e-9 relative of T, below it, and
    equal to the single call's ``ones`` bound to 1e-9 relative."""
    T = 13
    W = sparsedp.gossip_matrix(nx.star_graph(15), scheme=scheme)
    m = sparsedp.privacy_map(W, [0], "all", T, upper="none", view="neighbourhood")
    lows = m.columns["lower"]
    assert lows.size == 15 and np.all(lows <= T) and np.all(lows >= T * (1 - 1e-9))
    single = sparsedp.squared_sensitivity(W, 1, [0], T, view="neighbourhood", exact=False)
    assert _close(float(lows[0]), _ones_bound(single))


def test_neighbourhood_map_keeps_its_precision_on_an_ill_conditioned_k():
    """A 40-leaf star, row-normalised, T = 30: ``||K|| / lambda_min`` near 10^5 (the analytic
    ``lambda_min`` bound 0.019, mT = 1230 for the hub).  The hub's values are T exactly
    (M = I): the map lost 2.7e-5 relative, now 1.1e-7, at least as tight as the single call
    (1.25e-7: both charge the same rounding of K).  A leaf's (set {leaf, hub}, M not the
    identity) certified interval contains a 40-digit value from the definition and is
    within 1e-9 relative of it."""
    W = sparsedp.gossip_matrix(nx.star_graph(40), scheme="row-normalised")
    T = 30
    hub = sparsedp.privacy_map(W, [0], [1], T, upper="none", view="neighbourhood")
    low = float(hub.columns["lower"][0])
    single = sparsedp.squared_sensitivity(W, 1, [0], T, view="neighbourhood", exact=False)
    assert _ones_bound(single) - 1e-9 * T <= low <= T and low >= T * (1 - 2e-7)
    from sparsedp.gossip.batched_sets import set_ones

    T = 12
    ones = set_ones(W, [1, 0], T, [2, 0])
    for k, target in enumerate([2, 0]):
        exact = _exact_set_ones(W, [1, 0], target, T)
        assert ones.low[k] <= exact <= ones.high[k], (target, ones.low[k], exact)
        assert ones.high[k] - ones.low[k] <= 1e-9 * exact, target


def test_the_map_refuses_an_unknown_view_and_entrywise_neighbourhood_bounds():
    W = sparsedp.gossip_matrix(nx.cycle_graph(6))
    with pytest.raises(ParameterError, match="view must be one of"):
        sparsedp.privacy_map(W, [0], "all", 3, view="local-dp")
    with pytest.raises(ParameterError, match="secure-summation view"):
        sparsedp.privacy_map(W, [0], "all", 3, view="neighbourhood", upper="entrywise")


def test_map_without_exact_search_and_longer_T():
    """T = 30 (no exhaustive search): the certified interval still contains the single
    call's (lower <= other upper both ways), kind 'certified upper'."""
    G = _random_graph(3)
    W = sparsedp.gossip_matrix(G)
    m = sparsedp.privacy_map(W, [0, 5], [1, 2, 3, 0], 30)
    for row in m.rows():
        single = sparsedp.squared_sensitivity(W, row["target"], [row["observer"]], 30)
        assert row["upper"] >= single.lower and single.upper >= row["lower"]
        assert row["kind"] in ("certified upper", "exact")
        assert _close(row["lower"], max(single.lower, 0.0), rtol=1e-6)


@pytest.mark.parametrize("k, T", [(0, 4), (5, 12), (10, 30), (15, 64)])
def test_entrywise_upper_against_single_calls(k, T):
    """upper='entrywise': certified, within 1e-6 relative of the single call's entrywise
    bound (sum |M_T|) wherever T does not cap it, and never below the single call's lower."""
    G = _random_graph(k)
    W = sparsedp.gossip_matrix(G)
    rng = np.random.default_rng(k)
    targets = [int(v) for v in rng.choice(W.shape[0], 6, replace=False)] + [3]
    m = sparsedp.privacy_map(W, [3, 7], targets, T, upper="entrywise")
    for row in m.rows():
        single = sparsedp.squared_sensitivity(W, row["target"], [row["observer"]], T,
                                              exact=False)
        entrywise = next(b.value for b in single.bounds if b.name == "entrywise")
        assert row["upper"] >= single.lower and single.upper >= row["lower"]
        if row["kind"] != "exact" and row["upper"] < T:
            assert _close(row["upper"], entrywise, rtol=1e-6, atol=1e-15), (row, entrywise)


def test_gram_abs_sums_backends_agree():
    from sparsedp.linalg import kernels
    Y = np.random.default_rng(0).standard_normal((7, 5, 130))
    a1, d1 = kernels.gram_abs_sums(Y, "numpy")
    a2, d2 = kernels.gram_abs_sums(Y, "numba")
    np.testing.assert_allclose(a1, a2, rtol=1e-13)
    np.testing.assert_allclose(d1, d2, rtol=1e-13, atol=1e-14)


def test_ones_interval_is_tight_and_brackets_the_plain_value():
    G = _random_graph(0)
    W = sparsedp.gossip_matrix(G)
    lam = batched.lambda_min_lower_bound(W)
    batch = batched.observer_batch(W, [0, 1, 2], 12, lam)
    targets = np.arange(W.shape[0])
    low, high = batched.ones_interval(batch, targets)
    plain = batched.ones_values(batch, targets)
    assert np.all(low <= plain) and np.all(plain <= high)
    assert np.all(high - low <= 1e-9 * high + 1e-15)


def test_distances_and_zero_pairs_beyond_T():
    """Hop distances are networkx's; pairs farther than T - 1 hops get the exact 0."""
    G = nx.path_graph(12)
    m = sparsedp.privacy_map(G, [0], "all", 4)
    lengths = nx.single_source_shortest_path_length(G, 0)
    for row in m.rows():
        assert row["distance"] == lengths[row["target"]]
        if row["distance"] > 3:
            assert row["lower"] == row["upper"] == 0.0 and row["kind"] == "exact"
        else:
            assert row["upper"] > 0


def test_disconnected_matrix_input():
    """Matrix input may be disconnected: another component is distance -1, exactly 0."""
    W = sp.block_diag([sparsedp.gossip_matrix(nx.cycle_graph(5))] * 2, format="csr")
    m = sparsedp.privacy_map(W, [0], "all", 3, upper="none")
    rows = m.rows()
    assert [r["distance"] for r in rows[4:]] == [-1] * 5  # targets 1..4 (no self pair), 5..9
    assert all(r["lower"] == 0.0 and r["kind"] == "exact" for r in rows[4:])


def test_node_labels_graph_in_labels_out():
    """Graph input speaks labels, matrix input rows (README, Node labels and rows)."""
    G = nx.relabel_nodes(nx.cycle_graph(6), {i: f"n{i}" for i in range(6)})
    m = sparsedp.privacy_map(G, ["n2"], ["n0", "n3"], 3, upper="none")
    assert [(r["observer"], r["target"]) for r in m.rows()] == [("n2", "n0"), ("n2", "n3")]
    W = sparsedp.gossip_matrix(G)
    by_rows = sparsedp.privacy_map(W, [2], [0, 3], 3, upper="none")
    assert [(r["observer"], r["target"]) for r in by_rows.rows()] == [(2, 0), (2, 3)]
    np.testing.assert_array_equal(m.columns["lower"], by_rows.columns["lower"])


def test_samples_are_reproducible_and_distinct():
    G = _random_graph(1)
    a = sparsedp.privacy_map(G, ("sample", 3, 7), ("sample", 4, 1), 3, upper="none")
    b = sparsedp.privacy_map(G, ("sample", 3, 7), ("sample", 4, 1), 3, upper="none")
    np.testing.assert_array_equal(a.columns["lower"], b.columns["lower"])
    assert len(set(a.columns["observer"].tolist())) == 3 and len(a) == 12


def test_summaries():
    G = _random_graph(2)
    m = sparsedp.privacy_map(G, [0, 1, 2], "all", 4, 2.0, 1e-5)
    c = m.columns
    for entry in m.per_target():
        rows = (c["target"] == entry["target"]) & (c["observer"] != c["target"])
        assert entry["worst_upper"] == c["upper"][rows].max()
        assert entry["worst_lower"] == c["lower"][rows].max()
        assert entry["worst_lower"] <= entry["worst_upper"]
    counts = {e["distance"]: e["pairs"] for e in m.by_distance()}
    assert sum(counts.values()) == len(m)
    for e in m.by_distance():
        assert e["lower"]["min"] <= e["lower"]["mean"] <= e["lower"]["max"]
    json.dumps(m.to_dict(), allow_nan=False)  # strict JSON


@pytest.mark.parametrize("kwargs, error, text", [
    ({"observers": [99]}, GraphError, "unknown node id 99"),
    ({"targets": [0, "x"]}, GraphError, "unknown node id 'x'"),
    ({"observers": ("sample", 50, 0)}, ParameterError, "larger than the graph"),
    ({"observers": ("sample", 0, 0)}, ParameterError, "sample size"),
    ({"observers": "some"}, ParameterError, "'all', a list"),
    ({"upper": "maybe"}, ParameterError, "upper must be"),
    ({"sigma": 1.0, "delta": None}, ParameterError, "both sigma and delta"),
    ({"T": 0}, ParameterError, "T (number of rounds)"),
    ({"upper": "none", "exact": True}, ParameterError, "exact search needs"),
])
def test_bad_input_one_line_errors(kwargs, error, text):
    G = nx.cycle_graph(10)
    args = {"observers": [0], "targets": "all", "T": 3, **kwargs}
    with pytest.raises(error) as info:
        sparsedp.privacy_map(G, **args)
    assert text in str(info.value) and "\n" not in str(info.value)
    assert isinstance(info.value, SparseDPError)


def test_memory_budget_refuses_before_work():
    with pytest.raises(SparseDPError, match="memory budget"):
        sparsedp.privacy_map(nx.cycle_graph(50), "all", "all", 5, max_memory="1K")


def test_store_needs_pyarrow_or_round_trips(tmp_path):
    """Without pyarrow: a one-line error naming the extra.  With it: see the round trip."""
    m = sparsedp.privacy_map(nx.cycle_graph(8), [0], "all", 3, 1.0, 1e-5)
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        with pytest.raises(ParameterError, match=r"sparsedp\[map\]"):
            store.write_map(m, tmp_path / "m.parquet")


def test_parquet_round_trip_and_refusal(tmp_path):
    pytest.importorskip("pyarrow")
    G = nx.relabel_nodes(nx.cycle_graph(8), {i: f"v{i}" for i in range(8)})
    m = sparsedp.privacy_map(G, ["v0", "v1"], "all", 3, 1.0, 1e-5)
    path = store.write_map(m, tmp_path / "m.parquet")
    back = store.read_map(path)
    assert back.parameters == json.loads(json.dumps(m.parameters))
    for name, values in m.columns.items():
        np.testing.assert_array_equal(back.columns[name], values)
    fast = sparsedp.privacy_map(G, ["v0"], "all", 3, upper="none")
    with pytest.raises(ParameterError, match="different parameters"):
        store.write_map(fast, path)
    assert store.check_store(path, m.parameters) is True
    other = tmp_path / "not-a-map.parquet"
    other.write_text("hello")
    with pytest.raises(ParameterError, match="not a sparsedp map store"):
        store.write_map(m, other)
    assert other.read_text() == "hello"


# ---- the command line ------------------------------------------------------------------------

def _cli(capsys, *argv):
    from sparsedp.cli.main import main
    code = main(["map", "--no-progress", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_json_summaries(capsys):
    code, out, _ = _cli(capsys, "--generator", "ring:12", "-T", "3", "--observers", "0,5",
                        "--json")
    assert code == 0
    record = json.loads(out, parse_constant=lambda c: pytest.fail(f"non-strict JSON {c}"))
    assert record["pairs"] == 22 and len(record["per_target"]) == 12  # no self pairs
    assert record["by_distance"][0]["distance"] == 1 and record["store"] is None
    direct = sparsedp.privacy_map(nx.cycle_graph(12), [0, 5], "all", 3, 1.0, 1e-5)
    assert [e["worst_upper"] for e in record["per_target"]] == pytest.approx(
        [e["worst_upper"] for e in direct.per_target()], rel=1e-12)


def test_cli_text_report(capsys):
    code, out, _ = _cli(capsys, "--generator", "ring:10", "-T", "3", "--observers", "sample:3:0")
    assert code == 0 and "least protected targets" in out and "d =   1" in out


@pytest.mark.parametrize("argv, text", [
    (("--observers", "0,99"), "unknown node id 99"),
    (("--targets", "sample:50:1"), "larger than the graph"),
    (("--rounds", "0"), "T (number of rounds)"),
])
def test_cli_bad_input_one_line(capsys, argv, text):
    code, _, err = _cli(capsys, "--generator", "ring:10", *argv)
    assert code == 2 and text in err and len(err.strip().splitlines()) == 1


def test_cli_store_refuses_other_parameters(capsys, tmp_path):
    path = tmp_path / "m.parquet"
    args = ("--generator", "ring:10", "-T", "3", "--observers", "0", "--out", str(path))
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        code, _, err = _cli(capsys, *args)
        assert code == 2 and "sparsedp[map]" in err and not path.exists()
        return
    assert _cli(capsys, *args, "--json")[0] == 0 and path.exists()
    code, out, _ = _cli(capsys, *args, "--json")  # same parameters: replaced, said so
    assert code == 0 and json.loads(out)["store"]["replaced"] is True
    code, _, err = _cli(capsys, *args[:-2], "--out", str(path), "--sigma", "2")
    assert code == 2 and "different parameters" in err
    assert store.read_map(path).parameters["sigma"] == 1.0


def test_epsilons_of_many_distinct_bounds_stay_upper_bounds():
    """Beyond 20000 distinct uppers, epsilon is taken at the next point of a geometric grid:
    never below the exact conversion, and within 0.1% of it."""
    import importlib
    module = importlib.import_module("sparsedp.maps.privacy_map")
    rng = np.random.default_rng(0)
    upper = np.concatenate([rng.uniform(0, 30, 25_000), [0.0, 1e-30, 30.0]])
    eps, note = module.upper_epsilons(upper, 2.0, 1e-5)
    assert note is not None and "upper bound" in note
    picked = np.concatenate([rng.choice(upper.size, 200), [upper.size - 1]])
    exact = np.array([sparsedp.gaussian_epsilon(float(upper[i]), 2.0, 1e-5) for i in picked])
    assert np.all(eps[picked] >= exact)
    assert np.all(eps[picked] <= exact * 1.001 + 1e-12)


def test_non_symmetric_W_uses_the_gram_of_the_lags():
    """Row-normalised weights (W not symmetric): K from the Gram of the lags; the map still
    agrees with single calls (c = 1 and the certified interval)."""
    G = _random_graph(6)
    W = sparsedp.gossip_matrix(G, scheme="row-normalised")
    assert (W != W.T).nnz
    fast = sparsedp.privacy_map(W, [1, 4], [0, 2, 9, 1], 6, upper="none")
    full = sparsedp.privacy_map(W, [1, 4], [0, 2, 9, 1], 6, exact="auto")
    ent = sparsedp.privacy_map(W, [1, 4], [0, 2, 9, 1], 6, upper="entrywise")
    for f, c, e in zip(fast.rows(), full.rows(), ent.rows(), strict=True):
        single = sparsedp.squared_sensitivity(W, f["target"], [f["observer"]], 6)
        assert _close(f["lower"], _ones_bound(single))
        assert _close(c["lower"], single.lower)
        assert c["upper"] >= single.lower and e["upper"] >= single.lower
        assert single.upper >= max(c["lower"], e["lower"])


def test_float32_table_rounds_outward():
    G = _random_graph(4)
    wide = sparsedp.privacy_map(G, [0, 1], "all", 5, 1.0, 1e-5, upper="entrywise")
    narrow = sparsedp.privacy_map(G, [0, 1], "all", 5, 1.0, 1e-5, upper="entrywise",
                                  float32=True)
    for name in ("lower", "upper", "epsilon"):
        assert narrow.columns[name].dtype == np.float32
    assert np.all(narrow.columns["lower"].astype(np.float64) <= wide.columns["lower"])
    assert np.all(narrow.columns["upper"].astype(np.float64) >= wide.columns["upper"])
    assert np.all(narrow.columns["epsilon"].astype(np.float64) >= wide.columns["epsilon"])
    np.testing.assert_allclose(narrow.columns["upper"], wide.columns["upper"], rtol=1e-6)
    json.dumps(narrow.to_dict(), allow_nan=False)


def test_a_float32_table_of_rows_takes_40_bytes_a_pair():
    """The 10^8-pair table of a 10^4-node graph must fit in 8 GB: int32 rows and distance,
    float32 bounds, the kind as an inline 16-byte string."""
    W = sparsedp.gossip_matrix(_random_graph(5))
    m = sparsedp.privacy_map(W, "all", "all", 5, 1.0, 1e-5, upper="entrywise", float32=True)
    assert sum(v.nbytes for v in m.columns.values()) == 40 * len(m)
    assert {r["kind"] for r in m.rows()} <= {"exact", "certified upper"}
    assert m.columns["distance"].dtype == np.int32 and m.columns["observer"].dtype == np.int32


@pytest.mark.parametrize(("T", "p", "seed"), [(8, 0.04, 3), (120, 0.04, 3), (600, 0.012, 7)])
def test_one_to_all_with_truncated_lags_brackets_the_full_lag_values(T, p, seed, monkeypatch):
    """One observer against every target from lags truncated where the chain has mixed
    (T >= 120: truncated; T = 8: not): the certified interval contains the c = 1 value computed
    from every lag, is narrow, and privacy_map takes this route when the lags are large.  The
    kept columns come in blocks of 16 rows here, so that T >= 120 spans several, and its mixed
    lags are stored as float32 deviations from 1/n."""
    import importlib

    from sparsedp.gossip.one_to_all import one_to_all
    from sparsedp.linalg.moments import ColumnStore

    monkeypatch.setattr(ColumnStore, "BLOCK_ROWS", 16)

    pm = importlib.import_module("sparsedp.maps.privacy_map")
    G = nx.gnp_random_graph(400, p, seed=seed)  # p = 0.012: 14 pendant nodes, slow mixing
    G = nx.convert_node_labels_to_integers(G.subgraph(max(nx.connected_components(G), key=len)))
    W = sparsedp.gossip_matrix(G, scheme="metropolis")
    r = one_to_all(W, 3, T)
    batch = batched.observer_batch(W, [3], T, batched.lambda_min_lower_bound(W))
    values = batched.ones_values(batch)[0]
    assert (r.truncated_at < T - 1) == (T > 8)
    assert (r.float32_lags > 16) == (T > 8)  # float32 rows, over several blocks
    assert np.all(r.low <= values) and np.all(values <= r.high)
    assert np.all(r.high - r.low <= 1e-6 * r.high)
    monkeypatch.setattr(pm, "TRUNCATED_LAG_BYTES", 0)
    m = sparsedp.privacy_map(W, observers=[3], targets="all", T=T, upper="none")
    assert m.info["truncated_lags"]
    low = np.asarray(m.columns["lower"])
    moved = np.asarray(m.columns["kind"]) != "exact"
    np.testing.assert_array_equal(low[moved], np.delete(r.low, 3)[moved])  # no self pair


def test_one_to_all_refuses_a_matrix_it_cannot_truncate():
    from sparsedp.gossip.one_to_all import one_to_all

    W = sparsedp.gossip_matrix(nx.path_graph(6), scheme="row-normalised-self-loops")
    with pytest.raises(ParameterError, match="symmetric doubly stochastic"):
        one_to_all(W, 0, 5)
