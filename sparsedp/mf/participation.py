"""Participation schemes ``Pi``: at which gradient steps one record of the target is used.

A pattern ``pi`` is a set of gradient steps (``0..T-1``); the sensitivity is the maximum over
the patterns of the scheme (Bellet et al., Def. 6 and Remark 8: only the target's rows
``{u, n + u, ..., (T - 1) n + u}`` of G can change).  One family covers the three schemes of
the paper, ``(k, b)``-cyclic participation: the record is used exactly k times, b steps apart,
first in one of the first b steps (the "fixed epoch order" of Choquette-Choo et al. 2023, and
MFDL's ``build_participation_matrix``)::

    Pi(k, b) = { {i, i + b, ..., i + (k - 1) b} : 0 <= i < b, i + (k - 1) b <= T - 1 }

* a record used once: ``k = 1, b = T`` (the T singletons);
* user level, every step: ``k = T, b = 1`` (one pattern, all steps; the paper's ``(T, 1)``
  setting of Fig. 2);
* the paper's learning runs: ``k = 20, b = 19`` (T = 380 steps).

MFDL requires ``T = k b``; here any ``T >= (k - 1) b + 1`` is accepted and the offsets whose
last use falls after step T - 1 are left out (they are not patterns of a T-step run).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sparsedp.errors import ParameterError


@dataclass(frozen=True)
class Participation:
    """``(k, b)``-cyclic participation (module docstring); ``k=None``: every step (user level),
    ``b=None``: once (``b = T``)."""

    k: int | None
    b: int | None
    name: str

    def patterns(self, T: int) -> list[np.ndarray]:
        """The patterns of a T-step run, each a sorted array of steps."""
        k = T if self.k is None else self.k
        b = T if self.b is None else self.b
        if self.k is None:
            b = 1
        if (k - 1) * b + 1 > T:
            raise ParameterError(
                f"participation {self.name}: {k} uses {b} steps apart need "
                f"T >= {(k - 1) * b + 1} gradient steps, got T = {T}"
            )
        last = min(b, T - (k - 1) * b)
        return [i + b * np.arange(k) for i in range(last)]

    def to_dict(self) -> dict:
        return {"name": self.name, "k": self.k, "b": self.b}


def _positive(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ParameterError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def single_use() -> Participation:
    """Each record is used at one step: the patterns are the T singletons."""
    return Participation(k=1, b=None, name="single")


def user_level() -> Participation:
    """The target's data is used at every step (the paper's ``(T, 1)``, Fig. 2)."""
    return Participation(k=None, b=1, name="user-level")


def cyclic(k: int, b: int) -> Participation:
    """``(k, b)``-cyclic: k uses, b steps apart (module docstring)."""
    k, b = _positive("k", k), _positive("b", b)
    return Participation(k=k, b=b, name=f"cyclic({k},{b})")


def resolve(participation) -> Participation:
    """A :class:`Participation`, or one of the names ``"single"``, ``"user-level"``, or a pair
    ``(k, b)``."""
    if isinstance(participation, Participation):
        return participation
    if participation == "single":
        return single_use()
    if participation == "user-level":
        return user_level()
    if isinstance(participation, tuple) and len(participation) == 2:
        return cyclic(*participation)
    raise ParameterError(
        f"unknown participation {participation!r}: use 'single', 'user-level', a pair (k, b) "
        "or sparsedp.mf.cyclic(k, b)"
    )
