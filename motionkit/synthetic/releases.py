"""Other methods' releases of a synthetic dataset (``motionkit synth --releases``): each written from the
ground truth in that release's own layout under ``<root>/releases/<format>/``, with a documented, known
perturbation, and ``gt/releases.json`` recording what a correct evaluation must find (docs/synthetic.md):

* ``ee4d-motion``: ``<take_name>/multiview_optim_2.pkl`` (a plain pickle; the release's are joblib files,
  which motionkit reads as well): the wearer's true SMPL-X parameters (of the subject's body model) with
  0.02 rad of pose noise, on EE4D-Motion's 10 fps grid (take frames 0, 3, 6, ...), 6D rotations as rows,
  12 zero hand PCA coefficients per hand, and no fit for the middle 2 s of the take (a coverage hole);
* ``egoexo4d-hm``: ``<take_name>/points_triangulated_world_results_merged.npz``: the true landmarks in the
  BODY_25 rows of ``joints3d (1, T, 67, 3)`` with 1 cm of noise per axis and a fixed per-joint world bias,
  every frame from 0 but the last 2 (the release's short tail);
* ``coco17-json``: ``predictions.json`` in the body-pose challenge's layout: the true landmarks moved by a
  per-joint offset in each joint's skeleton frame (the kind the per-joint correction removes), every frame,
  the left ear missing (NaN) on every 20th frame;
* ``smplx-npz``: ``<take_name>.npz`` in the AMASS layout at 20 fps from take frame 0: the true parameters
  with 0.02 rad of pose noise, no motionkit landmark offsets.

Random draws come from ``default_rng([seed, index, 100 + k])`` per format, so the releases do not move the
dataset's other files.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import h5py
import numpy as np
from scipy.spatial.transform import Rotation

from motionkit.common.files import atomic_path, save_npz_atomic, write_json_atomic
from motionkit.conventions import TAKE_FPS
from motionkit.data.releases.egoexo4d_hm import BODY25_TO_COCO17

RELEASE_FORMATS = ("ee4d-motion", "egoexo4d-hm", "coco17-json", "smplx-npz")
POSE_NOISE_RAD = 0.02
HOLE_S = 2.0
HM_NOISE_M = 0.01
HM_BIAS_M = 0.02
HM_SHORT_TAIL = 2
JSON_OFFSET_M = 0.02
JSON_MISSING_EVERY = 20
NPZ_FPS = 20.0

# the skeleton frame of each COCO keypoint used for the prediction JSON's offsets (eval.compare.skeleton_frames
# is the evaluation's own; this is written out here so that the generator does not depend on the evaluation)
_HEAD, _TORSO = ((5, 6), 0), ((11, 12), (5, 6))
_BONES = (_HEAD,) * 5 + (_TORSO, _TORSO, (5, 7), (6, 8), (7, 9), (8, 10), _TORSO, _TORSO, (11, 13), (12, 14), (13, 15),
                         (14, 16))  # fmt: skip


def _frames_of(J: np.ndarray) -> np.ndarray:
    def pt(spec):
        return J[:, spec] if isinstance(spec, int) else 0.5 * (J[:, spec[0]] + J[:, spec[1]])

    out = np.empty((len(J), 17, 3, 3))
    for c, (base, tip) in enumerate(_BONES):
        x = pt(tip) - pt(base)
        x /= np.linalg.norm(x, axis=-1, keepdims=True)
        lr = J[:, 5] - J[:, 6] if c <= 10 else J[:, 11] - J[:, 12]
        z = np.cross(x, lr)
        z /= np.linalg.norm(z, axis=-1, keepdims=True)
        out[:, c] = np.stack([x, np.cross(z, x), z], axis=-1)
    return out


def _noisy(rotvec: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return rotvec + rng.normal(0, POSE_NOISE_RAD, rotvec.shape)


def _six(rotvec: np.ndarray) -> np.ndarray:
    """``(..., 3)`` axis-angle -> ``(..., 6)``: the matrix's first two rows (pytorch3d's 6D)."""
    R = Rotation.from_rotvec(rotvec.reshape(-1, 3)).as_matrix()
    return R[:, :2].reshape(*rotvec.shape[:-1], 6)


def _coverage(frames: np.ndarray, n_frames: int, rate: float) -> float:
    """Share of the take's 30 fps frames ``k`` with a sample ``f`` such that ``f - h <= k < f + h``, ``h`` half a
    sample period in frames (a 10 fps sample covers k - 1, k, k + 1): each sample's interval painted."""
    half = TAKE_FPS / (2 * rate)
    covered = np.zeros(n_frames, bool)
    for f in frames:
        covered[max(int(np.ceil(f - half - 1e-9)), 0) : max(int(np.ceil(f + half - 1e-9)), 0)] = True
    return float(covered.mean())


def write_releases(root: Path, formats: tuple[str, ...], seed: int) -> dict:
    """Write the releases of every take of ``root`` (``takes.json``, ``gt/``); returns and writes
    ``gt/releases.json``."""
    unknown = set(formats) - set(RELEASE_FORMATS)
    if unknown:
        raise ValueError(f"unknown release formats {sorted(unknown)}; choose from {', '.join(RELEASE_FORMATS)}")
    root = Path(root)
    takes = json.loads((root / "takes.json").read_text())
    record = {f: {"perturbation": _DESCRIPTION[f], "takes": {}} for f in formats}
    predictions = {}
    for index, t in enumerate(takes):
        uid, name = t["take_uid"], t["take_name"]
        with h5py.File(root / "gt" / f"{uid}.h5") as g:
            coco = g["wearer/coco17_world"][()]
            smplx = {k: g["wearer/smplx"][k][()] for k in g["wearer/smplx"]}
        T = len(coco)
        for k, fmt in enumerate(RELEASE_FORMATS):
            if fmt not in formats:
                continue
            rng = np.random.default_rng([seed, index, 100 + k])
            out = root / "releases" / fmt
            if fmt == "ee4d-motion":
                hole = range(T // 2 - int(HOLE_S * TAKE_FPS / 2), T // 2 + int(HOLE_S * TAKE_FPS / 2))
                frames = np.array([f for f in range(0, T, 3) if f not in hole])
                fits = {int(f): {"final_smpl_params": {
                    "global_orient": _six(_noisy(smplx["global_orient"][f], rng)),
                    "body_pose": _six(_noisy(smplx["body_pose"][f].reshape(21, 3), rng)),
                    "betas": smplx["betas"].copy(), "transl": smplx["transl"][f].copy(),
                    "left_hand_pose": np.zeros(12), "right_hand_pose": np.zeros(12)}} for f in frames}  # fmt: skip
                (out / name).mkdir(parents=True, exist_ok=True)
                with atomic_path(out / name / "multiview_optim_2.pkl", suffix=".pkl") as tmp:
                    tmp.write_bytes(pickle.dumps(fits, protocol=4))
                rate = 10.0
            elif fmt == "egoexo4d-hm":
                n = T - HM_SHORT_TAIL
                bias = rng.normal(0, HM_BIAS_M, (17, 3))
                frames = np.arange(n)
                j = np.zeros((1, n, 67, 3))
                j[0][:, BODY25_TO_COCO17] = coco[:n] + bias + rng.normal(0, HM_NOISE_M, (n, 17, 3))
                (out / name).mkdir(parents=True, exist_ok=True)
                save_npz_atomic(out / name / "points_triangulated_world_results_merged.npz",
                                {"joints3d": j, "valid": np.ones((1, n), np.int8)})  # fmt: skip
                record[fmt]["takes"][uid] = {"bias_m": bias.tolist()}
                rate = 30.0
            elif fmt == "coco17-json":
                offset = rng.normal(0, JSON_OFFSET_M, (17, 3))
                pred = coco + np.einsum("fjab,jb->fja", _frames_of(coco), offset)
                pred[::JSON_MISSING_EVERY, 3] = np.nan
                frames = np.arange(T)
                body = {str(f): [[float(v) if np.isfinite(v) else None for v in p] for p in pred[f]] for f in frames}
                predictions[uid] = {"take_name": name, "body": body}
                record[fmt]["takes"][uid] = {"offset_m": offset.tolist()}
                rate = 30.0
            else:
                step = TAKE_FPS / NPZ_FPS
                frames = np.arange(0, T - 1e-9, step)
                idx = np.rint(frames).astype(int)  # the truth at the nearest 30 fps frame
                poses = np.concatenate([_noisy(smplx["global_orient"][idx], rng),
                                        _noisy(smplx["body_pose"][idx], rng), np.zeros((len(idx), 99))], 1)  # fmt: skip
                save_npz_atomic(out / f"{name}.npz", {
                    "poses": poses, "trans": smplx["transl"][idx], "betas": smplx["betas"],
                    "gender": np.array("neutral"), "surface_model_type": np.array("smplx"),
                    "mocap_frame_rate": np.array(NPZ_FPS)})  # fmt: skip
                rate = NPZ_FPS
            entry = record[fmt]["takes"].setdefault(uid, {})
            entry.update(take_name=name, samples=len(frames), native_fps=rate,
                         coverage_video_time=_coverage(np.asarray(frames, dtype=np.float64), T, rate))  # fmt: skip
    if "coco17-json" in formats:
        write_json_atomic(root / "releases" / "coco17-json" / "predictions.json", predictions)
    write_json_atomic(root / "gt" / "releases.json", record, indent=1)
    return record


_DESCRIPTION = {
    "ee4d-motion": f"true SMPL-X parameters (the subject's model) + {POSE_NOISE_RAD} rad pose noise, 10 fps (frames "
    f"0, 3, ...), no fit for the middle {HOLE_S} s",
    "egoexo4d-hm": f"true landmarks + {HM_NOISE_M} m noise per axis + a per-joint world bias (sigma {HM_BIAS_M} m), "
    f"every frame but the last {HM_SHORT_TAIL}",
    "coco17-json": f"true landmarks + a per-joint offset in its skeleton frame (sigma {JSON_OFFSET_M} m), every "
    f"frame, left ear missing every {JSON_MISSING_EVERY}th frame",
    "smplx-npz": f"true SMPL-X parameters + {POSE_NOISE_RAD} rad pose noise at {NPZ_FPS:g} fps from take frame 0",
}
