"""Single source of truth for joint orders, index maps, axis frames and time grids.

Every other module imports its conventions from here; nothing else hard-codes a joint order.

Frames
------
* Ego-Exo4D world: metres, gravity aligned, **+z up** (``WORLD = "egoexo4d_zup"``).
* SMPL-X canonical body frame: **+y up, body facing +z, +x = the body's left**.
* Camera frame: x right, y down, z forward (OpenCV / projectaria).
* CPF (Aria central pupil frame): X = wearer's left, Y up, Z forward.
"""

from __future__ import annotations

import math

import numpy as np

WORLD = "egoexo4d_zup"
WORLD_UP_AXIS = 2  # the world's height coordinate (+z up)
TAKE_FPS = 30.0  # frame-aligned videos and annotation keys live on this grid
DEFAULT_FIT_FPS = 20.0

# ---------------------------------------------------------------------------------------------
# COCO-17 (Ego-Exo4D body annotation keys, hyphenated, lower case)
COCO17_NAMES: tuple[str, ...] = (
    "nose", "left-eye", "right-eye", "left-ear", "right-ear",
    "left-shoulder", "right-shoulder", "left-elbow", "right-elbow", "left-wrist", "right-wrist",
    "left-hip", "right-hip", "left-knee", "right-knee", "left-ankle", "right-ankle",
)  # fmt: skip
COCO17_INDEX = {n: i for i, n in enumerate(COCO17_NAMES)}
# left/right pairs (indices into COCO17_NAMES)
COCO17_LR_PAIRS: tuple[tuple[int, int], ...] = (
    (1, 2), (3, 4), (5, 6), (7, 8), (9, 10), (11, 12), (13, 14), (15, 16),
)  # fmt: skip
# the limbs' pairs (elbows, wrists, knees, ankles): the labels 2D detectors confuse most
COCO17_LIMB_LR_PAIRS: tuple[tuple[int, int], ...] = ((7, 8), (9, 10), (13, 14), (15, 16))
COCO17_LEFT = np.array([a for a, _ in COCO17_LR_PAIRS])  # the pairs' left members, in pair order
COCO17_RIGHT = np.array([b for _, b in COCO17_LR_PAIRS])
COCO17_FLIP = np.arange(17)
for _a, _b in COCO17_LR_PAIRS:
    COCO17_FLIP[_a], COCO17_FLIP[_b] = _b, _a
# COCO keypoint evaluation's per-keypoint sigmas (OKS): how far annotators scatter each keypoint, as a
# fraction of the person's scale; the face is pinned down ~4x tighter than the hips
COCO17_OKS_SIGMAS = np.array([0.26, 0.25, 0.25, 0.35, 0.35, 0.79, 0.79, 0.72, 0.72, 0.62, 0.62, 1.07, 1.07, 0.87,
                              0.87, 0.89, 0.89]) / 10.0  # fmt: skip
COCO17_FACE = (0, 1, 2, 3, 4)
COCO17_BODY = tuple(range(5, 17))  # shoulders .. ankles: the landmarks that are not on the face
COCO17_EARS = (3, 4)
COCO17_SHOULDERS = (5, 6)
COCO17_HIPS = (11, 12)
COCO17_ANKLES = (15, 16)  # the lowest landmarks: the fit keeps them above the floor (``objective.floor_penalty``)
# the landmarks by part of the body, for summaries of what a fit trusts
COCO17_PARTS: dict[str, tuple[int, ...]] = {"torso": (5, 6, 11, 12), "arms": (7, 8, 9, 10), "legs": (13, 14, 15, 16),
                                            "face": COCO17_FACE}  # fmt: skip
COCO17_LIMB_LANDMARKS = COCO17_PARTS["arms"] + COCO17_PARTS["legs"]  # elbows, wrists, knees, ankles
# limbs used for drawing; the first 12 (arms, legs, shoulders, hips, sides) for the shape initialisation
COCO17_LIMBS: tuple[tuple[int, int], ...] = (
    (5, 7), (7, 9), (6, 8), (8, 10), (11, 13), (13, 15), (12, 14), (14, 16),
    (5, 6), (11, 12), (5, 11), (6, 12), (0, 1), (0, 2), (1, 3), (2, 4),
)  # fmt: skip

# ---------------------------------------------------------------------------------------------
# SMPL-X: 55 kinematic joints (smplx/joint_names.py order) and the kinematic tree
SMPLX_JOINT_NAMES: tuple[str, ...] = (
    "pelvis", "left_hip", "right_hip", "spine1", "left_knee", "right_knee", "spine2",
    "left_ankle", "right_ankle", "spine3", "left_foot", "right_foot", "neck", "left_collar",
    "right_collar", "head", "left_shoulder", "right_shoulder", "left_elbow", "right_elbow",
    "left_wrist", "right_wrist", "jaw", "left_eye_smplhf", "right_eye_smplhf",
    "left_index1", "left_index2", "left_index3", "left_middle1", "left_middle2", "left_middle3",
    "left_pinky1", "left_pinky2", "left_pinky3", "left_ring1", "left_ring2", "left_ring3",
    "left_thumb1", "left_thumb2", "left_thumb3",
    "right_index1", "right_index2", "right_index3", "right_middle1", "right_middle2",
    "right_middle3", "right_pinky1", "right_pinky2", "right_pinky3", "right_ring1", "right_ring2",
    "right_ring3", "right_thumb1", "right_thumb2", "right_thumb3",
)  # fmt: skip
SMPLX_PARENTS = np.array(
    [-1, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 12, 13, 14, 16, 17, 18, 19, 15, 15, 15,
     20, 25, 26, 20, 28, 29, 20, 31, 32, 20, 34, 35, 20, 37, 38,
     21, 40, 41, 21, 43, 44, 21, 46, 47, 21, 49, 50, 21, 52, 53],
    dtype=np.int64,
)  # fmt: skip
SMPLX_NUM_JOINTS = 55
SMPLX_NUM_BODY_JOINTS = 21  # body_pose joints 1..21
SMPLX_NUM_BETAS = 10

# Vertex keypoints appended by smplx after the 55 joints (smplx/vertex_ids.py, "smplx" table), in
# the order smplx's VertexJointSelector appends them: face (5), feet (6), fingertips (10).
SMPLX_VERTEX_KEYPOINTS: tuple[tuple[str, int], ...] = (
    ("nose", 9120), ("right_eye", 9929), ("left_eye", 9448), ("right_ear", 616), ("left_ear", 6),
    ("left_big_toe", 5770), ("left_small_toe", 5780), ("left_heel", 8846),
    ("right_big_toe", 8463), ("right_small_toe", 8474), ("right_heel", 8635),
    ("left_thumb", 5361), ("left_index", 4933), ("left_middle", 5058), ("left_ring", 5169),
    ("left_pinky", 5286),
    ("right_thumb", 8079), ("right_index", 7669), ("right_middle", 7794), ("right_ring", 7905),
    ("right_pinky", 8022),
)  # fmt: skip
SMPLX_NUM_VERTICES = 10475
SMPLX_NUM_OUTPUT_JOINTS = SMPLX_NUM_JOINTS + len(SMPLX_VERTEX_KEYPOINTS)  # 76
# output rows of the foot vertex keypoints (toes and heels) in a full smplx output
SMPLX_FOOT_KEYPOINTS = tuple(
    SMPLX_NUM_JOINTS + i for i, (n, _) in enumerate(SMPLX_VERTEX_KEYPOINTS) if n.endswith(("toe", "heel"))
)

# SMPL-X output index of each COCO-17 joint, in COCO order
SMPLX_TO_COCO17 = np.array([55, 57, 56, 59, 58, 16, 17, 18, 19, 20, 21, 1, 2, 4, 5, 7, 8])
# the limbs as chains of SMPL-X joints from the body outward (legs, then arms), each with the COCO-17
# keypoints at those joints: what the pose initialisation swings into place
SMPLX_LIMB_CHAINS: tuple[tuple[int, int, int], ...] = tuple(
    tuple(SMPLX_JOINT_NAMES.index(f"{side}_{j}") for j in joints)
    for joints in (("hip", "knee", "ankle"), ("shoulder", "elbow", "wrist"))
    for side in ("left", "right")
)
COCO17_LIMB_CHAINS: tuple[tuple[int, int, int], ...] = tuple(
    tuple(int(np.flatnonzero(SMPLX_TO_COCO17 == j)[0]) for j in chain) for chain in SMPLX_LIMB_CHAINS
)
# Parent SMPL-X joint whose frame carries each COCO joint's convention offset (docs/pipeline.md, "evaluate")
COCO17_OFFSET_PARENT = np.array([15, 15, 15, 15, 15, 13, 14, 16, 17, 18, 19, 0, 0, 1, 2, 4, 5])


def _with_ancestors(joints) -> set[int]:
    out: set[int] = set()
    for j in joints:
        while j >= 0 and j not in out:
            out.add(int(j))
            j = int(SMPLX_PARENTS[j])
    return out


# the body joints (0-21) whose rotation moves a COCO-17 landmark (its offset parent or an ancestor of it);
# the others (ankles 7, 8, feet 10, 11, wrists 20, 21) only turn the feet and hands, which the keypoints do
# not see: the fit holds them at rest (a prior's mean, where Adam would let them wander)
COCO17_POSED_JOINTS = tuple(sorted(_with_ancestors(COCO17_OFFSET_PARENT)))
# torso joints used for the closed-form global alignment: SMPL-X (1, 2, 16, 17) <-> COCO (11, 12, 5, 6)
TORSO_SMPLX = np.array([1, 2, 16, 17])
TORSO_COCO17 = np.array([11, 12, 5, 6])

# 22 body joints used by HumanML3D (SMPL-X joints 0..21, same names and order)
HML_NUM_JOINTS = 22

# ---------------------------------------------------------------------------------------------
# Axis frames
#: z-up (Ego-Exo4D) -> y-up world. Rx(-90 deg): a rotation (det +1), never a reflection.
R_ZUP_TO_YUP = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])
#: SMPL-X canonical (y up, facing +z) -> z-up world facing +y: Rx(+90 deg)
R_YUP_TO_ZUP = R_ZUP_TO_YUP.T


def fit_grid_frames(n_take_frames: int, fps: float = DEFAULT_FIT_FPS) -> np.ndarray:
    """30 fps take-frame position (float) of each fit-grid sample ``m / fps`` inside the take.

    Returns ``(M,)`` float64 frame positions ``30 m / fps`` that do not pass the last frame.
    """
    if fps <= 0:
        raise ValueError(f"fps must be positive, got {fps}")
    last_t = (n_take_frames - 1) / TAKE_FPS
    m = np.arange(int(np.floor(last_t * fps + 1e-9)) + 1)
    return m * (TAKE_FPS / fps)


def nearest_take_frames(frame_pos: np.ndarray) -> np.ndarray:
    """Nearest 30 fps frame index for fit-grid positions (round half to even), ``(M,)`` int64."""
    return np.rint(frame_pos).astype(np.int64)


# joint limits of the fit (SMPLify's angle prior): (SMPL-X joint, axis, min, max) on the local axis-angle, radians
SMPLX_JOINT_LIMITS = ((4, 0, 0.0, math.inf), (5, 0, 0.0, math.inf), (18, 1, -math.inf, 0.0), (19, 1, 0.0, math.inf))

# bones whose direction the fit bounds (``BodyFitConfig.hinge_max_rad``, ``hip_extension_max_rad``):
# (SMPL-X joint, column, sign, axis): the child bone's rest direction is ``sign`` times the joint frame's
# ``column``-th axis (0 or 1: the columns the 6D rotation holds), and the bound is on its component along
# ``axis``. A knee bends about x with the shin along -y, an elbow about y with the forearm along +x (left)
# or -x (right) in the T pose: flexion and a twist about the child bone keep the bone in the plane normal
# to the axis, a sideways bend takes it out. A hip moves the thigh (rest along -y) forward (+z) in
# flexion, back in extension.
SMPLX_HINGES = ((4, 1, -1.0, 0), (5, 1, -1.0, 0), (18, 0, 1.0, 1), (19, 0, -1.0, 1))
SMPLX_HIPS = ((1, 1, -1.0, 2), (2, 1, -1.0, 2))


def eye_rows(names: tuple[str, ...]) -> tuple[int, int]:
    """The rows of the left and right eye in a ``BodyModel`` output ``(..., 55 + K, 3)`` whose vertex
    keypoints (they follow the 55 joints) are ``names``."""
    return SMPLX_NUM_JOINTS + names.index("left_eye"), SMPLX_NUM_JOINTS + names.index("right_eye")


def eye_midpoint(joints, names: tuple[str, ...]):
    """Midpoint ``(..., 3)`` of the vertex eyes of a ``BodyModel`` output ``joints (..., 55 + K, 3)`` whose
    vertex keypoints are ``names``."""
    left, right = eye_rows(tuple(names))
    return 0.5 * (joints[..., left, :] + joints[..., right, :])
