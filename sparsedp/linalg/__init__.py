"""The numerical engine shared by every protocol family: numba kernels and their numpy twins,
matrix checks (stochastic, symmetric, primitive), the block-Toeplitz operators of W powers and
their lag moments and Gram assembly, Krylov and Cholesky solvers, spectral bounds, certified
arithmetic (rounding models, certified lambda_min / lambda_max, the sign-vector bounds) and
exact rational rank decisions.

No paper of its own.  Imports nothing of the package but ``sparsedp.errors``,
``sparsedp.validation``, ``sparsedp.resources`` and ``sparsedp.progress`` (the import
contract in pyproject.toml).
"""
