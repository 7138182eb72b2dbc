"""BVH export read back by an independent BVH parser (the ``bvh`` package): forward kinematics of the
parsed file equals the fitted joints, every frame, both up axes."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from click.testing import CliRunner
from scipy.spatial.transform import Rotation

from motionkit.cli import main
from motionkit.conventions import R_ZUP_TO_YUP, SMPLX_JOINT_NAMES
from motionkit.data.bvh import write_take
from motionkit.data.egoexo4d import EgoExoDataset
from motionkit.data.store import read_result
from tests.helpers import gt_result

bvh = pytest.importorskip("bvh")


def _fk(mocap) -> tuple[list[str], np.ndarray]:
    """Joint names and positions ``(T, J, 3)`` of a parsed BVH: global rotation = parent's @ Rz Rx Ry of
    the channels, position = parent's + parent's rotation @ offset (written here, not motionkit's)."""
    names = mocap.get_joints_names()
    parent = {n: (mocap.joint_parent(n).name if mocap.joint_parent(n) is not None else None) for n in names}
    offset = {n: np.array(mocap.joint_offset(n), dtype=float) for n in names}
    T = mocap.nframes
    out = np.zeros((T, len(names), 3))
    for t in range(T):
        R, P = {}, {}
        for i, n in enumerate(names):
            ch = mocap.joint_channels(n)
            vals = dict(zip(ch, mocap.frame_joint_channels(t, n, ch), strict=True))
            local = Rotation.from_euler("ZXY", [vals["Zrotation"], vals["Xrotation"], vals["Yrotation"]],
                                        degrees=True).as_matrix()  # fmt: skip
            if parent[n] is None:
                P[n] = np.array([vals["Xposition"], vals["Yposition"], vals["Zposition"]])
                R[n] = local
            else:
                P[n] = P[parent[n]] + R[parent[n]] @ offset[n]
                R[n] = R[parent[n]] @ local
            out[t, i] = P[n]
    return names, out


@pytest.mark.parametrize("up", ["y", "z"])
def test_parsed_bvh_forward_kinematics_equals_the_fitted_joints(synth_root, tmp_path, up):
    uid = EgoExoDataset(synth_root).takes()[0].take_uid
    r = read_result(gt_result(synth_root, uid, tmp_path / "fits", pose_noise_rad=0.1, drop=slice(20, 26)))
    path = write_take(r, tmp_path / up, up=up)
    mocap = bvh.Bvh(path.read_text())
    names, J = _fk(mocap)
    assert len(names) == 22 and mocap.nframes == len(r["valid"]) and mocap.frame_time == pytest.approx(1 / r.fps)
    want = r["joints/smplx"][:, :22] @ (R_ZUP_TO_YUP.T if up == "y" else np.eye(3)) * 100.0  # cm
    valid = r["valid"].astype(bool)
    order = [SMPLX_JOINT_NAMES.index(n) for n in names]
    err = np.linalg.norm(J[valid] - want[valid][:, order], axis=-1)
    assert err.max() < 0.1  # cm: under 1 mm on every valid frame
    side = json.loads(path.with_suffix(".bvh.json").read_text())
    assert side["filled_frames"] == list(range(20, 26)) and side["up"] == up
    assert np.isfinite(J).all()  # the gap is filled, not left out
    first = hashlib.sha256(path.read_bytes()).digest()
    assert hashlib.sha256(write_take(r, tmp_path / up, up=up).read_bytes()).digest() == first


def test_export_command_writes_bvh(synth_root, tmp_path):
    uid = EgoExoDataset(synth_root).takes()[0].take_uid
    gt_result(synth_root, uid, tmp_path / "fits")
    out = CliRunner().invoke(main, ["export", str(tmp_path / "fits"), "--format", "bvh", "--out", str(tmp_path / "b"),
                                    "--up", "z", "--fps", "10"])  # fmt: skip
    assert out.exit_code == 0, out.output
    (path,) = (tmp_path / "b").glob("*.bvh")
    mocap = bvh.Bvh(path.read_text())
    assert mocap.frame_time == pytest.approx(0.1)
