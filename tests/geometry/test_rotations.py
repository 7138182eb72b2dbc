import numpy as np
from scipy.spatial.transform import Rotation, Slerp

from motionkit.geometry.rotations import (
    axis_rotation,
    invert_transform,
    make_transform,
    matrix_to_quat_xyzw,
    quat_slerp,
    quat_xyzw_to_matrix,
    transform_points,
)


def test_quaternion_roundtrip_and_order():
    R = Rotation.random(50, random_state=0)
    q = matrix_to_quat_xyzw(R.as_matrix())
    assert (q[:, 3] >= 0).all()
    np.testing.assert_allclose(quat_xyzw_to_matrix(q), R.as_matrix(), atol=1e-12)
    # x, y, z, w: a rotation of 90 degrees about z
    np.testing.assert_allclose(
        quat_xyzw_to_matrix([0, 0, np.sqrt(0.5), np.sqrt(0.5)]), axis_rotation("z", np.pi / 2), atol=1e-12
    )


def test_slerp_matches_scipy_and_takes_short_arc():
    R = Rotation.random(2, random_state=1)
    q0, q1 = R.as_quat()
    w = np.linspace(0, 1, 7)
    ref = Slerp([0, 1], R)(w).as_matrix()
    ours = quat_xyzw_to_matrix(quat_slerp(np.broadcast_to(q0, (7, 4)), np.broadcast_to(-q1, (7, 4)), w))
    np.testing.assert_allclose(ours, ref, atol=1e-10)


def test_transforms():
    T = make_transform(axis_rotation("x", 0.4) @ axis_rotation("z", -1.1), np.array([1.0, 2.0, -3.0]))
    p = np.random.default_rng(0).normal(size=(10, 3))
    np.testing.assert_allclose(transform_points(invert_transform(T), transform_points(T, p)), p, atol=1e-12)
    np.testing.assert_allclose(invert_transform(T) @ T, np.eye(4), atol=1e-12)
