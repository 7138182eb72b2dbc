import numpy as np
import pytest
import roma
import torch

from motionkit.body.model import BodyModel
from motionkit.body.model_file import load_model_file
from motionkit.body.synthetic_model import generate_synthetic_smplx

smplx = pytest.importorskip("smplx")


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    return generate_synthetic_smplx(tmp_path_factory.mktemp("m") / "smplx" / "SMPLX_NEUTRAL.npz")


def test_joints_only_forward_equals_smplx_layer(model_path):
    torch.manual_seed(0)
    layer = smplx.SMPLXLayer(str(model_path), num_betas=10, dtype=torch.float64)
    bm = BodyModel(load_model_file(model_path), dtype=torch.float64)
    B = 32
    betas = 1.5 * torch.randn(B, 10, dtype=torch.float64)
    go = roma.random_rotmat(B, dtype=torch.float64)
    bp = roma.rotvec_to_rotmat(0.6 * torch.randn(B, 21, 3, dtype=torch.float64))
    tr = torch.randn(B, 3, dtype=torch.float64)
    with torch.no_grad():
        ref = layer(betas=betas, global_orient=go, body_pose=bp, transl=tr).joints[:, :76]
        ours = bm(betas, go, bp, tr)
        ours_aa = bm(betas, roma.rotmat_to_rotvec(go), roma.rotmat_to_rotvec(bp), tr)
    assert ours.shape == (B, 76, 3)
    assert (ref - ours).abs().max() < 1e-6
    assert (ref - ours_aa).abs().max() < 1e-6


def test_subset_of_vertex_keypoints_and_batch_dims(model_path):
    bm_all = BodyModel(load_model_file(model_path), dtype=torch.float64)
    bm_face = BodyModel(load_model_file(model_path), vertex_keypoints=("nose", "left_ear"), dtype=torch.float64)
    betas = torch.zeros(2, 3, 10, dtype=torch.float64)
    go = roma.random_rotmat((2, 3), dtype=torch.float64)
    bp = roma.rotvec_to_rotmat(0.3 * torch.randn(2, 3, 21, 3, dtype=torch.float64))
    a, b = bm_all(betas, go, bp), bm_face(betas, go, bp)
    assert a.shape == (2, 3, 76, 3) and b.shape == (2, 3, 57, 3)
    torch.testing.assert_close(b[..., 55, :], a[..., 55, :])  # nose
    torch.testing.assert_close(b[..., 56, :], a[..., 59, :])  # left ear


def test_gradients_flow(model_path):
    bm = BodyModel(load_model_file(model_path))
    betas = torch.zeros(4, 10, requires_grad=True)
    pose = (0.1 * torch.randn(4, 21, 3)).requires_grad_()
    out = bm(betas, torch.zeros(4, 3), pose)
    out.square().sum().backward()
    assert torch.isfinite(betas.grad).all() and betas.grad.abs().sum() > 0
    assert torch.isfinite(pose.grad).all() and pose.grad.abs().sum() > 0
    assert np.isfinite(out.detach().numpy()).all()
