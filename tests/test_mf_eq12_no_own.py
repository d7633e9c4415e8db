"""The trust model ``"pndp-eq12-no-own"`` (MFDL's eq. 12 as its code computes it, the attackers'
own messages not observed) against a dense computation written from Bellet et al.'s eq. 12:
``B_a = P_a W_T``, ``C = I``, ``sens^2 <= sum |(B_a^+ B_a)_(pi)|`` on the target's block."""

import json

import networkx as nx
import numpy as np
import pytest

import sparsedp
from sparsedp.cli.main import main
from sparsedp.mf import decor, dp_d_sgd, mf_sensitivity, muffliato_sgd, zip_dl
from sparsedp.mf.trust import TRUST_MODELS
from sparsedp.testing import brute_force_max
from tests.conftest import connected_instance

T = 5


def _eq12_no_own(W: np.ndarray, target: int, attackers: list, T: int) -> np.ndarray:
    """``M = (B^+ B)`` on the target's T columns, ``B = P_a W_T``: ``W_T`` block
    lower-triangular with block (r, r') = ``W^(r - r')``, ``P_a`` the rows of every node i with
    ``W[a, i] > 0`` for an attacker a, i not an attacker (MFDL's
    ``build_projection_workload(observe_own=False)``)."""
    n = W.shape[0]
    powers = [np.linalg.matrix_power(W, k) for k in range(T)]
    WT = np.zeros((n * T, n * T))
    for r in range(T):
        for s in range(r + 1):
            WT[r * n:(r + 1) * n, s * n:(s + 1) * n] = powers[r - s]
    received = [i for i in range(n) if i not in attackers and any(W[a, i] > 0 for a in attackers)]
    P = np.zeros((T * len(received), n * T))
    for t in range(T):
        for k, i in enumerate(received):
            P[t * len(received) + k, t * n + i] = 1.0
    B = P @ WT
    projector = np.linalg.pinv(B, rcond=1e-12) @ B
    columns = [t * n + target for t in range(T)]
    return projector[np.ix_(columns, columns)]


def _instances():
    florentine = nx.florentine_families_graph()
    yield "florentine 1/(d+1)", sparsedp.gossip_matrix(florentine,
                                                        scheme="row-normalised-self-loops"), 14, [1]
    yield "florentine 1/(d+1), coalition", sparsedp.gossip_matrix(
        florentine, scheme="row-normalised-self-loops"), 0, [1, 12]
    yield "florentine 1/(d+1), adjacent coalition", sparsedp.gossip_matrix(
        florentine, scheme="row-normalised-self-loops"), 4, [1, 7]
    for seed in (3, 4, 5):
        G = connected_instance("er", 12, seed)
        W = sparsedp.gossip_matrix(G, scheme="row-normalised-self-loops")
        rng = np.random.default_rng(seed)
        target, *attackers = (int(x) for x in rng.choice(12, 3, replace=False))
        yield f"er(12) seed {seed}, coalition", W, target, sorted(attackers)


@pytest.mark.parametrize("name,W,target,attackers", list(_instances()))
def test_no_own_is_eq12_without_the_own_messages(name, W, target, attackers):
    """Theorem 7's sum and the exact (scalar) value equal the dense eq. 12 with ``P_a`` the
    messages received from non-attackers, to 1e-9."""
    M = _eq12_no_own(W.toarray(), target, attackers, T)
    r = mf_sensitivity(W, target, attackers, T, trust_model="pndp-eq12-no-own",
                       gradients="scalar")
    reference_thm7 = float(np.abs(M).sum())
    reference_exact = brute_force_max(M)
    assert r.thm7 == pytest.approx(reference_thm7, rel=1e-9, abs=1e-12), name
    assert r.exact == pytest.approx(reference_exact, rel=1e-9, abs=1e-12), name
    assert set(r.observed).isdisjoint(attackers)


def test_no_own_differs_from_eq12_with_self_loops():
    """With ``W[a, a] > 0`` the attacker's own message (noise unknown) cancels its noise in its
    neighbours' messages: ``"pndp-eq12"`` sees more.  The order no-own <= eq12 <= pndp holds on
    every instance; on Florentine with the leaf Pazzi attacking Medici (T = 5) eq. 12 without
    the own message is 18 % lower."""
    for name, W, target, attackers in _instances():
        values = [mf_sensitivity(W, target, attackers, T, trust_model=trust,
                                 gradients="scalar").exact
                  for trust in ("pndp-eq12-no-own", "pndp-eq12", "pndp")]
        assert values[0] <= values[1] * (1 + 1e-9) and values[1] <= values[2] * (1 + 1e-9), name
    W = sparsedp.gossip_matrix(nx.florentine_families_graph(), scheme="row-normalised-self-loops")
    no_own = mf_sensitivity(W, 1, [10], T, trust_model="pndp-eq12-no-own").upper
    eq12 = mf_sensitivity(W, 1, [10], T, trust_model="pndp-eq12").lower
    assert no_own < 0.85 * eq12


def test_no_own_equals_eq12_without_self_loops():
    """Without self-loops a single attacker never receives its own message: the two eq. 12
    readings coincide exactly (the same observed rows)."""
    W = sparsedp.gossip_matrix(nx.florentine_families_graph(), scheme="row-normalised")
    a = mf_sensitivity(W, 14, [1], T, trust_model="pndp-eq12-no-own", gradients="scalar")
    b = mf_sensitivity(W, 14, [1], T, trust_model="pndp-eq12", gradients="scalar")
    assert a.observed == b.observed
    assert (a.lower, a.upper) == (b.lower, b.upper)


@pytest.mark.parametrize("algorithm", [dp_d_sgd(), muffliato_sgd(2), decor(1.0), zip_dl()],
                         ids=lambda a: a.name)
def test_no_own_for_every_algorithm(algorithm):
    """Every algorithm accepts the model; a coalition of two adjacent attackers observes
    neither's messages, so its value is at most ``"pndp-eq12"``'s."""
    W = sparsedp.gossip_matrix(nx.florentine_families_graph(), scheme="row-normalised-self-loops")
    attackers = [1, 7]  # Medici and Tornabuoni, adjacent
    no_own = mf_sensitivity(W, 4, attackers, 3, algorithm=algorithm,
                            trust_model="pndp-eq12-no-own")
    eq12 = mf_sensitivity(W, 4, attackers, 3, algorithm=algorithm, trust_model="pndp-eq12")
    assert no_own.trust == "pndp-eq12-no-own"
    assert 0 < no_own.lower <= no_own.upper <= eq12.upper * (1 + 1e-9)


def test_listed_and_on_the_command_line(capsys):
    assert "pndp-eq12-no-own" in TRUST_MODELS
    assert main(["mf", "--no-progress", "--trust", "pndp-eq12-no-own", "-T", "4", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["trust"] == "pndp-eq12-no-own"
