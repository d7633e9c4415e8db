"""Checks of the input of :func:`sparsedp.squared_sensitivity` that do not depend on the
threat model: one gossip matrix or a time-varying sequence, the exhaustive-search switch, the
memory refusal, and the bounds kept when no upper bound is certified."""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.sparse as sp

from sparsedp import defaults, resources
from sparsedp.errors import GossipMatrixError, ParameterError
from sparsedp.linalg.sign_bounds import Bound
from sparsedp.linalg.stochastic import check_gossip_matrix, input_dtype, input_rounding

EXHAUSTIVE_AUTO_MAX_T = 24  # 2^23 classes: 0.03 s per search (integer Gray code, numba)
EXHAUSTIVE_MAX_T = 30  # 2^29 classes: a few seconds per search


def gossip_sequence(W, T: int) -> tuple[list[sp.csr_matrix], list[str]]:
    """``[W]`` for one gossip matrix, or the T matrices ``W_0 .. W_(T-1)`` of time-varying
    gossip given as a sequence of 2-D matrices or a callable ``t -> W_t``; each checked
    (non-negative, row-stochastic, one common size), and the notes on their input precision.

    A list of lists of numbers is one dense matrix (its rows); a sequence of 2-D matrices is
    time-varying gossip.
    """
    if callable(W) and not hasattr(W, "shape"):
        W = [W(t) for t in range(T)]
    if _is_matrix_sequence(W):
        if len(W) != T:
            raise ParameterError(
                f"time-varying gossip needs one matrix per round: T = {T}, got {len(W)}"
            )
        sequence = list(W)
    else:
        sequence = [W]
    notes = []
    for t, w in enumerate(sequence):
        name = "W" if len(sequence) == 1 else f"W_{t}"
        if input_rounding(w) > 0:
            notes.append(
                f"{name} was given in {np.dtype(input_dtype(w)).name}: its rows were checked to "
                "sum to 1 within that type's rounding, and the bounds are for its values as "
                "given, converted exactly to float64"
            )
        try:  # canonical CSR (as_square_sparse), non-negative, row-stochastic
            w = sequence[t] = check_gossip_matrix(w, require=("nonnegative", "row_stochastic"))
        except GossipMatrixError as error:
            if len(sequence) == 1:
                raise
            raise GossipMatrixError(f"{name}: {error}") from error
        if w.shape != sequence[0].shape:
            raise ParameterError(f"W_{t} has shape {w.shape}, W_0 has {sequence[0].shape}")
    return sequence, notes[:1] if len(notes) > 1 else notes


def _is_matrix_sequence(W) -> bool:
    """A list or tuple of 2-D matrices (time-varying gossip), not the rows of one matrix."""
    if not isinstance(W, (list, tuple)):
        return False
    dims = {2 if sp.issparse(w) else np.ndim(w) for w in W}
    if dims == {2}:
        return True
    if dims <= {1}:
        return False
    raise ParameterError(
        "W is a list that mixes matrices and rows: time-varying gossip is a sequence of 2-D "
        "matrices (one per round), a single W is a 2-D array, sparse matrix or list of rows"
    )


_require_fits = resources.require_fits  # the refusal naming the largest T that fits


def _resolve_exact(exact, T: int, gradients: str = "scalar") -> bool:
    if gradients not in defaults.GRADIENT_MODELS:
        raise ParameterError(f"gradients must be one of {defaults.GRADIENT_MODELS}, got "
                             f"{gradients!r}")
    if exact == "auto":
        return gradients == "scalar" and T <= EXHAUSTIVE_AUTO_MAX_T
    if exact is True:
        if gradients != "scalar":
            raise ParameterError("exact=True is the exhaustive sign search, exact only for "
                                 "gradients='scalar'")
        if T > EXHAUSTIVE_MAX_T:
            raise ParameterError(
                f"exact=True enumerates 2^(T-1) sign vectors and is limited to "
                f"T <= {EXHAUSTIVE_MAX_T} (got T = {T}); use exact=False and the certified "
                "upper bound instead"
            )
        return True
    if exact is False:
        return False
    raise ParameterError(f"exact must be 'auto', True or False, got {exact!r}")


def _lower_bounds_only(bounds: list[Bound]) -> list[Bound]:
    """Without a certified upper side: lower bounds kept, exhaustive search on ``M_low``
    demoted to a lower bound, and ``T`` (``M_T <= I``) the only upper bound."""
    kept = [b for b in bounds if b.kind == "lower" or b.name == "local_dp"]
    kept += [
        dataclasses.replace(b, kind="lower", description=b.description + " (lower bound only)")
        for b in bounds
        if b.kind == "exact"
    ]
    return kept
