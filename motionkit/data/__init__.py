"""All file I/O: the Ego-Exo4D reader, Aria trajectories, synthetic takes, caches and the result store."""

from motionkit.data.errors import DataError

__all__ = ["DataError"]
