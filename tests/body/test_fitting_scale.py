"""The fit's per-problem scales and pixel rules: the reprojection term's scale, the acceleration term's
scale and the side check of the second pass, on hand-made inputs (no fit)."""

import numpy as np
import pytest
import torch

from motionkit.body.fitting import (
    BodyFitConfig,
    body_speed_rms,
    projected_size_px,
    reprojection_scale,
    second_pass_drop,
    smoothness_scale,
)
from motionkit.conventions import COCO17_FLIP, COCO17_LIMB_LR_PAIRS


def _person(height_px: float, n_frames: int = 5, n_views: int = 2) -> np.ndarray:
    """``(M, V, 17, 2)`` keypoints of an upright person ``height_px`` tall and 0.3 x as wide."""
    rng = np.random.default_rng(0)
    unit = np.c_[rng.uniform(0, 0.3, 17), np.linspace(0, 1, 17)]
    return np.broadcast_to(unit * height_px + 100.0, (n_frames, n_views, 17, 2)).copy()


def test_projected_size_is_the_median_keypoint_box_diagonal_of_the_used_views():
    kp = _person(600.0)
    kp[:, 1] = _person(200.0)[:, 1]  # view 1 sees the person 3x smaller
    w = np.ones(kp.shape[:3])
    w[:3, 1] = 0.0  # ... and is used in only two of the five frames
    diag = lambda h: float(np.linalg.norm(_person(h)[0, 0].max(0) - _person(h)[0, 0].min(0)))  # noqa: E731
    assert projected_size_px(kp, w) == pytest.approx(diag(600.0))  # 5 large, 2 small view-frames
    w[:, 0, :10] = 0.0  # view 0 keeps 7 keypoints: below MIN_SIZED_KEYPOINTS, it no longer gives a size
    assert projected_size_px(kp, w) == pytest.approx(diag(200.0))
    assert np.isnan(projected_size_px(kp, np.zeros_like(w)))


def test_reprojection_scale_grows_with_the_inverse_square_of_a_small_size_and_is_clipped():
    w = np.ones((5, 2, 17))
    size = projected_size_px(_person(300.0), w)
    assert reprojection_scale(_person(300.0), w, size) == pytest.approx(1.0)
    assert reprojection_scale(_person(300.0), w, 2 * size) == pytest.approx(4.0)  # a person half the size
    assert reprojection_scale(_person(300.0), w, size / 3) == 1.0  # a larger person: never scaled down
    assert reprojection_scale(_person(300.0), w, 100 * size) == 16.0  # clipped
    assert reprojection_scale(_person(300.0), w, 0.0) == 1.0  # off
    assert reprojection_scale(_person(300.0), np.zeros_like(w), size) == 1.0  # no size: unscaled


def _swaying(amplitude_m: float, freq_hz: float, fps: float = 20.0, seconds: float = 30.0) -> np.ndarray:
    """``(M, 17, 3)`` landmarks moving together along x as ``amplitude sin(2 pi f t)``, 0.1 m apart in z."""
    t = np.arange(int(seconds * fps)) / fps
    x = amplitude_m * np.sin(2 * np.pi * freq_hz * t)
    return np.stack([np.c_[x, np.zeros_like(x), np.full_like(x, 0.1 * j)] for j in range(17)], 1)


def test_body_speed_rms_of_a_sway_is_its_analytic_value():
    """``A sin(w t)`` has RMS speed ``A w / sqrt(2)``; the frame difference at 20 fps measures it
    times ``sin(w dt / 2) / (w dt / 2)`` (30 whole periods: no end effect)."""
    fps, A, f = 20.0, 0.4, 0.5
    w, dt = 2 * np.pi * f, 1 / fps
    expected = A * w / np.sqrt(2) * np.sin(w * dt / 2) / (w * dt / 2)
    tri = _swaying(A, f, fps, seconds=60.0)
    assert body_speed_rms(tri, fps) == pytest.approx(expected, rel=1e-3)
    tri[:, :5] = np.random.default_rng(0).normal(size=(len(tri), 5, 3))  # the face does not count
    tri[1::2, 5:] = np.nan  # frames seen without a seen neighbour give no speed
    assert np.isnan(body_speed_rms(tri, fps))
    assert np.isnan(body_speed_rms(tri[:2], fps))


def test_smoothness_scale_weakens_the_prior_as_speed_to_the_fourth_for_runners_only():
    fps = 20.0
    walk, run, sprint = _swaying(0.2, 0.5), _swaying(0.6, 0.5), _swaying(2.0, 0.5)  # ~0.44, ~1.3, ~4.4 m/s
    assert smoothness_scale(walk, fps, 1.0) == 1.0  # never stronger than tuned
    speed = body_speed_rms(run, fps)
    assert smoothness_scale(run, fps, 1.0) == pytest.approx(speed**-4)
    # the same sway twice as fast has twice the speed (and four times the acceleration): against twice
    # the reference it gets the same factor (up to the frame difference's 1.2 % loss at 1 Hz)
    assert smoothness_scale(_swaying(0.6, 1.0), fps, 2.0) == pytest.approx(smoothness_scale(run, fps, 1.0), rel=0.02)
    assert smoothness_scale(sprint, fps, 1.0) == 0.25  # clipped
    assert smoothness_scale(run, fps, 0.0) == 1.0  # off
    assert smoothness_scale(np.full_like(run, np.nan), fps, 1.0) == 1.0  # unknown: unscaled


def test_side_check_ignores_limb_labels_within_the_noise_of_a_small_body():
    """A body seen side-on: each left joint projects 2 px from its right partner. Limb labels 1.5 px from
    their own projection toward the partner's are detector noise, not a swap, at 200 px as at 800 px;
    the face, shoulders and hips (whose labels fix the body's facing) keep the strict rule; a real limb
    swap (the wrists 12 % of the body apart, their labels exchanged) is dropped at both sizes."""
    pairs = [(a, b) for a, b in enumerate(COCO17_FLIP) if a < b]
    limbs = [i for p in COCO17_LIMB_LR_PAIRS for i in p]
    facing = [i for p in pairs if p not in COCO17_LIMB_LR_PAIRS for i in p]
    cfg, no_margin = BodyFitConfig(), BodyFitConfig(second_pass_side_sigmas=0.0)
    wt = torch.ones(1, 1, 1, 17)

    def drop(uv, kp, c):
        return second_pass_drop(*(torch.as_tensor(x[None], dtype=torch.float32) for x in (uv, kp)), wt, c)[0, 0, 0]

    for height in (200.0, 800.0):
        uv = _person(height, 1, 1)
        kp = uv.copy()
        for a, b in pairs:
            uv[..., b, :] = uv[..., a, :] + [2.0, 0.0]
            kp[..., a, :], kp[..., b, :] = uv[..., a, :] + [1.5, 0.0], uv[..., b, :] - [1.5, 0.0]
        noise_dropped = drop(uv, kp, cfg)
        assert not noise_dropped[limbs].any() and noise_dropped[facing].all(), height
        assert drop(uv, kp, no_margin)[limbs].all()  # without the margin the limb labels go too
        uv[..., 10, :] = uv[..., 9, :] + [0.12 * height, 0.0]
        swapped = uv.copy()
        swapped[..., 9, :], swapped[..., 10, :] = uv[..., 10, :], uv[..., 9, :]
        dropped = drop(uv, swapped, cfg)
        assert dropped[9] and dropped[10] and dropped[limbs].sum() == 2, height


def test_pair_rule_takes_a_partner_only_where_it_lies_nearer_the_other_projection_too():
    """A profile: the eyes project 4 px apart. The far eye's guess lands beyond the near eye's projection
    (contradicted); the clean near eye, 1 px from its own projection on its own side, stays (the rule
    took it before). A wrist swapped beyond the limb margin (0.3 x its COCO sigma x the ~420-px body:
    7.8 px) takes its partner along where that sits 0.5 px across the middle (within the margin, so not
    contradicted alone), and leaves it where it sits on its own side."""
    wt = torch.ones(1, 1, 1, 17)
    cfg = BodyFitConfig(second_pass_view_frac=0.0)

    def drop(uv, kp):
        return second_pass_drop(*(torch.as_tensor(x[None], dtype=torch.float64) for x in (uv, kp)), wt, cfg)[0, 0, 0]

    uv = _person(400.0, 1, 1)
    uv[..., 2, :] = uv[..., 1, :] + [4.0, 0.0]  # right eye (far) 4 px right of the left eye (near)
    kp = uv.copy()
    kp[..., 2, :] = uv[..., 1, :] - [1.0, 0.0]  # the far eye's guess: beyond the near eye's projection
    kp[..., 1, :] = uv[..., 1, :] - [1.0, 0.0] + [0.0, 0.5]  # the near eye: 1 px off, on its own side
    d = drop(uv, kp)
    assert d[2] and not d[1] and d.sum() == 1
    uv = _person(400.0, 1, 1)
    uv[..., 10, :] = uv[..., 9, :] + [10.0, 0.0]  # wrists 10 px apart
    kp = uv.copy()
    kp[..., 9, :] = uv[..., 10, :]  # the left wrist's label on the right wrist: 10 px off, contradicted
    kp[..., 10, :] = uv[..., 9, :] + [4.5, 0.0]  # the right one 0.5 px across the middle, 5.5 px off
    d = drop(uv, kp)
    assert d[9] and d[10] and d.sum() == 2
    kp[..., 10, :] = uv[..., 10, :] + [1.0, 0.0]  # ... on its own side: it stays
    d = drop(uv, kp)
    assert d[9] and not d[10] and d.sum() == 1


def test_second_pass_threshold_grows_with_the_noise_of_a_near_body():
    """Observations 40 px from their projections: within the noise of a near body's hips (0.5 x their COCO
    sigma x the 1,040-px body diagonal is 56 px), an error on a far body's hips and on any body's eyes
    (their scaled thresholds, 11 and 13 px, are below the 30-px floor); at 25 px nothing goes."""
    wt = torch.ones(1, 1, 1, 17)
    per_keypoint = BodyFitConfig(second_pass_sides=False, second_pass_view_frac=0.0)  # no view test
    for height, hips_kept in ((1000.0, True), (200.0, False)):
        uv = _person(height, 1, 1)
        for off, dropped in ((40.0, True), (25.0, False)):
            kp = uv + [off, 0.0]
            d = second_pass_drop(*(torch.as_tensor(x[None], dtype=torch.float64) for x in (uv, kp)), wt,
                                 per_keypoint)[0, 0, 0]  # fmt: skip
            assert bool(d[1]) == dropped and bool(d[2]) == dropped  # eyes: the 30-px floor
            assert bool(d[11]) == (dropped and not hips_kept) and bool(d[12]) == (dropped and not hips_kept)
        fixed = BodyFitConfig(second_pass_sides=False, second_pass_sigmas=0.0, second_pass_view_frac=0.0)
        kp = uv + [40.0, 0.0]
        assert second_pass_drop(*(torch.as_tensor(x[None]) for x in (uv, kp)), wt, fixed).all()  # 30 px alone


def test_second_pass_drops_a_view_whose_kept_observations_all_sit_off_a_far_body():
    """A look-alike selected in one view of a far body (200 px): every keypoint 15 px from the wearer's
    projection in a random direction, each within the 30-px floor, but 7.2 % of the 208-px body
    diagonal on average (the test: 5 %): the whole view goes. The same offsets on a near body (1,000 px,
    1.4 %) and the detector's few-pixel noise on the far one stay; a view with only two kept observations
    is not judged. With two such views in a frame only the farther one goes in a round (the refit body
    judges the other)."""
    rng = np.random.default_rng(3)
    direction = rng.normal(size=(17, 2))
    offsets = 15.0 * direction / np.linalg.norm(direction, axis=-1, keepdims=True)
    cfg = BodyFitConfig(second_pass_sides=False)

    def drop(uv, kp, wt, c=cfg):
        return second_pass_drop(*(torch.as_tensor(x, dtype=torch.float64) for x in (uv[None], kp[None], wt)), c)[0, 0]

    far, near = _person(200.0, 1, 2), _person(1000.0, 1, 2)
    wt = torch.ones(1, 1, 2, 17, dtype=torch.float64)
    look_alike = far.copy()
    look_alike[:, 1] += offsets
    look_alike[:, 0] += 0.2 * offsets  # the wearer in view 0: 3 px of noise
    d = drop(far, look_alike, wt)
    assert d[1].all() and not d[0].any()
    diagonal = float(np.linalg.norm(far[0, 0].max(0) - far[0, 0].min(0)))
    assert diagonal == pytest.approx(208.0, abs=0.5)
    assert BodyFitConfig().second_pass_view_frac * diagonal < 15.0 < BodyFitConfig().second_pass_px
    assert not drop(near, near + offsets, wt).any()  # a near body: within its noise
    two = look_alike.copy()
    two[:, 0] = far[:, 0] + 0.9 * offsets
    d = drop(far, two, wt)
    assert d[1].all() and not d[0].any()
    few = wt.clone()
    few[..., 1, 2:] = 0.0  # view 1 uses two keypoints only
    assert not drop(far, look_alike, few).any()
    assert not drop(far, look_alike, wt, BodyFitConfig(second_pass_sides=False, second_pass_view_frac=0.0)).any()
