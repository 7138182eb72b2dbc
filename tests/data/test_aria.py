import numpy as np
import pytest
from scipy.spatial.transform import Rotation, Slerp

from motionkit.data.aria import AriaTrajectory, cad_T_device_cpf
from motionkit.geometry.rotations import make_transform


def _trajectory(n=50):
    t_us = np.arange(n, dtype=np.int64) * 1000  # 1 kHz
    R = Rotation.from_rotvec(np.linspace(0, 1.5, n)[:, None] * np.array([0.2, 0.3, 0.9]))
    p = np.stack([np.linspace(0, 1, n), np.sin(np.linspace(0, 3, n)), np.zeros(n)], 1)
    return AriaTrajectory.from_poses(t_us, make_transform(R.as_matrix(), p)), R, p, t_us


def test_device_pose_interpolates_and_reports_gaps():
    traj, R, p, t_us = _trajectory()
    ts = np.array([2_500_000.0, 10_000_000.0, -1.0, 60_000_000.0, np.nan])  # ns
    T, valid = traj.device_pose_at(ts)
    np.testing.assert_array_equal(valid, [True, True, False, False, False])
    np.testing.assert_allclose(T[0, :3, 3], 0.5 * (p[2] + p[3]), atol=1e-12)
    want = Slerp(t_us * 1e3, R)([2_500_000.0]).as_matrix()[0]
    np.testing.assert_allclose(T[0, :3, :3], want, atol=1e-9)
    np.testing.assert_allclose(T[1, :3, 3], p[10], atol=1e-12)
    assert np.isnan(T[2:]).all()


def test_samples_farther_than_max_gap_give_no_pose():
    traj, *_ = _trajectory()
    sparse = AriaTrajectory(traj.t_us[::20], traj.position[::20], traj.quat_xyzw[::20], traj.quality[::20])
    _, valid = sparse.device_pose_at(np.array([10_000_000.0, 20_000_000.0]))  # 10 ms from a sample; on one
    np.testing.assert_array_equal(valid, [False, True])


def test_head_anchor_is_device_pose_times_cad_offset():
    traj, *_ = _trajectory()
    anchor = traj.head_anchor_at(np.array([5_000_000.0]))
    T, _ = traj.device_pose_at(np.array([5_000_000.0]))
    T_cpf = T[0] @ cad_T_device_cpf()
    np.testing.assert_allclose(anchor.position[0], T_cpf[:3, 3], atol=1e-12)
    assert anchor.valid[0]
    R = cad_T_device_cpf("DVT-L")[:3, :3]
    np.testing.assert_allclose(R @ R.T, np.eye(3), atol=1e-12)
    with pytest.raises(KeyError):
        cad_T_device_cpf("unknown")
