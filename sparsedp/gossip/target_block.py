"""The certified sandwich of the target's whole ``T x T`` block ``M_T``, not only its sign maximum.

:func:`sparsedp.gossip.squared_sensitivity` reduces ``M_T = G_T^T K_T^+ G_T`` to
``max_c c^T M_T c`` over all T rounds.  Other participation schemes (a record used once, or
k times b rounds apart: :mod:`sparsedp.mf`) need the maximum over principal sub-blocks of
``M_T``; a principal sub-block of a certified sandwich ``low - eta I <= M <= up + eta I`` is a
certified sandwich of the sub-block (the Loewner order, the Frobenius norm of the rounding
and the entrywise model error all restrict to principal sub-matrices).  This module runs the
same checks, plan and certified solve as :func:`squared_sensitivity` and returns the sandwich
itself, or the closed form of ``M_T`` where the view has one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sparsedp.gossip.sensitivity import _Answered, _plan, solve_planned
from sparsedp.linalg.certified import MatrixSandwich


@dataclass(frozen=True)
class TargetBlock:
    """``M_T`` of one gossip view: a certified sandwich, or a closed form.

    ``closed_form``: ``None`` (use ``sandwich``), ``"zero"`` (``M_T = 0``: nothing reaches the
    attacker, or every observation is redundant), ``"identity"`` (local DP, ``M_T = I``) or
    ``"infinite"`` (the target's noise is known).  ``upper_certified``: whether the
    sandwich's upper side is certified (otherwise only lower bounds and ``M_T <= I`` hold).
    """

    T: int
    closed_form: str | None
    sandwich: MatrixSandwich | None = None
    upper_certified: bool = True
    method: str = "closed form"
    solver: dict = field(default_factory=dict)
    notes: tuple[str, ...] = ()


_CLOSED = {"target_seen_without_noise": "infinite", "local_dp": "identity",
           "different_components": "zero"}


def view_target_block(
    W,
    target: int,
    observers,
    T: int,
    *,
    view: str = "secure-summation",
    noise_removed: bool = False,
    method: str = "auto",
    rtol: float = 1e-10,
    maxiter: int = 5000,
    progress: bool | None = None,
    truncation_rtol: float = 1e-9,
    preconditioner: str = "auto",
    max_memory=None,
) -> TargetBlock:
    """The certified sandwich of ``M_T`` for the view of :func:`squared_sensitivity` with the
    same arguments (same checks, same errors, same method choice)."""
    plan = _plan(W, target, observers, T, view, noise_removed, method, preconditioner,
                 max_memory)
    if isinstance(plan, _Answered):
        name = plan.result.bounds[0].name
        return TargetBlock(T=plan.result.T, closed_form=_CLOSED[name], notes=plan.result.notes)
    T = plan.system.T
    sandwich, info = solve_planned(plan, rtol, maxiter, progress, truncation_rtol,
                                   preconditioner)
    if sandwich is None:
        return TargetBlock(T=T, closed_form="zero",
                           notes=("every observation is a function of the attacker's own data "
                                  "and noise",))
    return TargetBlock(T=T, closed_form=None, sandwich=sandwich,
                       upper_certified=bool(info["upper_certified"]), method=plan.method,
                       solver=info, notes=tuple(plan.notes))


def sub_sandwich(sandwich: MatrixSandwich, rows: np.ndarray) -> MatrixSandwich:
    """The certified sandwich of the principal sub-block ``M[rows, rows]`` (module docstring)."""
    index = np.ix_(rows, rows)
    model = sandwich.model
    if model is not None:  # a row-sum model: the sub-block's row sums are no larger
        model = model[rows] if model.shape[1] == 1 else model[index]
    return MatrixSandwich(low=np.ascontiguousarray(sandwich.low[index]),
                          excess=np.ascontiguousarray(sandwich.excess[index]),
                          eta_low=sandwich.eta_low, eta_excess=sandwich.eta_excess, model=model)
