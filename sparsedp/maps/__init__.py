"""Privacy maps: many (observer, target) pairs of one graph at once, as a table with
summaries (:func:`privacy_map`) and its on-disk store (:mod:`sparsedp.maps.store`), and the
certified per-target worst case over observers without the table
(:func:`per_target_worst_case`), and the same table for the random-walk and
matrix-factorisation families (:func:`random_walk_map`, :func:`mf_map`).

Imports the paper families, ``graphs``, ``linalg``, ``privacy`` and the base modules.
"""

from sparsedp.maps.families import mf_map, random_walk_map
from sparsedp.maps.privacy_map import PrivacyMap, privacy_map
from sparsedp.maps.store import read_map, write_map
from sparsedp.maps.worst_case import WorstCase, per_target_worst_case

__all__ = ["PrivacyMap", "WorstCase", "mf_map", "per_target_worst_case", "privacy_map",
           "random_walk_map", "read_map", "write_map"]
