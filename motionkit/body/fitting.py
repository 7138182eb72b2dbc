"""Multi-view SMPL-X sequence fitting (docs/pipeline.md, "fit"): one optimisation per take, body shape
shared by the take, robust KB3 reprojection into every selected view, agreement with triangulated
joints, temporal smoothness in physical units, pose L2 plus joint limits, and a shape prior.

All frames of a window are optimised together on one device (float32); long takes are cut into
overlapping windows with the shape fitted first on a subsample and then frozen.

``fit_batch`` runs on one backend, a module of operators with one interface (``body.ops_torch``, the
reference, or ``body.ops_fused``, the C++/CUDA kernels; ``fit_backend``), in five steps:
``pack_problems`` (padding and stacking into a ``ProblemBatch``), the per-stage objective
(``stage_terms`` with ``stage_weights``), the optimiser loop (``optimise_stage``), the second pass
(``second_pass_drop``) and ``unpack``. The objective's maths: ``body.objective``; the starting point:
``body.initial``; the loop: ``body.optim``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from types import ModuleType

import numpy as np
import roma
import torch

from motionkit.body import ops_fused, ops_torch
from motionkit.body.initial import init_pose, init_shapes, smooth_in_time
from motionkit.body.model import BodyModel
from motionkit.body.multiscale import KnotBasis, knot_basis
from motionkit.body.objective import (
    JOINT_LIMITS,
    PRIOR_TERMS,
    HeadRows,
    ankle_floor,
    bone_ranges,
    floor_penalty,
    head_motion_index,
    head_motion_pairs,
    head_turn_index,
    head_turn_targets,
    reprojection_partners,
)
from motionkit.body.optim import lr_schedule, run_iterations
from motionkit.common.device import resolve_device
from motionkit.conventions import (
    COCO17_ANKLES,
    COCO17_BODY,
    COCO17_FLIP,
    COCO17_LIMB_LR_PAIRS,
    COCO17_OKS_SIGMAS,
    COCO17_POSED_JOINTS,
    SMPLX_NUM_JOINTS,
    SMPLX_TO_COCO17,
    TAKE_FPS,
    TORSO_COCO17,
    eye_midpoint,
    eye_rows,
)
from motionkit.geometry.fisheye import kb3_project_torch, theta_max_np
from motionkit.geometry.interpolation import blend_bracket, bracket, lerp, slerp_rotvec
from motionkit.geometry.refine import CameraRefineConfig, CameraRefinement, chain_refinements, refine_camera_poses
from motionkit.kernels import loader as kernel_loader

KERNEL_CHOICES = ("auto", "torch", "fused")
FACE_KEYPOINTS = ("nose", "right_eye", "left_eye", "right_ear", "left_ear")
__all__ = [
    "FACE_KEYPOINTS",
    "JOINT_LIMITS",
    "KERNEL_CHOICES",
    "BodyFitConfig",
    "FitInputs",
    "FitOutput",
    "coco_rows",
    "eye_midpoint",
    "fit_backend",
    "fit_batch",
    "fit_batch_calls",
    "fit_body_model",
    "fit_sequence",
    "fit_take",
    "fit_takes",
    "use_fused_kernels",
]


@dataclass
class BodyFitConfig:
    """Weights and schedule of the body fit (docs/pipeline.md, "fit"); defaults tuned on synthetic takes."""

    iters: tuple[int, int, int] = (100, 200, 150)  # stages A, B, C (Adam)
    lr: float = 0.02
    lr_final: float = 0.02  # each stage ends at this fraction of lr (half cosine) ...
    lr_decay_from: float = 0.3  # ... starting at this fraction of its iterations (converged ends: fits
    # that differ by float rounding agree to ~0.5 mm instead of ~2 mm, and are as accurate or better)
    adam_eps: float = 1e-8  # Adam's denominator floor (torch's default): a parameter whose gradient is far
    # below it moves in proportion to its gradient, above it by about one learning rate in its sign's
    # direction (docs/pipeline.md, "Adam's floor": 1e-5 and 1e-6 measured, neither adopted)
    sigma_px: float = 100.0
    w_rep: float = 1.0
    rep_reference_px: float = 640.0  # per problem, the reprojection term is scaled up by (this / the wearer's
    # median projected size)^2, clipped to 1 .. 16 (``reprojection_scale``); 0: off
    w_3d: tuple[float, float] = (0.1, 0.01)  # stages A-B, C
    w_smooth: float = 1e-4  # mean squared acceleration (m/s^2)^2 of the joints (3e-5 before time_levels) ...
    smooth_reference_m_s: float = 1.0  # ... per problem scaled by (this / the wearer's RMS speed)^4, clipped to
    # 1/4 .. 1 (``smoothness_scale``: a wearer who runs gets a weaker prior); 0: off
    w_orient_smooth: float = 1.0
    w_pose: float = 1e-5
    w_limits: float = 1.0
    w_bones: float = 0.0  # bone directions out of range (the ``bones`` prior term; 0: off, 1: on, docs/
    # pipeline.md "Knees and elbows bend one way"): a knee's shin or an elbow's forearm more than ...
    hinge_max_rad: float = 0.25  # ... this out of the plane it bends in (a knee's sideways play and an elbow's
    # carrying angle stay within it) ...
    hip_extension_max_rad: float = 0.6  # ... or a thigh more than this behind the hip (the synthetic world's
    # wearers reach 0.42, a person about 0.5)
    w_shape: float = 1e-5
    w_head: float = 0.1  # the fitted head's motion against the Aria head anchor's (``objective.head_motion``) ...
    head_lags: tuple[int, ...] = (1, 2, 4, 8)  # ... over these lags (grid frames) ...
    head_sigma_m: float = 0.05  # ... robust beyond this (m)
    w_head_turn: float = 0.1  # in the second pass rounds, the head's vectors (eyes, ears, nose) against the
    # Aria's orientation (``objective.head_turn_targets``: constant as the CPF sees them, that constant
    # taken from stage C's body, whose shape and landmarks set their lengths; no effect without second pass
    # rounds) ...
    head_turn_sigma_m: float = 0.05  # ... robust beyond this (m)
    w_floor: float = 0.1  # in the second pass rounds, ankles below the take's floor (``objective.floor_penalty``:
    # the ``floor_quantile`` of the heights of the ankles that two views keep after the round's drop, less
    # ``floor_margin_m``; 0: off) ...
    floor_quantile: float = 0.02
    floor_margin_m: float = 0.03
    floor_min_ankles: int = 20  # ... no floor where fewer ankles are seen by two views
    floor_sigma_m: float = 0.05  # ... robust beyond this depth below it (m)
    w_landmark: float = 1e-3  # prior on the take's landmark offsets (stage C; 0: joint centres, no offsets)
    landmark_sigma_m: float = 0.1  # ... sum of (offset / sigma)^2
    sigma_3d_m: float = 0.1
    time_levels: int = 9  # knots every 2 .. 2**time_levels frames under the body-joint rotations and the
    # translation (body/multiscale.py: Adam then corrects slow errors as fast as quick ones); 0: per frame only
    tri_smooth_s: float = 0.25  # Gaussian sigma (s) of the temporal smoothing of the triangulated joints
    second_pass_px: float = 30.0  # after stage C, drop observations farther than this from the fitted body ...
    second_pass_sigmas: float = 0.5  # ... and than this many of their COCO keypoint sigmas x the body's projected
    # size (a near body's hips are noisier than 30 px; 0: the fixed threshold alone)
    second_pass_sides: bool = True  # ... and those nearer their left/right counterpart's projection than their own
    second_pass_side_sigmas: float = 0.3  # ... limb labels only when also farther from their own than this many
    # of their COCO keypoint sigmas x the body's projected size (``SIDE_MARGIN_SIGMAS``: on a far or side-on
    # body both projections lie within the detector's noise, no contradiction then)
    second_pass_pairs: bool = True  # ... and then their left/right partners as well
    second_pass_view_frac: float = 0.05  # ... and every observation of the frame's view whose kept ones lie
    # farthest, on average more than this fraction of the body's projected size from it (a look-alike
    # selected in that view: his keypoints sit within 30 px of a far body's, but all of them off; 0: off)
    symmetric_limbs: bool = (
        True  # each view's limb pair costs the cheaper of its two labellings (objective.robust_reprojection)
    )
    symmetric_limbs_from: str = "C"  # from this stage on ("B", or "C": the pose first fits the labels as given)
    second_pass_iters: int = 100  # ... and re-run stage C for this many iterations (0: no second pass)
    second_pass_rounds: int = 2  # drop-and-refit rounds (the second finds what the first fit's errors hid)
    refine_cameras: bool = True  # then move each camera onto the fitted landmarks and fit again ...
    camera_refine_rounds: int = 2  # ... this many times (each one a whole refit) ...
    camera_refine_step: float = 2.0  # ... each round applying this multiple of the correction that the
    # refinement finds (the refit body follows the moved cameras part of the way, so plain rounds creep:
    # ``refine_camera_poses``' ``step``; 1: plain)
    camera_refine: CameraRefineConfig = CameraRefineConfig()
    window: int = 600
    overlap: int = 40
    max_batch_frames: int = 4800  # windows of long takes are fitted in batches of at most this many frames
    # (bounded memory for takes of any length; the problems of a batch are independent, so the result
    # does not depend on it: an execution option)
    device: str = "cpu"  # torch device, or "auto" (CUDA when available)
    kernels: str = "auto"  # "torch" (body.ops_torch), "fused" (body.ops_fused) or "auto" (fused when built)
    cuda_graphs: bool = True  # on CUDA with fused kernels, replay each stage's Adam iteration as a CUDA graph

    def __post_init__(self) -> None:
        if self.kernels not in KERNEL_CHOICES:
            raise ValueError(f"kernels must be one of {KERNEL_CHOICES}, not {self.kernels!r}")
        if self.symmetric_limbs_from not in ("B", "C"):
            raise ValueError(f"symmetric_limbs_from must be 'B' or 'C', not {self.symmetric_limbs_from!r}")


@dataclass
class FitInputs:
    """Everything the fit needs, on the fit grid of ``M`` frames at ``fps``.

    ``keypoints (M, V, 17, 2)`` raw pixels and ``weights (M, V, 17)`` (0 where unused; production builds
    them with ``pipeline.fit_inputs.build_fit_inputs``); ``obs_frame (M,)`` the 30 fps frame each
    observation comes from; ``tri (M, 17, 3)`` triangulated joints (NaN missing); camera ``params (V, 8)``
    and ``T_cam_world (V, 4, 4)``; ``head (M, 3)`` the Aria head anchor at the grid frames (world metres,
    NaN where unknown; None: no anchor), whose motion the head follows (``BodyFitConfig.w_head``);
    ``head_rotation (M, 3, 3)`` the anchor's orientation (world from CPF, NaN where unknown; None: none),
    which the head's turn follows (``BodyFitConfig.w_head_turn``).
    """

    fps: float
    keypoints: np.ndarray
    weights: np.ndarray
    obs_frame: np.ndarray
    tri: np.ndarray
    params: np.ndarray
    T_cam_world: np.ndarray
    t0_s: float = 0.0  # take time of grid frame 0 (windows of a long take start later)
    head: np.ndarray | None = None
    head_rotation: np.ndarray | None = None

    def __post_init__(self) -> None:
        M = len(self.keypoints)
        V = self.keypoints.shape[1] if self.keypoints.ndim == 4 else -1
        expected = {"keypoints": (M, V, 17, 2), "weights": (M, V, 17), "obs_frame": (M,), "tri": (M, 17, 3),
                    "params": (V, 8), "T_cam_world": (V, 4, 4)}  # fmt: skip
        if self.head is not None:
            expected["head"] = (M, 3)
        if self.head_rotation is not None:
            expected["head_rotation"] = (M, 3, 3)
        for name, shape in expected.items():
            got = np.shape(getattr(self, name))
            if got != shape:
                raise ValueError(f"FitInputs.{name} has shape {got}; expected {shape} (M frames, V views)")


@dataclass
class FitOutput:
    betas: np.ndarray  # (10,)
    global_orient: np.ndarray  # (M, 3) axis-angle, world z up
    body_pose: np.ndarray  # (M, 21, 3)
    transl: np.ndarray  # (M, 3)
    joints: np.ndarray  # (M, 55 + K, 3)
    reproj_px: np.ndarray  # (M, V) mean reprojection error of the used observations (NaN where none)
    obs_weight: np.ndarray | None = None  # (M, V, 17) final weight of every observation (0: unused or dropped)
    n_dropped: int = 0  # observations dropped by the second pass
    losses: dict = field(default_factory=dict)
    kp_delta: np.ndarray | None = None  # (L, 3) offsets of the body's joint landmarks (joint frames, metres)
    camera_refinement: CameraRefinement | None = None  # the cameras the fit used, when it refined them


# ------------------------------------------------------------------------------------------------ backends
def use_fused_kernels(kernels: str, device: torch.device) -> bool:
    """Whether the fit runs on the fused operators: never for ``"torch"``; for ``"auto"`` where they are
    built for ``device``; ``"fused"`` insists (``RuntimeError`` naming why they are missing)."""
    if kernels == "torch":
        return False
    ok = kernel_loader.available(device)
    if kernels == "fused" and not ok:
        why = kernel_loader.status(load=False)["error"] or f"no fused operators for {device.type}"
        raise RuntimeError(f"kernels='fused' requested but {why}; use kernels='torch' or 'auto'")
    return ok


def fit_backend(kernels: str, device: torch.device) -> ModuleType:
    """The operators the fit runs on (``body.ops_fused`` or ``body.ops_torch``, one interface), chosen by
    ``kernels`` as ``use_fused_kernels`` says."""
    return ops_fused if use_fused_kernels(kernels, device) else ops_torch


# ------------------------------------------------------------------------------------------------ packing
def _pad(a: np.ndarray, n: int, axis: int = 0) -> np.ndarray:
    """Pad ``a`` to length ``n`` along ``axis`` by repeating its last entry."""
    if a.shape[axis] == n:
        return a
    idx = np.minimum(np.arange(n), a.shape[axis] - 1)
    return np.take(a, idx, axis=axis)


def _pad_views(a: np.ndarray, V: int, fill) -> np.ndarray:
    """Pad the camera axis (axis 0) of ``a`` to ``V`` entries with ``fill``."""
    return a if a.shape[0] == V else np.concatenate([a, np.full((V - a.shape[0], *a.shape[1:]), fill)], 0)


def _obs_interp(fps: float, obs_frame: np.ndarray, M: int, t0_s: float = 0.0):
    """Observation time k/30 between fit grid frames ``t0 + m / fps``: indices ``(m0, m1)`` and weight ``w``
    of ``m1`` (``geometry.interpolation.bracket`` on the grid; held at its ends)."""
    b = bracket(np.arange(M, dtype=np.float64), (np.asarray(obs_frame, dtype=np.float64) / TAKE_FPS - t0_s) * fps)
    return b.i0, b.i1, b.w


MIN_SIZED_KEYPOINTS = 8  # a view-frame with this many used keypoints gives the wearer's projected size
REP_SCALE_CLIP = 16.0


def projected_size_px(keypoints: np.ndarray, weights: np.ndarray) -> float:
    """The wearer's median projected size (px): the diagonal of the box of the used keypoints
    (``weights > 0``) of ``keypoints (M, V, 17, 2)``, over the view-frames with at least
    ``MIN_SIZED_KEYPOINTS`` of them; NaN without any."""
    used = (np.asarray(weights) > 0) & np.isfinite(keypoints).all(-1)
    ok = used.sum(-1) >= MIN_SIZED_KEYPOINTS
    if not ok.any():
        return float("nan")
    k = np.where(used[..., None], keypoints, np.nan)[ok]  # (n, 17, 2)
    return float(np.median(np.linalg.norm(np.nanmax(k, 1) - np.nanmin(k, 1), axis=-1)))


def reprojection_scale(keypoints: np.ndarray, weights: np.ndarray, reference_px: float) -> float:
    """Factor of a problem's reprojection term: ``(reference_px / projected_size_px)^2``, clipped to
    ``1 .. REP_SCALE_CLIP``; 1 when ``reference_px`` is 0 or the size is unknown.

    The term is a mean of squared pixel errors, and the priors (smoothness in m/s^2, the 3D term in
    metres) were weighed against it for people about ``reference_px`` in size. The same error in metres
    covers ~4x fewer pixels on a person 4x farther away (court cameras 15 m off), so, unscaled, the
    priors would outweigh the images ~16x there and smooth fast motion away (a 20-s basketball take:
    PA-MPJPE 39 -> 23 mm). Larger people keep the factor 1: scaling their term down smoothed more and
    cost accuracy (18 -> 20 mm on a take with the wearer ~860 px tall)."""
    size = projected_size_px(keypoints, weights)
    if not reference_px or not np.isfinite(size) or size <= 0:
        return 1.0
    return float(np.clip((reference_px / size) ** 2, 1.0, REP_SCALE_CLIP))


SMOOTH_SCALE_MIN = 0.25
MIN_SPEED_SAMPLES = 20  # landmark-frames with a speed that a measurement needs


def body_speed_rms(tri: np.ndarray, fps: float) -> float:
    """RMS speed (m/s) of the body landmarks (COCO shoulders .. ankles) of ``tri (M, 17, 3)`` world
    metres (NaN missing) at ``fps``, over the landmark-frames seen in two consecutive frames; NaN with
    fewer than ``MIN_SPEED_SAMPLES`` of them."""
    x = np.asarray(tri, dtype=np.float64)[:, list(COCO17_BODY)]
    speed = np.linalg.norm(np.diff(x, axis=0), axis=-1).ravel() * fps
    speed = speed[np.isfinite(speed)]
    return float(np.sqrt(np.mean(speed**2))) if len(speed) >= MIN_SPEED_SAMPLES else float("nan")


def smoothness_scale(tri: np.ndarray, fps: float, reference_m_s: float) -> float:
    """Factor of a problem's acceleration term: ``(reference_m_s / body_speed_rms(tri, fps))^4``,
    clipped to ``SMOOTH_SCALE_MIN .. 1``; 1 when ``reference_m_s`` is 0 or the speed unknown.
    ``tri (M, 17, 3)``: the problem's triangulated landmarks after their smoothing in time.

    The term is a Gaussian prior on the joints' accelerations, and its weight suits wearers who cook,
    repair, play music, dance or walk (RMS speeds 0.1-1.0 m/s). The same movement played ``k`` times
    faster has ``k`` times the speeds and ``k^2`` the accelerations, so its prior should be ``k^4``
    times weaker: a wearer who runs, cuts and jumps on a court (1.05-1.8 m/s) otherwise has a fit that
    lags behind the quick moves (joints accelerating at 10-30 m/s^2 were more than 50 mm off 23 % of
    the time on 20-s basketball takes). The speed, not the acceleration, is measured: detector errors
    that persist over a few frames accelerate the triangulation as much as a quick movement does, but
    hardly move it. The factor never exceeds 1: a still wearer keeps the tuned weight."""
    if not reference_m_s:
        return 1.0
    speed = body_speed_rms(tri, fps)
    if not np.isfinite(speed) or speed <= 0:
        return 1.0
    return float(np.clip((reference_m_s / speed) ** 4, SMOOTH_SCALE_MIN, 1.0))


@dataclass
class ProblemBatch:
    """The problems of one ``fit_batch`` call, padded to the longest (``M`` frames, repeating the last)
    and to the most views (``V``), stacked on a leading problem axis ``P``, on the fit device (float32).

    ``kp (P, M, V, 17, 2)`` pixels and ``wt (P, M, V, 17)`` weights (0 on padding); ``frame_ok (P, M)``
    1 on real frames; ``tri (P, M, 17, 3)`` and ``tri_w (P, M, 17)``; cameras ``R_cw (P, V, 3, 3)``,
    ``t_cw (P, V, 3)``, ``params (P, V, 8)``, ``theta_max (P, V)``; each observation's time between grid
    frames ``m0``, ``m1 (P, M)`` with weight ``w1 (P, M, 1, 1)``; ``fps (P,)``; ``coco (17,)`` the body's
    output rows of the COCO keypoints; ``frames`` the real frames of each problem; the Aria head term's
    ``head_index`` (``objective.HeadRows``), ``head_delta`` and ``head_weight`` (``objective.head_motion``);
    the Aria's orientation ``head_rotation (P, M, 3, 3)`` (NaN where unknown and on padding), and the
    head-turn term's ``turn_index`` (``HeadRows``, M * 3 vectors), ``turn_target (P, M * 3, 3)`` and
    ``turn_weight (P, M * 3)``
    (``objective.head_turn_targets``: zero weight until ``set_head_turn`` at the end of stage C); the
    ankles' floor ``floor (P,)`` and its weights ``floor_weight (P, M, 2)`` (``set_floor``, before each
    second pass round; ``-inf``, no floor, until then) and the body's output rows of the ankles ``ankles``;
    ``bones`` the rows of the bone-range term (``objective.bone_ranges``; none where its weight is 0, so
    that neither backend computes a term that weighs nothing).
    """

    frames: list[int]
    kp: torch.Tensor
    wt: torch.Tensor
    frame_ok: torch.Tensor
    tri: torch.Tensor
    tri_w: torch.Tensor
    R_cw: torch.Tensor
    t_cw: torch.Tensor
    params: torch.Tensor
    theta_max: torch.Tensor
    m0: torch.Tensor
    m1: torch.Tensor
    w1: torch.Tensor
    fps: torch.Tensor
    coco: torch.Tensor
    rep_scale: torch.Tensor  # (P,) factor of each problem's reprojection term (``reprojection_scale``)
    smooth_scale: torch.Tensor  # (P,) factor of each problem's acceleration term (``smoothness_scale``)
    head_index: HeadRows  # (N, 4) the eye rows of frame pairs, (P, N, 3) the anchor's displacement over each
    head_delta: torch.Tensor  # and (P, N) their weights: what ``objective.head_motion`` compares
    head_weight: torch.Tensor
    head_rotation: torch.Tensor
    turn_index: HeadRows
    bones: tuple = ()
    turn_target: torch.Tensor = field(init=False)
    turn_weight: torch.Tensor = field(init=False)
    floor: torch.Tensor = field(init=False)  # (P,) the ankles' floor (``set_floor``; -inf: none)
    floor_weight: torch.Tensor = field(init=False)  # (P, M, 2) its weights: 1 where a view observes the ankle
    # made once, not per iteration: 1 - w1, the problem index (P, 1), a zero term (P, 1)
    w0: torch.Tensor = field(init=False)
    problem: torch.Tensor = field(init=False)
    ankles: torch.Tensor = field(init=False)  # (2,) the body's output rows of the ankles
    zero_term: torch.Tensor = field(init=False)

    def __post_init__(self) -> None:
        self.w0 = 1 - self.w1
        self.problem = torch.arange(self.kp.shape[0], device=self.kp.device)[:, None]
        self.ankles = self.coco[list(COCO17_ANKLES)]
        self.zero_term = self.kp.new_zeros(self.kp.shape[0], 1)
        self.turn_target = self.kp.new_zeros(self.P, len(self.turn_index), 3)
        self.turn_weight = self.kp.new_zeros(self.P, len(self.turn_index))
        self.floor = self.kp.new_full((self.P,), float("-inf"))
        self.floor_weight = self.kp.new_zeros(self.P, self.M, len(COCO17_ANKLES))

    @property
    def P(self) -> int:
        return self.kp.shape[0]

    @property
    def M(self) -> int:
        return self.kp.shape[1]

    def at_observations(self, J: torch.Tensor) -> torch.Tensor:
        """``(P, M, 17, 3)``: the body's COCO keypoints of ``J (P, M, 55 + K, 3)`` at each observation's
        time (linear between the grid frames around it)."""
        Jc = J[..., self.coco, :]
        return self.w0 * Jc[self.problem, self.m0] + self.w1 * Jc[self.problem, self.m1]


@dataclass
class FitVariables:
    """What Adam moves, and how it becomes a pose sequence. ``rot (P, M + knots, 22, 3, 2)``: 6D
    rotations (first two columns) of the root and the 21 body joints, the per-frame values then the
    coarse knots of ``basis`` (``body/multiscale.py``: Adam corrects slow errors as fast as quick ones;
    ``rot_weight`` keeps the root per-frame only, as knots spanning a turn swung it the wrong way round);
    ``transl (P, M + knots, 3)``; ``betas (P, 10)``; ``landmarks (P, L, 3)`` the joint landmarks' offsets,
    after ``vertex_pad (P, Kv, 3)`` zeros for the vertex keypoints (they do not move). The joints outside
    ``conventions.COCO17_POSED_JOINTS`` (the keypoints do not see them turn) have ``rot_weight`` 0, so they
    get no gradient, and read ``rest (22, 3, 2)``: the identity there, 0 elsewhere (``pose_sequence``)."""

    basis: KnotBasis
    rot: torch.Tensor
    rot_weight: torch.Tensor
    rest: torch.Tensor
    transl: torch.Tensor
    betas: torch.Tensor
    landmarks: torch.Tensor
    vertex_pad: torch.Tensor
    learn_betas: bool
    learn_landmarks: bool

    def stage_parameters(self, stage: int) -> list[torch.Tensor]:
        """The leaves stage ``stage`` (0, 1, 2 = A, B, C) optimises: shape and landmarks in C only."""
        if stage < 2:
            return [self.rot, self.transl]
        return [self.rot, self.transl] + ([self.betas] if self.learn_betas else []) + (
            [self.landmarks] if self.learn_landmarks else [])  # fmt: skip


def pack_problems(body: BodyModel, inputs: list[FitInputs], cfg: BodyFitConfig, device: torch.device,
                  betas: list[np.ndarray] | None = None,
                  kp_delta: list[np.ndarray] | None = None) -> tuple[ProblemBatch, FitVariables]:  # fmt: skip
    """Smooth each problem's triangulation in time, initialise shape and pose (``body.initial``), and
    pad and stack everything onto ``device`` (see ``ProblemBatch`` and ``FitVariables``)."""
    dt, dev = torch.float32, device
    Ms = [len(x.keypoints) for x in inputs]
    M, V, P = max(Ms), max(x.keypoints.shape[1] for x in inputs), len(inputs)
    # triangulated joints are noisy frame by frame (errors of the 2D detector that persist over a few
    # frames): smooth them in time before they initialise the pose and enter the 3D term
    inputs = [dataclasses.replace(x, tri=smooth_in_time(x.tri, cfg.tri_smooth_s * x.fps)) for x in inputs]
    smooth_scale = [smoothness_scale(x.tri, x.fps, cfg.smooth_reference_m_s) for x in inputs]
    b0 = init_shapes(body, [x.tri for x in inputs]) if betas is None else [np.asarray(b, np.float64) for b in betas]
    inits = [init_pose(body, b, x.tri) for b, x in zip(b0, inputs, strict=True)]

    def T(x):
        return torch.as_tensor(np.ascontiguousarray(x), dtype=dt, device=dev)

    def per_view(a):  # (m, v, ...) -> (M, V, ...): views padded with zeros, frames with the last
        return _pad(np.moveaxis(_pad_views(np.moveaxis(a, 1, 0), V, 0.0), 0, 1), M)

    frame_ok = np.stack([np.arange(M) < m for m in Ms]).astype(np.float32)
    kp = np.stack([per_view(np.nan_to_num(x.keypoints)) for x in inputs])
    wt = np.stack([per_view(np.where(np.isfinite(x.keypoints).all(-1), x.weights, 0.0)) for x in inputs])
    wt = wt * frame_ok[:, :, None, None]
    tri_np = np.stack([_pad(x.tri, M) for x in inputs])
    head_np = np.full((P, M, 3), np.nan)  # the anchor's position and orientation (NaN unknown, and on padding)
    rot_np = np.full((P, M, 3, 3), np.nan)
    for p, x in enumerate(inputs):
        if x.head is not None:
            head_np[p, : len(x.head)] = x.head
        if x.head_rotation is not None:
            rot_np[p, : len(x.head_rotation)] = x.head_rotation
    head_pairs, head_delta, head_weight = head_motion_pairs(head_np, cfg.head_lags)
    eyes = eye_rows(body.vertex_keypoint_names)  # the fit's bodies carry the face (``coco_rows``)
    Tcw = T(np.stack([np.concatenate([x.T_cam_world, np.tile(np.eye(4), (V - len(x.T_cam_world), 1, 1))])
                      for x in inputs]))  # fmt: skip
    params = T(np.stack([np.concatenate([x.params, np.tile(x.params[:1], (V - len(x.params), 1))]) for x in inputs]))
    interp = [_obs_interp(x.fps, x.obs_frame, m, x.t0_s) for x, m in zip(inputs, Ms, strict=True)]
    batch = ProblemBatch(
        frames=Ms,
        kp=T(kp),
        wt=T(wt),
        frame_ok=T(frame_ok),
        tri=T(np.nan_to_num(tri_np)),
        tri_w=T(np.isfinite(tri_np).all(-1) * frame_ok[:, :, None]),
        R_cw=Tcw[..., :3, :3].contiguous(),
        t_cw=Tcw[..., :3, 3].contiguous(),
        params=params,
        theta_max=T(theta_max_np(params.cpu().double().numpy())),  # once: no host sync per iteration
        m0=torch.as_tensor(np.stack([_pad(a[0], M) for a in interp]), device=dev),
        m1=torch.as_tensor(np.stack([_pad(a[1], M) for a in interp]), device=dev),
        w1=T(np.stack([_pad(a[2], M) for a in interp]))[..., None, None],
        fps=torch.as_tensor([x.fps for x in inputs], dtype=dt, device=dev),
        coco=torch.as_tensor(coco_rows(body), device=dev),
        rep_scale=T([reprojection_scale(x.keypoints, x.weights, cfg.rep_reference_px) for x in inputs]),
        smooth_scale=T(smooth_scale),
        head_index=HeadRows(
            torch.as_tensor(head_motion_index(head_pairs, eyes, body.num_outputs), device=dev), M * body.num_outputs
        ),
        head_delta=T(head_delta),
        head_weight=T(head_weight),
        head_rotation=T(rot_np),
        turn_index=HeadRows(
            torch.as_tensor(head_turn_index(coco_rows(body), M, body.num_outputs), device=dev), M * body.num_outputs
        ),
        bones=bone_ranges(cfg.hinge_max_rad, cfg.hip_extension_max_rad) if cfg.w_bones else (),
    )
    R0 = np.concatenate(
        [np.stack([_pad(r[0], M) for r in inits])[:, :, None], np.stack([_pad(r[1], M) for r in inits])], 2
    )
    basis = knot_basis(M, cfg.time_levels, device=dev, dtype=dt)
    root = (torch.arange(22, device=dev) == 0)[:, None, None].expand(22, 3, 2)
    posed = torch.zeros(22, 1, 1, dtype=dt, device=dev)
    posed[list(COCO17_POSED_JOINTS)] = 1.0
    L = len(body.joint_landmarks)
    learn_landmarks = L > 0 and cfg.w_landmark > 0 and kp_delta is None
    # no view of a leaf may outlive an iteration: it would keep the leaf's gradient accumulator (made on
    # the stream of its first use) alive, and a CUDA graph captured on another stream fails on it
    variables = FitVariables(
        basis=basis,
        rot=basis.parameters(T(R0[..., :2])).requires_grad_(True),
        rot_weight=(basis.frozen_weights(root) * posed).contiguous(),  # (M, E, 22, 3, 2)
        rest=((1 - posed) * torch.eye(3, 2, dtype=dt, device=dev)).contiguous(),
        transl=basis.parameters(T(np.stack([_pad(r[2], M) for r in inits]))).requires_grad_(True),
        betas=T(np.stack(b0)).clone().requires_grad_(betas is None),
        landmarks=T(np.stack(kp_delta) if kp_delta is not None else np.zeros((P, L, 3)))
        .clone()
        .requires_grad_(learn_landmarks),
        vertex_pad=torch.zeros(P, len(body.vertex_keypoint_names), 3, dtype=dt, device=dev),
        learn_betas=betas is None,
        learn_landmarks=learn_landmarks,
    )
    return batch, variables


# ------------------------------------------------------------------------------------------------ objective
def pose_sequence(ops: ModuleType, v: FitVariables) -> tuple[torch.Tensor, torch.Tensor]:
    """The 6D rotations ``(P, M, 22, 3, 2)`` and translations ``(P, M, 3)`` the body takes (the joints the
    keypoints do not see at rest)."""
    return ops.knot_sequence(v.rot, v.basis, v.rot_weight) + v.rest, ops.knot_sequence(v.transl, v.basis)


def posed_joints(ops: ModuleType, body: BodyModel, v: FitVariables, r: torch.Tensor, tr: torch.Tensor,
                 stage: int = 2) -> torch.Tensor:  # fmt: skip
    """``(P, M, 55 + K, 3)`` posed joints and landmarks; the landmark offsets are learned in stage C
    only (constant before)."""
    if v.landmarks.shape[1]:
        delta = torch.cat([v.vertex_pad, v.landmarks if stage >= 2 else v.landmarks.detach()], 1)
    else:
        delta = v.vertex_pad
    return ops.body_joints(r, v.betas, tr, body, delta)


def term_names(v: FitVariables) -> tuple[str, ...]:
    """The objective's terms, in the order of ``stage_terms``'s columns."""
    names = ("rep",) + PRIOR_TERMS + ("shape", "head", "head_turn", "floor")
    return names + (("landmarks",) if v.learn_landmarks else ())


def stage_weights(cfg: BodyFitConfig, stage: int, v: FitVariables, n_frames: int) -> dict[str, float]:
    """Weight of each term (``term_names``) in stage ``stage`` (0, 1, 2 = A, B, C): A fits the root to the
    triangulated torso, B adds the reprojection and the pose priors, C the shape and landmarks."""
    w = dict.fromkeys(term_names(v), 0.0)
    w["3d"] = cfg.w_3d[0] if stage < 2 else cfg.w_3d[1]
    if n_frames >= 3:
        w["smooth"], w["orient"] = cfg.w_smooth, cfg.w_orient_smooth
    if stage >= 1:
        w["rep"], w["pose"], w["limits"], w["head"] = cfg.w_rep, cfg.w_pose, cfg.w_limits, cfg.w_head
        w["bones"] = cfg.w_bones
    if stage >= 2:  # the head's turn from the Aria: its targets weigh nothing before ``set_head_turn``
        w["head_turn"], w["floor"] = cfg.w_head_turn, cfg.w_floor
    if stage >= 2 and v.learn_betas:
        w["shape"] = cfg.w_shape
    if stage >= 2 and v.learn_landmarks:
        w["landmarks"] = cfg.w_landmark
    return w


def stage_terms(ops: ModuleType, body: BodyModel, batch: ProblemBatch, v: FitVariables, cfg: BodyFitConfig,
                stage: int, tri_w: torch.Tensor, partner: torch.Tensor) -> torch.Tensor:  # fmt: skip
    """``(P, len(term_names))`` unweighted terms of stage ``stage``: the reprojection (stages B and C, with
    the interchangeable pairs ``partner``), the prior terms (3D agreement with weights ``tri_w``), the
    shape L2, the Aria head terms (its motion, weighted from stage B; its turn, computed in stage C only),
    the ankles' floor (stage C, once ``set_floor`` has found one) and the landmarks' prior."""
    r, tr = pose_sequence(ops, v)
    J = posed_joints(ops, body, v, r, tr, stage)
    if stage >= 1:
        rep = ops.robust_reprojection(batch.at_observations(J), batch.R_cw, batch.t_cw, batch.params,
                                      batch.theta_max, batch.kp, batch.wt, cfg.sigma_px, partner)  # fmt: skip
    else:
        rep = J.new_zeros(batch.P)
    pri = ops.prior_terms(J, batch.coco, batch.tri, tri_w, batch.frame_ok, batch.fps, r,
                          ops.rot6d_to_rotvec(r)[:, :, 1:], cfg.sigma_3d_m, bones=batch.bones)  # fmt: skip
    head = ops.head_motion(J, batch.head_index, batch.head_delta, batch.head_weight, cfg.head_sigma_m)
    if stage >= 2:  # the head's turn: no targets before the end of stage C (``set_head_turn``)
        turn = ops.head_motion(J, batch.turn_index, batch.turn_target, batch.turn_weight, cfg.head_turn_sigma_m)
    else:
        turn = batch.zero_term
    if stage >= 2 and cfg.w_floor:  # the ankles' floor: none before the second pass rounds (``set_floor``)
        floor = floor_penalty(J[:, :, batch.ankles], batch.floor, batch.floor_weight, cfg.floor_sigma_m)
    else:
        floor = batch.zero_term
    terms = [rep[:, None], pri, (v.betas**2).sum(-1, keepdim=True), head, turn, floor]
    if v.learn_landmarks:
        if stage >= 2:
            terms.append((v.landmarks**2).sum((1, 2))[:, None] / cfg.landmark_sigma_m**2)
        else:
            terms.append(batch.zero_term)
    return torch.cat(terms, 1)


# ------------------------------------------------------------------------------------------------ optimiser
def optimise_stage(ops: ModuleType, body: BodyModel, batch: ProblemBatch, v: FitVariables, cfg: BodyFitConfig,
                   stage: int, n_it: int, partner: torch.Tensor, progress=None) -> dict[str, np.ndarray]:  # fmt: skip
    """``n_it`` Adam iterations of stage ``stage``; the weighted terms ``(P,)`` at the last one, by name
    (the terms with weight only)."""
    dev, dt = batch.kp.device, batch.kp.dtype
    graphs = ops.CUDA_GRAPHS and cfg.cuda_graphs and dev.type == "cuda"
    opt = ops.adam(v.stage_parameters(stage), cfg.lr, cfg.adam_eps, capturable=graphs)
    names = term_names(v)
    by_name = stage_weights(cfg, stage, v, batch.M)
    weights = torch.tensor([by_name[n] for n in names], dtype=dt, device=dev).repeat(batch.P, 1)  # (P, terms)
    weights[:, names.index("rep")] *= batch.rep_scale
    weights[:, names.index("smooth")] *= batch.smooth_scale
    tri_w = batch.tri_w
    if stage == 0:  # stage A: the torso only
        torso_mask = torch.zeros(len(SMPLX_TO_COCO17), dtype=dt, device=dev)
        torso_mask[torch.as_tensor(TORSO_COCO17, device=dev)] = 1
        tri_w = tri_w * torso_mask

    def step() -> torch.Tensor:
        terms = stage_terms(ops, body, batch, v, cfg, stage, tri_w, partner)
        opt.zero_grad(set_to_none=True)
        (terms * weights).sum().backward()
        if stage == 0:  # stage A moves the root only: the body joints' rotations get no update
            v.rot.grad[:, :, 1:] = 0
        opt.step()
        return terms.detach()  # (not the graph: see FitVariables)

    lr_at = lr_schedule(cfg.lr, n_it, cfg.lr_final, cfg.lr_decay_from)
    terms = run_iterations(step, n_it, graphs, opt, progress, lr_at)
    weighted = (terms.detach() * weights).cpu().numpy()
    return {name: weighted[:, i] for i, name in enumerate(names) if by_name[name] != 0}


def body_projection(ops: ModuleType, body: BodyModel, batch: ProblemBatch,
                    v: FitVariables) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """``(P, M, V, 17, 2)`` the current body's COCO keypoints in every view, and the joints
    ``(P, M, 55 + K, 3)``."""
    J = posed_joints(ops, body, v, *pose_sequence(ops, v))
    Jo = batch.at_observations(J)
    # R X + t element by element (not a batched matmul, whose blocking depends on the batch's shape):
    # the second pass's drop decisions must not depend on what else is in the batch
    pc = (batch.R_cw[:, None, :, None] * Jo[:, :, None, :, None, :]).sum(-1) + batch.t_cw[:, None, :, None]
    return kb3_project_torch(pc, batch.params[:, None, :, None, :]), J


# the side check's noise margin, per keypoint: the COCO sigmas of the limb labels (elbows, wrists, knees,
# ankles), which the objective may swap anyway (``symmetric_limbs``); none for the face, shoulders and hips,
# whose labels fix the body's facing (a swap kept there turned a clean take's torso, render IoU 0.82 -> 0.77)
SIDE_MARGIN_SIGMAS = np.where(np.isin(np.arange(17), np.ravel(COCO17_LIMB_LR_PAIRS)), COCO17_OKS_SIGMAS, 0.0)


VIEW_TEST_MIN_KEPT = 3  # the view test judges views with at least this many kept observations


def second_pass_drop(uv: torch.Tensor, kp: torch.Tensor, wt: torch.Tensor, cfg: BodyFitConfig) -> torch.Tensor:
    """``(P, M, V, 17)`` bool: the used observations (``wt > 0``) that disagree with the fitted body's
    projection ``uv``: farther than ``cfg.second_pass_px`` and than ``cfg.second_pass_sigmas`` x their
    COCO keypoint sigma x the body's projected size (the diagonal of its keypoints' box in that view:
    the detector's noise grows with the body), or (``second_pass_sides``) nearer their
    left/right counterpart's projection than their own and, for the limb labels, farther from their
    own than ``second_pass_side_sigmas`` x their COCO keypoint sigma (``SIDE_MARGIN_SIGMAS``) x the
    body's projected size, and then (``second_pass_pairs``) their partners where those lie nearer their
    own counterpart's projection too; finally (``second_pass_view_frac``)
    all of a view's observations in a frame where those still kept (``VIEW_TEST_MIN_KEPT`` or more) lie on
    average farther than that fraction of the body's projected size from it, the farthest such view of a
    frame only (the refit body judges the others): a look-alike selected in that view, whose keypoints
    each sit within the fixed threshold of a far body's projection."""
    e = ((uv - kp) ** 2).sum(-1).sqrt()
    used = wt > 0
    size = ((uv.amax(-2) - uv.amin(-2)) ** 2).sum(-1).sqrt()[..., None]  # (P, M, V, 1) px
    sigmas = torch.as_tensor(COCO17_OKS_SIGMAS, dtype=uv.dtype, device=uv.device)
    far = (cfg.second_pass_sigmas * sigmas * size).nan_to_num(0.0).clamp_min(cfg.second_pass_px)  # (P, M, V, 17)
    drop = used & ~(e <= far)
    if cfg.second_pass_sides:  # a left/right label the fitted body contradicts
        flip = torch.as_tensor(COCO17_FLIP, device=uv.device)  # each keypoint's counterpart (itself: nose)
        has_side = flip != torch.arange(len(COCO17_FLIP), device=uv.device)
        e_other = ((uv[..., flip, :] - kp) ** 2).sum(-1).sqrt()
        margin = cfg.second_pass_side_sigmas * torch.as_tensor(SIDE_MARGIN_SIGMAS, dtype=uv.dtype, device=uv.device)
        nearer_other = used & has_side & (e_other < e)
        contradicted = nearer_other & (e > margin * size)
        if cfg.second_pass_pairs:  # a swap moves both labels of a pair: its partner goes too, where it lies
            # nearer the other projection as well (within the margin); a partner on its own side stays (a
            # guessed far eye of a profile lands on either side of the clean near one)
            contradicted |= nearer_other & contradicted[..., flip]
        drop |= contradicted
    if cfg.second_pass_view_frac:  # a view whose kept observations all sit off the body: another person
        kept = used & ~drop
        n_kept = kept.sum(-1)
        mean_e = torch.where(kept, e, 0).sum(-1) / n_kept.clamp_min(1)
        ratio = torch.where(n_kept >= VIEW_TEST_MIN_KEPT, mean_e / size[..., 0], 0.0).nan_to_num(0.0)  # (P, M, V)
        worst = ratio >= ratio.amax(-1, keepdim=True)  # one view a frame per round: the next fit judges the rest
        drop |= used & (worst & (ratio > cfg.second_pass_view_frac))[..., None]
    return drop


# ------------------------------------------------------------------------------------------------ the fit
def fit_sequence(body: BodyModel, inp: FitInputs, cfg: BodyFitConfig | None = None, betas: np.ndarray | None = None,
                 progress=None) -> FitOutput:  # fmt: skip
    """Fit one SMPL-X sequence (one take or window) to multi-view keypoints; see ``fit_batch``."""
    return fit_batch(body, [inp], cfg, None if betas is None else [betas], progress)[0]


def fit_batch(body: BodyModel, inputs: list[FitInputs], cfg: BodyFitConfig | None = None,
              betas: list[np.ndarray] | None = None, progress=None,
              kp_delta: list[np.ndarray] | None = None) -> list[FitOutput]:  # fmt: skip
    """Fit several independent sequences at once (stacked on a leading problem axis, padded to the
    longest one and to the most views): every loss is computed per problem and then summed, so with
    Adam's per-parameter updates the problems stay independent, while a GPU sees one large batch.

    ``betas``: fixed shapes, one per problem (long takes fit it first); otherwise initialised from
    limb lengths and optimised in stage C. ``progress``: optional callable(int), once per iteration.
    ``kp_delta``: with ``betas``, the problems' fixed landmark offsets ``(L, 3)`` (``FitOutput.kp_delta``).

    The COCO keypoints are the body's rows ``coco_rows(body)``: with a ``fit_body_model`` the limb
    keypoints are joint landmarks whose offsets from the joint centres (in the joints' frames, one set
    per take) are learned in stage C with the prior ``w_landmark * sum (offset / landmark_sigma_m)^2``:
    detectors and annotators mark points on the surface (the trochanter beside and above the hip
    joint, the patella in front of the knee), not joint centres.
    """
    cfg = cfg or BodyFitConfig()
    dev = resolve_device(cfg.device)
    ops = fit_backend(cfg.kernels, dev)
    body = body.to(dev)
    batch, v = pack_problems(body, inputs, cfg, dev, betas, kp_delta)
    # each COCO keypoint's interchangeable counterpart (-1 for none) from stage `symmetric_limbs_from` on;
    # before it, the labels as given
    pairs = COCO17_LIMB_LR_PAIRS if cfg.symmetric_limbs else ()
    symmetric = torch.as_tensor(reprojection_partners(pairs, len(batch.coco)), device=dev)
    as_labelled = torch.as_tensor(reprojection_partners((), len(batch.coco)), device=dev)
    first_symmetric = "ABC".index(cfg.symmetric_limbs_from) if pairs else len(cfg.iters)

    def run(stage: int, n_it: int) -> dict:
        partner = symmetric if stage >= first_symmetric else as_labelled
        return optimise_stage(ops, body, batch, v, cfg, stage, n_it, partner, progress)

    history = {f"stage_{'ABC'[s]}": run(s, n) for s, n in enumerate(cfg.iters) if n}
    set_head_turn(ops, body, batch, v)  # from stage C's body (its shape and landmarks): the second passes turn the head
    n_dropped = torch.zeros(batch.P, dtype=torch.int64, device=dev)
    for k in range(cfg.second_pass_rounds if cfg.second_pass_px and cfg.second_pass_iters else 0):
        with torch.no_grad():  # drop what disagrees with the fitted body, re-run stage C
            uv, J = body_projection(ops, body, batch, v)
            drop = second_pass_drop(uv, batch.kp, batch.wt, cfg)
            n_dropped = n_dropped + drop.sum((1, 2, 3))
            batch.wt = torch.where(drop, torch.zeros_like(batch.wt), batch.wt)
            set_floor(batch, J, cfg)  # from what the drop kept: the ankles stay above the well-seen ones' floor
        history["second_pass" + (f"_{k + 1}" if k else "")] = run(2, cfg.second_pass_iters)
    return unpack(ops, body, batch, v, inputs, history, n_dropped)


def set_head_turn(ops: ModuleType, body: BodyModel, batch: ProblemBatch, v: FitVariables) -> None:
    """The head-turn term's targets and weights (``objective.head_turn_targets``) from the current body
    (the end of stage C), in place (a CUDA graph captured later reads the same tensors)."""
    with torch.no_grad():
        J = posed_joints(ops, body, v, *pose_sequence(ops, v))
        target, weight = head_turn_targets(J, batch.turn_index, batch.head_rotation)
        batch.turn_target.copy_(target)
        batch.turn_weight.copy_(weight)


def set_floor(batch: ProblemBatch, J: torch.Tensor, cfg: BodyFitConfig) -> None:
    """The ankles' floor (``objective.ankle_floor``) of the current body ``J (P, M, 55 + K, 3)`` from the
    ankles that two or more views keep an observation of, in place: before each second pass round, after
    its drop (before it, a hidden ankle may still keep a second view's wrong keypoint)."""
    views = (batch.wt[..., list(COCO17_ANKLES)] > 0).sum(2)  # (P, M, 2) views keeping an observation
    floor = ankle_floor(J[:, :, batch.ankles], views >= 2, cfg.floor_quantile, cfg.floor_margin_m, cfg.floor_min_ankles)
    batch.floor.copy_(floor)
    batch.floor_weight.copy_(views >= 1)


def unpack(ops: ModuleType, body: BodyModel, batch: ProblemBatch, v: FitVariables, inputs: list[FitInputs],
           history: dict, n_dropped: torch.Tensor) -> list[FitOutput]:  # fmt: skip
    """One ``FitOutput`` per problem, cut back to its own frames and views (float64 on the host)."""
    with torch.no_grad():
        uv, J = body_projection(ops, body, batch, v)
        e = ((uv - batch.kp) ** 2).sum(-1).sqrt()
        used = batch.wt > 0
        reproj = torch.where(used.any(-1), (torch.where(used, e, 0).sum(-1) / used.sum(-1).clamp_min(1)), float("nan"))
        rot, transl = pose_sequence(ops, v)
        rv = roma.rotmat_to_rotvec(roma.special_gramschmidt(rot)).cpu().double().numpy()  # (P, M, 22, 3)
        wt = batch.wt.cpu().double().numpy()

    def host(x: torch.Tensor) -> np.ndarray:
        return x.detach().cpu().double().numpy()

    outs = []
    for k, (x, m) in enumerate(zip(inputs, batch.frames, strict=True)):
        nv = x.keypoints.shape[1]
        outs.append(FitOutput(
            betas=host(v.betas[k]), global_orient=rv[k, :m, 0], body_pose=rv[k, :m, 1:], transl=host(transl[k, :m]),
            joints=host(J[k, :m]), reproj_px=host(reproj[k, :m, :nv]), obs_weight=wt[k, :m, :nv],
            n_dropped=int(n_dropped[k]),
            losses={st: {n: float(val[k]) for n, val in terms.items()} for st, terms in history.items()},
            kp_delta=host(v.landmarks[k]),
        ))  # fmt: skip
    return outs


# the SMPL-X joints whose landmarks are the COCO limb keypoints (shoulders .. ankles) in a fit body model
FIT_JOINT_LANDMARKS = tuple(int(j) for j in SMPLX_TO_COCO17[5:])


def fit_body_model(path=None, dtype: torch.dtype = torch.float32) -> BodyModel:
    """The body model the fit uses: SMPL-X joints, the face vertex keypoints and a landmark attached to
    each COCO limb joint (``FIT_JOINT_LANDMARKS``), whose offsets each take learns."""
    return BodyModel.load(path, vertex_keypoints=FACE_KEYPOINTS, joint_landmarks=FIT_JOINT_LANDMARKS, dtype=dtype)


def coco_rows(body: BodyModel) -> np.ndarray:
    """``(17,)`` rows of ``body``'s output holding the COCO-17 keypoints: the face vertex keypoints, and
    for the limbs the joint landmarks where the body has them, else the joint centres."""
    rows = SMPLX_TO_COCO17.copy()
    base = SMPLX_NUM_JOINTS + len(body.vertex_keypoint_names)
    for c in range(5, 17):
        if int(SMPLX_TO_COCO17[c]) in body.joint_landmarks:
            rows[c] = base + body.joint_landmarks.index(int(SMPLX_TO_COCO17[c]))
    return rows


def coco_landmark_offsets(body: BodyModel, kp_delta: np.ndarray | None) -> np.ndarray:
    """``(17, 3)``: the learned offset (``FitOutput.kp_delta``, joint frames, metres) of each COCO
    keypoint that is one of ``body``'s joint landmarks; 0 elsewhere (face, joint centres)."""
    off = np.zeros((17, 3))
    if kp_delta is not None:
        rows = coco_rows(body) - SMPLX_NUM_JOINTS - len(body.vertex_keypoint_names)  # landmark index, or < 0
        off[rows >= 0] = np.asarray(kp_delta)[rows[rows >= 0]]
    return off


def _slice_inputs(inp: FitInputs, start: int, stop: int, step: int = 1) -> FitInputs:
    """Grid frames ``start:stop:step`` of the inputs, with their own time origin and rate."""
    idx = np.arange(start, stop, step)
    return FitInputs(inp.fps / step, inp.keypoints[idx], inp.weights[idx], inp.obs_frame[idx], inp.tri[idx],
                     inp.params, inp.T_cam_world, inp.t0_s + start / inp.fps,
                     None if inp.head is None else inp.head[idx],
                     None if inp.head_rotation is None else inp.head_rotation[idx])  # fmt: skip


def fit_take(body: BodyModel, inp: FitInputs, cfg: BodyFitConfig | None = None, progress=None) -> FitOutput:
    """Fit a whole take: one window, or (longer than ``cfg.window`` frames) the shape first on every
    10th frame, then overlapping windows with that shape frozen, cross-faded in the overlaps
    (linear for translation and joints, SLERP for rotations). See ``fit_takes``."""
    return fit_takes(body, [inp], cfg, progress)[0]


def _windows(M: int, cfg: BodyFitConfig) -> list[tuple[int, int]]:
    """``(start, stop)`` grid frames of the overlapping windows of a take of ``M > cfg.window`` frames."""
    out = []
    for s in range(0, M - cfg.overlap, cfg.window - cfg.overlap):
        e = min(s + cfg.window, M)
        out.append((s, e))
        if e == M:
            break
    return out


def window_batches(jobs: list[tuple[int, int, int]], max_frames: int) -> list[list[tuple[int, int, int]]]:
    """Consecutive groups of window jobs ``(take, start, stop)`` of at most ``max_frames`` frames each
    (at least one window per group)."""
    groups, size = [], 0
    for job in jobs:
        n = job[2] - job[1]
        if not groups or size + n > max_frames:
            groups.append([])
            size = 0
        groups[-1].append(job)
        size += n
    return groups


def fit_batch_calls(lengths: list[int], cfg: BodyFitConfig) -> int:
    """``fit_batch`` calls of one ``fit_takes`` pass over takes of ``lengths`` grid frames: one for the
    short takes and the long takes' shapes, then one per batch of long-take windows."""
    jobs = [(k, s, e) for k, M in enumerate(lengths) if M > cfg.window for s, e in _windows(M, cfg)]
    return 1 + len(window_batches(jobs, cfg.max_batch_frames))


def fit_takes(body: BodyModel, inputs: list[FitInputs], cfg: BodyFitConfig | None = None,
              progress=None) -> list[FitOutput]:  # fmt: skip
    """Fit several takes on one device with at most two ``fit_batch`` calls: first every short take
    (``<= cfg.window`` frames) together with the shape problems of the long ones (every 10th frame),
    then all windows of all long takes with their shapes frozen. Each take's result equals fitting it
    alone with ``fit_take`` (the problems of a batch are independent).

    With ``cfg.refine_cameras``, each take's cameras are then moved onto its fitted landmarks
    (``refine_camera_poses``, with the fit's final observation weights) and the takes are fitted again
    through them, ``cfg.camera_refine_rounds`` times, each round stepping ``cfg.camera_refine_step`` times
    the correction found (over-relaxed: the refit body absorbs part of each correction);
    ``FitOutput.camera_refinement`` holds the cameras used and their change from the calibration."""
    cfg = cfg or BodyFitConfig()
    outs = _fit_takes_once(body, inputs, cfg, progress)
    rounds = cfg.camera_refine_rounds if cfg.refine_cameras else 0
    if not rounds:
        return outs
    rows = coco_rows(body)
    calibrated = [x.T_cam_world for x in inputs]
    history = [[] for _ in inputs]
    for _ in range(rounds):
        for k, (x, o) in enumerate(zip(inputs, outs, strict=True)):
            landmarks = o.joints[:, rows]
            refined = refine_camera_poses(x.T_cam_world, x.params, landmarks, x.keypoints, o.obs_weight,
                                          cfg.camera_refine, cfg.camera_refine_step)  # fmt: skip
            history[k].append(refined)
        inputs = [dataclasses.replace(x, T_cam_world=h[-1].T_cam_world) for x, h in zip(inputs, history, strict=True)]
        outs = _fit_takes_once(body, inputs, cfg, progress)
    return [
        dataclasses.replace(o, camera_refinement=chain_refinements(T, h))
        for o, T, h in zip(outs, calibrated, history, strict=True)
    ]


def _fit_takes_once(body: BodyModel, inputs: list[FitInputs], cfg: BodyFitConfig, progress=None) -> list[FitOutput]:
    """``fit_takes`` through the given cameras."""
    long_ = [k for k, x in enumerate(inputs) if len(x.keypoints) > cfg.window]
    first = [x if k not in long_ else _slice_inputs(x, 0, len(x.keypoints), 10) for k, x in enumerate(inputs)]
    outs = fit_batch(body, first, cfg, progress=progress)
    if not long_:
        return outs
    jobs = [(k, s, e) for k in long_ for s, e in _windows(len(inputs[k].keypoints), cfg)]
    parts = []
    for batch in window_batches(jobs, cfg.max_batch_frames):
        parts += fit_batch(body, [_slice_inputs(inputs[k], s, e) for k, s, e in batch], cfg,
                           betas=[outs[k].betas for k, _, _ in batch], progress=progress,
                           kp_delta=[outs[k].kp_delta for k, _, _ in batch])  # fmt: skip
    for k in long_:
        mine = [(s, e, p) for (j, s, e), p in zip(jobs, parts, strict=True) if j == k]
        outs[k] = dataclasses.replace(_stitch(inputs[k], mine, outs[k].betas, cfg), kp_delta=outs[k].kp_delta)
    return outs


def _stitch(inp: FitInputs, parts: list[tuple[int, int, FitOutput]], betas: np.ndarray,
            cfg: BodyFitConfig) -> FitOutput:  # fmt: skip
    """One take's output from its window fits ``(start, stop, output)``, cross-faded in the overlaps."""
    M = len(inp.keypoints)
    last = parts[0][2]
    go, bp, tr = (np.zeros((M, *x.shape[1:])) for x in (last.global_orient, last.body_pose, last.transl))
    J = np.zeros((M, *last.joints.shape[1:]))
    rep = np.full((M, inp.keypoints.shape[1]), np.nan)
    obs_w = np.zeros(inp.weights.shape)
    for k, (s, e, out) in enumerate(parts):
        ov = min(cfg.overlap, e - s) if k > 0 else 0
        go[s + ov : e], bp[s + ov : e], tr[s + ov : e] = out.global_orient[ov:], out.body_pose[ov:], out.transl[ov:]
        J[s + ov : e], rep[s + ov : e], obs_w[s:e] = out.joints[ov:], out.reproj_px[ov:], out.obs_weight
        if ov:  # cross-fade into the previous window: linear for positions, SLERP for rotations
            fade = blend_bracket(ov, (np.arange(ov) + 0.5) / ov)
            a = slice(s, s + ov)
            tr[a] = lerp(np.concatenate([tr[a], out.transl[:ov]]), fade)
            J[a] = lerp(np.concatenate([J[a], out.joints[:ov]]), fade)
            go[a] = slerp_rotvec(np.concatenate([go[a], out.global_orient[:ov]]), fade)
            bp[a] = slerp_rotvec(np.concatenate([bp[a], out.body_pose[:ov]]), fade)
            rep[a] = out.reproj_px[:ov]
    n_dropped = sum(out.n_dropped for _, _, out in parts)  # overlaps counted in both windows
    return FitOutput(betas, go, bp, tr, J, rep, obs_weight=obs_w, n_dropped=n_dropped,
                     losses={"windows": len(parts), **parts[-1][2].losses})  # fmt: skip
