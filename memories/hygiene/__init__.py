"""Memory hygiene: superseding one memory by another, and compacting old agent memories."""
