"""Memory hygiene: near-repeats (duplicates.py), contradictions (contradictions.py), the
pairs a person chose to keep (dismissals.py). Import the modules themselves: this package
file stays empty so the services can use them without a cycle."""
