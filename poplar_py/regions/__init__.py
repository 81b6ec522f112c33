"""Regions: variable elements as strided runs (:mod:`.runs`), maps from element ranges to values
(:mod:`.interval_map`) and the array helpers both build on (:mod:`.arrays`)."""
