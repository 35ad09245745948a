"""Review, approval and the validated envelope of a candidate (see candidate.py for how one is named)."""
