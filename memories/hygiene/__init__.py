"""Keeping a mind tidy: what replaced what (supersede), look-alikes, contradictions,
compaction and secrets. Writes go through memories.services; this package reads and plans."""
