"""``fit_takes``' camera refinement rounds, with the fit and the refinement stubbed: which cameras each
round fits through, and which step it asks for (the fit itself is tested in tests/integration)."""

import dataclasses
from types import SimpleNamespace

import numpy as np

from motionkit.body import fitting
from motionkit.body.fitting import BodyFitConfig, FitInputs, FitOutput, fit_takes
from motionkit.geometry.refine import CameraRefinement


def _inputs(M: int = 6, V: int = 3) -> FitInputs:
    T = np.repeat(np.eye(4)[None], V, axis=0)
    return FitInputs(20.0, np.zeros((M, V, 17, 2)), np.ones((M, V, 17)), np.arange(M), np.zeros((M, 17, 3)),
                     np.zeros((V, 8)), T)  # fmt: skip


def test_each_round_refits_through_the_cameras_the_last_refinement_moved_with_the_configured_step(monkeypatch):
    body = SimpleNamespace(vertex_keypoint_names=(), joint_landmarks=())
    fitted_through, steps = [], []

    def fake_fit(body, inputs, cfg, progress=None):
        fitted_through.append([x.T_cam_world.copy() for x in inputs])
        return [FitOutput(np.zeros(10), *(np.zeros((len(x.keypoints), n)) for n in (3, 63, 3)),
                          np.zeros((len(x.keypoints), 60, 3)), np.zeros((len(x.keypoints), 3)),
                          obs_weight=x.weights) for x in inputs]  # fmt: skip

    def fake_refine(T, params, points, pixels, weights, cfg, step):
        steps.append(step)
        moved = T.copy()
        moved[:, 0, 3] += 0.1 * step  # each round moves every camera 0.1 m x the step along x
        V = len(T)
        return CameraRefinement(moved, np.zeros(V), np.full(V, 0.1 * step), np.full(V, 5.0), np.full(V, 3.0))

    monkeypatch.setattr(fitting, "_fit_takes_once", fake_fit)
    monkeypatch.setattr(fitting, "refine_camera_poses", fake_refine)
    cfg = BodyFitConfig(camera_refine_rounds=3, camera_refine_step=1.5)
    out = fit_takes(body, [_inputs(), _inputs(M=4)], cfg)
    assert steps == [1.5] * 6  # two takes, three rounds
    np.testing.assert_allclose([ts[0][0, 0, 3] for ts in fitted_through], [0.0, 0.15, 0.3, 0.45])
    ref = out[0].camera_refinement  # chained from the calibration: the last poses, the whole change
    np.testing.assert_allclose(ref.T_cam_world[:, 0, 3], 0.45)
    np.testing.assert_allclose(ref.translation_m, 0.45)
    np.testing.assert_allclose(ref.residual_px_before, 5.0)

    fitted_through.clear()
    plain = fit_takes(body, [_inputs()], dataclasses.replace(cfg, refine_cameras=False))
    assert len(fitted_through) == 1 and plain[0].camera_refinement is None
