"""Dataset formats: the Ego-Exo4D reader, Aria trajectories, the observation cache and the result store."""

from motionkit.common.errors import DataError

__all__ = ["DataError"]
