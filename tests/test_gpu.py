"""CUDA checks: they skip cleanly on machines without a GPU."""

import dataclasses
import warnings

import numpy as np
import pytest
import torch

from motionkit.body.model import BodyModel
from motionkit.geometry.fisheye import kb3_project_np, kb3_project_torch

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")]


def test_kb3_projection_on_cuda_matches_numpy():
    p = np.array([1761.275757, 1761.275757, 1920.0, 1080.0, 0.036902, 0.057131, -0.057154, 0.018458])
    X = np.random.default_rng(0).normal(0, 1, (1000, 3)) + [0, 0, 4]
    uv = kb3_project_torch(torch.tensor(X, device="cuda"), torch.tensor(p, device="cuda")).cpu().numpy()
    np.testing.assert_allclose(uv, kb3_project_np(X, p), atol=1e-6)


def test_body_model_on_cuda_matches_cpu():
    bm = BodyModel(dtype=torch.float64)
    g = torch.Generator().manual_seed(0)
    betas, go, bp = (
        torch.randn(8, 10, generator=g),
        torch.randn(8, 3, generator=g),
        0.3 * torch.randn(8, 21, 3, generator=g),
    )
    cpu = bm(betas.double(), go.double(), bp.double())
    gpu = bm.to("cuda")(betas.double().cuda(), go.double().cuda(), bp.double().cuda()).cpu()
    torch.testing.assert_close(gpu, cpu, atol=1e-9, rtol=0)


def test_cuda_fit_fused_with_graphs_matches_eager_and_cpu(default_root, tmp_path):
    """The whole fit on CUDA: fused operators with the Adam iteration replayed as a CUDA graph, the
    same without graphs, and the CPU fit agree: graphs and eager to float rounding (< 0.1 mm median), CUDA
    and CPU within the fit's own rounding sensitivity (no farther apart than the CPU fit moves when the
    keypoints move by 1e-4 px, with a factor 2 of margin; about 1.2 mm median on this take)."""
    from motionkit import kernels
    from motionkit.body.fitting import FACE_KEYPOINTS, BodyFitConfig, fit_sequence
    from motionkit.data.egoexo4d import EgoExoDataset
    from motionkit.pipeline import PipelineConfig, build_fit_inputs, run_fit

    assert kernels.ensure_loaded(cuda=True)["cuda"], kernels.status(load=False)["error"]
    info = EgoExoDataset(default_root).takes()[0]
    r = run_fit(default_root, info.take_uid, tmp_path, PipelineConfig(device="cpu"), until="triangulate",
                progress=False, plot=False).result  # fmt: skip
    inp = build_fit_inputs(r, EgoExoDataset(default_root).take(info.take_uid).rig, 20.0)
    body = BodyModel(vertex_keypoints=FACE_KEYPOINTS)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        graphs = fit_sequence(body, inp, BodyFitConfig(device="cuda", kernels="fused"))
    failed = [str(w.message) for w in caught if "capture" in str(w.message) or "stream" in str(w.message)]
    assert not failed, failed  # the graph was captured and replayed (no eager fallback, no stream sync)
    cpu = BodyFitConfig(device="cpu", kernels="fused")
    jitter = np.random.default_rng(0).normal(0, 1e-4, inp.keypoints.shape)
    fits = {
        "eager": fit_sequence(body, inp, BodyFitConfig(device="cuda", kernels="fused", cuda_graphs=False)),
        "cpu": fit_sequence(body, inp, cpu),
        "cpu, 1e-4 px": fit_sequence(body, dataclasses.replace(inp, keypoints=inp.keypoints + jitter), cpu),
    }

    def median_mm(a, b) -> float:
        return 1000 * float(np.median(np.linalg.norm(a.joints - b.joints, axis=-1)))

    assert median_mm(graphs, fits["eager"]) < 0.1
    sensitivity = median_mm(fits["cpu"], fits["cpu, 1e-4 px"])
    assert median_mm(graphs, fits["cpu"]) < 2 * sensitivity, (median_mm(graphs, fits["cpu"]), sensitivity)
