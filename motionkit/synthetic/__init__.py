"""The synthetic world: Ego-Exo4D-layout takes with ground truth, at a chosen difficulty (docs/synthetic.md)."""
