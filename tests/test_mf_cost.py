"""The cost check of every matrix-factorisation entry point: a request over ``max_memory`` is
refused before any ``T x T`` array (or list of patterns) is allocated, with the estimate and
the budget in the message; the estimates cover the measured peaks."""

import time
import tracemalloc

import networkx as nx
import numpy as np
import pytest

import sparsedp
from sparsedp.cli.main import main
from sparsedp.errors import ParameterError, ResourceLimitError
from sparsedp.mf import antipgd, decor, mf_d_sgd, mf_sensitivity, single_use, user_level
from sparsedp.mf.cost import request_memory
from sparsedp.mf.optimise import baselines, correlation_memory, optimise_correlation
from sparsedp.mf.participation import patterns_memory, resolve
from sparsedp.mf.summary import distance_summary
from sparsedp.mf.utility import utility_gram, utility_memory

FOUR = np.full((4, 4), 0.25)
BUDGET = r"needs about [0-9.]+ [KMGTP]iB, more than the memory budget of "


def _refused_quickly(call, pattern):
    """``call()`` raises ResourceLimitError matching ``pattern`` within a second (after a
    warm-up of the imports)."""
    start = time.perf_counter()
    with pytest.raises(ResourceLimitError, match=pattern):
        call()
    assert time.perf_counter() - start < 1.0


def test_huge_T_under_local_dp_is_refused_before_numpy_is_asked():
    """The issue's reproducer: T = 10^5 under LDP asked numpy for 74.5 GiB (np.eye(T)) and
    raised MemoryError; now the estimate and the budget are named, with the largest T that
    fits."""
    mf_sensitivity(FOUR, 1, None, 4, trust_model="ldp")  # warm-up
    _refused_quickly(lambda: mf_sensitivity(FOUR, 1, None, 10**5, trust_model="ldp"),
                     r"mf_sensitivity at T = 100000 \(dp-d-sgd, ldp, user-level\) " + BUDGET
                     + r".*at most T = \d+ gradient steps fit")
    _refused_quickly(lambda: mf_sensitivity(FOUR, 1, None, 10**9, trust_model="ldp"), BUDGET)


@pytest.mark.parametrize("kwargs", [
    {"trust_model": "ldp", "algorithm": antipgd()},
    {"trust_model": "pndp"},
    {"trust_model": "pndp-eq12", "algorithm": "muffliato-sgd(2)"},
    {"trust_model": "pndp", "algorithm": decor(1.0)},
    {"trust_model": "secldp", "algorithm": "zip-dl"},
    {"trust_model": "ldp", "participation_scheme": single_use()},
], ids=["ldp-antipgd", "pndp-dp-d-sgd", "eq12-muffliato", "pndp-decor", "secldp-zip-dl",
        "ldp-single"])
def test_max_memory_is_honoured_on_every_path(kwargs):
    """T = 3000 fits the default budget but not 100 MB, on every path."""
    attackers = None if kwargs["trust_model"] == "ldp" else [0]
    with pytest.raises(ResourceLimitError, match=r"more than the memory budget of 100\.0 MiB"):
        mf_sensitivity(FOUR, 1, attackers, 3000, max_memory="100M", **kwargs)
    with sparsedp.resources.memory_limit("100M"), pytest.raises(ResourceLimitError):
        mf_sensitivity(FOUR, 1, attackers, 3000, **kwargs)


def test_participation_patterns_are_checked_before_they_are_built():
    """T = 10^9: one pattern of 10^9 steps (8 GB) or 10^9 singletons."""
    _refused_quickly(lambda: user_level().patterns(10**9, max_memory="1G"),
                     r"the 1 participation patterns of user-level at T = 1000000000 " + BUDGET
                     + r"1\.0 GiB .*at most T = \d+ gradient steps fit")
    _refused_quickly(lambda: single_use().patterns(10**9),
                     r"the 1000000000 participation patterns of single")
    assert len(resolve((3, 4)).patterns(12)) == 4
    with pytest.raises(ParameterError, match="need T >= 9 gradient steps"):
        resolve((3, 4)).patterns(8, max_memory="1G")  # the scheme's error comes first


def test_maps_summaries_and_the_command_line_refuse_at_once(capsys):
    W = sparsedp.gossip_matrix(nx.cycle_graph(6))
    _refused_quickly(lambda: sparsedp.mf_map(W, observers=[0], targets=[3], T=10**6,
                                             sigma=None, delta=None), BUDGET)
    _refused_quickly(lambda: distance_summary(W, [0], 10**6, max_memory="1G"), BUDGET)
    start = time.perf_counter()
    code = main(["mf", "--no-progress", "--trust", "ldp", "-T", "100000", "--max-memory", "1G"])
    assert time.perf_counter() - start < 5.0  # a forked child: its start is not ours to time
    err = capsys.readouterr().err
    assert code != 0 and "needs about" in err and "1.0 GiB" in err


def test_mafalda_optimiser_and_utility_gram_refuse_huge_T():
    W = sparsedp.gossip_matrix(nx.cycle_graph(6))
    _refused_quickly(lambda: utility_gram(W, 10**6), r"the utility Gram matrix H .*" + BUDGET)
    _refused_quickly(lambda: utility_gram(W, 10**6, method="estimate"), BUDGET)
    H = np.eye(1000)
    _refused_quickly(lambda: optimise_correlation(H, "user-level", max_memory="50M",
                                                  progress=False),
                     r"the correlation optimiser at T = 1000 " + BUDGET)
    _refused_quickly(lambda: baselines(H, "user-level", max_memory="50M", progress=False),
                     BUDGET)


def _peak(call) -> int:
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _noise(T):
    rng = np.random.default_rng(0)
    return np.tril(rng.uniform(-0.4, 0.4, (T, T)), -1) + np.diag(rng.uniform(0.7, 1.3, T))


@pytest.mark.parametrize("case", ["ldp-identity", "ldp-antipgd", "ldp-mf-d-sgd",
                                  "single-use", "decor-pndp"])
def test_estimates_cover_the_measured_peaks(case):
    """request_memory (+ what the caller already holds) >= the tracemalloc peak."""
    W = sparsedp.gossip_matrix(nx.florentine_families_graph(), scheme="row-normalised-self-loops")
    T = {"ldp-identity": 1500, "ldp-antipgd": 150, "ldp-mf-d-sgd": 120, "single-use": 2000,
         "decor-pndp": 40}[case]
    algorithm, trust, scheme, attackers = {
        "ldp-identity": ("dp-d-sgd", "ldp", user_level(), None),
        "ldp-antipgd": (antipgd(), "ldp", user_level(), None),
        "ldp-mf-d-sgd": (mf_d_sgd(_noise(T)), "ldp", user_level(), None),
        "single-use": ("dp-d-sgd", "ldp", single_use(), None),
        "decor-pndp": (decor(1.0), "pndp", user_level(), [0]),
    }[case]
    peak = _peak(lambda: mf_sensitivity(W, 14, attackers, T, algorithm=algorithm,
                                        trust_model=trust, participation_scheme=scheme))
    algorithm = sparsedp.mf.algorithms.resolve(algorithm)
    observed = 2 if attackers else 15
    assert request_memory(algorithm, trust, scheme, T, 15, observed) >= peak
    assert patterns_memory(*scheme.sizes(T)) > 0


def test_optimiser_and_utility_estimates_cover_their_peaks():
    W = sparsedp.gossip_matrix(nx.cycle_graph(30))
    H = utility_gram(W, 60).H
    assert correlation_memory(60, 20) >= _peak(
        lambda: optimise_correlation(H, (4, 15), progress=False))
    for method in ("exact", "estimate"):
        assert utility_memory(30, W.nnz, 60, method, True, 50) >= _peak(
            lambda m=method: utility_gram(W, 60, method=m, probes=50, progress=False))


@pytest.mark.parametrize("case", ["antipgd", "muffliato-sgd(2)", "mf-d-sgd", "mf-d-sgd K=2",
                                  "per-node", "square-root", "resets"])
def test_operator_path_estimate_covers_the_shared_assembly(case):
    """Under PNDP, correlated noise or K > 1 assembles B B^T on all K T m observation rows
    (:func:`sparsedp.mf.cost.shared_noise_memory`, Gram or operator assembly): the check made
    before it is at or above the traced peak (it was the T x T part only, 100x below)."""
    W = sparsedp.gossip_matrix(nx.Graph(nx.karate_club_graph().edges()),
                               scheme="row-normalised-self-loops")
    T, hub = 16, 33
    algorithm = {
        "antipgd": antipgd(), "muffliato-sgd(2)": sparsedp.mf.muffliato_sgd(2),
        "mf-d-sgd": mf_d_sgd(_noise(T)), "mf-d-sgd K=2": mf_d_sgd(_noise(T), K=2),
        "per-node": mf_d_sgd(np.stack([_noise(T)] * 34)),
        "square-root": sparsedp.mf.algorithms.square_root(),
        "resets": sparsedp.mf.algorithms.with_resets(antipgd(), 3),
    }[case]
    peak = _peak(lambda: mf_sensitivity(W, 0, [hub], T, algorithm=algorithm, progress=False))
    observed = 18  # the hub's closed neighbourhood
    assert request_memory(algorithm, "pndp", user_level(), T, 34, observed) >= peak
    assert request_memory(algorithm, "pndp", user_level(), T, 34, observed) > 8 * (
        algorithm.K * T * observed) ** 2  # B B^T itself is counted
