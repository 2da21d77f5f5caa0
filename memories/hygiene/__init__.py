"""Keeping a mind tidy: what replaced what (supersede), look-alikes (duplicates),
contradictions, the pairs a person chose to keep (dismissals), compaction and secrets.
Writes go through memories.services; this package reads and plans."""
