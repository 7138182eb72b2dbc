"""The people of a synthetic take are not made with the fitter's body model.

``subject_model`` derives a different body model from the fitter's file: its template is warped
with proportions that the fitter's 10 shape components cannot express (leg, arm and torso lengths,
hip and shoulder widths, each changed on its own), and its shape space is remixed by a random
rotation, so that the same betas mean another body. The joint regressor regresses the warped
template, so joint centres move with the surface as on a real person.

``landmarks`` gives what detectors and annotators mark: points on the surface, not joint centres.
Limb landmarks sit at fixed offsets in each joint's own frame (the canonical SMPL-X frame: x = the
body's left, y up, z forward), e.g. the greater trochanter beside and above the hip joint centre,
the acromion above the shoulder, the patella in front of the knee; face landmarks are the subject
model's face vertices.
"""

from __future__ import annotations

import dataclasses
import hashlib

import numpy as np

from motionkit.body.model_file import BodyModelFile
from motionkit.conventions import SMPLX_TO_COCO17

# Landmark offsets from the joint centre (metres, in the joint's frame, for the LEFT joint; the right
# one mirrors x). Order: COCO-17 limb joints 5..16 (shoulder, elbow, wrist, hip, knee, ankle).
LIMB_LANDMARK_OFFSETS = {
    "shoulder": (0.020, 0.035, -0.005),  # acromion: up and out
    "elbow": (0.010, 0.000, -0.025),  # olecranon side: back
    "wrist": (0.000, 0.010, 0.015),  # dorsal wrist
    "hip": (0.045, 0.035, 0.015),  # greater trochanter region: out, up, slightly forward
    "knee": (0.000, 0.000, 0.040),  # patella: forward
    "ankle": (0.020, 0.000, 0.000),  # malleolus: out
}
_COCO_PART = {5: "shoulder", 7: "elbow", 9: "wrist", 11: "hip", 13: "knee", 15: "ankle"}


def landmark_offsets(rng: np.random.Generator | None = None, variation: float = 0.25) -> np.ndarray:
    """``(17, 3)`` per-COCO-joint offsets in the joint frame (0 for the face), varied per subject by
    up to ``variation`` (relative, uniform) when ``rng`` is given."""
    out = np.zeros((17, 3))
    for j_left, part in _COCO_PART.items():
        o = np.array(LIMB_LANDMARK_OFFSETS[part])
        out[j_left] = o
        out[j_left + 1] = o * np.array([-1.0, 1.0, 1.0])
    if rng is not None:
        out *= 1 + rng.uniform(-variation, variation, (17, 3))
    return out


def landmarks(joints: np.ndarray, rotations: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """COCO-17 landmarks ``(F, 17, 3)`` from body output ``joints (F, 55 + K, 3)`` (K vertex keypoints,
    the face ones among them), world joint rotations ``rotations (F, 55, 3, 3)`` and ``offsets (17, 3)``."""
    centres = joints[:, SMPLX_TO_COCO17]
    frame_joint = np.where(SMPLX_TO_COCO17 < 55, SMPLX_TO_COCO17, 15)  # face: the head's frame (offset 0)
    return centres + np.einsum("fjab,jb->fja", rotations[:, frame_joint], offsets)


@dataclasses.dataclass(frozen=True)
class SubjectWarp:
    """Proportion changes of a subject model (factors, 1 = the fitter's template)."""

    leg_length: float
    arm_length: float
    torso_length: float
    hip_width: float
    shoulder_width: float

    @staticmethod
    def draw(rng: np.random.Generator, spread: float = 0.06) -> SubjectWarp:
        return SubjectWarp(*(1 + rng.uniform(-spread, spread, 5)))


def _warp_template(v: np.ndarray, J: np.ndarray, w: SubjectWarp) -> np.ndarray:
    """Piecewise-linear, continuous warp of template vertices ``(V, 3)`` (y up, x left) about the joints."""
    v = v.copy()
    hip_y, shoulder_y = J[1, 1], J[16, 1]
    shoulder_x = abs(J[16, 0])
    x, y = v[:, 0], v[:, 1]
    legs = y < hip_y
    torso = (y >= hip_y) & (y < shoulder_y)
    arms = np.abs(x) > shoulder_x
    # widths first (about the body's mid-plane), near the hips and the shoulders
    hip_band = np.clip(1 - np.abs(y - hip_y) / 0.25, 0, 1)
    shoulder_band = np.clip(1 - np.abs(y - shoulder_y) / 0.15, 0, 1) * ~arms
    x = x * (1 + (w.hip_width - 1) * hip_band + (w.shoulder_width - 1) * shoulder_band)
    # lengths: arms along x beyond the shoulder, legs below the hips, torso between
    sx = np.sign(x)
    x = np.where(arms, sx * (shoulder_x + (np.abs(x) - shoulder_x) * w.arm_length), x)
    y_new = np.where(legs, hip_y + (y - hip_y) * w.leg_length, y)
    y_new = np.where(torso, hip_y + (y - hip_y) * w.torso_length, y_new)
    above = y >= shoulder_y
    y_new = np.where(above, y + (shoulder_y - hip_y) * (w.torso_length - 1), y_new)
    v[:, 0], v[:, 1] = x, y_new
    return v


def subject_model(base: BodyModelFile, rng: np.random.Generator) -> tuple[BodyModelFile, dict]:
    """A body model for the people of a take, different from ``base`` (the fitter's): warped template
    and a rotated, rescaled shape space. Returns the model and its identity for the ground truth."""
    warp = SubjectWarp.draw(rng)
    J = base.J_regressor @ base.v_template
    v = _warp_template(base.v_template, J, warp)
    q, _ = np.linalg.qr(rng.normal(size=(10, 10)))
    mix = q * rng.uniform(0.8, 1.2, 10)[None, :]
    shapedirs = np.einsum("vcb,bk->vck", base.shapedirs, mix)
    digest = hashlib.sha256(np.ascontiguousarray(v).tobytes() + mix.tobytes()).hexdigest()
    model = dataclasses.replace(base, path="<subject model>", v_template=v, shapedirs=shapedirs, sha256=digest)
    identity = {
        "kind": "synthetic_subject",
        "derived_from": base.sha256,
        "sha256": digest,
        "warp": dataclasses.asdict(warp),
        "note": "the people's body model: differs from the fitting body (proportions and shape space)",
    }
    return model, identity
