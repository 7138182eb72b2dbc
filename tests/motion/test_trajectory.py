import numpy as np
import pytest

from motionkit.geometry.rotations import axis_rotation, matrix_to_rotvec
from motionkit.motion.trajectory import anchor_trajectory


def test_person_frame_axes():
    # facing world +x (y up): walking forward is +z, stepping to the left is +x in the anchored frame
    R = np.repeat(axis_rotation("y", np.pi / 2)[None], 3, 0)
    p = np.array([[5.0, 1.0, 2.0], [6.0, 1.0, 2.0], [6.0, 1.5, 1.0]])
    tr = anchor_trajectory(p, matrix_to_rotvec(R), fps=10)
    np.testing.assert_allclose(tr.pos_m, [[0, 0, 0], [0, 0, 1], [1, 0.5, 1]], atol=1e-12)
    assert tr.heading0_deg == pytest.approx(90.0) and tr.heading_source == "global_orient"
    np.testing.assert_allclose(tr.origin_world, p[0])
    np.testing.assert_allclose(tr.time_s, [0, 0.1, 0.2])


def test_yaw_unwrapped_across_180_and_signs():
    yaw = np.deg2rad(np.linspace(0, 400, 81)) - np.deg2rad(150)
    R = axis_rotation("y", yaw)
    tr = anchor_trajectory(np.zeros((81, 3)), R)
    assert tr.yaw_deg[-1] == pytest.approx(400.0) and np.all(np.diff(tr.yaw_deg) > 0)
    lean_fwd = axis_rotation("y", np.full(5, 0.3)) @ axis_rotation("x", np.deg2rad(np.linspace(0, 30, 5)))
    assert anchor_trajectory(np.zeros((5, 3)), lean_fwd).pitch_deg[-1] == pytest.approx(30.0)
    lean_left = axis_rotation("z", -np.deg2rad(np.linspace(0, 20, 5)))  # +y tilts toward +x = the left
    assert anchor_trajectory(np.zeros((5, 3)), lean_left).roll_deg[-1] == pytest.approx(20.0)


def test_heading_fallback_and_camera_frame():
    R = np.repeat(axis_rotation("x", np.pi / 2)[None], 2, 0)  # lying: body +z points down
    joints = np.zeros((2, 22, 3))
    joints[:, 1] = [0.1, 0, 0]
    joints[:, 2] = [-0.1, 0, 0]
    joints[:, 16] = [0.2, 0, 0.4]
    joints[:, 17] = [-0.2, 0, 0.4]
    tr = anchor_trajectory(np.zeros((2, 3)), R, joints=joints)
    assert tr.heading_source == "joints" and tr.heading0_deg == pytest.approx(0.0, abs=1e-9)
    tr = anchor_trajectory(np.zeros((2, 3)), R)
    assert tr.heading_source == "degenerate" and tr.flags["HEADING_DEGENERATE"]
    cam = axis_rotation("y", np.pi)  # camera looking along world -z
    tr = anchor_trajectory(
        np.array([[0, 0, 0], [0, 0, -1.0]]),
        np.repeat(np.eye(3)[None], 2, 0),
        frame="camera",
        camera_R_world=cam,
        camera_name="cam01",
    )
    np.testing.assert_allclose(tr.pos_m[1], [0, 0, 1], atol=1e-12)  # away from the camera
    assert tr.camera == "cam01" and tr.frame == "camera"
