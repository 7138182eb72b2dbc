"""Evaluation against annotated keypoints: metrics, the SOMA protocol, convention offsets, coverage."""
