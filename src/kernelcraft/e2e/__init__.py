"""End to end: an exported kernel inside a transformers model, measured against the Amdahl prediction."""
