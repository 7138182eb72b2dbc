"""The record every release reader returns: one method's COCO-17 joints of one take."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


@dataclass
class SampledJoints:
    """One method's COCO-17 joints of one take, at its own samples.

    ``frame_pos (N,)``: each sample's position on the take's 30 fps frame grid (float; ``t = frame_pos /
    30`` s); ``joints (N, 17, 3)`` Ego-Exo4D world metres, COCO-17 order (NaN for a missing joint);
    ``valid (N,)``; ``native_fps`` the method's own rate; ``parent_rot (N, 17, 3, 3)`` the rotation of
    each joint's offset frame where the source has joint rotations (SMPL-X sources), else None;
    ``source`` where it came from (format, file, body model).
    """

    take_uid: str
    take_name: str
    frame_pos: np.ndarray
    joints: np.ndarray
    valid: np.ndarray
    native_fps: float
    parent_rot: np.ndarray | None = None
    source: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.frame_pos)
        if self.joints.shape != (n, 17, 3) or self.valid.shape != (n,):
            raise ValueError(f"SampledJoints of {self.take_name}: joints {self.joints.shape}, valid "
                             f"{self.valid.shape} for {n} samples; expected ({n}, 17, 3) and ({n},)")  # fmt: skip

    @property
    def time_s(self) -> np.ndarray:
        return self.frame_pos / 30.0


def take_folder(root: Path, take_name: str, take_uid: str) -> Path | None:
    """A release's folder for a take: named by take_name (as the releases are), or by take_uid."""
    for name in (take_name, take_uid):
        if (Path(root) / name).is_dir():
            return Path(root) / name
    return None
