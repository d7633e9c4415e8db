"""numba implementations of the kernels in :mod:`sparsedp.linalg.kernels` (same algorithms).

Imported only on first use, so ``import sparsedp`` does not pay for numba; compiled
functions are cached on disk (``cache=True``) in the directory that
:mod:`sparsedp.linalg.numba_cache` chooses, outside the package.  Docstrings of the
algorithms are on the dispatchers in :mod:`sparsedp.linalg.kernels`; the numpy twins there
are the reference.
"""

import numba
import numpy as np

STAGNATION = 1e-15  # Lanczos stops when a restart improves the Ritz value by less (relative)


@numba.njit(cache=True)
def refresh(M, c, y):
    T = c.shape[0]
    q = 0.0
    for i in range(T):
        s = 0.0
        for j in range(T):
            s += M[i, j] * c[j]
        y[i] = s
        q += c[i] * s
    return q


@numba.njit(cache=True)
def _tail_walk(Mi, head):
    """The tail's quadratic ``q^T Mi[head:, head:] q`` at every step of its Gray-code walk
    from ``q = 1``, the coordinate (of the tail) each step flips and twice its sign before
    the flip (entry 0 of both unused)."""
    T = Mi.shape[0]
    tail = T - head
    steps = 1 << tail
    values = np.empty(steps, dtype=np.int64)
    flips = np.zeros(steps, dtype=np.int64)
    twice_signs = np.zeros(steps, dtype=np.int64)
    q = np.ones(tail, dtype=np.int64)
    y = np.zeros(tail, dtype=np.int64)
    v = 0
    for a in range(tail):
        s = 0
        for b in range(tail):
            s += Mi[head + a, head + b]
        y[a] = s
        v += s
    values[0] = v
    for step in range(1, steps):
        k = 0
        s = step
        while (s & 1) == 0:
            s >>= 1
            k += 1
        flips[step] = k
        ck = q[k]
        twice_signs[step] = 2 * ck
        v = v - 4 * ck * y[k] + 4 * Mi[head + k, head + k]
        for a in range(tail):
            y[a] -= 2 * ck * Mi[head + a, head + k]
        q[k] = -ck
        values[step] = v
    return values, flips, twice_signs


@numba.njit(cache=True, parallel=True)
def max_sign_quadratic(Mi, head):
    """Exhaustive search on the integer grid matrix ``Mi`` (int64, symmetric), meet in the
    middle: per head pattern ``p`` (``c_0 = +1`` and bits of the index for ``c_1 ..
    c_(head-1)``), the best ``p^T A p + q^T C q + 2 (B p)^T q`` over the tail ``q``, walked
    in Gray-code order with the tail's quadratic precomputed (:func:`_tail_walk`), so a
    step costs O(1): the cross term changes by ``-4 q_k (B p)_k`` (the tail's sign before
    the flip is the same for every head).  Returns per head the best value and the walk
    step attaining it (the first on ties).

    Integer arithmetic is exact (the grid keeps every intermediate below 2^62)."""
    T = Mi.shape[0]
    tail = T - head
    tail_values, flips, twice_signs = _tail_walk(Mi, head)
    steps = tail_values.shape[0]
    n_heads = 1 << (head - 1)
    best_q = np.empty(n_heads, dtype=np.int64)
    best_step = np.empty(n_heads, dtype=np.int64)
    for h in numba.prange(n_heads):
        p = np.ones(head, dtype=np.int64)
        for b in range(head - 1):
            if (h >> b) & 1:
                p[1 + b] = -1
        quadratic = 0
        for a in range(head):
            s = 0
            for b in range(head):
                s += Mi[a, b] * p[b]
            quadratic += p[a] * s
        r = np.zeros(tail, dtype=np.int64)
        cross = 0
        for a in range(tail):
            s = 0
            for b in range(head):
                s += Mi[head + a, b] * p[b]
            r[a] = 2 * s
            cross += r[a]
        bq = quadratic + tail_values[0] + cross
        bs = 0
        for step in range(1, steps):
            cross -= twice_signs[step] * r[flips[step]]
            value = quadratic + tail_values[step] + cross
            if value > bq:
                bq = value
                bs = step
        best_q[h] = bq
        best_step[h] = bs
    return best_q, best_step


@numba.njit(cache=True)
def local_sign_search(M, starts):
    """Best-improvement single-flip ascent from each row of ``starts`` (k x T); the final
    sign vectors, one row per start."""
    T = M.shape[0]
    out = starts.copy()
    y = np.empty(T)
    for s in range(out.shape[0]):
        c = out[s]
        refresh(M, c, y)
        for _ in range(4 * T * T + 4):
            q = 0.0
            for i in range(T):
                q += c[i] * y[i]
            best_k = 0
            best_gain = -np.inf
            for i in range(T):
                g = 4.0 * (M[i, i] - c[i] * y[i])
                if g > best_gain:
                    best_gain = g
                    best_k = i
            if best_gain <= 1e-14 * (1.0 + abs(q)):
                break
            ck = c[best_k]
            for i in range(T):
                y[i] -= 2.0 * ck * M[i, best_k]
            c[best_k] = -ck
    return out


@numba.njit(cache=True)
def top_eigenpair(M, v0, krylov_dim, tol, max_restarts):
    T = M.shape[0]
    k = min(krylov_dim, T)
    v = v0.copy()
    w = np.empty(T)
    theta_prev = -np.inf
    for _ in range(max_restarts):
        Q = np.zeros((k, T))
        alpha = np.zeros(k)
        beta = np.zeros(k)
        Q[0] = v
        size = k
        for j in range(k):
            w[:] = np.dot(M, Q[j])
            alpha[j] = np.dot(w, Q[j])
            for _rep in range(2):
                for i in range(j + 1):
                    w -= np.dot(Q[i], w) * Q[i]
            if j + 1 < k:
                b = np.sqrt(np.dot(w, w))
                if b <= 1e-14 * (abs(alpha[j]) + 1e-300):
                    size = j + 1
                    break
                beta[j] = b
                Q[j + 1] = w / b
        tri = np.zeros((size, size))
        for i in range(size):
            tri[i, i] = alpha[i]
            if i + 1 < size:
                tri[i, i + 1] = beta[i]
                tri[i + 1, i] = beta[i]
        y = np.linalg.eigh(tri)[1][:, size - 1]
        v = np.zeros(T)
        for i in range(size):
            v += y[i] * Q[i]
        v /= np.sqrt(np.dot(v, v))
        w[:] = np.dot(M, v)
        theta = np.dot(v, w)
        if size < k or np.sqrt(np.sum((w - theta * v) ** 2)) <= tol * abs(theta):
            break
        if theta - theta_prev <= STAGNATION * abs(theta):
            break
        theta_prev = theta
    return v


@numba.njit(cache=True)
def toeplitz_blocks(blocks):
    """Block ``(t, k)`` = ``blocks[t - k]`` for ``k <= t``, zero above."""
    T, m, r = blocks.shape
    G = np.zeros((T * m, T * r))
    for t in range(T):
        for k in range(t + 1):
            for a in range(m):
                for b in range(r):
                    G[t * m + a, k * r + b] = blocks[t - k, a, b]
    return G


@numba.njit(cache=True)
def k_from_moments(mu, T):
    """Toeplitz-plus-Hankel recurrence ``K[t, s] = K[t-1, s-1] + mu_(t+s)`` for the blocks
    ``t <= s``, then every block below the diagonal and every diagonal block replaced by the
    transpose of its mirror (as the numpy twin assigns them)."""
    m = mu.shape[1]
    K = np.empty((T * m, T * m))
    for t in range(T):
        for s in range(t, T):
            for a in range(m):
                for b in range(m):
                    value = mu[t + s, a, b]
                    if t > 0:
                        value = K[(t - 1) * m + a, (s - 1) * m + b] + value
                    K[t * m + a, s * m + b] = value
    for t in range(T):
        for a in range(m):
            for b in range(a + 1, m):
                upper = K[t * m + a, t * m + b]
                K[t * m + a, t * m + b] = K[t * m + b, t * m + a]
                K[t * m + b, t * m + a] = upper
        for s in range(t + 1, T):
            for a in range(m):
                for b in range(m):
                    K[s * m + b, t * m + a] = K[t * m + a, s * m + b]
    return K


@numba.njit(cache=True, inline="always")
def _csr_row(indptr, indices, data, X, r, acc):
    """``acc = (W X)[r]``."""
    for q in range(acc.shape[0]):
        acc[q] = 0.0
    for k in range(np.uint64(indptr[r]), np.uint64(indptr[r + 1])):
        col = indices[k]
        w = data[k]
        for q in range(acc.shape[0]):
            acc[q] += w * X[col, q]


@numba.njit(cache=True, parallel=True)
def csr_spmm(indptr, indices, data, X, Y):
    """``Y = W X`` for CSR ``W`` and a dense block ``X`` (n x b), parallel over rows.

    Accumulates straight into the row ``Y[r]`` (1.6x faster than a separate accumulator for
    wide blocks).
    """
    b = X.shape[1]
    for i in numba.prange(Y.shape[0]):
        r = np.uint64(i)
        for q in range(b):
            Y[r, q] = 0.0
        for k in range(np.uint64(indptr[r]), np.uint64(indptr[r + 1])):
            col = indices[k]
            w = data[k]
            for q in range(b):
                Y[r, q] += w * X[col, q]


@numba.njit(cache=True, parallel=True)
def block_grams(X, Y, shift, n_chunks):
    """``(X^T Y, Y^T Y, sum_r (Y[r] - shift)^2)`` for tall blocks, one BLAS product per row
    chunk and thread, summed at the end."""
    n, b = X.shape
    chunk = (n + n_chunks - 1) // n_chunks
    cross = np.zeros((n_chunks, b, b))
    gram = np.zeros((n_chunks, b, b))
    centred = np.zeros((n_chunks, b))
    for c in numba.prange(n_chunks):
        lo = c * chunk
        hi = min(n, lo + chunk)
        if lo >= hi:
            continue
        cross[c] = np.dot(X[lo:hi].T, Y[lo:hi])
        gram[c] = np.dot(Y[lo:hi].T, Y[lo:hi])
        for r in range(lo, hi):
            for q in range(b):
                d = Y[r, q] - shift
                centred[c, q] += d * d
    return cross.sum(axis=0), gram.sum(axis=0), centred.sum(axis=0)


@numba.njit(cache=True, parallel=True)
def csr_spmm_fused(indptr, indices, data, X, Y, shift, n_chunks):
    """``Y = W X`` with the products needed by the moment recurrence fused in one pass.

    Returns ``(X^T Y, Y^T Y, sum_r (Y[r] - shift)^2)`` from per-chunk partial sums.
    """
    n, b = X.shape
    chunk = (n + n_chunks - 1) // n_chunks
    cross = np.zeros((n_chunks, b, b))
    gram = np.zeros((n_chunks, b, b))
    centred = np.zeros((n_chunks, b))
    for c in numba.prange(n_chunks):
        acc = np.empty(b)
        for r in range(np.uint64(c * chunk), np.uint64(min(n, (c + 1) * chunk))):
            _csr_row(indptr, indices, data, X, r, acc)
            for p in range(b):
                Y[r, p] = acc[p]
                xp = X[r, p]
                yp = acc[p]
                d = yp - shift
                centred[c, p] += d * d
                for q in range(b):
                    cross[c, p, q] += xp * acc[q]
                    gram[c, p, q] += yp * acc[q]
    return cross.sum(axis=0), gram.sum(axis=0), centred.sum(axis=0)


@numba.njit(cache=True, parallel=True)
def csr_spmm_fused_pair(indptr, indices, data, X, Y, shift, n_chunks):
    """:func:`csr_spmm_fused` for a block of exactly two columns (one observer and the
    target), every sum in a scalar: about twice as fast at n = 10^6 (0.06 s against 0.13 s
    per product, median of alternating runs), where the general kernel's per-row
    accumulator array costs a store and a reload per stored entry."""
    n = X.shape[0]
    chunk = (n + n_chunks - 1) // n_chunks
    cross = np.zeros((n_chunks, 2, 2))
    gram = np.zeros((n_chunks, 2, 2))
    centred = np.zeros((n_chunks, 2))
    for c in numba.prange(n_chunks):
        c00 = c01 = c10 = c11 = g00 = g01 = g11 = e0 = e1 = 0.0
        for r in range(np.uint64(c * chunk), np.uint64(min(n, (c + 1) * chunk))):
            a0 = 0.0
            a1 = 0.0
            for k in range(np.uint64(indptr[r]), np.uint64(indptr[r + 1])):
                col = indices[k]
                w = data[k]
                a0 += w * X[col, 0]
                a1 += w * X[col, 1]
            Y[r, 0] = a0
            Y[r, 1] = a1
            x0 = X[r, 0]
            x1 = X[r, 1]
            c00 += x0 * a0
            c01 += x0 * a1
            c10 += x1 * a0
            c11 += x1 * a1
            g00 += a0 * a0
            g01 += a0 * a1
            g11 += a1 * a1
            d0 = a0 - shift
            d1 = a1 - shift
            e0 += d0 * d0
            e1 += d1 * d1
        cross[c, 0, 0], cross[c, 0, 1], cross[c, 1, 0], cross[c, 1, 1] = c00, c01, c10, c11
        gram[c, 0, 0], gram[c, 0, 1], gram[c, 1, 0], gram[c, 1, 1] = g00, g01, g01, g11
        centred[c, 0], centred[c, 1] = e0, e1
    return cross.sum(axis=0), gram.sum(axis=0), centred.sum(axis=0)


@numba.njit(cache=True, parallel=True)
def csr_spmm_fused_one(indptr, indices, data, X, Y, shift, n_chunks):
    """:func:`csr_spmm_fused` for a block of one column (one observer against every target),
    every sum in a scalar: about twice as fast at n = 10^6 (0.03 s against 0.06 s per
    product), the same additions in the same order."""
    n = X.shape[0]
    chunk = (n + n_chunks - 1) // n_chunks
    cross = np.zeros((n_chunks, 1, 1))
    gram = np.zeros((n_chunks, 1, 1))
    centred = np.zeros((n_chunks, 1))
    for c in numba.prange(n_chunks):
        c00 = g00 = e0 = 0.0
        for r in range(np.uint64(c * chunk), np.uint64(min(n, (c + 1) * chunk))):
            a0 = 0.0
            for k in range(np.uint64(indptr[r]), np.uint64(indptr[r + 1])):
                a0 += data[k] * X[indices[k], 0]
            Y[r, 0] = a0
            c00 += X[r, 0] * a0
            g00 += a0 * a0
            d0 = a0 - shift
            e0 += d0 * d0
        cross[c, 0, 0], gram[c, 0, 0], centred[c, 0] = c00, g00, e0
    return cross.sum(axis=0), gram.sum(axis=0), centred.sum(axis=0)


@numba.njit(cache=True)
def csr_propagate_fused(indptr, indices, data, X, steps, shift, watch):
    """``steps`` fused products in a row, serially (small chains, where a parallel region per
    product costs more than the product): ``V_0 = X``, ``V_(s+1) = W V_s``; returns
    ``V_steps`` and, stacked over s, ``V_s^T V_(s+1)``, ``V_(s+1)^T V_(s+1)``,
    ``sum_r (V_(s+1)[r] - shift)^2`` and the row ``V_(s+1)[watch]``.  The block is kept
    transposed (one contiguous row per column) with two independent scalar sums per product
    row (two columns at a time; a lone column sums its even and odd entries apart): about
    three times as fast as a row-major update at n = 200."""
    n, b = X.shape
    cross = np.zeros((steps, b, b))
    gram = np.zeros((steps, b, b))
    centred = np.zeros((steps, b))
    watched = np.empty((steps, b))
    V = X.T.copy()  # a copy also when X is Fortran-ordered (X.T contiguous): X stays as given
    Y = np.empty_like(V)
    for s in range(steps):
        for q in range(0, b - 1, 2):
            for r in range(np.uint64(n)):
                acc0 = 0.0
                acc1 = 0.0
                for k in range(np.uint64(indptr[r]), np.uint64(indptr[r + 1])):
                    col = indices[k]
                    acc0 += data[k] * V[q, col]
                    acc1 += data[k] * V[q + 1, col]
                Y[q, r] = acc0
                Y[q + 1, r] = acc1
        if b % 2:
            for r in range(np.uint64(n)):
                acc0 = 0.0
                acc1 = 0.0
                k = np.uint64(indptr[r])
                stop = np.uint64(indptr[r + 1])
                one = np.uint64(1)
                while k + one < stop:
                    acc0 += data[k] * V[b - 1, indices[k]]
                    acc1 += data[k + one] * V[b - 1, indices[k + one]]
                    k += np.uint64(2)
                if k < stop:
                    acc0 += data[k] * V[b - 1, indices[k]]
                Y[b - 1, r] = acc0 + acc1
        for p in range(b):
            watched[s, p] = Y[p, watch]
            total = 0.0
            for r in range(n):
                d = Y[p, r] - shift
                total += d * d
            centred[s, p] = total
            for q in range(b):
                xy = 0.0
                yy = 0.0
                for r in range(n):
                    xy += V[p, r] * Y[q, r]
                    yy += Y[p, r] * Y[q, r]
                cross[s, p, q] = xy
                gram[s, p, q] = yy
        V, Y = Y, V
    return np.ascontiguousarray(V.T), cross, gram, centred, watched


@numba.njit(cache=True, parallel=True)
def csr_spmm_rows(indptr, indices, data, X, Y, rows):
    """``Y[r] = (W X)[r]`` for the listed rows only (frontier-limited propagation)."""
    b = X.shape[1]
    for t in numba.prange(rows.shape[0]):
        acc = np.empty(b)
        _csr_row(indptr, indices, data, X, np.uint64(rows[t]), acc)
        for q in range(b):
            Y[rows[t], q] = acc[q]


@numba.njit(cache=True)
def csr_line_sums(indptr, indices, data, n_cols, absolute):
    """Row and column sums (of absolute values with ``absolute``) in one pass over the
    stored entries, in storage order."""
    n = indptr.shape[0] - 1
    rows = np.zeros(n)
    columns = np.zeros(n_cols)
    for i in range(n):
        total = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            value = abs(data[k]) if absolute else data[k]
            total += value
            columns[indices[k]] += value
        rows[i] = total
    return rows, columns


@numba.njit(cache=True)
def _csr_find(indptr, indices, row, col):
    """Position of ``(row, col)`` in a CSR pattern with sorted rows, or -1."""
    lo, hi = indptr[row], indptr[row + 1]
    while lo < hi:
        mid = (lo + hi) // 2
        if indices[mid] < col:
            lo = mid + 1
        else:
            hi = mid
    if lo < indptr[row + 1] and indices[lo] == col:
        return lo
    return -1


@numba.njit(cache=True, parallel=True)
def csr_symmetry_defect(indptr, indices, data):
    """Per row: ``max_j |W_ij - W_ji|`` over the pattern of row i and the column where it is
    first attained (an entry whose mirror is absent counts ``|W_ij|`` and is reported at the
    row-major first of ``(i, j)`` and ``(j, i)``: row ``min(i, j)``)."""
    n = indptr.shape[0] - 1
    best = np.zeros(n)
    where_row = np.zeros(n, dtype=np.int64)
    where_col = np.zeros(n, dtype=np.int64)
    for i in numba.prange(n):
        for k in range(indptr[i], indptr[i + 1]):
            j = indices[k]
            mirror = _csr_find(indptr, indices, j, i)
            defect = abs(data[k]) if mirror < 0 else abs(data[k] - data[mirror])
            r, c = (min(i, j), max(i, j)) if mirror < 0 else (i, j)
            if defect > best[i] or (
                defect == best[i] and defect > 0
                and (r < where_row[i] or (r == where_row[i] and c < where_col[i]))
            ):
                best[i], where_row[i], where_col[i] = defect, r, c
    return best, where_row, where_col


@numba.njit(cache=True)
def csr_upper_mirrors_match(indptr, indices, data):
    """Whether a canonical CSR matrix equals its transpose, in one pass on one thread and
    without searching: visiting the rows in order, the mirrors ``(j, i)`` of the entries
    above the diagonal in column j arrive in increasing i, so they must be row j's entries
    below the diagonal, consumed in storage order by one cursor per row; W is symmetric iff
    every mirror is the next one and every entry below the diagonal is consumed.  At
    n = 10^6 (2.1e7 entries) 0.34 s, against 0.62 s for a binary search of each mirror on
    two threads."""
    n = indptr.shape[0] - 1
    cursor = indptr[:-1].copy()  # next unconsumed entry below the diagonal in each row
    for i in range(n):
        for k in range(indptr[i], indptr[i + 1]):
            j = indices[k]
            if j > i:
                c = cursor[j]
                if c >= indptr[j + 1] or indices[c] != i or data[c] != data[k]:
                    return False
                cursor[j] = c + 1
    for j in range(n):  # every entry below the diagonal consumed
        if cursor[j] < indptr[j + 1] and indices[cursor[j]] < j:
            return False
    return True


@numba.njit(cache=True, parallel=True, fastmath={"reassoc", "contract"})
def gram_abs_sums(Y, block):
    """Per column j of ``Y`` (S, T, n): ``sum_ss' |sum_t Y[s,t,j] Y[s',t,j]|`` and the
    diagonal ``sum_t Y[s,t,j]^2``.  Columns in blocks of ``block``, copied to a contiguous
    (block, S, T) buffer; the sums over t may be reassociated and fused (``fastmath`` reassoc
    and contract only), which the error bound allows: ``gamma_T`` holds in any order."""
    S, T, n = Y.shape
    abs_sum = np.zeros(n)
    diag = np.empty((n, S))
    n_blocks = (n + block - 1) // block
    for c in numba.prange(n_blocks):
        lo = c * block
        w = min(n, lo + block) - lo
        Yb = np.empty((w, S, T))
        for s in range(S):
            for t in range(T):
                for q in range(w):
                    Yb[q, s, t] = Y[s, t, lo + q]
        for q in range(w):
            total = 0.0
            for s in range(S):
                for s2 in range(s, S):
                    acc = 0.0
                    for t in range(T):
                        acc += Yb[q, s, t] * Yb[q, s2, t]
                    if s2 == s:
                        diag[lo + q, s] = acc
                        total += abs(acc)
                    else:
                        total += 2.0 * abs(acc)
            abs_sum[lo + q] = total
    return abs_sum, diag


@numba.njit(cache=True)
def mixing_sweeps(M, Mt, V, MV, sweeps, rtol):
    """Block-coordinate ascent of ``<M, V V^T>`` over unit rows of V (the mixing method):
    row by row, ``v_i <- g_i / ||g_i||`` with ``g_i = (M V)_i - M_ii v_i`` (kept when
    ``g_i = 0``), ``MV`` updated by the rank-one change ``M[:, i] delta^T`` (read as the
    row ``Mt[i]`` of ``Mt = M^T``, contiguous).  Stops after ``sweeps`` sweeps or when a
    sweep raises the objective by at most ``rtol`` of it; returns the sweeps done."""
    T, r = V.shape
    g = np.empty(r)
    delta = np.empty(r)
    previous = -np.inf
    for sweep in range(sweeps):
        for i in range(T):
            norm = 0.0
            for q in range(r):
                g[q] = MV[i, q] - M[i, i] * V[i, q]
                norm += g[q] * g[q]
            if norm == 0.0:
                continue
            norm = np.sqrt(norm)
            for q in range(r):
                delta[q] = g[q] / norm - V[i, q]
                V[i, q] += delta[q]
            for k in range(T):
                column = Mt[i, k]
                if column != 0.0:
                    for q in range(r):
                        MV[k, q] += column * delta[q]
        value = 0.0
        for i in range(T):
            for q in range(r):
                value += MV[i, q] * V[i, q]
        if value - previous <= rtol * abs(value):
            return sweep + 1
        previous = value
    return sweeps



@numba.njit(cache=True, inline="always", fastmath={"reassoc", "contract"})
def _dot8(c, XT, k, p):
    return (c[k] * XT[k, p] + c[k + 1] * XT[k + 1, p] + c[k + 2] * XT[k + 2, p]
            + c[k + 3] * XT[k + 3, p] + c[k + 4] * XT[k + 4, p] + c[k + 5] * XT[k + 5, p]
            + c[k + 6] * XT[k + 6, p] + c[k + 7] * XT[k + 7, p])


@numba.njit(cache=True, fastmath={"reassoc", "contract"})
def mlp_mean_losses(theta, XT, y, h, d):
    """Mean squared error of every one-hidden-layer ReLU MLP (a row of ``theta``: ``[vec(W1)
    (d h, row-major), b1, w2, b2]``) on the points (columns) of ``XT`` (features padded with
    zero rows to a multiple of 8): ``p = sum_j relu(b1_j + x . W1[:, j]) w2_j + b2``, loss
    ``(p - y)^2``.  Hidden unit by hidden unit, vectorised over the points (eight features per
    pass; for d <= 8 one pass that also applies the ReLU), so no points x h array is formed."""
    R = theta.shape[0]
    d8, N = XT.shape
    out = np.empty(R)
    acc = np.empty(N)
    a = np.empty(N)
    c = np.zeros(d8)
    last = d8 - 8
    for m in range(R):
        for p in range(N):
            acc[p] = theta[m, d * h + 2 * h] - y[p]
        for j in range(h):
            for k in range(d):
                c[k] = theta[m, k * h + j]
            bj = theta[m, d * h + j]
            wj = theta[m, d * h + h + j]
            if last == 0:
                for p in range(N):
                    acc[p] += max(bj + _dot8(c, XT, 0, p), 0.0) * wj
                continue
            for p in range(N):
                a[p] = bj + _dot8(c, XT, 0, p)
            for k in range(8, last, 8):
                for p in range(N):
                    a[p] += _dot8(c, XT, k, p)
            for p in range(N):
                acc[p] += max(a[p] + _dot8(c, XT, last, p), 0.0) * wj
        total = 0.0
        for p in range(N):
            total += acc[p] * acc[p]
        out[m] = total / N
    return out


@numba.njit(cache=True, fastmath={"reassoc", "contract"})
def mlp_clipped_mean(theta, X, y, clip, h):
    """Per row m (one MLP, its batch ``X[m]``: B x d, ``y[m]``): the mean of the per-example
    gradients clipped to norm ``clip`` (``clip <= 0``: not clipped), without storing them.
    Per example: ``a = x W1 + b1``, ``r = 2 (relu(a) . w2 + b2 - y)``, ``da = r w2 1[a > 0]``,
    ``||g||^2 = (||x||^2 + 1) ||da||^2 + r^2 (||relu(a)||^2 + 1)``, weight
    ``w = min(1, clip / ||g||) / B``; ``dW1 += w x da^T``, ``db1 += w da``,
    ``dw2 += w r relu(a)``, ``db2 += w r`` (sums reassociated).

    Every sum runs in a loop that stores nothing: a loop that both stores and sums gets a
    runtime aliasing check from LLVM, which picks the vectorised (reassociated) sum or the
    sequential one by where the arrays lie in memory, and a row's gradient would depend on its
    address (:func:`sparsedp.learning.simulate_runs` relies on it not doing so)."""
    R, B, d = X.shape
    out = np.zeros((R, theta.shape[1]))
    a = np.empty(h)
    hid = np.empty(h)
    da = np.empty(h)
    for m in range(R):
        W1 = theta[m, : d * h]
        b1 = theta[m, d * h: d * h + h]
        w2 = theta[m, d * h + h: d * h + 2 * h]
        g = out[m]
        for e in range(B):
            for j in range(h):
                a[j] = b1[j]
            xx = 0.0
            for k in range(d):
                xk = X[m, e, k]
                xx += xk * xk
                for j in range(h):
                    a[j] += xk * W1[k * h + j]
            p = theta[m, d * h + 2 * h]
            hh = 0.0
            for j in range(h):
                hid[j] = max(a[j], 0.0)
            for j in range(h):  # sums in loops that store nothing (docstring)
                p += hid[j] * w2[j]
                hh += hid[j] * hid[j]
            r = 2.0 * (p - y[m, e])
            dd = 0.0
            for j in range(h):
                da[j] = r * w2[j] if a[j] > 0.0 else 0.0
            for j in range(h):
                dd += da[j] * da[j]
            w = 1.0 / B
            if clip > 0.0:
                w = min(1.0, clip / max(np.sqrt((xx + 1.0) * dd + r * r * (hh + 1.0)), 1e-300)) / B
            for k in range(d):
                wx = w * X[m, e, k]
                for j in range(h):
                    g[k * h + j] += wx * da[j]
            wr = w * r
            for j in range(h):
                g[d * h + j] += w * da[j]
                g[d * h + h + j] += wr * hid[j]
            g[d * h + 2 * h] += wr
    return out
