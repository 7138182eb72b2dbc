import numpy as np
import pytest
import torch

from motionkit.body.model import BodyModel
from motionkit.conventions import R_ZUP_TO_YUP
from motionkit.geometry.interpolation import valid_runs
from motionkit.geometry.rotations import matrix_to_rotvec, rotvec_to_matrix
from motionkit.motion.frames import SmplxSequence, resample_smplx, zup_to_yup_smplx


def test_zup_to_yup_is_a_rotation_and_moves_the_body_rigidly():
    assert np.linalg.det(R_ZUP_TO_YUP) == pytest.approx(1.0)
    np.testing.assert_allclose(R_ZUP_TO_YUP @ [0, 0, 1.0], [0, 1, 0])
    bm = BodyModel(dtype=torch.float64)
    rng = np.random.default_rng(0)
    betas = rng.normal(size=10)
    go = rng.normal(size=(4, 3))
    bp = 0.3 * rng.normal(size=(4, 21, 3))
    tr = rng.normal(size=(4, 3))
    j0 = bm.rest_joints(torch.as_tensor(betas))[0].numpy()
    go2, tr2 = zup_to_yup_smplx(go, tr, j0)
    with torch.no_grad():
        a = bm(torch.as_tensor(betas), torch.as_tensor(go), torch.as_tensor(bp), torch.as_tensor(tr)).numpy()
        b = bm(torch.as_tensor(betas), torch.as_tensor(go2), torch.as_tensor(bp), torch.as_tensor(tr2)).numpy()
    np.testing.assert_allclose(b, a @ R_ZUP_TO_YUP.T, atol=1e-9)


def test_resample_slerp_linear_and_gaps():
    T = 31
    t = np.arange(T) / 30.0
    ang = np.linspace(0, np.pi / 2, T)
    go = matrix_to_rotvec(np.stack([rotvec_to_matrix(np.array([0, 0, a])) for a in ang]))
    valid = np.ones(T, bool)
    valid[10:14] = False
    seq = SmplxSequence(t, go, np.zeros((T, 21, 3)), np.stack([t, 2 * t, 0 * t], 1), valid, np.zeros(10))
    times = np.arange(21) / 20.0
    r = resample_smplx(seq, times)
    ok = r.valid
    # a target time is valid only when both neighbours are valid
    lo = np.floor(times * 30 + 1e-9).astype(int)
    hi = np.ceil(times * 30 - 1e-9).astype(int)
    expected = valid[lo] & valid[hi]
    np.testing.assert_array_equal(ok, expected)
    np.testing.assert_allclose(r.transl[ok], np.stack([times, 2 * times, 0 * times], 1)[ok], atol=1e-12)
    np.testing.assert_allclose(r.global_orient[ok][:, 2], (times * 30 / 30 * np.pi / 2)[ok], atol=1e-9)
    assert np.isnan(r.transl[~ok]).all()
    assert valid_runs(valid) == [(0, 10), (14, 31)]
    assert valid_runs(np.zeros(3, bool)) == []
