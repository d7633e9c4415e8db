"""Privacy maps: many (observer, target) pairs of one graph at once, as a table with
summaries (:func:`privacy_map`) and its on-disk store (:mod:`sparsedp.maps.store`), and the
certified per-target worst case over observers without the table
(:func:`per_target_worst_case`).

Imports the gossip family, ``graphs``, ``linalg``, ``privacy`` and the base modules.
"""

from sparsedp.maps.privacy_map import PrivacyMap, privacy_map
from sparsedp.maps.worst_case import WorstCase, per_target_worst_case

__all__ = ["PrivacyMap", "WorstCase", "per_target_worst_case", "privacy_map"]
