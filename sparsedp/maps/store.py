"""The on-disk store of a privacy map: one Parquet file (pyarrow, the optional extra
``sparsedp[map]``) holding the table and, in its schema metadata, the map's parameters.

Writing is atomic (:func:`sparsedp.files.write_atomically`: a temporary file in the same
directory, then ``os.replace``, with the permissions the umask gives), so a reader never sees
half a table.  A path that already holds a map with other parameters, or a file
that is not a sparsedp map, is refused (:func:`check_store`): a store is never overwritten
with a different map.  The same parameters give the same table, so such a store is replaced.

Columns: ``observer`` and ``target`` (rows of W, or the graph's labels: integers or
strings), ``distance`` (int32, -1 unreachable), ``lower``, ``upper``, ``epsilon`` (float64, or
float32 for a map built with ``float32=True``; ``upper`` and ``epsilon`` null where not
computed), ``kind`` (string).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from sparsedp.errors import ParameterError
from sparsedp.files import write_atomically
from sparsedp.maps.privacy_map import PrivacyMap

METADATA_KEY = b"sparsedp.map.parameters"


def require_pyarrow() -> None:
    """ParameterError (one line, how to install it) unless pyarrow is importable."""
    _pyarrow()


def _pyarrow():
    """The pyarrow modules, or a one-line ParameterError saying how to install them."""
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise ParameterError(
            "writing or reading a Parquet map needs pyarrow, which is not installed: "
            "pip install 'sparsedp[map]'"
        ) from None
    return pyarrow, pyarrow.parquet


def stored_parameters(path) -> dict | None:
    """The parameters recorded in the map store at ``path``, or ``None`` if none exists there.
    ParameterError when ``path`` exists but is not a sparsedp map store."""
    path = Path(path)
    if not path.exists():
        return None
    _, pq = _pyarrow()
    try:
        metadata = pq.read_schema(path).metadata or {}
    except Exception as exc:  # pyarrow raises several types for a file that is not Parquet
        raise ParameterError(f"{path} exists and is not a sparsedp map store (not a Parquet "
                             f"file: {exc}); refusing to overwrite it") from None
    if METADATA_KEY not in metadata:
        raise ParameterError(f"{path} exists and is not a sparsedp map store (no map "
                             "parameters recorded); refusing to overwrite it")
    return json.loads(metadata[METADATA_KEY])


def check_store(path, parameters: dict) -> bool:
    """Refuse (ParameterError, one line) a ``path`` holding a map with other parameters or a
    file that is not a map; return whether a store with these parameters exists."""
    existing = stored_parameters(path)
    if existing is None:
        return False
    refuse_other_parameters(path, "a map", existing, parameters)
    return True


def refuse_other_parameters(path, what: str, existing: dict, parameters: dict) -> None:
    """ParameterError (one line, naming up to three differing keys) unless the ``existing``
    parameters recorded at ``path`` are ``parameters`` (compared as stored in JSON)."""
    wanted = json.loads(json.dumps(parameters))  # as stored: tuples become lists
    if existing != wanted:
        differing = sorted(k for k in set(existing) | set(wanted)
                           if existing.get(k) != wanted.get(k))
        shown = ", ".join(f"{k}: {existing.get(k)!r} there, {wanted.get(k)!r} here"
                          for k in differing[:3])
        raise ParameterError(f"{path} holds {what} with different parameters ({shown}); "
                             "choose another output path for other parameters, or remove it")


def write_map(privacy_map: PrivacyMap, path, parameters: dict | None = None) -> Path:
    """Write the table to ``path`` as Parquet, atomically, with ``parameters`` (default: the
    map's) in the schema metadata; refused when ``path`` holds a different map."""
    pa, pq = _pyarrow()
    parameters = privacy_map.parameters if parameters is None else parameters
    path = Path(path)
    check_store(path, parameters)
    columns = privacy_map.columns
    arrays = {}
    for name, values in columns.items():
        if name in ("upper", "epsilon"):
            arrays[name] = pa.array(values, mask=np.isnan(values))
        elif values.dtype.kind in "OU":
            arrays[name] = pa.array([str(v) if name == "kind" else v for v in values.tolist()])
        else:
            arrays[name] = pa.array(values)
    table = pa.table(arrays).replace_schema_metadata(
        {METADATA_KEY: json.dumps(parameters).encode()})
    write_atomically(path, lambda temporary: pq.write_table(table, temporary))
    return path


def stored_rows(path) -> int:
    """The number of rows of the map stored at ``path`` (from the Parquet footer)."""
    _, pq = _pyarrow()
    return pq.read_metadata(path).num_rows


def read_map(path) -> PrivacyMap:
    """The :class:`PrivacyMap` stored at ``path`` (its table and parameters; summaries are
    recomputed from the table)."""
    _, pq = _pyarrow()
    parameters = stored_parameters(path)
    if parameters is None:
        raise ParameterError(f"no map store at {path}")
    table = pq.read_table(path)
    columns = {}
    for name in table.column_names:
        values = table.column(name).to_numpy()  # float nulls become NaN
        if name in ("lower", "upper", "epsilon"):
            columns[name] = np.asarray(values, dtype=np.float64)
        elif name == "kind":
            columns[name] = np.asarray(values, dtype=np.dtypes.StringDType())
        else:
            columns[name] = values
    return PrivacyMap(columns=columns, parameters=parameters)
