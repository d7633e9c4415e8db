"""Plain-data pieces shared by every accountant's ``state_dict()`` / ``from_state()``: the
gossip matrix as CSR arrays and the option flags saved as strings (no pickle).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def matrix_state(W: sp.csr_matrix) -> dict:
    """W as plain CSR arrays (:func:`matrix_from_state`)."""
    W = sp.csr_matrix(W)
    return {"W_data": W.data, "W_indices": W.indices, "W_indptr": W.indptr,
            "W_shape": np.asarray(W.shape)}


def matrix_from_state(state: dict) -> sp.csr_matrix:
    """The W of :func:`matrix_state`."""
    return sp.csr_matrix((np.asarray(state["W_data"]), np.asarray(state["W_indices"]),
                          np.asarray(state["W_indptr"])),
                         shape=tuple(int(s) for s in np.asarray(state["W_shape"])))


def exact_from_state(state: dict):
    """The ``exact`` flag of a state (saved as a string)."""
    return {"True": True, "False": False}.get(str(state["exact"]), str(state["exact"]))


def gradients_from_state(state: dict) -> str:
    """The ``gradients`` of a state (``"scalar"`` in checkpoints written before the option)."""
    return str(state["gradients"]) if "gradients" in state else "scalar"
