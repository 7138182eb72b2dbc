"""Camera and rotation maths: pure functions on arrays."""
