"""The empirical audit: its statistics against closed forms, the literal simulator against the
engine on every gossip view, a deliberately wrong model caught, reproducibility, and the CLI's
exit status."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats

import sparsedp
from sparsedp import resources
from sparsedp.audit import audit_gossip
from sparsedp.audit.batches import BATCH_FLOATS, DEFAULT_BATCH, plan_batches
from sparsedp.audit.statistics import clopper_pearson_upper, lower_bounds, mahalanobis
from sparsedp.cli.main import main
from sparsedp.errors import ParameterError, ResourceLimitError


def _graphs():
    florentine = nx.convert_node_labels_to_integers(nx.florentine_families_graph())
    return {
        "florentine": sparsedp.gossip_matrix(florentine, scheme="metropolis"),
        "ring-12": sparsedp.gossip_matrix(nx.cycle_graph(12), scheme="metropolis"),
        "er-30": sparsedp.gossip_matrix(nx.connected_watts_strogatz_graph(30, 4, 0.3, seed=2),
                                        scheme="row-normalised-self-loops"),
    }


GRAPHS = _graphs()
VIEWS = [  # (view, observers, noise_removed)
    ("secure-summation", [1], False),
    ("secure-summation", [1], True),
    ("secure-summation", [1, 3], False),
    ("secure-summation-v1", [1], False),
    ("neighbourhood", [1], False),
    ("neighbourhood", [1], True),
    ("adaptive-v1", None, False),
    ("target-v1", None, False),
    ("local-dp", None, False),
]
SUITE_INSTANCES = len(GRAPHS) * len(VIEWS) * 2


@pytest.mark.parametrize("graph", sorted(GRAPHS))
@pytest.mark.parametrize("view, observers, noise_removed", VIEWS)
@pytest.mark.parametrize("T", [3, 9])
def test_the_protocol_run_literally_matches_the_engine(graph, view, observers, noise_removed, T):
    """54 instances: the attacker's estimate of c^T M_T c overlaps the engine's certified
    interval, and no empirical lower bound exceeds a certified upper.  The confidence is
    Bonferroni-corrected over the instances (a 99 % interval misses in 1 % of sound
    instances: about one of these 54)."""
    W = GRAPHS[graph]
    target = W.shape[0] - 2
    result = audit_gossip(W, target, observers, T, view=view, noise_removed=noise_removed,
                          trials=20_000, seed=T, confidence=1 - 0.01 / SUITE_INSTANCES)
    assert result.passed, result.verdict
    assert result.sensitivity_low <= result.sensitivity_high
    assert 0 <= result.epsilon_lower <= result.epsilon_upper


def _whole_graph_run(Ws, T, attacker, noise):
    """The protocol on every node (the simulator before its light cone): the reference."""
    n, trials = noise.shape[1], noise.shape[2]
    rec, known, per = attacker.recorded, attacker.known_noise, attacker.features
    out = np.zeros((T * per, trials))
    theta = np.zeros((n, trials))
    for t in range(T):
        message = theta + noise[t]
        out[t * per + rec.size:(t + 1) * per] = noise[t][known]
        theta = Ws[t if len(Ws) > 1 else 0] @ message
        out[t * per:t * per + rec.size] = (theta if attacker.after_round else message)[rec]
    return out


@pytest.mark.parametrize("view, observers, noise_removed", VIEWS)
@pytest.mark.parametrize("weights", ["metropolis", "zero diagonal", "varying"])
def test_the_light_cone_records_what_the_whole_graph_run_records(view, observers,
                                                                 noise_removed, weights):
    """The simulator runs round t on the nodes within T - 1 - t hops of the records only
    (sparsedp.audit.cone): with the same noise its records equal those of a run on every
    node, for every view, with one W (with or without self weights: then a state recorded
    after the round is not among the next round's nodes) or one per round; on a ring of 40
    the first round holds far fewer than 40 nodes.  A batch stays within the memory the
    batch sizing counts, 4 numbers a node of the cone's largest round and the features."""
    import tracemalloc

    from sparsedp.audit.simulate import _run, data_responses, simulate, threat, threat_cone

    n, T = 40, 6
    if weights == "varying":
        rng = np.random.default_rng(3)
        Ws = [sparsedp.gossip_matrix(nx.connected_watts_strogatz_graph(n, 2, 0.1,
                                                                      seed=int(s)),
                                     scheme="metropolis") for s in rng.integers(1 << 30, size=T)]
    else:
        scheme = "metropolis" if weights == "metropolis" else "row-normalised"
        Ws = [sparsedp.gossip_matrix(nx.cycle_graph(n), scheme=scheme)]
    target = 5
    attacker = threat(Ws, view, target, observers, noise_removed)
    cone = threat_cone(Ws, T, attacker)
    noise = np.random.default_rng(1).standard_normal((T, n, 7))
    simulated = _run(cone, T, attacker, lambda t, nodes: noise[t][nodes], None, 7)
    np.testing.assert_allclose(simulated, _whole_graph_run(Ws, T, attacker, noise),
                               rtol=1e-13, atol=1e-15)
    data = np.zeros((T, n, T))
    data[np.arange(T), target, np.arange(T)] = 1.0
    np.testing.assert_allclose(data_responses(Ws, T, attacker, target),
                               _whole_graph_run(Ws, T, attacker, data), rtol=1e-13, atol=1e-15)
    if weights != "varying" and view != "local-dp":
        assert cone.nodes[0].size < n and cone.size < n
    if view == "local-dp":  # every round spans the graph: W itself, no copy per round
        assert all(np.shares_memory(p.data, Ws[t if len(Ws) > 1 else 0].data)
                   for t, p in enumerate(cone.products) if p is not None)
    if weights == "zero diagonal" and attacker.after_round:  # the copy in cone.advance runs
        assert any(p is not None and c.size < p.shape[0]
                   for c, p in zip(cone.carried, cone.products, strict=True))
    trials = 2000
    tracemalloc.start()
    simulate(Ws, T, attacker, 1.0, trials, np.random.default_rng(0), cone)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    # plus 64 KiB for what does not grow with the batch (local-dp records every node: there
    # the records alone are 60 % of the bound and the traced peak sits within 0.2 % of it)
    assert peak <= 8 * trials * (4 * cone.size + attacker.features * T) + (1 << 16)


def test_time_varying_gossip_is_audited_round_by_round():
    rng = np.random.default_rng(0)
    graphs = [nx.connected_watts_strogatz_graph(10, 4, 0.5, seed=int(s))
              for s in rng.integers(1 << 30, size=5)]
    Ws = [sparsedp.gossip_matrix(G, scheme="metropolis") for G in graphs]
    result = audit_gossip(Ws, 7, [2], 5, view="neighbourhood", trials=20_000, seed=1)
    assert result.passed, result.verdict


@pytest.mark.parametrize("simulated, claimed", [
    ({"view": "secure-summation", "noise_removed": True},
     {"view": "secure-summation", "noise_removed": False}),  # own noise known but not counted
    ({"view": "secure-summation-v1", "noise_removed": False},
     {"view": "secure-summation", "noise_removed": False}),  # the v1 offset dropped
    ({"view": "neighbourhood", "noise_removed": False},
     {"view": "secure-summation", "noise_removed": False}),  # what the observer sees
])
def test_a_wrong_model_is_caught_as_a_mismatch(simulated, claimed):
    W = GRAPHS["florentine"]
    wrong = sparsedp.squared_sensitivity(W, 5, [0], 6, **claimed)
    result = audit_gossip(W, 5, [0], 6, trials=20_000, seed=0, engine=wrong, **simulated)
    assert not result.model_matches
    assert "model mismatch" in result.verdict and "target=5" in result.verdict


def test_an_engine_bound_below_the_truth_is_caught_as_a_violation():
    """A claimed upper bound a quarter of the truth: the empirical epsilon exceeds it."""
    W = GRAPHS["ring-12"]
    true = sparsedp.squared_sensitivity(W, 3, [4], 8)
    shrunk = type(true)(**{**true.__dict__, "lower": true.lower / 4, "upper": true.upper / 4})
    result = audit_gossip(W, 3, [4], 8, trials=100_000, seed=0, engine=shrunk)
    assert not result.bound_holds and "bound violated" in result.verdict


def test_the_audit_is_reproducible_and_independent_of_the_thread_count():
    W = GRAPHS["florentine"]
    one = audit_gossip(W, 5, [0], 5, trials=30_000, seed=7, batch=4096, threads=1)
    two = audit_gossip(W, 5, [0], 5, trials=30_000, seed=7, batch=4096, threads=2)
    other = audit_gossip(W, 5, [0], 5, trials=30_000, seed=8, batch=4096, threads=2)
    assert one.to_dict() == two.to_dict()
    assert one.sensitivity_estimate != other.sensitivity_estimate


def test_the_default_batch_shrinks_with_the_graph_and_the_budget_not_the_threads():
    assert plan_batches(None, 4 * 1000 + 5, 5, 2) == (DEFAULT_BATCH, 2)
    per_run = 4 * 100_000 + 10  # gossip on 10^5 nodes: refused before (24 GiB at 8192 runs)
    batch, threads = plan_batches(None, per_run, 10, 2)
    assert batch == BATCH_FLOATS // per_run and 500 < batch < DEFAULT_BATCH
    with resources.memory_limit("100M"):  # 8192 runs of 4005 numbers: 262 MB
        batch, threads = plan_batches(None, 4005, 5, 4)
        assert batch == (100 * 2**20 - 16 * 25) // (8 * 4005) and threads == 1
        assert plan_batches(1000, 4005, 5, 4) == (1000, 3)  # threads lowered to what fits
        with pytest.raises(ResourceLimitError, match="give a smaller batch"):
            plan_batches(8192, 4005, 5, 1)


def test_an_audit_under_a_small_budget_runs_with_the_batch_that_fits():
    """The batch then depends on the budget (seeds are spawned per batch): the result says
    which batch it used, and an explicit batch of that size reproduces it, whatever the
    threads.  One batch's simulation stays within the budget (traced)."""
    import tracemalloc

    from sparsedp.audit.simulate import simulate, threat, threat_cone

    # 3-regular: 11 rounds reach almost every node, so a run holds most of the graph
    W = sparsedp.gossip_matrix(nx.random_regular_graph(3, 2000, seed=1), scheme="metropolis")
    T = 12
    attacker = threat([W], "secure-summation", 3, [0], False)
    size = threat_cone([W], T, attacker).size
    assert size > 1800
    with resources.memory_limit("20M"):  # a fixed 8192-run batch needs 525 MB: refused before
        fitted = audit_gossip(W, 3, [0], T, trials=4000, seed=1, threads=1)
    expected = (20 * 2**20 - 16 * T**2) // (8 * (4 * size + T))
    assert fitted.batch == expected < 1000  # every phase runs several batches
    explicit = audit_gossip(W, 3, [0], T, trials=4000, seed=1, threads=2, batch=expected)
    assert fitted.to_dict() == explicit.to_dict() and fitted.passed
    tracemalloc.start()
    simulate([W], T, attacker, 1.0, expected, np.random.default_rng(0))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak <= 8 * expected * (4 * size + T)


@pytest.mark.parametrize("kwargs, message", [
    ({"T": 0}, "T must be"), ({"sigma": 0.0}, "sigma"), ({"delta": 1.0}, "delta"),
    ({"trials": 2}, "trials"), ({"confidence": 1.0}, "confidence"),
    ({"view": "nonsense"}, "unknown view"),
])
def test_bad_input_is_one_clear_error(kwargs, message):
    args = {"T": 3, "trials": 1000, **kwargs}
    with pytest.raises(ParameterError, match=message):
        audit_gossip(GRAPHS["ring-12"], 3, [4], **args)


def test_the_mahalanobis_interval_covers_the_truth_at_its_confidence():
    """Known Sigma and m: the exact Wishart interval covers d^2 in about 90 % of 400
    independent estimates at confidence 0.9 (binomial 99.9 % band)."""
    rng = np.random.default_rng(3)
    p, samples = 6, 200
    root = rng.standard_normal((p, p))
    sigma = root @ root.T + np.eye(p)
    shift = rng.standard_normal(p)
    truth = shift @ np.linalg.solve(sigma, shift)
    covered = 0
    for _ in range(400):
        y = np.linalg.cholesky(sigma) @ rng.standard_normal((p, samples))
        estimate = mahalanobis(y @ y.T, samples, shift, 0.9)
        covered += estimate.low <= truth <= estimate.high
    low, high = stats.binom.ppf([0.0005, 0.9995], 400, 0.9)
    assert low <= covered <= high


def test_a_shift_outside_the_noise_is_infinite():
    y = np.vstack([np.random.default_rng(0).standard_normal((1, 100)), np.zeros((1, 100))])
    estimate = mahalanobis(y @ y.T, 100, np.array([0.0, 1.0]), 0.99)
    assert estimate.infinite and estimate.value == np.inf


def test_clopper_pearson_closed_forms():
    """No events: 1 - alpha^(1/n); all events: 1; and the limit is a binomial tail."""
    assert clopper_pearson_upper(np.array([0]), 1000, 0.01)[0] == pytest.approx(
        1 - 0.01 ** (1 / 1000), rel=1e-10)
    assert clopper_pearson_upper(np.array([50]), 50, 0.01)[0] == 1.0
    upper = clopper_pearson_upper(np.array([7]), 400, 0.05)[0]
    assert stats.binom.cdf(7, 400, upper) == pytest.approx(0.05, rel=1e-6)


def test_lower_bounds_of_an_exact_gaussian_test_stay_below_its_epsilon():
    """Counts drawn from the optimal test of N(0,1) against N(mu,1): the bounds never exceed
    the mechanism's epsilon and mu (200 repetitions; they hold with probability 0.99)."""
    rng = np.random.default_rng(5)
    mu, runs, delta = 1.5, 20_000, 1e-5
    taus = stats.norm.isf(np.geomspace(0.5, 1e-3, 12))
    truth_eps = sparsedp.gaussian_epsilon(mu**2, 1.0, delta)
    violations = 0
    for _ in range(200):
        fp = rng.binomial(runs, stats.norm.sf(taus))
        fn = rng.binomial(runs, stats.norm.cdf(taus - mu))
        bounds = lower_bounds(fp, fn, runs, delta, 0.99)
        violations += bounds.epsilon > truth_eps or bounds.mu > mu
        assert bounds.mu > 0.9 * mu and bounds.epsilon > 0.3 * truth_eps  # informative
    assert violations <= 6  # expected at most 2 at 99 %


def test_cli_audit_exits_3_and_names_the_instance_when_the_model_is_wrong(capsys, monkeypatch):
    from sparsedp.cli import audit as cli_audit

    def wrong_engine(W, target, observers, T, **kwargs):
        claimed = sparsedp.squared_sensitivity(W, target, observers, T)
        return audit_gossip(W, target, observers, T, **kwargs, engine=claimed)

    monkeypatch.setattr(cli_audit, "audit_gossip", wrong_engine)
    status = main(["audit", "--rounds", "5", "--trials", "20000", "--noise-removed"])
    out = capsys.readouterr().out
    assert status == 3
    assert "model mismatch" in out and "target=99" in out


def test_cli_audit_passes_on_the_embedded_default(capsys):
    assert main(["audit", "--rounds", "4", "--trials", "10000", "--progress", "never"]) == 0
    assert "verdict    pass" in capsys.readouterr().out


def test_a_sparse_W_of_integers_and_a_scipy_matrix_give_the_same_audit():
    W = GRAPHS["ring-12"]
    dense = audit_gossip(W.toarray(), 3, [4], 4, trials=8000, seed=1)
    sparse = audit_gossip(sp.csr_matrix(W), 3, [4], 4, trials=8000, seed=1)
    assert dense.to_dict() == sparse.to_dict()


def _ppac_cases():
    from sparsedp.cli.ppac import example_graph
    from sparsedp.graphs.graph import as_graph
    from sparsedp.ppac import generalised_leaves, ppac_layout, random_designated

    from .test_ppac_protocol import leafy_graph, random_connected

    g, designated = example_graph()
    cases = [(ppac_layout(g, designated), g, 4, 1, h) for h in (0, 1, 3)]
    for seed in range(3):
        G = as_graph(leafy_graph(seed))
        head, tail = generalised_leaves(G)[0]
        layout = ppac_layout(G, random_designated(G, seed=seed))
        cases += [(layout, G, head, tail, 2), (layout, G, tail, head, 2)]
    for seed in range(4):
        G = as_graph(random_connected(seed, (5, 10), (0.25, 0.6)))
        layout = ppac_layout(G, random_designated(G, seed=seed))
        cases.append((layout, G, G.id_of(0), G.id_of(G.n - 1), 1 + seed))
    return cases


PPAC_CASES = _ppac_cases()


@pytest.mark.parametrize("case", range(len(PPAC_CASES)))
def test_ppac_leakage_matches_the_simulated_attacker(case):
    """13 PPAC instances (the paper's example, generalised leaves that are recovered, random
    graphs): the leakage lies in the exact interval of the simulated attacker's information
    (Bonferroni-corrected confidence), infinite exactly when the simulation recovers u_j."""
    from sparsedp.audit.ppac import audit_ppac
    from sparsedp.ppac import laplacian_consensus_matrix

    layout, G, attacker, victim, horizon = PPAC_CASES[case]
    result = audit_ppac(layout, laplacian_consensus_matrix(G), attacker, victim, horizon,
                        noise_std=1.5, trials=20_000, seed=case,
                        confidence=1 - 0.01 / len(PPAC_CASES))
    assert result.passed, result.verdict


def test_ppac_runs_simulated_in_batches_are_the_same_protocol(monkeypatch):
    """Large graphs simulate PPAC in batches of runs (a run of a 10^5-node graph holds 2.6e6
    numbers: 2000 runs at once needed over 20 GB and were killed): with batches of 700 runs
    the audit still matches the leakage, the data have every run, and the seed reproduces
    them."""
    from sparsedp.audit.ppac import audit_ppac
    from sparsedp.ppac import laplacian_consensus_matrix, protocol

    layout, G, attacker, victim, horizon = PPAC_CASES[5]
    W = laplacian_consensus_matrix(G)
    per_run = 2 * layout.num_sources + 6 * layout.n
    monkeypatch.setattr(protocol, "SIMULATION_BATCH_FLOATS", 700 * per_run)
    assert protocol.simulation_batch(layout, 20_000) == 700
    data, u = protocol.simulated_data(layout, W, attacker, victim, horizon, runs=2000, seed=3)
    again, u_again = protocol.simulated_data(layout, W, attacker, victim, horizon, runs=2000,
                                             seed=3)
    assert data.shape[0] == u.size == 2000 and np.array_equal(data, again)
    assert np.array_equal(u, u_again) and np.unique(u).size == 2000
    with pytest.raises(ParameterError, match="runs must be an integer >= 1"):
        protocol.simulated_data(layout, W, attacker, victim, horizon, runs=0)
    result = audit_ppac(layout, W, attacker, victim, horizon, noise_std=1.5, trials=20_000,
                        seed=4, confidence=0.999)
    assert result.passed, result.verdict


def _labelled_prepare(values, noises):
    """``prepare`` with its sources looked up by label instead of drawn: ``values[k]`` and
    ``noises[k, l]`` (rows of runs) for the node labelled ``k`` and the fragment it sends to
    ``l``; Algorithm 1's designated fragment and v(0) as in the paper (lines 1-8)."""
    from sparsedp.ppac import protocol

    def prepare(layout, _values, *, realisations, seed, **_):
        ids = layout.graph.node_ids
        u = values[ids][:, :realisations]
        fragments = noises[ids[layout.src], ids[layout.dst]][:, :realisations].copy()
        for k in range(layout.n):  # Gamma_{k m_k} = u_k - sum of k's other fragments
            own = np.flatnonzero(layout.src == k)
            designated = layout.designated_edge[k]
            fragments[designated] = u[k] - fragments[own[own != designated]].sum(axis=0)
        v0 = np.zeros((layout.n, realisations))
        np.add.at(v0, layout.dst, fragments)
        return protocol.Preparation(layout, u, fragments, v0, (1, realisations))
    return prepare


@pytest.mark.parametrize("victim", [31, 33, 45])  # the attacker 30's neighbour, 3 and 15 away
def test_ppac_simulated_on_what_reaches_the_attacker_is_the_same_protocol(victim,
                                                                            monkeypatch):
    """On a ring of 80 with two chords, horizon 3, only the nodes whose values and fragments
    can reach the attacker's data are simulated (protocol._reach, far less than half the
    graph): fed the same sources (by label), the data equal those of the run on the whole
    graph (forced by per-node standard deviations), and so does the victim's value wherever
    it can reach the data; the audit matches the leakage, 0 for the far victim."""
    from sparsedp.audit.ppac import audit_ppac
    from sparsedp.graphs.graph import as_graph
    from sparsedp.ppac import laplacian_consensus_matrix, ppac_layout, protocol, random_designated

    G = nx.cycle_graph(80)
    G.add_edges_from([(28, 36), (50, 70)])
    g = as_graph(G)
    layout = ppac_layout(g, random_designated(g, seed=2))
    W = laplacian_consensus_matrix(g)
    reach = protocol._reach(layout, protocol.check_consensus_matrix(W, 80), 30, 3)
    assert reach is not None and reach.nodes.size < 30
    result = audit_ppac(layout, W, 30, victim, 3, trials=20_000, seed=victim,
                        confidence=0.999)
    assert result.passed, result.verdict
    rng = np.random.default_rng(victim)
    monkeypatch.setattr(protocol, "prepare", _labelled_prepare(
        rng.standard_normal((80, 50)), rng.standard_normal((80, 80, 50))))
    cone, u_cone = protocol.simulated_data(layout, W, 30, victim, 3, runs=50)
    whole, u_whole = protocol.simulated_data(layout, W, 30, victim, 3, runs=50,
                                             value_std=np.ones(80))
    np.testing.assert_allclose(cone, whole, rtol=1e-12, atol=1e-12)
    if victim in g.node_ids[reach.nodes]:
        assert np.array_equal(u_cone, u_whole)


def test_a_wrong_ppac_leakage_is_caught():
    """The leakage for another noise level (2 instead of 1.5) is not what the protocol leaks."""
    from sparsedp.audit.ppac import audit_ppac
    from sparsedp.ppac import laplacian_consensus_matrix, leakage

    layout, G, attacker, victim, horizon = PPAC_CASES[1]
    W = laplacian_consensus_matrix(G)
    wrong = leakage(layout, W, attacker, horizon, noise_std=2.0, victims=[victim]).nats[0]
    result = audit_ppac(layout, W, attacker, victim, horizon, noise_std=1.5, engine=wrong)
    assert not result.passed and "model mismatch" in result.verdict


RW_CASES = [  # (graph, source, receiver, T, sigma)
    (nx.cycle_graph(20), 0, 1, 20, 2.0), (nx.cycle_graph(20), 0, 5, 60, 3.0),
    (nx.grid_2d_graph(5, 5), 0, 1, 30, 2.0), (nx.grid_2d_graph(5, 5), 0, 12, 60, 2.5),
    (nx.connected_watts_strogatz_graph(30, 4, 0.3, seed=1), 0, 7, 40, 3.0),
    (nx.complete_graph(8), 2, 5, 10, 2.0),
]


@pytest.mark.parametrize("case", range(len(RW_CASES)))
def test_random_walk_rdp_is_above_the_simulated_walk(case):
    """6 random-walk instances: the walk's simulated Renyi divergence (Hoeffding interval)
    and its LR-test epsilon lower bound stay below the engine's certified RDP and epsilon."""
    from sparsedp.audit.randomwalk import audit_random_walk

    G, source, receiver, T, sigma = RW_CASES[case]
    W = sparsedp.gossip_matrix(G, scheme="metropolis")
    result = audit_random_walk(W, source, receiver, T, sigma, trials=60_000, seed=case)
    assert result.passed, result.verdict
    assert 0 < result.rdp_estimate <= result.engine_rdp


def test_a_random_walk_bound_for_too_much_noise_is_caught():
    """The loss computed for sigma = 6 claimed for a walk that runs with sigma = 1.5."""
    from sparsedp.audit.randomwalk import audit_random_walk

    W = sparsedp.gossip_matrix(nx.cycle_graph(20), scheme="metropolis")
    wrong = sparsedp.random_walk_rdp(W, 0, 20, 6.0, 2.0, contributions=1, receivers=[1])
    result = audit_random_walk(W, 0, 1, 20, 1.5, engine=wrong, trials=60_000)
    assert not result.passed and "bound violated" in result.verdict
