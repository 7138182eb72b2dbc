"""Detection, 2D keypoints and Aria-guided selection of the camera wearer (docs/pipeline.md, "associate")."""
