"""Contradiction judgment: which stored decisions a proposed statement contradicts, and how
sure the judge is (:mod:`.judge`), found among the nearest stored statements (:mod:`.candidates`)
and turned into verdict tiers (:mod:`.tiers`)."""
