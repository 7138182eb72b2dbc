"""Other methods' releases read to COCO-17 joints, each against an independent construction of what the
file holds; motionkit's SMPL-X export read back as the fit itself."""

from __future__ import annotations

import hashlib
import json
import pickle

import numpy as np
import pytest
import torch
from click.testing import CliRunner
from scipy.spatial.transform import Rotation

from motionkit.body.model import BodyModel
from motionkit.cli import main
from motionkit.common.errors import DataError
from motionkit.conventions import SMPLX_TO_COCO17
from motionkit.data.egoexo4d import EgoExoDataset
from motionkit.data.releases import read_release
from motionkit.data.releases.egoexo4d_hm import BODY25_TO_COCO17
from motionkit.data.releases.motionkit_fits import sampled_joints
from motionkit.data.releases.smplx_body import rotation_6d_to_matrix
from motionkit.data.releases.smplx_npz import write_take
from motionkit.data.store import read_result, write_result
from tests.helpers import gt_result

BODY25_NAMES = ("nose", "neck", "r-shoulder", "r-elbow", "r-wrist", "l-shoulder", "l-elbow", "l-wrist",
                "mid-hip", "r-hip", "r-knee", "r-ankle", "l-hip", "l-knee", "l-ankle", "r-eye", "l-eye", "r-ear",
                "l-ear")  # fmt: skip
COCO_NAMES = ("nose", "l-eye", "r-eye", "l-ear", "r-ear", "l-shoulder", "r-shoulder", "l-elbow", "r-elbow", "l-wrist",
              "r-wrist", "l-hip", "r-hip", "l-knee", "r-knee", "l-ankle", "r-ankle")  # fmt: skip


def _params(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    go = Rotation.random(n, random_state=seed).as_rotvec()
    bp = rng.normal(0, 0.3, (n, 21, 3))
    return go, bp, rng.normal(0, 1, 10), rng.normal(0, 1, (n, 3))


def _coco_reference(go, bp, betas, transl):
    """COCO-17 joints of axis-angle parameters through the body model (float64), joint centres."""
    bm = BodyModel(dtype=torch.float64)
    with torch.no_grad():
        J = bm(torch.as_tensor(betas).expand(len(go), 10), torch.as_tensor(go), torch.as_tensor(bp),
               torch.as_tensor(transl)).numpy()  # fmt: skip
    return J[:, SMPLX_TO_COCO17]


def test_6d_rotations_are_the_first_two_rows():
    R = Rotation.random(20, random_state=3).as_matrix()
    np.testing.assert_allclose(rotation_6d_to_matrix(R[:, :2].reshape(20, 6)), R, atol=1e-12)
    assert np.abs(rotation_6d_to_matrix(R.transpose(0, 2, 1)[:, :2].reshape(20, 6)) - R).max() > 0.1  # not columns


def test_body25_to_coco17_by_name():
    assert [BODY25_NAMES[i] for i in BODY25_TO_COCO17] == list(COCO_NAMES)


def test_ee4d_motion_pickles_read_as_their_smplx_bodies(tmp_path, synth_root):
    info = EgoExoDataset(synth_root).takes()[0]
    go, bp, betas, transl = _params(5)
    frames = [0, 3, 6, 9, 12]
    six = lambda rv: Rotation.from_rotvec(rv.reshape(-1, 3)).as_matrix()[:, :2].reshape(*rv.shape[:-1], 6)  # noqa: E731
    data = {f: {"init_smpl_params": {}, "final_smpl_params": {
        "global_orient": six(go[i]), "body_pose": six(bp[i]).reshape(126) if i % 2 else six(bp[i]), "betas": betas,
        "transl": transl[i]}} for i, f in enumerate(frames)}  # fmt: skip
    data[12]["final_smpl_params"]["transl"] = np.full(3, np.nan)  # a frame without a finite fit
    folder = tmp_path / "ee4d_motion" / info.take_name
    folder.mkdir(parents=True)
    (folder / "multiview_optim_2.pkl").write_bytes(pickle.dumps(data, protocol=4))
    got = read_release("ee4d-motion", tmp_path / "ee4d_motion", info.take_uid, info.take_name)
    assert got.native_fps == 10.0 and list(got.frame_pos) == frames
    assert list(got.valid) == [True] * 4 + [False] and np.isnan(got.joints[4]).all()
    np.testing.assert_allclose(got.joints[:4], _coco_reference(go, bp, betas, transl)[:4], atol=1e-9)
    assert got.parent_rot.shape == (5, 17, 3, 3)
    assert read_release("ee4d-motion", tmp_path / "ee4d_motion", "no-uid", "no_take") is None
    data[4] = data.pop(3)  # not a multiple of 3: not EE4D-Motion's 10 fps grid
    (folder / "multiview_optim_2.pkl").write_bytes(pickle.dumps(data))
    with pytest.raises(DataError, match=r"multiview_optim_2\.pkl: frame keys must be non-negative multiples of 3"):
        read_release("ee4d-motion", tmp_path / "ee4d_motion", info.take_uid, info.take_name)
    (folder / "multiview_optim_2.pkl").write_bytes(pickle.dumps(data)[:50])
    with pytest.raises(DataError, match="not a readable data pickle"):
        read_release("ee4d-motion", tmp_path / "ee4d_motion", info.take_uid, info.take_name)


def test_human_meshes_joints_read_as_coco17(tmp_path):
    T = 7
    coco = np.random.default_rng(1).normal(0, 1, (T, 17, 3))
    j = np.full((1, T, 67, 3), 99.0)
    j[0][:, BODY25_TO_COCO17] = coco
    valid = np.ones((1, T), np.int8)
    valid[0, 2] = 0
    folder = tmp_path / "hm" / "take_a"
    folder.mkdir(parents=True)
    np.savez(folder / "points_triangulated_world_results_merged.npz", joints3d=j, valid=valid,
             trans=np.zeros((1, T, 3)))  # fmt: skip
    got = read_release("egoexo4d-hm", tmp_path / "hm", "uid-a", "take_a")
    assert got.native_fps == 30.0 and list(got.frame_pos) == list(range(T))
    np.testing.assert_array_equal(got.joints[got.valid], coco[got.valid])
    assert not got.valid[2] and np.isnan(got.joints[2]).all()
    np.savez(folder / "points_triangulated_world_results_merged.npz", joints3d=np.zeros((1, T, 10, 3)))
    with pytest.raises(DataError, match=r"joints3d must be \(1, T, 67, 3\)"):
        read_release("egoexo4d-hm", tmp_path / "hm", "uid-a", "take_a")


def test_prediction_json_with_missing_joints_and_bad_files(tmp_path):
    pts = np.arange(51.0).reshape(17, 3).tolist()
    pts[3] = [None, None, None]
    path = tmp_path / "preds.json"
    path.write_text(
        json.dumps({"uid-a": {"take_name": "take_a", "body": {"30": pts, "3": np.zeros((17, 3)).tolist()}}})
    )
    got = read_release("coco17-json", path, "uid-a", "take_a")
    assert list(got.frame_pos) == [3, 30] and got.valid.all()
    assert np.isnan(got.joints[1, 3]).all() and got.joints[1, 4, 0] == 12.0
    assert read_release("coco17-json", path, "uid-b", "take_b") is None
    path.write_text('{"uid-a": {"take_name": "take_a", "body": {"0": [[1, 2]]}}}')
    with pytest.raises(DataError, match=r"preds\.json: take uid-a, frame 0: joints of shape \(1, 2\)"):
        read_release("coco17-json", path, "uid-a", "take_a")
    path.write_text('{"uid-a": ')
    with pytest.raises(DataError, match=r"preds\.json, line 1: malformed JSON"):
        read_release("coco17-json", path, "uid-a", "take_a")


def test_smplx_npz_export_reads_back_as_the_fit_with_its_landmark_offsets(tmp_path, synth_root):
    """A fit with learned landmark offsets (limbs), exported and read back: its COCO joints are the
    joint centres moved by each offset in its joint's world frame (an independent construction), as
    the fit's own; without the offsets the file scores as any SMPL-X source (joint centres)."""
    uid = EgoExoDataset(synth_root).takes()[0].take_uid
    r = read_result(gt_result(synth_root, uid, tmp_path / "fits", pose_noise_rad=0.05, drop=slice(10, 14)))
    offsets = np.zeros((17, 3))
    offsets[5:] = np.random.default_rng(2).normal(0, 0.03, (12, 3))
    r.put("fit", {"landmark_offset_m": offsets})
    fit = sampled_joints(r)
    R_parent = fit.parent_rot  # (M, 17, 3, 3): the world rotation of each keypoint's offset frame
    # the limbs' offsets live in the frame of their own joint: COCO17_OFFSET_PARENT is the joint's parent,
    # so rebuild the joint's world rotation from the body model directly
    bm = BodyModel(dtype=torch.float64)
    with torch.no_grad():
        J, GR = bm(torch.as_tensor(r["smplx/betas"]).expand(len(r["valid"]), 10),
                   torch.as_tensor(np.nan_to_num(r["smplx/global_orient"])),
                   torch.as_tensor(np.nan_to_num(r["smplx/body_pose"]).reshape(-1, 21, 3)),
                   torch.as_tensor(np.nan_to_num(r["smplx/transl"])), return_transforms=True)  # fmt: skip
    J, GR = J.numpy(), GR.numpy()
    want = J[:, SMPLX_TO_COCO17].copy()
    for c in range(5, 17):
        want[:, c] += np.einsum("mij,j->mi", GR[:, SMPLX_TO_COCO17[c]], offsets[c])
    path = write_take(r, tmp_path / "export")
    first = hashlib.sha256(path.read_bytes()).hexdigest()
    assert hashlib.sha256(write_take(r, tmp_path / "export").read_bytes()).hexdigest() == first  # same bytes
    back = read_release("smplx-npz", tmp_path / "export", uid, str(r.attrs["take_name"]))
    valid = r["valid"].astype(bool)
    assert back.take_uid == uid and np.array_equal(back.valid, valid) and np.array_equal(back.frame_pos, fit.frame_pos)
    assert np.abs(back.joints[valid] - want[valid]).max() < 1e-8  # metres: far under 0.01 mm
    np.testing.assert_allclose(back.parent_rot[valid], R_parent[valid], atol=1e-10)
    z = dict(np.load(path))
    z.pop("motionkit_landmark_offset_m")
    assert np.isfinite(z["poses"]).all() and z["poses"].shape == (len(valid), 165)  # gaps filled, marked
    np.savez(tmp_path / "export" / f"{r.attrs['take_name']}.npz", **z)
    plain = read_release("smplx-npz", tmp_path / "export", uid, str(r.attrs["take_name"]))
    np.testing.assert_allclose(plain.joints[valid], J[valid][:, SMPLX_TO_COCO17], atol=1e-9)


def test_export_command_writes_one_file_per_fitted_take(tmp_path, synth_root):
    uid = EgoExoDataset(synth_root).takes()[0].take_uid
    gt_result(synth_root, uid, tmp_path / "fits")
    r = read_result(tmp_path / "fits" / f"{uid}.h5")
    r.arrays = {k: v for k, v in r.arrays.items() if not k.startswith("smplx")}
    write_result(tmp_path / "fits" / "unfitted.h5", r)
    r = read_result(tmp_path / "fits" / f"{uid}.h5")
    r.arrays["smplx/body_pose"] = r.arrays["smplx/body_pose"][:, :60]  # a damaged file
    write_result(tmp_path / "fits" / "damaged.h5", r)
    out = CliRunner().invoke(main, ["export", str(tmp_path / "fits"), "--format", "smplx-npz", "--out",
                                    str(tmp_path / "npz")])  # fmt: skip
    assert out.exit_code == 0, out.output
    assert f"not exported: {tmp_path / 'fits' / 'unfitted.h5'}: result of take {uid} has no fit" in out.output
    assert (
        f"not exported: {tmp_path / 'fits' / 'damaged.h5'}: result of take {uid}: smplx/body_pose has shape"
        in out.output
        and "Traceback" not in out.output
    )
    assert sorted(p.name for p in (tmp_path / "npz").iterdir()) == [f"{r.attrs['take_name']}.npz"]
