import numpy as np
from scipy.spatial.transform import Rotation

from motionkit.motion.quaternion import qbetween, qinv, qmul, qnormalize, qrot, quat_to_matrix


def _wxyz(R: Rotation) -> np.ndarray:
    return np.roll(R.as_quat(), 1, axis=-1)  # HumanML3D's (w, x, y, z) order


def test_products_rotations_and_matrices_match_scipy():
    A, B = Rotation.random(20, random_state=0), Rotation.random(20, random_state=1)
    qa, qb = _wxyz(A), _wxyz(B)
    v = np.random.default_rng(2).normal(size=(20, 3))
    np.testing.assert_allclose(quat_to_matrix(qa), A.as_matrix(), atol=1e-12)
    np.testing.assert_allclose(quat_to_matrix(qmul(qa, qb)), (A * B).as_matrix(), atol=1e-12)
    np.testing.assert_allclose(qrot(qa, v), A.apply(v), atol=1e-12)
    np.testing.assert_allclose(quat_to_matrix(qinv(qa)), A.inv().as_matrix(), atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(qnormalize(3 * qa), axis=-1), 1.0)


def test_qbetween_rotates_a_onto_b():
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(50, 3)), rng.normal(size=(50, 3))
    q = qbetween(a, b)
    got = qrot(q, a)
    np.testing.assert_allclose(got / np.linalg.norm(got, axis=-1, keepdims=True),
                               b / np.linalg.norm(b, axis=-1, keepdims=True), atol=1e-9)  # fmt: skip
