"""Issue 32 items 3-4: any invertible noise correlation (MFDL's SR and BSR), correlation
resets, one correlation per node (MAFALDA-L-SGD), the message workload and a user-supplied
linear mechanism, against independent dense computations and transcriptions of MFDL's code
(``workloads_generator.py`` at commit c8529295; MFDL itself needs torch, not installed here)."""

import json

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.linalg import toeplitz
from scipy.sparse.linalg import aslinearoperator

import sparsedp
from sparsedp.errors import ParameterError
from sparsedp.mf import (
    antipgd,
    banded_square_root,
    cyclic,
    dp_d_sgd,
    mf_d_sgd,
    mf_sensitivity,
    square_root,
    with_resets,
)
from sparsedp.mf.algorithms import FUTURE_DRAWS_NOTE, square_root_encoder
from sparsedp.mf.linear_mechanism import linear_mechanism_sensitivity
from sparsedp.mf.local_correlations import node_grams, optimise_local_correlations
from sparsedp.mf.optimise import evaluate, optimise_correlation, prefix_gram, utility_norm
from sparsedp.mf.utility import utility_gram
from sparsedp.testing import dense_mf_matrices, dense_mf_sensitivity
from tests.conftest import connected_instance


def _close(a, b, rel):
    return abs(a - b) <= rel * max(abs(b), 1e-300) + 1e-13


# -- transcriptions of MFDL (numpy for torch; float32 where torch computes in float32) ---------
def mfdl_bsr(nb_iterations, nb_epochs, dtype=np.float32):
    """``BSR_local_factorization`` (``SR_local_factorization`` for ``nb_epochs=None``):
    torch.ones is float32, so MFDL's coefficients are float32."""
    workload = np.ones(nb_iterations, dtype=dtype)
    y = np.zeros_like(workload)
    y[0] = np.sqrt(workload[0])
    for k in range(1, nb_iterations):
        y[k] = (workload[k] - np.dot(y[1:k], y[1:k][::-1])) / (2 * y[0])
    C = toeplitz(y).astype(np.float64)
    if nb_epochs is None:
        return C
    band_width = nb_iterations // nb_epochs
    C[np.subtract.outer(np.arange(nb_iterations), np.arange(nb_iterations)) >= band_width] = 0
    return C


def mfdl_cyclic_sum(X, participation_interval, nb_steps, nb_nodes, node):
    """``compute_cyclic_repetitions_1node`` squared: ``max_offset sum |X_pi|``."""
    sums = []
    for t in range(participation_interval):
        idx = np.arange(t * nb_nodes + node, nb_steps * nb_nodes, participation_interval * nb_nodes)
        sums.append(np.sum(np.abs(X[np.ix_(idx, idx)])))
    return max(sums)


def mfdl_pndp_thm7(W, C_local, attacker, target, participation_interval):
    """MFDL's general accounting, time-major: ``B = P W_T (C^+ kron I)``, ``X = C^T B^+ B C``
    with ``C = C_local kron I`` and P the rows ``i`` with ``W[attacker, i] > 0``
    (``build_projection_workload``, eq. 12), then the cyclic sum for the target."""
    n, T = W.shape[0], C_local.shape[0]
    WT = np.zeros((n * T, n * T))
    for d in range(T):
        power = np.linalg.matrix_power(W, d)
        for b in range(T - d):
            WT[(b + d) * n:(b + d + 1) * n, b * n:(b + 1) * n] = power
    rows = [t * n + i for t in range(T) for i in range(n) if W[attacker, i] > 0]
    C = np.kron(C_local, np.eye(n))
    B = WT[rows] @ np.kron(np.linalg.pinv(C_local), np.eye(n))
    X = C.T @ np.linalg.pinv(B) @ B @ C
    return mfdl_cyclic_sum(X, participation_interval, T, n, target)


# -- item 3: SR and BSR --------------------------------------------------------------------
def test_square_root_encoders_are_mfdls_matrices():
    for T, epochs in [(6, None), (12, 3), (30, 5), (30, None)]:
        band = None if epochs is None else T // epochs
        ours = square_root_encoder(T, band)
        assert np.max(np.abs(ours - mfdl_bsr(T, epochs, np.float64))) <= 1e-15
        # MFDL's own float32 coefficients differ from the exact ones by float32 rounding
        assert np.max(np.abs(ours - mfdl_bsr(T, epochs))) <= 1e-6
    assert np.max(np.abs(square_root_encoder(30) - mfdl_bsr(30, None))) > 0  # not dyadic
    # y_k = binom(2k, k) / 4^k: sum_j y_j y_(k-j) = 1 (the square root of the prefix sums)
    y = square_root_encoder(8)[:, 0]
    assert np.allclose(np.convolve(y, y)[:8], 1.0, rtol=0, atol=1e-15)
    assert np.array_equal(square_root_encoder(5, causal=True), np.tril(square_root_encoder(5)))


@pytest.mark.parametrize("epochs,b", [(None, 3), (2, 3), (3, 2)])
def test_sr_bsr_local_dp_reproduce_mfdl(epochs, b):
    """MFDL's ``compute_sensitivity`` (sens^2 = max sum |C^T C|_pi, cyclic b) on its own
    float32 matrices, and on ours, equals our Theorem 7 value under local DP."""
    T = 6
    W = np.ones((1, 1))
    scheme = cyclic(T // b, b)
    C32 = mfdl_bsr(T, epochs)
    mfdl = mfdl_cyclic_sum(C32.T @ C32, b, T, 1, 0)
    r = mf_sensitivity(W, 0, None, T, algorithm=mf_d_sgd(np.linalg.pinv(C32)),
                       trust_model="ldp", participation_scheme=scheme)
    assert _close(r.thm7, mfdl, 1e-12) and r.lower <= mfdl * (1 + 1e-12) <= r.upper * (1 + 2e-12)
    algorithm = square_root() if epochs is None else banded_square_root(T // epochs)
    C = square_root_encoder(T, None if epochs is None else T // epochs)
    ours = mf_sensitivity(W, 0, None, T, algorithm=algorithm, trust_model="ldp",
                          participation_scheme=scheme)
    assert _close(ours.thm7, mfdl_cyclic_sum(C.T @ C, b, T, 1, 0), 1e-12)
    assert FUTURE_DRAWS_NOTE in ours.notes  # MFDL's C is symmetric: C^{-1} is full


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("name", ["sr", "bsr", "sr-causal"])
def test_sr_bsr_pndp_against_dense_and_mfdl(seed, name):
    """PNDP and eq. 12 against the dense reference (explicit A, B, SVD pseudo-inverse, brute
    force over signs); eq. 12's Theorem 7 sum also against MFDL's own formula."""
    T, b = 6, 3
    G = connected_instance("er", 10, seed)
    W = sparsedp.gossip_matrix(G, scheme="row-normalised-self-loops")
    algorithm = {"sr": square_root(), "bsr": banded_square_root(b),
                 "sr-causal": square_root(causal=True)}[name]
    L = algorithm.noise_matrix(T)
    patterns = [np.arange(i, T, b) for i in range(b)]
    attacker, target = 0, int(max(nx.single_source_shortest_path_length(G, 0).items(),
                                  key=lambda kv: (kv[1] == 2, kv[0]))[0])
    for trust in ("pndp", "pndp-eq12"):
        r = mf_sensitivity(W, target, [attacker], T, algorithm=algorithm, trust_model=trust,
                           participation_scheme=cyclic(T // b, b), gradients="scalar")
        d = dense_mf_sensitivity(W, target, T, patterns, noise=L, trust=trust,
                                 attackers=[attacker])
        assert _close(r.thm7, d["thm7"], 1e-8) and _close(r.exact, d["exact"], 1e-8)
        assert r.lower <= d["exact"] * (1 + 1e-9) and d["exact"] <= r.upper * (1 + 1e-9)
        assert (FUTURE_DRAWS_NOTE in r.notes) == (name != "sr-causal")
    C = square_root_encoder(T, b if name == "bsr" else None, causal=name == "sr-causal")
    mfdl = mfdl_pndp_thm7(W.toarray(), C, attacker, target, b)
    assert _close(r.thm7, mfdl, 1e-8)


# -- item 4: resets and one correlation per node -------------------------------------------
def test_resets_are_block_diagonal_and_accounted():
    T = 6
    assert np.array_equal(with_resets(antipgd(), 4).noise_matrix(T)[4:, :4], np.zeros((2, 4)))
    assert np.array_equal(with_resets(antipgd(), 6).noise_matrix(T), antipgd().noise_matrix(T))
    W = sparsedp.gossip_matrix(nx.florentine_families_graph(), scheme="row-normalised-self-loops")
    algorithm = with_resets(banded_square_root(2), 3)
    L = algorithm.noise_matrix(T)
    assert np.array_equal(L[:3, :3], L[3:, 3:]) and not L[:3, 3:].any()
    assert np.allclose(L[:3, :3], banded_square_root(2).noise_matrix(3), rtol=0, atol=0)
    patterns = [np.arange(T)]
    r = mf_sensitivity(W, 0, [3], T, algorithm=algorithm, gradients="scalar")
    d = dense_mf_sensitivity(W, 0, T, patterns, noise=L, trust="pndp", attackers=[3])
    assert _close(r.exact, d["exact"], 1e-8) and _close(r.thm7, d["thm7"], 1e-8)
    # a reset of independent noise changes nothing (same path, same value)
    a = mf_sensitivity(W, 0, [3], T, algorithm=with_resets(dp_d_sgd(), 2))
    b = mf_sensitivity(W, 0, [3], T)
    assert a.upper == b.upper and a.lower == b.lower


def test_per_node_correlation_against_dense_reference():
    T, n = 4, 10
    W = sparsedp.gossip_matrix(connected_instance("er", n, 3), scheme="row-normalised-self-loops")
    rng = np.random.default_rng(0)
    L = rng.uniform(-0.4, 0.4, (n, T, T)) + 1.5 * np.eye(T)
    for trust, attackers in (("ldp", None), ("pndp", [2]), ("pndp-eq12", [2, 7])):
        r = mf_sensitivity(W, 5, attackers, T, algorithm=mf_d_sgd(L), trust_model=trust,
                           gradients="scalar")
        d = dense_mf_sensitivity(W, 5, T, [np.arange(T)], noise=L, trust=trust,
                                 attackers=attackers or ())
        assert _close(r.exact, d["exact"], 1e-8) and _close(r.thm7, d["thm7"], 1e-8)
    # resets of a per-node correlation: every node's L block-diagonal
    reset = with_resets(mf_d_sgd(L[:, :2, :2]), 2).noise_matrix(T)
    assert reset.shape == (n, T, T) and np.array_equal(reset[:, 2:, 2:], L[:, :2, :2])
    assert not reset[:, :2, 2:].any()
    # the same L at every node is the shared correlation
    same = mf_sensitivity(W, 5, [2], T, algorithm=mf_d_sgd(np.stack([L[0]] * n)))
    shared = mf_sensitivity(W, 5, [2], T, algorithm=mf_d_sgd(L[0]))
    assert _close(same.upper, shared.upper, 1e-12) and _close(same.lower, shared.lower, 1e-12)


def test_bad_correlations_are_refused():
    W = sparsedp.gossip_matrix(nx.florentine_families_graph())
    cases = [
        (lambda: banded_square_root(0), "band must be an integer >= 1, got 0"),
        (lambda: square_root(causal=1), "causal must be True or False, got 1"),
        (lambda: with_resets(antipgd(), 0), "period must be an integer >= 1, got 0"),
        (lambda: with_resets(mf_d_sgd(np.eye(4)), 3),
         "its noise correlation is fixed at 4 steps, not the reset period 3"),
        (lambda: mf_sensitivity(W, 0, [1], 3, algorithm=mf_d_sgd(np.ones((4, 3, 3)))),
         "one noise correlation per node for 4 nodes, W has 15"),
        (lambda: mf_sensitivity(W, 0, [1], 6, algorithm=with_resets(mf_d_sgd(np.eye(4)), 4)),
         "T = 6 is not a multiple of the reset period 4"),
        (lambda: mf_d_sgd(np.ones((2, 3))), "must be a square T x T matrix"),
    ]
    for call, message in cases:
        with pytest.raises(ParameterError, match=message.replace("(", r"\(")):
            call()


# -- item 4: the message workload and MAFALDA-L-SGD ----------------------------------------
def mfdl_local_gram(W, nb_steps, initial_power):
    """``build_local_DL_gram_workload``: ``sum_i A_i^T A_i`` of ``build_DL_workload`` (block
    (r, s) = ``W^(r - s + initial_power)``), node-major columns via the commutation."""
    n = W.shape[0]
    DL = np.zeros((n * nb_steps, n * nb_steps))
    for d in range(nb_steps):
        power = np.linalg.matrix_power(W, d + initial_power)
        for b in range(nb_steps - d):
            DL[(b + d) * n:(b + d + 1) * n, b * n:(b + 1) * n] = power
    pi_inv = np.argsort([i * nb_steps + t for t in range(nb_steps) for i in range(n)])
    A = DL[:, pi_inv]
    blocks = [A[:, nb_steps * i:nb_steps * (i + 1)] for i in range(n)]
    return sum(Ai.T @ Ai for Ai in blocks), np.stack([Ai.T @ Ai for Ai in blocks])


@pytest.mark.parametrize("scheme", ["metropolis", "row-normalised-self-loops"])
def test_message_and_node_grams_equal_mfdls_workloads(scheme):
    """Symmetric W (eigenvalue moments) and non-symmetric W (Krylov traces), both workloads:
    ``utility_gram`` and the per-node grams against MFDL's dense construction."""
    T = 5
    W = sparsedp.gossip_matrix(nx.florentine_families_graph(), scheme=scheme)
    for workload, power in (("post-average", 1), ("message", 0)):
        total, per_node = mfdl_local_gram(W.toarray(), T, power)
        H = utility_gram(W, T, workload=workload)
        assert H.workload == workload and np.abs(H.H - total).max() <= 1e-12 * np.abs(total).max()
        grams = node_grams(W, T, workload=workload)
        assert np.abs(grams - per_node).max() <= 1e-13 * np.abs(per_node).max()
        estimate = utility_gram(W, T, workload=workload, method="estimate", probes=64, seed=3)
        assert np.all(np.abs(estimate.H - total) <= estimate.error)
    # the two workloads differ by the powers: W = I makes them the same, n prefix sums
    n = 7
    for workload in ("post-average", "message"):
        assert np.array_equal(utility_gram(np.eye(n), T, workload=workload).H,
                              n * prefix_gram(T))


def test_message_workload_mafalda_reduces_to_mafalda():
    """On W = I both workloads are n times the prefix sums: MAFALDA on the message workload is
    MAFALDA (and D-MF) there; on a graph the two optimise different H."""
    T, scheme = 6, (2, 3)
    message = optimise_correlation(utility_gram(np.eye(4), T, workload="message").H, scheme,
                                   progress=False)
    shared = optimise_correlation(prefix_gram(T), scheme, progress=False)
    assert np.allclose(message.C, shared.C, atol=1e-6) and message.gap < 1e-8
    assert _close(message.objective, 4 * shared.objective, 1e-8)


def test_mafalda_l_sgd_reduces_to_mafalda_and_never_loses():
    T, scheme = 6, (2, 3)
    # vertex-transitive: H_i = H / n, every node gets MAFALDA's correlation
    W = sparsedp.gossip_matrix(nx.cycle_graph(7))
    local = optimise_local_correlations(W, T, scheme, progress=False)
    shared = optimise_correlation(utility_gram(W, T).H, scheme, progress=False)
    assert local.distinct == 1
    for f in local.factorisations:
        assert np.allclose(f.C, shared.C, atol=1e-6)
    assert _close(local.objective, shared.objective, 1e-8)
    # in general MAFALDA's C is feasible for every node, so the per-node optimum is no worse
    W = sparsedp.gossip_matrix(nx.florentine_families_graph(), scheme="row-normalised-self-loops")
    local = optimise_local_correlations(W, T, scheme, progress=False)
    grams = node_grams(W, T)
    assert np.allclose(grams.sum(axis=0), utility_gram(W, T).H, rtol=1e-12)
    shared = optimise_correlation(grams.sum(axis=0), scheme, progress=False)
    assert local.distinct > 1 and local.sens2 <= 1 + 1e-9
    assert local.utility <= shared.utility * (1 + 1e-9)
    for H, f in zip(grams, local.factorisations, strict=True):  # each node's own optimum
        assert f.utility <= utility_norm(shared.C, H) * (1 + 1e-8)
    # its accounting: the per-node stack under local DP is every node's own C^T C
    r = mf_sensitivity(W, 4, None, T, algorithm=local.algorithm, trust_model="ldp",
                       participation_scheme=cyclic(2, 3))
    assert _close(r.upper, local.factorisations[4].sens2, 1e-9)


# -- item 4: a user-supplied linear mechanism ------------------------------------------------
@pytest.mark.parametrize("form", ["dense", "sparse", "operator"])
def test_linear_mechanism_reproduces_mf_sensitivity(form):
    """App. A's explicit A and B (BSR noise; eq. 12 and local DP) given as matrices or
    operators give mf_sensitivity's values."""
    T, n = 4, 10
    W = sparsedp.gossip_matrix(connected_instance("er", n, 4), scheme="row-normalised-self-loops")
    algorithm = banded_square_root(2)
    wrap = {"dense": lambda X: X, "sparse": sp.csr_matrix, "operator": aslinearoperator}[form]
    for trust, attackers in (("pndp-eq12", [1]), ("ldp", None)):
        mats = dense_mf_matrices(W, T, noise=algorithm.noise_matrix(T), trust=trust,
                                 attackers=attackers or ())
        r = linear_mechanism_sensitivity(wrap(mats["A"]), wrap(mats["B"]),
                                         [t * n + 6 for t in range(T)],
                                         participation_scheme=(2, 2), gradients="scalar")
        ref = mf_sensitivity(W, 6, attackers, T, algorithm=algorithm, trust_model=trust,
                             participation_scheme=(2, 2), gradients="scalar")
        assert _close(r.exact, ref.exact, 1e-9) and _close(r.thm7, ref.thm7, 1e-9)
        assert r.upper < np.inf and r.lower <= ref.upper and ref.lower <= r.upper
        assert ("operators materialised" in " ".join(r.notes)) == (form == "operator")


def test_linear_mechanism_range_condition_and_dependent_rows():
    B = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])  # a repeated observation
    r = linear_mechanism_sensitivity(B, B, [0, 1], gradients="scalar")
    assert r.range_condition and abs(r.exact - 2.0) <= 1e-12 and r.upper - 2.0 <= 1e-12
    assert "1 dependent rows of B dropped" in " ".join(r.notes)
    # the repeated noise carries a different multiple of the gradient: its difference is
    # noiseless, so the gradient of step 0 is revealed
    A = np.array([[1.0, 0.0], [2.0, 0.0], [0.0, 1.0]])
    r = linear_mechanism_sensitivity(A, B, [0, 1])
    assert not r.range_condition and r.lower == r.upper == np.inf
    # step 1 unprotected: infinite for every scheme that uses it, finite for one that does not
    B = np.diag([1.0, 0.0])
    assert linear_mechanism_sensitivity(np.eye(2), B, [0, 1]).upper == np.inf
    assert linear_mechanism_sensitivity(np.eye(2), B, [0]).upper == pytest.approx(1.0, abs=1e-12)


def test_linear_mechanism_bad_input():
    A = np.eye(3)
    cases = [
        (lambda: linear_mechanism_sensitivity(A, np.eye(2), [0]),
         "A and B must have the same rows (the observations): A has 3, B has 2"),
        (lambda: linear_mechanism_sensitivity(A, A, [0, 3]), "columns must lie in 0..2"),
        (lambda: linear_mechanism_sensitivity(A, A, [1, 1]), "columns must be distinct"),
        (lambda: linear_mechanism_sensitivity(A, A, []), "columns must be a non-empty list"),
        (lambda: linear_mechanism_sensitivity([[1.0]], A, [0]), "A must be a 2-d array"),
        (lambda: linear_mechanism_sensitivity(A, A * np.nan, [0]), "B has non-finite entries"),
        (lambda: linear_mechanism_sensitivity(np.eye(1600), np.eye(1600), [0]),
         "1600 observed rows exceed 1500"),
    ]
    for call, message in cases:
        with pytest.raises(ParameterError, match=message.replace("(", r"\(").replace(")", r"\)")):
            call()


def test_cli_sr_bsr_and_resets(capsys):
    from sparsedp.cli.main import main

    W = sparsedp.gossip_matrix(nx.florentine_families_graph(), scheme="row-normalised-self-loops")
    for argv, algorithm in (
            (["--algorithm", "bsr", "--band", "3"], banded_square_root(3)),
            (["--algorithm", "sr", "--reset-every", "3"], with_resets(square_root(), 3))):
        code = main(["mf", "--no-progress", "--json", "-T", "6", "--participation", "2,3",
                     "--attacker", "Medici", "--target", "Strozzi", *argv])
        record = json.loads(capsys.readouterr().out)
        nodes = list(nx.florentine_families_graph().nodes())
        ref = mf_sensitivity(W, nodes.index("Strozzi"), [nodes.index("Medici")], 6,
                             algorithm=algorithm, participation_scheme=(2, 3))
        assert code == 0 and record["algorithm"]["name"] == algorithm.name
        assert record["upper"] == pytest.approx(ref.upper, rel=1e-12)
        assert FUTURE_DRAWS_NOTE in record["notes"]
    for argv in (["--band", "3"], ["--algorithm", "bsr"], ["--reset-every", "0"],
                 ["--algorithm", "decor", "--secret-scale", "1", "--reset-every", "2"]):
        code = main(["mf", "--no-progress", *argv])
        _, err = capsys.readouterr()
        assert code == 2 and err.startswith("sparsedp: error: ") and err.count("\n") == 1


def test_simulator_applies_noise_that_uses_later_draws():
    """The learning simulator forms ``L Z`` 32 steps at a time; with MFDL's symmetric SR it
    must use the later draws too (the accounting is for the full L)."""
    from sparsedp.learning.simulator import _Correlations, _NoiseBlocks

    T = 40
    L = square_root().noise_matrix(T)
    Z = np.random.default_rng(0).standard_normal((T, 3))
    correlations = _Correlations(T)
    blocks = _NoiseBlocks(Z, correlations)
    for noise in (L, np.tril(L)):
        key = correlations.key(noise)
        rows = np.array([blocks.row(t, key) for t in range(T)])
        assert np.allclose(rows, noise @ Z, rtol=0, atol=1e-12)


def test_mafalda_scores_mfdls_encoders():
    """``evaluate`` scores any invertible C (MFDL's BSR and SR next to MAFALDA): utility
    ``tr(H (C^T C)^{-1})`` and the LDP sensitivity of ``C^{-1}``, as MFDL's ``evaluate_loss``
    (``compute_sensitivity(C)^2 tr(C^+T H C^+)``) computes them."""
    T, b = 6, 3
    W = sparsedp.gossip_matrix(nx.florentine_families_graph(), scheme="metropolis")
    H = utility_gram(W, T).H
    for C in (square_root_encoder(T), square_root_encoder(T, b)):
        f = evaluate("bsr", C, H, cyclic(T // b, b))
        Cp = np.linalg.pinv(C)
        mfdl = mfdl_cyclic_sum(C.T @ C, b, T, 1, 0) * np.trace(Cp.T @ H @ Cp)
        assert _close(f.objective, mfdl, 1e-10) and np.allclose(f.noise @ C, np.eye(T))


def test_mafalda_cli_message_workload(capsys):
    from sparsedp.cli.main import main

    code = main(["mafalda", "-T", "6", "--participation", "2,3", "--workload", "message",
                 "--json", "--no-progress"])
    record = json.loads(capsys.readouterr().out)
    W = sparsedp.gossip_matrix(nx.florentine_families_graph(), scheme="row-normalised-self-loops")
    ref = optimise_correlation(utility_gram(W, 6, workload="message").H, cyclic(2, 3),
                               progress=False)
    assert code == 0 and record["H"]["workload"] == "message"
    assert record["correlations"]["mafalda"]["objective"] == pytest.approx(ref.objective,
                                                                          rel=1e-12)


def test_linear_mechanism_too_large_for_exact_rows_keeps_lower_bounds_only():
    q = 21_000_000  # 3 q entries exceed the dense limit of the exact row reduction
    B = sp.csr_matrix((np.ones(3), ([0, 1, 2], [0, 0, 1])), shape=(3, q))
    r = linear_mechanism_sensitivity(B, B, [0, 1], gradients="scalar")
    assert r.upper == np.inf and 2.0 - 1e-7 <= r.lower <= 2.0  # rounding of q terms charged
    assert "lower bounds only" in " ".join(r.notes)
