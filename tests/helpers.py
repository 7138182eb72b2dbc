"""Test helpers: result files made from synthetic ground truth (a 'perfect fit')."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import h5py
import numpy as np
import torch

from motionkit.body.model import BodyModel
from motionkit.conventions import SMPLX_TO_COCO17, TAKE_FPS, fit_grid_frames
from motionkit.data.egoexo4d import EgoExoDataset
from motionkit.data.store import TakeResult, provenance, write_result
from motionkit.motion.frames import SmplxSequence, resample_smplx


def gt_result(
    root: Path, uid: str, out_dir: Path, fps: float = 20.0, drop: slice | None = None, pose_noise_rad: float = 0.0,
    untrusted: tuple[slice, tuple[int, ...]] | None = None,
) -> Path:  # fmt: skip
    """Write ``<out_dir>/<uid>.h5`` holding the ground-truth wearer resampled to ``fps`` as if fitted
    (optionally with seeded noise on the body pose, so that errors are not zero). ``untrusted``:
    ``(frames, COCO landmarks)`` left out of a per-joint trust ``fit/joint_trusted`` that trusts every
    other landmark of the valid frames (no trust is written without it)."""
    with h5py.File(root / "gt" / f"{uid}.h5") as f:
        s = f["wearer/smplx"]
        F = len(s["transl"])
        seq = SmplxSequence(
            np.arange(F) / TAKE_FPS,
            s["global_orient"][()],
            s["body_pose"][()].reshape(F, 21, 3),
            s["transl"][()],
            np.ones(F, bool),
            s["betas"][()],
        )
        ident = json.loads(f.attrs["body_model"])
    pos = fit_grid_frames(F, fps)
    r = resample_smplx(seq, pos / TAKE_FPS)
    if pose_noise_rad:
        rng = np.random.default_rng(int(uid.replace("-", "")[:8], 16))
        r.body_pose = r.body_pose + rng.normal(0, pose_noise_rad, r.body_pose.shape)
    valid = r.valid.copy()
    if drop is not None:
        valid[drop] = False
    bm = BodyModel(dtype=torch.float64)
    with torch.no_grad():
        J = bm(
            torch.as_tensor(r.betas).expand(len(pos), 10),
            torch.as_tensor(np.nan_to_num(r.global_orient)),
            torch.as_tensor(np.nan_to_num(r.body_pose)),
            torch.as_tensor(np.nan_to_num(r.transl)),
        ).numpy()
    J[~valid] = np.nan
    res = TakeResult(
        provenance(
            take_uid=uid,
            take_name=uid,
            dataset_root=str(root),
            body_model=ident,
            config={"fps": fps},
            timesync_offset=1,
            cpf_source="cad_assumed",
        )
    )
    res.put("grid", {"frame_pos": pos, "frame_index": np.rint(pos).astype(np.int64), "time_s": pos / TAKE_FPS},
            fps=fps, n_take_frames=F)  # fmt: skip
    rig = EgoExoDataset(root).take(uid).rig
    res.put("cameras", {"params": rig.params, "T_world_cam": np.stack([c.T_world_cam for c in rig]),
                         "size": rig.sizes},
            names=json.dumps(rig.names))  # fmt: skip
    go = np.where(valid[:, None], r.global_orient, np.nan)
    res.put(
        "smplx",
        {
            "global_orient": go,
            "body_pose": np.where(valid[:, None], r.body_pose.reshape(-1, 63), np.nan),
            "betas": r.betas,
            "transl": np.where(valid[:, None], r.transl, np.nan),
        },
    )
    res.put("joints", {"smplx": J[:, :55], "coco17": J[:, SMPLX_TO_COCO17]})
    res.arrays["valid"] = valid
    res.arrays["time_s"] = pos / TAKE_FPS
    if untrusted is not None:
        trusted = np.repeat(valid[:, None], 17, axis=1)
        frames, landmarks = untrusted
        trusted[frames, list(landmarks)] = False
        res.put("fit", {"joint_trusted": trusted})
    res.attrs["stages"] = json.dumps(["load", "fit"])
    return write_result(out_dir / f"{uid}.h5", res)


def wearer_landmarks(root: Path, step: int = 1):
    """The first take of a synthetic dataset and its wearer's true COCO-17 landmarks ``(F / step, 17, 3)``
    (every ``step``-th 30 fps frame)."""
    ds = EgoExoDataset(root)
    take = ds.take(ds.takes()[0].take_uid)
    with h5py.File(root / "gt" / f"{take.uid}.h5") as f:
        return take, f["wearer/coco17_world"][()][::step]


def tree_digest(root: Path) -> str:
    """SHA-256 over every file under ``root`` (relative path and bytes), in sorted order."""
    h = hashlib.sha256()
    for p in sorted(Path(root).rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(root)).encode() + p.read_bytes())
    return h.hexdigest()
