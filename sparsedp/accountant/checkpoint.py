"""Checkpoints of an accountant: its :meth:`~sparsedp.accountant.gossip.Accountant.state_dict`
in one ``.npz`` file (numpy arrays only, loaded with ``allow_pickle=False``), written to a
temporary file and renamed, so that a job killed while writing keeps its previous checkpoint.
"""

from __future__ import annotations

import os
import pathlib

import numpy as np

from sparsedp.accountant.gossip import Accountant


def save(accountant: Accountant, path) -> pathlib.Path:
    """Write ``accountant``'s state to ``path`` (``.npz``) atomically.

    Parameters
    ----------
    accountant : Accountant
        The accountant to checkpoint.
    path : str or pathlib.Path
        Destination file.

    Returns
    -------
    pathlib.Path
        The path written.

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
    path = pathlib.Path(path)
    partial = path.with_name(path.name + ".partial")
    with open(partial, "wb") as handle:
        np.savez(handle, **{key: np.asarray(value) for key, value in
                            accountant.state_dict().items()})
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(partial, path)
    return path


def load(path) -> Accountant:
    """The accountant saved at ``path`` by :func:`save`.

    Parameters
    ----------
    path : str or pathlib.Path
        A file written by :func:`save`.

    Returns
    -------
    Accountant
        An accountant that continues with answers identical to the saved one's.

    Examples
    --------
    See :func:`save`.
    """
    with np.load(pathlib.Path(path), allow_pickle=False) as data:
        return Accountant.from_state({key: data[key] for key in data.files})
