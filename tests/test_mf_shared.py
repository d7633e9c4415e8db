"""The MF operator path's target-independent work (issue 32): B B^T by the Gram of the noise
lags, the structural row decision for K > 1, and one factorisation shared by every target."""

import networkx as nx
import numpy as np
import pytest

import sparsedp
from sparsedp.linalg.certified import gamma
from sparsedp.mf import antipgd, mf_d_sgd, mf_sensitivity, muffliato_sgd
from sparsedp.mf import blocks as mf_blocks
from sparsedp.mf.exact_rows import independent_observations, structural_observations
from sparsedp.mf.operators import MFSystem
from sparsedp.mf.summary import distance_summary
from sparsedp.mf.trust import resolve
from tests.conftest import connected_instance

T = 5
BSR_LIKE = np.tril(np.ones((T, T))) * 0.5 + np.eye(T) * 0.5  # Toeplitz, not I or D
NON_TOEPLITZ = np.tril(np.arange(1.0, T * T + 1).reshape(T, T)) / T


def _instances():
    for seed in (3, 7):
        G = connected_instance("er", 12, seed)
        yield sparsedp.gossip_matrix(G, scheme="row-normalised-self-loops"), [0]
    G = nx.florentine_families_graph()
    yield sparsedp.gossip_matrix(G, scheme="row-normalised"), [3, 9]


@pytest.mark.parametrize(("K", "L"), [(1, np.eye(T) - np.eye(T, k=-1)), (2, np.eye(T)),
                                      (3, BSR_LIKE), (2, NON_TOEPLITZ)])
def test_gram_assembly_equals_the_operator_within_its_rounding_bound(K, L):
    """B B^T by the noise lags' Gram (Toeplitz L) equals the operator applied to unit vectors
    within ``gamma_N max row sum of K_abs`` (the bound charged), and the operator path is
    taken for a non-Toeplitz L."""
    for W, attackers in _instances():
        obs = resolve("pndp", W, 1, attackers)
        system = MFSystem(W, obs.observed, obs.known_noise, T, K, L)
        K_fast, depth, lags = system.assemble_K()
        assert (lags is None) == (system.toeplitz_noise() is None)
        reference = system._operator_K()
        bound = gamma(depth) * system.abs_row_sums().max()
        assert np.abs(K_fast - reference).max() <= 2 * bound + 1e-15
        assert np.array_equal(K_fast, K_fast.T)
    assert MFSystem(W, obs.observed, obs.known_noise, T, 2, NON_TOEPLITZ).toeplitz_noise() \
        is None


@pytest.mark.parametrize("K", [2, 3])
def test_structural_drops_are_exact_dependencies(K):
    """Every row the structural step drops is dropped by the exact rational elimination of B
    too (in row order it drops exactly the rows in the span of the earlier ones), on graphs
    with and without self-loops and with two attackers."""
    dropped_some = False
    for W, attackers in _instances():
        obs = resolve("pndp", W, 1, attackers)
        structural = structural_observations(W, obs.observed, obs.known_noise, T, K)
        exact = independent_observations(W, obs.observed, obs.known_noise, T, K)
        assert exact is not None
        assert not np.any(~structural & exact), "a structurally dropped row is independent"
        dropped_some |= bool(np.any(~structural))
    assert dropped_some


def test_structural_decision_is_the_exact_one_for_one_round_per_step():
    """K = 1: the structural decision equals the gossip engine's exact redundant rows."""
    for W, attackers in _instances():
        obs = resolve("pndp", W, 1, attackers)
        system = MFSystem(W, obs.observed, obs.known_noise, T, 1, np.eye(T))
        expected = ~system.gossip.redundant_rows().ravel()
        assert np.array_equal(
            structural_observations(W, obs.observed, obs.known_noise, T, 1), expected)


@pytest.mark.parametrize("algorithm", [antipgd(), muffliato_sgd(2), mf_d_sgd(BSR_LIKE, 2)],
                         ids=["antipgd", "muffliato2", "bsr-like-K2"])
def test_summary_factorises_once_and_equals_the_single_queries(monkeypatch, algorithm):
    """Over every target of one attacker set the shared part is computed once (inside the
    summary's reuse scope), and each target's result equals its own unshared query."""
    W, attackers = next(_instances())
    calls = []
    original = mf_blocks.shared_noise
    monkeypatch.setattr(mf_blocks, "shared_noise",
                        lambda *args: calls.append(1) or original(*args))
    summary = distance_summary(W, attackers, T, algorithm=algorithm, gradients="scalar",
                               participation_scheme=(2, 2))
    assert len(calls) == 1 and len(summary.results) == W.shape[0] - len(attackers)
    for u, shared in zip(summary.targets, summary.results, strict=True):
        alone = mf_sensitivity(W, u, attackers, T, algorithm=algorithm, gradients="scalar",
                               participation_scheme=(2, 2))
        assert (shared.lower, shared.upper, shared.thm7) == (alone.lower, alone.upper,
                                                             alone.thm7)
    assert len(calls) == 1 + len(summary.results)  # unshared: once per query
