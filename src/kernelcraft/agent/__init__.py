"""The design loop and its proposers."""
