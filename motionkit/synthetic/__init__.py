"""Synthetic Ego-Exo4D takes with ground truth."""
