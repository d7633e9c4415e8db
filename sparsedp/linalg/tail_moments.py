"""Certified upper bounds on the high moments of a positive measure from its low ones.

For a positive measure ``nu`` on ``[0, b]`` whose moments ``m_i = int x^i dnu``,
``i = 0 .. 2q``, are known to lie in boxes ``[lo_i, hi_i]``, every higher moment is bounded
by a Gauss-Radau-type argument (Golub and Meurant, *Matrices, Moments and Quadrature*):
for any nodes ``x_1 < ... < x_q`` in ``[0, b)`` let ``p_j`` be the Hermite interpolant of
``f(x) = x^j`` (value and derivative at each ``x_k``, value at ``b``; degree ``2q``).  Then

    f(x) - p_j(x) = f^(2q+1)(xi) / (2q+1)! * (x - b) prod_k (x - x_k)^2  <=  0   on [0, b]

for ``j >= 2q + 1`` (every derivative of ``x^j`` is >= 0 on ``[0, b]``), so

    int x^j dnu  <=  int p_j dnu  =  sum_i c_i m_i      (c the coefficients of p_j).

Any nodes give a valid bound; the Gauss-Radau nodes (the Gauss nodes of ``(b - x) dnu``)
give the sharpest one, and :func:`moment_tail_bounds` takes them from the boxes' midpoints.
The coefficients are computed in floating point, so the bound charges their error
(``|c - c_hat| <= ||A^-T|| ||F - A^T c_hat||``, ``A`` the confluent Vandermonde matrix of
the interpolation conditions, its inverse's norm certified by a Neumann-series argument),
the moments' boxes and the rounding of the final sums.  The trivial bound
``int x^j dnu <= b^(j - 2q) m_2q`` is always one of the candidates, and the least of the
candidates over ``q = 1 .. max_nodes`` is returned.

Used for the gossip lags (:mod:`sparsedp.linalg.moments`): the even centred lags
``||W^k r||^2`` of a symmetric W are the moments of the spectral measure of ``r`` in
``x = lambda^2``, so a truncated lag far beyond the last computed one is bounded by far less
than the last computed lag when the computed ones decay.
"""

from __future__ import annotations

import numpy as np

from sparsedp.linalg.certified import UNIT_ROUNDOFF, gamma

MAX_NODES = 3  # free nodes q of the interpolant: moments 0 .. 2q are used


def moment_tail_bounds(lo: np.ndarray, hi: np.ndarray, b: float, orders: np.ndarray,
                       max_nodes: int = MAX_NODES) -> np.ndarray:
    """Certified ``B_j >= int x^j dnu`` for each ``j`` in ``orders`` (all ``>= len(lo) - 1``).

    ``lo``, ``hi``: bounds on the moments ``m_0 .. m_2Q`` (``0 <= lo <= hi``) of a positive
    measure on ``[0, b]``; the interpolants use ``q <= min(max_nodes, Q)`` nodes and the
    moments ``m_(2Q - 2q) .. m_2Q`` of the shifted measure ``x^(2Q - 2q) dnu`` (moment
    ``m_j`` of ``nu`` is moment ``j - (2Q - 2q)`` of it).  Returns ``B`` (same shape as
    ``orders``), each the least of the valid candidates (see the module docstring).
    """
    lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    orders = np.asarray(orders, dtype=np.int64)
    top = lo.size - 1
    if top < 0 or orders.size == 0:
        return np.full(orders.shape, np.inf)
    if np.any(orders < top):
        raise ValueError("orders below the highest known moment")
    # trivial: x^j <= b^(j - top) x^top on [0, b]
    with np.errstate(over="ignore"):
        best = _powers(b, orders - top) * hi[top] * (1 + gamma(int(orders.max() - top) + 2))
    for q in range(1, min(max_nodes, top // 2) + 1):
        shift = top - 2 * q
        with np.errstate(over="ignore", invalid="ignore"):
            bound = _interpolant_bound(lo[shift:], hi[shift:], b, orders - shift)
        if bound is not None:
            best = np.minimum(best, bound)
    # an overflowed candidate (b > 1, huge orders) is no bound; an underflowed power is
    # off by at most the smallest normal number, added to every bound
    best = np.where(np.isfinite(best), best, np.inf)
    return best + np.finfo(np.float64).tiny


def _powers(x: float, exponents: np.ndarray) -> np.ndarray:
    """``x^e`` for non-negative integer exponents, each within ``gamma_e`` relative (a
    running product, so the rounding bound is rigorous)."""
    e_max = int(exponents.max()) if exponents.size else 0
    table = np.cumprod(np.concatenate([[1.0], np.full(e_max, float(x))]))
    return table[exponents]


def _interpolant_bound(lo: np.ndarray, hi: np.ndarray, b: float, orders: np.ndarray
                       ) -> np.ndarray | None:
    """The q-node candidate (``len(lo) = 2q + 1``), or ``None`` when the nodes cannot be
    placed (degenerate moments) or the interpolation conditions are too ill-conditioned
    for the error bound to mean anything."""
    size = lo.size
    q = (size - 1) // 2
    mid, half = 0.5 * (lo + hi), 0.5 * (hi - lo)
    nodes = _radau_nodes(mid, b, q)
    if nodes is None:
        return None
    exponents = np.arange(size)
    # A^T c = F: rows = the interpolation functionals applied to x^i, i = 0 .. 2q
    At = np.empty((size, size))
    for k, x in enumerate(nodes):
        px = _powers(x, exponents)
        At[k] = px
        At[q + k, 0] = 0.0
        At[q + k, 1:] = exponents[1:] * px[:-1]
    At[2 * q] = _powers(b, exponents)
    try:
        Y = np.linalg.inv(At)
    except np.linalg.LinAlgError:
        return None
    # ||A^-T||_inf <= ||Y||_inf / (1 - ||I - Y At||_inf), with At's own rounding (entries
    # within gamma_(2q+1) relative of the exact functionals) charged to the defect
    at_error = gamma(size + 1) * np.abs(At)
    defect = (np.abs(np.eye(size) - Y @ At).sum(axis=1).max()
              + gamma(size + 1) * (np.abs(Y) @ np.abs(At)).sum(axis=1).max()
              + (np.abs(Y) @ at_error).sum(axis=1).max())
    if not defect < 0.5:
        return None
    inverse_norm = np.abs(Y).sum(axis=1).max() / (1.0 - defect) * (1 + 4 * UNIT_ROUNDOFF)
    # F[:, j]: f(x_k) = x_k^j, f'(x_k) = j x_k^(j-1), f(b) = b^j (within gamma_(j+2))
    F = np.empty((size, orders.size))
    previous = np.maximum(orders - 1, 0)
    for k, x in enumerate(nodes):
        table = _powers(x, np.arange(int(orders.max()) + 1))  # x^e, e = 0 .. max order
        F[k] = table[orders]
        F[q + k] = orders * table[previous]
    F[2 * q] = _powers(b, orders)
    f_error = gamma(int(orders.max()) + 3) * np.abs(F)
    C = np.linalg.solve(At, F)
    # |F_true - At_true C| <= |F - At C| + rounding of that residual + |F err| + |At err| |C|
    residual = (np.abs(F - At @ C) + gamma(size + 2) * (np.abs(At) @ np.abs(C) + np.abs(F))
                + f_error + at_error @ np.abs(C))
    c_error = inverse_norm * residual.max(axis=0)  # |c - C| entrywise, per order
    absC = np.abs(C)
    value = mid @ C
    bound = (value + half @ absC + gamma(size + 5) * (hi @ absC)
             + c_error * float(hi.sum()))
    return np.maximum(bound, 0.0) * (1 + 4 * UNIT_ROUNDOFF)


def _radau_nodes(m: np.ndarray, b: float, q: int) -> np.ndarray | None:
    """The Gauss nodes of ``(b - x) dnu`` from its moments ``b m_i - m_(i+1)``,
    ``i = 0 .. 2q - 1`` (the free nodes of the Gauss-Radau rule with a node at ``b``):
    the roots of the degree-q orthogonal polynomial, from the Hankel system.  Any nodes in
    ``[0, b)`` give a valid bound (they only need to be good); ``None`` when they are not
    real, distinct and inside."""
    modified = b * m[:-1] - m[1:]
    scale = modified[0]
    if not scale > 0:
        return None
    modified = modified / scale
    H = np.array([[modified[i + k] for k in range(q)] for i in range(q)])
    rhs = -np.array([modified[i + q] for i in range(q)])
    try:
        coefficients = np.linalg.solve(H, rhs)
    except np.linalg.LinAlgError:
        return None
    roots = np.roots(np.concatenate([[1.0], coefficients[::-1]]))
    if np.any(np.abs(roots.imag) > 1e-12 * b) or roots.size != q:
        return None
    nodes = np.sort(roots.real)
    if nodes[0] < 0 or nodes[-1] >= b or (q > 1 and np.min(np.diff(nodes)) <= 1e-6 * b):
        return None
    return nodes
