"""BLAS ``dtrsm`` and ``dgemm`` on sub-blocks of row-major arrays, and LAPACK ``dpotrf``, in
place.

numpy and scipy's wrappers copy a sub-block that is not contiguous and return products as new
arrays, so a blocked substitution written with them spends its time in copies and in
single-threaded subtractions of temporaries (two BLAS threads: about 15 GFLOP/s against 27 for
the same steps in place, N = 7480, 2040 columns).  Here the routines of
:mod:`scipy.linalg.cython_blas` (the BLAS scipy itself links, whose threads threadpoolctl
limits) are called through their function pointers with leading dimensions, on the arrays'
own memory (ctypes releases the GIL during the call, so another thread can report progress
meanwhile: :func:`cholesky_in_place`).  A C-contiguous ``n x n`` array is, read column-major,
its transpose with leading
dimension n: the right-hand sides are row-major (one per row), the factor either
(LAPACK's ``potrf`` through scipy returns it column-major).  Every index range is checked
before the call, since BLAS reads and writes wherever the pointers and dimensions say.
"""

from __future__ import annotations

import ctypes
import functools

import numpy as np
from scipy.linalg import cython_blas, cython_lapack

_CHAR, _VOID = ctypes.c_char_p, ctypes.c_void_p
_INT, _DOUBLE = ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_double)


@functools.cache
def _routine(name: str, *argtypes):
    """The routine ``name`` of scipy's cython BLAS or LAPACK as a ctypes function (Fortran
    calling convention: every argument by reference)."""
    module = cython_blas if name in cython_blas.__pyx_capi__ else cython_lapack
    capsule = module.__pyx_capi__[name]
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, _CHAR]
    return ctypes.CFUNCTYPE(None, *argtypes)(get_pointer(capsule, get_name(capsule)))


def _int(value: int):
    return ctypes.byref(ctypes.c_int(int(value)))


def _double(value: float):
    return ctypes.byref(ctypes.c_double(float(value)))


def _check(L: np.ndarray, Yt: np.ndarray, top: int, bottom: int, count: int) -> int:
    N = L.shape[0]
    if L.dtype != np.float64 or L.ndim != 2 or not (L.flags.c_contiguous
                                                    or L.flags.f_contiguous):
        raise ValueError("L must be a contiguous 2-d float64 array")
    if Yt.dtype != np.float64 or Yt.ndim != 2 or not Yt.flags.c_contiguous:
        raise ValueError("Yt must be a C-contiguous 2-d float64 array")
    if not Yt.flags.writeable:
        raise ValueError("Yt must be writeable")
    if L.shape != (N, N) or Yt.shape[1] != N:
        raise ValueError(f"shapes {L.shape} and {Yt.shape} do not match")
    if not (0 <= top < bottom <= N and 0 <= count <= Yt.shape[0]):
        raise ValueError(f"rows [{top}, {bottom}) of {N} or count {count} out of range")
    return N


def solve_panel(L: np.ndarray, Yt: np.ndarray, top: int, bottom: int, count: int) -> None:
    """``Yt[:count, top:bottom] <- Yt[:count, top:bottom] L[top:bottom, top:bottom]^-T``:
    each of the first ``count`` rows of ``Yt`` solved with the lower triangle of L's
    diagonal block (``dtrsm``), in place.

    Parameters
    ----------
    L : numpy.ndarray
        ``N x N``, C- or F-contiguous float64; its lower triangle is read (the upper is
        ignored).
    Yt : numpy.ndarray
        ``c x N``, C-contiguous, writeable float64: one right-hand side per row.
    top, bottom : int
        The block's rows, ``0 <= top < bottom <= N``.
    count : int
        Rows of ``Yt`` solved, ``0 <= count <= c``.

    Raises
    ------
    ValueError
        If L is not contiguous float64, ``Yt`` not C-contiguous, writeable float64, the
        shapes do not match or a range is out of bounds.

    Examples
    --------
    >>> import numpy as np
    >>> L = np.array([[2.0, 0.0], [1.0, 4.0]])
    >>> Yt = np.array([[2.0, 9.0]])
    >>> solve_panel(L, Yt, 0, 2, 1)
    >>> Yt
    array([[1., 2.]])
    """
    N = _check(L, Yt, top, bottom, count)
    if count == 0:
        return
    trsm = _routine("dtrsm", _CHAR, _CHAR, _CHAR, _CHAR, _INT, _INT, _DOUBLE, _VOID, _INT,
                    _VOID, _INT)
    # column-major: Y[top:bottom, :count] (ld N) <- L_block^-1 Y, L_block read as itself
    # (F-order L) or as the transpose of the upper triangle at the same place (C-order L)
    uplo, trans = (b"L", b"N") if _column_major(L) else (b"U", b"T")
    trsm(b"L", uplo, trans, b"N", _int(bottom - top), _int(count), _double(1.0),
         L.ctypes.data + 8 * (top * N + top), _int(N), Yt.ctypes.data + 8 * top, _int(N))


def subtract_panel(L: np.ndarray, Yt: np.ndarray, top: int, bottom: int, count: int) -> None:
    """``Yt[:count, bottom:] -= Yt[:count, top:bottom] @ L[bottom:, top:bottom].T`` (``dgemm``
    with ``beta = 1``), in place: the trailing update of a blocked forward substitution.

    Parameters
    ----------
    L : numpy.ndarray
        ``N x N``, C- or F-contiguous float64.
    Yt : numpy.ndarray
        ``c x N``, C-contiguous, writeable float64.
    top, bottom : int
        The panel's rows, ``0 <= top < bottom <= N`` (nothing to do when ``bottom = N``).
    count : int
        Rows of ``Yt`` updated, ``0 <= count <= c``.

    Raises
    ------
    ValueError
        As :func:`solve_panel`.

    Examples
    --------
    >>> import numpy as np
    >>> L = np.array([[2.0, 0.0], [1.0, 4.0]])
    >>> Yt = np.array([[1.0, 9.0]])
    >>> subtract_panel(L, Yt, 0, 1, 1)
    >>> Yt
    array([[1., 8.]])
    """
    N = _check(L, Yt, top, bottom, count)
    if count == 0 or bottom == N:
        return
    gemm = _routine("dgemm", _CHAR, _CHAR, _INT, _INT, _INT, _DOUBLE, _VOID, _INT, _VOID, _INT,
                    _DOUBLE, _VOID, _INT)
    # column-major: Y[bottom:, :count] -= L[bottom:, top:bottom] Y[top:bottom, :count], the
    # block of L at (bottom, top) itself (F-order L) or the transpose of the column-major
    # block at (top, bottom) (C-order L)
    if _column_major(L):
        trans, offset = b"N", bottom + top * N
    else:
        trans, offset = b"T", bottom * N + top
    gemm(trans, b"N", _int(N - bottom), _int(count), _int(bottom - top), _double(-1.0),
         L.ctypes.data + 8 * offset, _int(N), Yt.ctypes.data + 8 * top, _int(N),
         _double(1.0), Yt.ctypes.data + 8 * bottom, _int(N))


def cholesky_in_place(A: np.ndarray) -> int:
    """LAPACK ``dpotrf`` on ``A``'s own memory: its lower triangle becomes the Cholesky factor
    ``L`` (``A = L L^T``; the strict upper triangle is left as it was), the same routine and
    result as ``scipy.linalg.lapack.dpotrf(A, lower=1, clean=0)``, without the copy and
    without holding the GIL.  Returns LAPACK's ``info`` (``k > 0``: the leading minor of
    order k is not positive definite).

    Parameters
    ----------
    A : numpy.ndarray
        ``n x n``, F-contiguous, writeable float64 (its lower triangle is read).

    Returns
    -------
    int
        ``info``: 0 on success.

    Raises
    ------
    ValueError
        If ``A`` is not a square F-contiguous writeable float64 array.

    Examples
    --------
    >>> import numpy as np
    >>> A = np.asfortranarray([[4.0, 2.0], [2.0, 5.0]])
    >>> cholesky_in_place(A), np.tril(A)
    (0, array([[2., 0.],
           [1., 2.]]))
    """
    if (A.dtype != np.float64 or A.ndim != 2 or A.shape[0] != A.shape[1]
            or not A.flags.f_contiguous or not A.flags.writeable):
        raise ValueError("A must be a square, F-contiguous, writeable float64 array")
    potrf = _routine("dpotrf", _CHAR, _INT, _VOID, _INT, _INT)
    info = ctypes.c_int(0)
    n = A.shape[0]
    potrf(b"L", _int(n), A.ctypes.data, _int(max(n, 1)), ctypes.byref(info))
    return int(info.value)


def _column_major(L: np.ndarray) -> bool:
    return not L.flags.c_contiguous
