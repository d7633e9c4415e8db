"""Privacy maps: many (observer, target) pairs of one graph at once, as a table with
summaries (:func:`privacy_map`), and its on-disk store (:mod:`sparsedp.maps.store`).

Imports the gossip family, ``graphs``, ``linalg``, ``privacy`` and the base modules.
"""

from sparsedp.maps.privacy_map import PrivacyMap, privacy_map

__all__ = ["PrivacyMap", "privacy_map"]
