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

from sparsedp import resources
from sparsedp.errors import ParameterError
from sparsedp.hints import MemorySize

PATTERN_BYTES = 512  # one pattern's array header and its bounds in mf_sensitivity (measured
# 448 with tracemalloc for single-use patterns at T = 10^5), besides 8 bytes per step


@dataclass(frozen=True)
class Participation:
    """``(k, b)``-cyclic participation (module docstring); ``k=None``: every step (user level),
    ``b=None``: once (``b = T``)."""

    k: int | None
    b: int | None
    name: str

    def uses_and_period(self, T: int) -> tuple[int, int]:
        """``(k, b)`` of a T-step run (``k = T, b = 1`` for user level, ``b = T`` for a record
        used once); ParameterError when the k uses do not fit in T steps."""
        k = T if self.k is None else self.k
        b = 1 if self.k is None else T if self.b is None else self.b
        if (k - 1) * b + 1 > T:
            raise ParameterError(
                f"participation {self.name}: {k} uses {b} steps apart need "
                f"T >= {(k - 1) * b + 1} gradient steps, got T = {T}"
            )
        return k, b

    def shortest_run(self) -> int:
        """The fewest gradient steps that hold one pattern."""
        return 1 if self.k is None or self.b is None else (self.k - 1) * self.b + 1

    def sizes(self, T: int) -> tuple[int, int]:
        """``(count, length)``: how many patterns a T-step run has and the steps in each."""
        k, b = self.uses_and_period(T)
        return min(b, T - (k - 1) * b), k

    def patterns(self, T: int, max_memory: MemorySize = None) -> list[np.ndarray]:
        """The patterns of a T-step run, each a sorted array of steps; ResourceLimitError
        (before any is built) when they and their bounds would not fit in ``max_memory``
        (:func:`patterns_memory`)."""
        count, k = self.sizes(T)
        resources.require_fits(lambda t: patterns_memory(*self.sizes(t)), T,
                               resources.memory_budget(max_memory),
                               f"the {count} participation patterns of {self.name} at T = {T}",
                               low=self.shortest_run(), unit="gradient steps")
        b = self.uses_and_period(T)[1]
        return [i + b * np.arange(k) for i in range(count)]

    def to_dict(self) -> dict:
        return {"name": self.name, "k": self.k, "b": self.b}


def patterns_memory(count: int, length: int) -> int:
    """Bytes that ``count`` patterns of ``length`` steps hold in :func:`sparsedp.mf.
    mf_sensitivity` (the index arrays and each pattern's list of bounds)."""
    return count * (PATTERN_BYTES + 8 * length)


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
