"""Checkpoints of an accountant: its ``state_dict()`` in one ``.npz`` file (numpy arrays only,
loaded with ``allow_pickle=False``) with the accountant's class name under
:data:`CLASS_KEY`, written to a temporary file and renamed, so that a job killed while writing
keeps its previous checkpoint.  Every accountant of :mod:`sparsedp.accountant` is offered.
"""

from __future__ import annotations

import os
import pathlib

import numpy as np

from sparsedp.accountant.gossip import Accountant
from sparsedp.accountant.graph import GraphAccountant
from sparsedp.accountant.mf import MFAccountant
from sparsedp.accountant.observers import ObserversAccountant
from sparsedp.accountant.randomwalk import RandomWalkAccountant
from sparsedp.accountant.targets import TargetsAccountant
from sparsedp.errors import ParameterError

CLASS_KEY = "accountant_class"  # a checkpoint without it holds a pair Accountant (older files)
CLASSES = {cls.__name__: cls for cls in (Accountant, GraphAccountant, MFAccountant,
                                         ObserversAccountant, RandomWalkAccountant,
                                         TargetsAccountant)}
AnyAccountant = (Accountant | GraphAccountant | MFAccountant | ObserversAccountant
                 | RandomWalkAccountant | TargetsAccountant)


def save(accountant: AnyAccountant, path) -> pathlib.Path:
    """Write ``accountant``'s state to ``path`` (``.npz``) atomically.

    Parameters
    ----------
    accountant : Accountant, TargetsAccountant, ObserversAccountant, GraphAccountant,
        MFAccountant or RandomWalkAccountant
        The accountant to checkpoint.
    path : str or pathlib.Path
        Destination file.

    Returns
    -------
    pathlib.Path
        The path written.

    Raises
    ------
    ParameterError
        ``accountant`` is not one of the accountants above.

    Examples
    --------
    >>> import tempfile, pathlib, networkx as nx, sparsedp
    >>> from sparsedp.accountant import load, save
    >>> W = sparsedp.gossip_matrix(nx.cycle_graph(6))
    >>> acc = sparsedp.Accountant(W, 0, [3], sigma=2.0)
    >>> acc.step(10)
    >>> path = save(acc, pathlib.Path(tempfile.mkdtemp()) / "acc.npz")
    >>> load(path).epsilon(1e-5) == acc.epsilon(1e-5)
    True
    """
    name = type(accountant).__name__
    if CLASSES.get(name) is not type(accountant):
        raise ParameterError(f"save() checkpoints the accountants {sorted(CLASSES)}, got {name}")
    state = {key: np.asarray(value) for key, value in accountant.state_dict().items()}
    state[CLASS_KEY] = np.asarray(name)
    path = pathlib.Path(path)
    partial = path.with_name(path.name + ".partial")
    with open(partial, "wb") as handle:
        np.savez(handle, **state)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(partial, path)
    return path


def load(path) -> AnyAccountant:
    """The accountant saved at ``path`` by :func:`save`.

    Parameters
    ----------
    path : str or pathlib.Path
        A file written by :func:`save`.

    Returns
    -------
    Accountant, TargetsAccountant, ObserversAccountant, GraphAccountant, MFAccountant or
    RandomWalkAccountant
        The saved accountant's class, continuing with answers identical to the saved one's.

    Raises
    ------
    ParameterError
        the file names an unknown accountant class.

    Examples
    --------
    See :func:`save`.
    """
    with np.load(pathlib.Path(path), allow_pickle=False) as data:
        state = {key: data[key] for key in data.files if key != CLASS_KEY}
        name = str(data[CLASS_KEY]) if CLASS_KEY in data.files else "Accountant"
    if name not in CLASSES:
        raise ParameterError(f"{path}: unknown accountant class {name!r} (one of "
                             f"{sorted(CLASSES)})")
    return CLASSES[name].from_state(state)
