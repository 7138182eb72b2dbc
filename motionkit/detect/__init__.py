"""Detection, 2D keypoints and Aria-guided selection of the camera wearer (association.md)."""
