"""numba kernels against their numpy twins and against brute force."""


import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from sparsedp.linalg import kernels
from sparsedp.testing import brute_force_max, random_psd


@pytest.mark.parametrize("backend", ["numba", "numpy"])
@pytest.mark.parametrize("T", [1, 2, 3, 7, 11, 13])
def test_exhaustive_equals_brute_force(backend, T):
    M = random_psd(T, T)
    value, c = kernels.max_sign_quadratic(M, backend=backend)
    assert value == pytest.approx(brute_force_max(M), rel=1e-12)
    assert c[0] == 1.0 and set(np.unique(c)) <= {-1.0, 1.0}
    assert value == pytest.approx(c @ M @ c, rel=1e-14)


def test_exhaustive_refresh_path_on_larger_T():
    # T = 18: 2^9 Gray-code steps in each of the 2^8 prefix chunks; compare the two backends
    M = random_psd(18, 5, rank=4)
    v_numba, _ = kernels.max_sign_quadratic(M, backend="numba")
    v_numpy, _ = kernels.max_sign_quadratic(M, backend="numpy")
    assert v_numba == pytest.approx(v_numpy, rel=1e-12)


@pytest.mark.parametrize("shape", ["psd", "indefinite"])
@pytest.mark.parametrize("T", range(2, 17))
def test_meet_in_the_middle_attains_the_grid_maximum(shape, T):
    # both backends' vectors attain the exact maximum of c^T Mi c on the integer grid (the
    # certified quantity): every sign vector's grid value, in int64 (exact on the grid)
    rng = np.random.default_rng(100 + T)
    M = random_psd(T, T + 50) if shape == "psd" else rng.standard_normal((T, T))
    Mi, _ = kernels.integer_grid(M)
    C = np.ones((2 ** (T - 1), T), dtype=np.int64)
    C[:, 1:] = 1 - 2 * ((np.arange(2 ** (T - 1))[:, None] >> np.arange(T - 1)) & 1)
    truth = int(((C @ Mi) * C).sum(axis=1).max())
    for backend in ("numba", "numpy"):
        _, c = kernels.max_sign_quadratic(M, backend=backend)
        ci = c.astype(np.int64)
        assert int(ci @ Mi @ ci) == truth


@settings(max_examples=40, deadline=None)
@given(T=st.integers(1, 30), seed=st.integers(0, 10_000))
def test_local_search_backends_agree_and_are_local_optima(T, seed):
    M = random_psd(T, seed, rank=max(1, T // 3))
    v1, c1 = kernels.local_sign_search(M, backend="numba")
    v2, c2 = kernels.local_sign_search(M, backend="numpy")
    assert v1 == pytest.approx(v2, rel=1e-12, abs=1e-14)
    ones = np.ones(T)
    assert v1 >= ones @ M @ ones - 1e-12
    # no single flip improves
    y = M @ c1
    gains = 4 * (np.diag(M) - c1 * y)
    assert gains.max() <= 1e-10


@settings(max_examples=30, deadline=None)
@given(T=st.integers(1, 60), seed=st.integers(0, 10_000))
def test_top_eigenpair_matches_eigvalsh(T, seed):
    M = random_psd(T, seed, rank=max(1, T // 2))
    lam = np.linalg.eigvalsh(M)[-1]
    for backend in ("numba", "numpy"):
        theta, v = kernels.top_eigenpair(M, backend=backend)
        assert theta <= lam * (1 + 1e-13)
        assert theta == pytest.approx(lam, rel=1e-10)
        assert np.linalg.norm(v) == pytest.approx(1.0)


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_top_eigenpair_with_a_tight_cluster_and_restarts(backend):
    """Eigenvalues 1, 1 - 1e-9, ... (a cluster) with T > krylov_dim forces restarts."""
    T = 300
    rng = np.random.default_rng(3)
    Q, _ = np.linalg.qr(rng.standard_normal((T, T)))
    eigenvalues = np.concatenate([[1.0, 1.0 - 1e-9], np.linspace(0.99, 0.0, T - 2)])
    M = (Q * eigenvalues) @ Q.T
    theta, _ = kernels.top_eigenpair(M, krylov_dim=20, backend=backend)
    assert 1.0 - 1e-9 <= theta <= 1.0 + 1e-12


def test_disable_numba_environment(monkeypatch):
    monkeypatch.setenv("SPARSEDP_DISABLE_NUMBA", "1")
    assert not kernels.numba_enabled()
    assert kernels._resolve("auto") == "numpy"


def test_unknown_backend_rejected():
    with pytest.raises(ValueError, match="backend"):
        kernels.top_eigenpair(np.eye(2), backend="cuda")


def _random_csr(n, per_row, seed):
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    rows = np.repeat(np.arange(n), per_row)
    cols = rng.integers(0, n, n * per_row)
    return sp.csr_matrix((rng.random(n * per_row), (rows, cols)), shape=(n, n))


@pytest.mark.parametrize("b", [1, 2, 5, 12, 47])
def test_sparse_kernels_numba_equal_numpy(b):
    W = _random_csr(3000, 7, b)
    X = np.ascontiguousarray(np.random.default_rng(b).standard_normal((3000, b)))
    np.testing.assert_allclose(
        kernels.spmm(W, X, backend="numba"), kernels.spmm(W, X, backend="numpy"), rtol=1e-13
    )
    fused_numba = kernels.spmm_fused(W, X, 0.25, backend="numba")
    fused_numpy = kernels.spmm_fused(W, X, 0.25, backend="numpy")
    for got, want in zip(fused_numba, fused_numpy, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-11)
    rows = np.arange(100, 2000, 7, dtype=np.int64)
    Y1, Y2 = np.zeros_like(X), np.zeros_like(X)
    kernels.spmm_rows(W, X, Y1, rows, backend="numba")
    kernels.spmm_rows(W, X, Y2, rows, backend="numpy")
    np.testing.assert_allclose(Y1, Y2, rtol=1e-13)
    assert np.all(Y1[np.setdiff1d(np.arange(3000), rows)] == 0)


# small chains run in the serial kernel, the large one product by product
@pytest.mark.parametrize("n, b", [(300, 1), (300, 3), (3000, 12)])
def test_propagate_fused_equals_repeated_products(n, b):
    W = _random_csr(n, 5, n + b) / 5.0
    X = np.ascontiguousarray(np.random.default_rng(b).random((n, b)))
    steps, watch = 6, n // 3
    V, cross, gram, centred, rows = kernels.propagate_fused(
        W, X, 0.1, steps, watch, backend="numba"
    )
    V_np, *parts_np = kernels.propagate_fused(W, X, 0.1, steps, watch, backend="numpy")
    np.testing.assert_allclose(V, V_np, rtol=1e-12)
    for got, want in zip((cross, gram, centred, rows), parts_np, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-11)
    previous = X
    for s in range(steps):  # against plain scipy products
        current = W @ previous
        np.testing.assert_allclose(cross[s], previous.T @ current, rtol=1e-11)
        np.testing.assert_allclose(gram[s], current.T @ current, rtol=1e-11)
        np.testing.assert_allclose(rows[s], current[watch], rtol=1e-12)
        np.testing.assert_allclose(centred[s], ((current - 0.1) ** 2).sum(axis=0), rtol=1e-11)
        previous = current
    np.testing.assert_allclose(V, previous, rtol=1e-12)


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_local_search_from_several_starts_is_the_best_single_start(backend):
    M = random_psd(17, 3, rank=5)
    starts = np.where(np.random.default_rng(1).standard_normal((9, 17)) >= 0, 1.0, -1.0)
    value, c = kernels.local_sign_search(M, starts, backend=backend)
    singles = [kernels.local_sign_search(M, s, backend=backend)[0] for s in starts]
    # the same c, its value summed in another order (the multi-start kernel refreshes it
    # incrementally): equal up to rounding, not bit for bit
    assert value == pytest.approx(max(singles), rel=1e-12)
    assert value == pytest.approx(c @ M @ c, rel=1e-14)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 12), density=st.floats(0.1, 0.9), seed=st.integers(0, 10**6),
       symmetric=st.booleans())
def test_symmetry_defect_numba_matches_numpy(n, density, seed, symmetric):
    rng = np.random.default_rng(seed)
    A = sp.random(n, n, density=density, random_state=rng, format="csr")
    if symmetric:
        A = (A + A.T).tocsr()
    A.data = np.round(A.data * 4) / 4  # ties between entries
    A.eliminate_zeros()
    A.sort_indices()
    expected = kernels.symmetry_defect(A, backend="numpy")
    assert kernels.symmetry_defect(A, backend="numba") == expected
    exactly = (A != A.T).nnz == 0
    assert kernels.is_symmetric(A, backend="numpy") == exactly
    assert kernels.is_symmetric(A, backend="numba") == exactly
    assert expected[0] == pytest.approx(float(np.abs((A - A.T).toarray()).max()))
    if symmetric:
        assert expected == (0.0, (0, 0))


@pytest.mark.parametrize("T, m", [(1, 1), (2, 3), (7, 1), (9, 4)])
def test_k_from_moments_backends_agree_bit_for_bit(T, m):
    """The numba recurrence and the numpy cumulative sums do the same additions in the same
    order, also for blocks that are not symmetric (the diagonal block is the transposed sum)."""
    mu = np.random.default_rng(T * 10 + m).random((2 * T - 1, m, m))
    K_numba = kernels.k_from_moments(mu, T, backend="numba")
    K_numpy = kernels.k_from_moments(mu, T, backend="numpy")
    np.testing.assert_array_equal(K_numba, K_numpy)
    t, s = T - 1, T - 1  # last diagonal block: sum_i mu_(2i), transposed
    np.testing.assert_allclose(K_numpy[t * m : (t + 1) * m, s * m : (s + 1) * m],
                               mu[0 : 2 * T - 1 : 2].sum(axis=0).T, rtol=1e-12)


@pytest.mark.parametrize("absolute", [False, True])
def test_line_sums_backends_agree_with_dense(absolute):
    A = sp.random(40, 30, density=0.2, random_state=np.random.default_rng(5), format="csr")
    A.data -= 0.5  # signed entries
    A = sp.csr_matrix(A.toarray() * (np.arange(40)[:, None] % 7 != 3))  # some empty rows
    dense = np.abs(A.toarray()) if absolute else A.toarray()
    for backend in ("numba", "numpy"):
        rows, columns = kernels.csr_line_sums(A, absolute, backend=backend)
        np.testing.assert_allclose(rows, dense.sum(axis=1), rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(columns, dense.sum(axis=0), rtol=1e-13, atol=1e-15)
        assert np.all(rows[3::7] == 0.0)


@pytest.mark.parametrize("shape", [(1, 1), (6, 1), (5, 3), (4, 2, 3)])
def test_toeplitz_blocks_backends_agree_bit_for_bit(shape):
    a = np.random.default_rng(sum(shape)).random(shape)
    np.testing.assert_array_equal(
        kernels.toeplitz_blocks(a, backend="numba"), kernels.toeplitz_blocks(a, backend="numpy")
    )


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_is_symmetric_edge_cases(backend):
    def csr(dense):
        return sp.csr_matrix(np.array(dense, dtype=float))

    assert kernels.is_symmetric(csr([[1, 2], [2, 0]]), backend=backend)
    assert not kernels.is_symmetric(csr([[1, 2], [3, 0]]), backend=backend)  # values differ
    assert not kernels.is_symmetric(csr([[1, 0], [2, 0]]), backend=backend)  # lower only
    assert not kernels.is_symmetric(csr([[0, 2], [0, 1]]), backend=backend)  # upper only
    assert not kernels.is_symmetric(  # mirrors present but one extra entry below
        csr([[0, 1, 0], [1, 0, 0], [5, 0, 0]]), backend=backend
    )
    assert kernels.is_symmetric(csr([[0, 1, 4], [1, 0, 0], [4, 0, 7]]), backend=backend)
    assert kernels.is_symmetric(sp.csr_matrix((3, 3)), backend=backend)


@pytest.mark.parametrize("b", [1, 2])
def test_one_and_two_column_fused_kernels_equal_the_general_one(b):
    """The scalar one- and two-column specialisations do the same additions in the same
    order as the general kernel."""
    W = _random_csr(5000, 9, 2)
    X = np.ascontiguousarray(np.random.default_rng(2).random((5000, b)))
    module = kernels._numba_module()
    special = module.csr_spmm_fused_one if b == 1 else module.csr_spmm_fused_pair
    Y_pair, Y_general = np.empty_like(X), np.empty_like(X)
    pair = special(W.indptr, W.indices, W.data, X, Y_pair, 0.3, 16)
    general = module.csr_spmm_fused(W.indptr, W.indices, W.data, X, Y_general, 0.3, 16)
    np.testing.assert_array_equal(Y_pair, Y_general)
    for got, want in zip(pair, general, strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("b", [1, 2, 3])
def test_unsigned_index_view_changes_no_bit(b):
    """The product kernels get the column indices as an unsigned view
    (``kernels._product_parts``); they must give the same bits as with the signed indices."""
    W = _random_csr(5000, 9, 2)
    assert W.indices.dtype == np.int32
    X = np.ascontiguousarray(np.random.default_rng(4).random((5000, b)))
    module = kernels._numba_module()
    fused = {1: module.csr_spmm_fused_one, 2: module.csr_spmm_fused_pair}.get(
        b, module.csr_spmm_fused)
    Y_signed = np.empty_like(X)
    signed = fused(W.indptr, W.indices, W.data, X, Y_signed, 0.3, 16)
    Y_view = np.empty_like(X)
    view = fused(*kernels._product_parts(W), X, Y_view, 0.3, 16)
    assert kernels._product_parts(W)[1].dtype == np.uint32
    np.testing.assert_array_equal(Y_view, Y_signed)
    for got, want in zip(view, signed, strict=True):
        np.testing.assert_array_equal(got, want)
    V_signed = module.csr_propagate_fused(W.indptr, W.indices, W.data, X, 3, 0.1, 7)
    V_view = module.csr_propagate_fused(*kernels._product_parts(W), X, 3, 0.1, 7)
    for got, want in zip(V_view, V_signed, strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("symmetric", [True, False])
def test_is_symmetric_on_a_larger_random_matrix(symmetric):
    A = sp.random(300, 300, density=0.05, random_state=np.random.default_rng(3), format="csr")
    A = (A + A.T).tocsr() if symmetric else A
    A.sort_indices()
    truth = (A != A.T).nnz == 0
    assert truth == symmetric
    assert kernels.is_symmetric(A, backend="numba") == kernels.is_symmetric(A, backend="numpy")
    assert kernels.is_symmetric(A, backend="numba") == truth


def test_line_sums_with_trailing_empty_rows():
    """An empty last row must not shorten the row before it (numpy's reduceat cannot sum
    an empty segment)."""
    A = sp.csr_matrix(np.array([[0.5, 0.5, 0.0], [0.0, 0.25, 0.0], [0.0, 0.0, 0.0]]))
    for backend in ("numba", "numpy"):
        rows, columns = kernels.csr_line_sums(A, backend=backend)
        np.testing.assert_array_equal(rows, [1.0, 0.25, 0.0])
        np.testing.assert_array_equal(columns, [0.5, 0.75, 0.0])
    empty = sp.csr_matrix((3, 3))
    for backend in ("numba", "numpy"):
        rows, columns = kernels.csr_line_sums(empty, backend=backend)
        assert not rows.any() and not columns.any()


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_is_symmetric_puts_its_input_in_canonical_form(backend):
    # rows stored out of order: a cursor over unsorted rows could match the wrong entries
    data, indices, indptr = [1.0, 2.0, 2.0, 3.0], [2, 1, 0, 0], [0, 2, 3, 4]
    A = sp.csr_matrix((data, indices, indptr), shape=(3, 3))  # [[0,2,1],[2,0,0],[3,0,0]]
    A.has_sorted_indices = False
    assert not kernels.is_symmetric(A, backend=backend)
    B = sp.csr_matrix(([1.0, 2.0, 2.0, 1.0], [2, 1, 0, 0], [0, 2, 3, 4]), shape=(3, 3))
    B.has_sorted_indices = False  # [[0,2,1],[2,0,0],[1,0,0]]
    assert kernels.is_symmetric(B, backend=backend)
    with pytest.raises(ValueError, match="square"):
        kernels.is_symmetric(sp.csr_matrix((2, 3)), backend=backend)


@pytest.mark.parametrize("d", [1, 8, 9, 17])
def test_mlp_mean_losses_backends_agree_with_the_per_example_losses(d):
    """The MLP test-loss kernel (one hidden unit at a time, features padded to a multiple of
    8: d = 1, exactly one block, one block plus one feature, two blocks plus one) and its
    numpy twin against the explicit per-example losses of the model."""
    from sparsedp.learning import mlp

    model = mlp(11)
    rng = np.random.default_rng(d)
    theta = rng.standard_normal((13, model.n_params(d)))
    X = rng.standard_normal((37, d))
    y = rng.standard_normal(37)
    ref = model.losses(theta, X, y).mean(axis=1)
    for backend in ("numba", "numpy"):
        np.testing.assert_allclose(kernels.mlp_mean_losses(theta, X, y, 11, backend=backend),
                                   ref, rtol=1e-12)


@pytest.mark.parametrize("clip", [None, 0.1])
def test_mlp_clipped_mean_backends_agree(clip):
    rng = np.random.default_rng(3)
    h, d, R, B = 9, 5, 11, 4
    theta = rng.standard_normal((R, d * h + 2 * h + 1))
    X = rng.standard_normal((R, B, d))
    y = rng.standard_normal((R, B))
    a = kernels.mlp_clipped_mean(theta, X, y, clip, h, backend="numba")
    b = kernels.mlp_clipped_mean(theta, X, y, clip, h, backend="numpy")
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13 * np.abs(b).max())
    with pytest.raises(ValueError, match="do not fit an MLP"):
        kernels.mlp_clipped_mean(theta, X, y, clip, h + 1)
    with pytest.raises(ValueError, match="clip must be > 0"):
        kernels.mlp_clipped_mean(theta, X, y, 0.0, h)


def _at_offset(a: np.ndarray, offset: int) -> np.ndarray:
    """A copy of ``a`` starting ``offset`` float64s into a fresh buffer (contiguous, so the
    dispatchers pass it on without a copy)."""
    buffer = np.empty(a.size + offset)
    out = buffer[offset:].reshape(a.shape)
    out[:] = a
    return out


def test_mlp_kernels_do_not_depend_on_where_the_rows_lie():
    """Bit for bit the same numba gradient and loss for a row wherever it and its batch lie in
    memory (four offsets, with other allocations in between): simulate_runs relies on it, its
    runs being rows at other offsets of a wider array.  A sum in a loop that also stored made
    the gradient depend on the addresses in about one shape in ten.  (The numpy twins need not
    pass: OpenBLAS's SSE3 kernels, OPENBLAS_CORETYPE=Prescott, round by alignment.)"""
    backend = "numba"
    rng = np.random.default_rng(11)
    keep = []  # other allocations, so the buffers land at other places of the heap
    for _ in range(60):
        h, d, B = (int(v) for v in rng.integers(1, [20, 20, 9]))  # d > 8: two loss passes
        theta = 3 * rng.standard_normal((1, d * h + 2 * h + 1))
        X, y = rng.standard_normal((1, B, d)), rng.standard_normal((1, B))
        grads, losses = [], []
        for offset in (0, 1, 2, 3, 0, 1, 2, 3):
            keep.append(np.empty(int(rng.integers(1, 60))))
            row, batch = _at_offset(theta, offset), _at_offset(X, offset)
            grads.append(kernels.mlp_clipped_mean(row, batch, y, 1.0, h, backend=backend))
            losses.append(kernels.mlp_mean_losses(row, batch[0], y[0], h, backend=backend))
        assert all(np.array_equal(grads[0], g) for g in grads), (h, d, B)
        assert all(np.array_equal(losses[0], v) for v in losses), (h, d, B)


def test_propagate_fused_leaves_a_fortran_ordered_block_unchanged():
    """The serial propagation works on a copy of X also when X.T is already contiguous."""
    W = _random_csr(30, 6, 0)
    X = np.asfortranarray(np.random.default_rng(0).standard_normal((30, 2)))
    before = X.copy()
    V, *_ = kernels.propagate_fused(W, X, 0.0, 3, 0, backend="numba")
    np.testing.assert_array_equal(X, before)
    np.testing.assert_allclose(V, W @ (W @ (W @ before)), rtol=1e-13)
