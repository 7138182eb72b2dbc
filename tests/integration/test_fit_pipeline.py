"""The body fit on the pipeline's own inputs (``build_fit_inputs`` of real runs on synthetic takes): accuracy
against the truth, windows, batches, backends and the second pass."""

import dataclasses
import json

import h5py
import numpy as np
import pytest
import roma
import torch

from motionkit.body.fitting import (
    FACE_KEYPOINTS,
    BodyFitConfig,
    FitInputs,
    coco_rows,
    fit_batch,
    fit_body_model,
    fit_sequence,
    fit_take,
    fit_takes,
    pack_problems,
    smoothness_scale,
)
from motionkit.body.initial import smooth_in_time
from motionkit.body.model import BodyModel
from motionkit.body.objective import bone_component, bone_ranges
from motionkit.conventions import COCO17_POSED_JOINTS, SMPLX_JOINT_NAMES, eye_midpoint
from motionkit.data.egoexo4d import EgoExoDataset
from motionkit.data.store import read_result
from motionkit.eval.metrics import accel_error, mpjpe, pa_mpjpe
from motionkit.eval.synthetic_report import dataset_difficulty, read_gt, take_difficulty, true_rig
from motionkit.geometry.camera import CameraRig
from motionkit.pipeline import PipelineConfig, build_fit_inputs, run_fit

J = {n: i for i, n in enumerate(SMPLX_JOINT_NAMES)}


@pytest.fixture(scope="module")
def fitted(default_root, tmp_path_factory):
    out = tmp_path_factory.mktemp("fits")
    outcomes = [
        run_fit(default_root, info.take_uid, out, PipelineConfig(), progress=False)
        for info in EgoExoDataset(default_root).takes()
    ]
    return out, outcomes


def _gt_at(gt30, time_s):
    pos = time_s * 30.0
    i0 = np.floor(pos).astype(int)
    i1 = np.minimum(i0 + 1, len(gt30) - 1)
    w = (pos - i0)[:, None, None]
    return (1 - w) * gt30[i0] + w * gt30[i1]


def test_fit_accuracy_coverage_and_smoothness(default_root, fitted):
    out, outcomes = fitted
    for oc in outcomes:
        r = read_result(oc.path)
        assert r.attrs["status"] == "ok" and r.stages[-1] == "evaluate"
        with h5py.File(default_root / "gt" / f"{r.attrs['take_uid']}.h5") as g:
            gt = _gt_at(g["wearer/coco17_world"][()], r["time_s"])
            names = json.loads(g.attrs["camera_names"])
            vis = g["wearer/visible"][()][np.rint(r["time_s"] * 30).astype(int)]
        cams = json.loads(r.group_attrs["cameras"]["names"])
        seen2 = vis[:, [names.index(c) for c in cams]].sum(1) >= 2
        pred = r["joints/coco17"]
        # realistic preset: the truth is the subject's surface landmarks (another body model than the
        # fitter's; the fit learns the take's landmark offsets); measured 17.1 / 17.0 mm PA-MPJPE,
        # 20.7 / 19.9 mm MPJPE (10-s takes)
        assert np.nanmean(pa_mpjpe(pred, gt)) <= 19.0
        assert np.nanmean(mpjpe(pred, gt)) <= 22.5
        assert r["valid"][seen2].mean() >= 0.98
        tri = r["triangulation/points"]
        tri_ok = np.isfinite(tri).all((-1, -2))
        acc_fit = np.nanmean(accel_error(np.nan_to_num(pred), gt, 20.0, valid=r["valid"].astype(bool) & tri_ok))
        acc_tri = np.nanmean(accel_error(np.nan_to_num(tri), gt, 20.0, valid=tri_ok))
        assert acc_fit <= 0.1 * acc_tri  # measured 2.7 vs 34.0 and 2.1 vs 29.0 m/s^2 (5.4 and 4.2 before)
        # the result file carries what the issue asks for
        M = len(r["time_s"])
        assert r["smplx/global_orient"].shape == (M, 3) and r["smplx/body_pose"].shape == (M, 63)
        assert r["smplx/betas"].shape == (10,) and r["smplx/transl"].shape == (M, 3)
        np.testing.assert_allclose(np.diff(r["time_s"]), 0.05, atol=1e-9)
        # the ankles and wrists turn only the feet and hands, which no keypoint sees: they stay at rest, and the
        # feet (joints 10, 11) then sit where the subject's are
        unseen = [j - 1 for j in range(1, 22) if j not in COCO17_POSED_JOINTS]
        assert (r["smplx/body_pose"].reshape(M, 21, 3)[:, unseen] == 0).all()
        with h5py.File(default_root / "gt" / f"{r.attrs['take_uid']}.h5") as g:
            feet = _gt_at(g["wearer/joints_world"][()][:, [10, 11]], r["time_s"])
        foot_err = np.linalg.norm(r["joints/smplx"][:, [10, 11]] - feet, axis=-1)[r["valid"].astype(bool)]
        # measured: median 37 / 52 mm, p95 64 / 140 mm (181 / 168 mm median while Adam let the ankles wander)
        assert np.median(foot_err) <= 0.06 and np.percentile(foot_err, 95) <= 0.16
        flags = r.group("flags")
        assert set(flags) == {"FEW_CAMS", "FAST_JOINT", "HIGH_ACCEL", "EYE_ARIA_FAR", "STATIC", "HIGH_REPROJ",
                              "SHORT_SEGMENT", "OCCLUDED", "LR_SWAPS", "NECK_TWIST"}  # fmt: skip
        assert all(f.shape == (M,) and f.dtype == bool for f in flags.values())
        selected = (
            (r["association/det_index"] >= 0)
            & r["triangulation/camera_kept"][None].astype(bool)
            & ~r["triangulation/view_outlier"].astype(bool)
        )  # a VIEW_OUTLIER supports nothing
        kept = r["fit/obs_weight"] > 0.02
        assert not (kept & ~selected[..., None]).any()
        kept &= np.nan_to_num(r["association/confidence"]) >= 0.4  # a guess (scored lower) supports nothing
        views = (kept.sum(-1) >= 8).sum(1)  # views that support the frame: >= 8 supported landmarks
        np.testing.assert_array_equal(flags["FEW_CAMS"], views < 3)
        np.testing.assert_array_equal(r["fit/supporting_views"], views)
        np.testing.assert_array_equal(r["fit/joint_support"], kept.sum(1))
        trusted = r["fit/joint_trusted"].astype(bool)
        assert not (trusted & ~r["valid"].astype(bool)[:, None]).any()
        # what the motion products rest on: the torso under the trajectory and codes, each feature row's
        # landmarks (20 fps fit: row i of a run holds its samples i and i + 1)
        np.testing.assert_array_equal(r["trajectory/root_trusted"], trusted[:, [5, 6, 11, 12]].all(-1))
        rows = np.concatenate([trusted[a : b - 1] & trusted[a + 1 : b] for a, b in r["features/run_bounds"]])
        np.testing.assert_array_equal(r["features/joint_trusted"], rows)
        assert r["reprojection/per_view_px"].shape == (len(cams),)
        # the learned landmark offsets (joint frames: x left, y up, z forward) point where the subjects'
        # landmarks sit: hips above the joint centre, knees in front (measured, both takes: hips 0.1-2.2 cm
        # up, mean per take 0.7 / 1.6 (the pelvis's tilt trades against it; 1.3 / 2.0 before the
        # coarse-to-fine time); knees 0.75-1.9 cm forward; nothing over 2.3 cm)
        off = r["fit/landmark_offset_m"]
        assert (off[:5] == 0).all() and np.abs(off).max() < 0.03
        assert off[[11, 12], 1].mean() > 0.004 and off[[11, 12], 1].min() > -0.003, off
        assert (off[[13, 14], 2] > 0.006).all(), off
        assert r["eval/pa_mpjpe_mm"] <= 23.0  # uncorrected, against noisy annotation3D; measured 21.1 / 20.8
        assert r.body_model["synthetic"] is True
        for p in oc.plots:
            assert p.endswith(".png")


def test_observation_weights_follow_the_truth(default_root, fitted):
    """Realistic takes: what is far from the true projection loses its weight, what is near keeps it."""
    out, outcomes = fitted
    for oc in outcomes:
        r = read_result(oc.path)
        w = r["fit/obs_weight"]
        assert w.shape == r["association/keypoints"].shape[:-1]
        assert (w[r["association/det_index"] < 0] == 0).all()
        assert r.group_attrs["fit"]["second_pass_dropped"] > 0
        # whole views dropped are camera-frames left without a weight though the wearer was selected there
        unweighted = int(((r["association/det_index"] >= 0) & ~(w > 0).any(-1)).sum())
        dropped = r.group_attrs["fit"]["second_pass_views_dropped"]
        assert 0 <= dropped <= unweighted
        # ... and the views the fit was given weight in are those that keep some and those dropped whole
        assert r.group_attrs["fit"]["views_weighted"] == (w > 0).any(-1).sum() + dropped
        assert r.group_attrs["fit"]["views_weighted"] <= (r["association/det_index"] >= 0).sum()
        d = take_difficulty(default_root, r.attrs["take_uid"], out)
        # measured far 6.5 % / 1.9 %, near 92.3 % / 94.7 % (the side check of the second pass and its pair rule drop
        # some right ones where left and right are close together), swaps handled 94 % / 97 %. "Far" is 50 px from
        # the truth, but these bodies are 1,300-1,400 px and the second pass keeps what lies within 0.5 x
        # a keypoint's COCO sigma x that size: the kept ones are mostly clean hips 55-90 px off (0.5 / 0.7 %
        # with the fixed 30 px of 0.7.0, which dropped a quarter of the near hips' clean observations)
        assert d["far_obs_keeping_weight"] <= 0.07
        assert d["near_obs_keeping_weight"] >= 0.90
        assert d["swapped_camera_frames_handled"] >= 0.90


def test_wearer_selection_against_the_truth(default_root, fitted):
    """Realistic takes: the association selects the wearer where the detector found it, and seldom
    anyone else (synth-report's selection figures, pooled over both takes)."""
    out, _ = fitted
    pooled = dataset_difficulty(default_root, out)["pooled"]
    visible, detected = pooled["wearer_selected_where_visible"], pooled["wearer_selected_where_detected"]
    # measured: 1303 of 1324 detected (98.4 %; 99.2 % on the world that showed the face from behind),
    # 1303 of 1340 visible; 11 of 1314 selections someone else
    assert detected["share"] >= 0.98 and detected["of"] > 1000
    assert visible["count"] == detected["count"] and visible["of"] > detected["of"]  # misses count there
    assert pooled["selections_not_the_wearer"]["share"] <= 0.015


def test_the_face_is_trusted_where_the_aria_holds_it(default_root, fitted):
    """The face's landmarks of a valid frame whose fitted head sits and turns as the Aria does are
    trusted whatever the views' support (docs/result_file.md): against the truth none of the trusted face
    landmarks is more than 50 mm off, nearly all those two cameras see are trusted, and many trusted ones
    have fewer than two supporting views in their frame (what the views' rule alone would not trust).
    Measured: 0 of 1,973 trusted face landmarks more than 50 mm off, 1,392 of 1,392 seen ones trusted,
    907 trusted with fewer than two supporting views."""
    out, outcomes = fitted
    pooled = dataset_difficulty(default_root, out)["pooled"]
    assert pooled["joint_false_trust:face"]["count"] == 0 and pooled["joint_false_trust:face"]["of"] > 1800
    assert pooled["joint_coverage:face"]["share"] >= 0.99
    weak = 0
    for oc in outcomes:
        r = read_result(oc.path)
        weak += int((r["fit/joint_trusted"][:, :5] & (r["fit/joint_support"][:, :5] < 2)).sum())
    assert weak > 700


def _miss_px(rig: CameraRig, true: CameraRig, points: np.ndarray) -> np.ndarray:
    """``(V,)`` median distance (px) of ``points``' projections through ``rig`` from the true ones."""
    return np.nanmedian(np.linalg.norm(rig.project(points) - true.project(points), axis=-1), axis=(0, 2))


def test_cameras_move_toward_the_true_ones(default_root, fitted):
    """Realistic takes (calibration 3-5 px off): the cameras the fit refined onto its body project the
    true landmarks nearer their true projections than the calibration does."""
    out, outcomes = fitted
    for oc in outcomes:
        r = read_result(oc.path)
        uid = r.attrs["take_uid"]
        take = EgoExoDataset(default_root).take(uid)
        gt = read_gt(default_root, uid)
        true = true_rig(gt, take.rig)
        refined = CameraRig([dataclasses.replace(c, T_world_cam=np.linalg.inv(T)) for c, T in
                             zip(take.rig.cameras, r["fit/T_cam_world"], strict=True)])  # fmt: skip
        assert r.group_attrs["fit"]["cameras_refined"]
        assert (r["fit/camera_rotation_deg"] < 0.5).all() and (r["fit/camera_translation_m"] < 0.05).all()
        truth = gt["landmarks"][r["grid/frame_index"]]
        before, after = (_miss_px(rig, true, truth) for rig in (take.rig, refined))
        # measured: mean over the views 4.1 -> 2.9 px and 5.9 -> 2.6 px
        assert after.mean() < 0.8 * before.mean(), (before, after)


def test_rerun_reuses_every_stage(default_root, fitted):
    out, outcomes = fitted
    uid = outcomes[0].result.attrs["take_uid"]
    again = run_fit(default_root, uid, out, PipelineConfig(), progress=False, plot=False)
    assert again.reused == again.result.stages
    np.testing.assert_array_equal(again.result["smplx/transl"], outcomes[0].result["smplx/transl"])


def test_fewer_than_two_cameras_is_recorded(tmp_path):
    from motionkit.common.errors import DataError
    from motionkit.synthetic.writer import SynthConfig, write_synthetic_dataset

    write_synthetic_dataset(
        tmp_path / "ds", SynthConfig(takes=1, seed=3, duration=2.0, cameras=1, extra_camera="none", preset="clean")
    )
    uid = EgoExoDataset(tmp_path / "ds").takes()[0].take_uid
    with pytest.raises(DataError, match="fewer than 2 usable cameras"):
        run_fit(tmp_path / "ds", uid, tmp_path / "out", progress=False)
    r = read_result(tmp_path / "out" / f"{uid}.h5")
    assert r.attrs["status"] == "failed" and "fewer than 2 usable cameras" in r.attrs["message"]


def test_no_wearer_found_is_recorded(tmp_path, synth_root):
    import shutil

    from motionkit.common.errors import DataError
    from motionkit.data.observations import read_observations, write_observations

    root = tmp_path / "ds"
    shutil.copytree(synth_root, root)
    uid = EgoExoDataset(root).takes()[0].take_uid
    obs = read_observations(root / "observations" / f"{uid}.h5")
    with h5py.File(root / "gt" / f"{uid}.h5") as g:
        pid = g["detections/person_id"][()]
    write_observations(root / "observations" / f"{uid}.h5", obs.select(pid == -1))  # only false positives
    with pytest.raises(DataError, match="no wearer found"):
        run_fit(root, uid, tmp_path / "out", progress=False)
    assert read_result(tmp_path / "out" / f"{uid}.h5").attrs["status"] == "failed"


def test_windowed_fit_matches_the_single_window_fit(default_root, fitted):
    """Long takes are fitted in overlapping windows with a frozen shape: force small windows on a
    10-s take and compare with the one-window fit stored by the pipeline."""

    out, outcomes = fitted
    r = outcomes[0].result
    inp = _inputs_from_result(r)
    body = BodyModel(vertex_keypoints=FACE_KEYPOINTS)
    res = fit_take(body, inp, BodyFitConfig(window=80, overlap=20, iters=(60, 120, 60)))
    assert res.losses["windows"] >= 3
    J = res.joints[:, :22]
    ref = r["joints/smplx"][:, :22]
    ok = np.isfinite(ref).all((-1, -2))
    assert np.nanmedian(np.linalg.norm(J[ok] - ref[ok], axis=-1)) < 0.02
    # no jump at the seams: frame-to-frame motion stays as in the one-window fit
    step = np.linalg.norm(np.diff(J, axis=0), axis=-1).max(-1)
    step_ref = np.linalg.norm(np.diff(np.nan_to_num(ref), axis=0), axis=-1).max(-1)[ok[1:] & ok[:-1]]
    assert step.max() < 1.5 * step_ref.max()


def test_batched_problems_stay_independent(fitted):
    """Several takes fitted as one batch give the same result as fitting each alone (per-problem
    losses + Adam), even with different lengths and camera counts."""

    _, outcomes = fitted
    inputs = []
    for k, oc in enumerate(outcomes):
        r = oc.result
        n = 60 if k == 0 else 45  # different lengths
        v = 4 if k == 0 else 3  # and camera counts
        inputs.append(_inputs_from_result(r, n, v))
    body = BodyModel(vertex_keypoints=FACE_KEYPOINTS)
    cfg = BodyFitConfig(iters=(20, 40, 20))
    together = fit_batch(body, inputs, cfg)
    for inp, got in zip(inputs, together, strict=True):
        alone = fit_sequence(body, inp, cfg)
        assert got.joints.shape == alone.joints.shape
        # on the fused operators every reduction is per problem and every update per element: equal bit
        # for bit (the torch path agrees to rounding, ~1e-4 m after the fit amplifies it)
        np.testing.assert_array_equal(got.joints, alone.joints)
        np.testing.assert_array_equal(got.betas, alone.betas)


def test_the_fits_adam_takes_the_configured_floor_on_both_backends(fitted):
    """``BodyFitConfig.adam_eps`` reaches the optimiser of every stage of ``fit_batch``: with a floor far
    above every gradient the fit's steps vanish (``lr * g / (|g| + eps)``) and it ends where a fit without
    iterations starts, on either backend; with the shipped floor the same iterations move the body."""
    _, outcomes = fitted
    inp = _inputs_from_result(outcomes[0].result, 30, 3)
    body = BodyModel(vertex_keypoints=FACE_KEYPOINTS)
    plain = BodyFitConfig(iters=(10, 10, 10), second_pass_iters=0)
    for kernels in ("torch", "fused"):
        cfg = dataclasses.replace(plain, kernels=kernels)
        start = fit_sequence(body, inp, dataclasses.replace(cfg, iters=(0, 0, 0))).joints
        frozen = fit_sequence(body, inp, dataclasses.replace(cfg, adam_eps=1e9)).joints
        moved = fit_sequence(body, inp, cfg).joints
        assert np.abs(frozen - start).max() < 1e-5, kernels  # metres
        assert np.median(np.linalg.norm(moved - start, axis=-1)) > 0.01, kernels  # the fit moves the body


def test_bone_ranges_keep_the_fitted_knees_and_elbows_in_their_planes_on_both_backends(fitted):
    """``BodyFitConfig.w_bones`` reaches the fit on either backend: with the knees' and elbows' hinge
    planes narrowed to 0.05 rad (sine 0.05), the bound off leaves a fitted shin or forearm 0.36-0.53 out
    of its plane; the bound on keeps every one of them within 0.1."""
    _, outcomes = fitted
    inp = _inputs_from_result(outcomes[0].result, 60, 3)
    body = BodyModel(vertex_keypoints=FACE_KEYPOINTS)
    rows = bone_ranges(0.05, 0.6)[:4]  # the hinges
    plain = BodyFitConfig(iters=(20, 40, 20), second_pass_iters=0, hinge_max_rad=0.05)

    def worst_bend(out) -> float:
        rot = roma.rotvec_to_rotmat(torch.as_tensor(out.body_pose, dtype=torch.float64))  # (M, 21, 3, 3)
        r6 = torch.cat([torch.eye(3, dtype=torch.float64).expand(len(rot), 1, 3, 3), rot], 1)[..., :2]
        return float(bone_component(r6, rows).abs().max())

    for kernels in ("torch", "fused"):
        cfg = dataclasses.replace(plain, kernels=kernels)
        free = worst_bend(fit_sequence(body, inp, cfg))
        bounded = worst_bend(fit_sequence(body, inp, dataclasses.replace(cfg, w_bones=1.0)))
        # a soft bound after 80 iterations: 0.08 on both backends, from 0.53 (torch) and 0.36 (fused)
        # without it (the worst bend of 60 frames: how far a free fit wanders out of the narrowed plane
        # depends on its rounding)
        assert bounded < 0.11 and free > 0.3, (kernels, bounded, free)


def test_each_problem_weighs_its_smoothness_by_its_own_wearers_speed(fitted):
    """The demo wearers walk (0.65 m/s RMS after the 0.25-s smoothing of the triangulation): their
    acceleration term keeps its weight. The same take with every third frame kept at the same rate is
    the same path walked three times as fast; the smoothing, 0.75 s of the original motion now, takes
    more of it away and leaves 1.2 m/s (1.9x): in the same batch its term is weakened by that speed's
    fourth power, to ~0.44, while the walk's stays 1 (each problem its own factor, not the batch's)."""
    _, outcomes = fitted
    walk = _inputs_from_result(outcomes[0].result, 240)
    fast = dataclasses.replace(walk, keypoints=walk.keypoints[::3], weights=walk.weights[::3],
                               obs_frame=walk.obs_frame[::3], tri=walk.tri[::3], head=walk.head[::3],
                               head_rotation=walk.head_rotation[::3])  # fmt: skip
    cfg = BodyFitConfig()
    batch, _ = pack_problems(BodyModel(vertex_keypoints=FACE_KEYPOINTS), [walk, fast], cfg, torch.device("cpu"))
    expected = [smoothness_scale(smooth_in_time(x.tri, cfg.tri_smooth_s * x.fps), x.fps, 1.0) for x in (walk, fast)]
    assert expected[0] == 1.0 and 0.3 < expected[1] < 0.6
    np.testing.assert_allclose(batch.smooth_scale.numpy(), expected)


def test_the_fitted_head_moves_as_the_aria_anchor_says(default_root, fitted):
    """Four seconds of a take seen by two of its cameras, fitted with and without the head term: with it
    the fitted eyes' displacements over 1-8 samples follow the true eyes' more closely (the anchor's
    own follow them within millimetres): four times more closely, with two views; the pose is no worse."""
    _, outcomes = fitted
    r = outcomes[0].result
    x = _inputs_from_result(r, 80, 2)
    with h5py.File(default_root / "gt" / f"{r.attrs['take_uid']}.h5") as g:
        truth = _gt_at(g["wearer/coco17_world"][()], r["time_s"][:80])  # (80, 17, 3) at the samples' times
    true_eyes = truth[:, [1, 2]].mean(1)
    body = BodyModel(vertex_keypoints=FACE_KEYPOINTS)
    cfg = BodyFitConfig(refine_cameras=False)

    def motion_error(eyes):  # rms over lags 1, 2, 4, 8 of the displacement against the true eyes' (mm)
        d = [(eyes[k:] - eyes[:-k]) - (true_eyes[k:] - true_eyes[:-k]) for k in (1, 2, 4, 8)]
        return 1000 * np.sqrt(np.nanmean(np.concatenate([(e**2).sum(-1) for e in d])))

    assert motion_error(x.head) < 6.0  # the anchor's motion is the truth's within millimetres
    fits = {w: fit_sequence(body, x, dataclasses.replace(cfg, w_head=w)) for w in (0.0, cfg.w_head)}
    err = {w: motion_error(eye_midpoint(f.joints, FACE_KEYPOINTS)) for w, f in fits.items()}
    pa = {w: np.nanmean(pa_mpjpe(f.joints[:, coco_rows(body)], truth)) for w, f in fits.items()}
    assert err[cfg.w_head] < 0.5 * err[0.0], err  # measured: 22 -> 5 mm
    assert pa[cfg.w_head] < pa[0.0] + 0.5, pa  # mm: the pose no worse


def test_the_fitted_head_turns_as_the_aria_says(default_root, fitted):
    """Four seconds of a take seen by two of its cameras, fitted with and without the head-turn term: with
    it the face's direction (the frame of its ears and nose) follows the truth's more closely, and the
    face's points come closer to the truth; the body is no worse."""
    _, outcomes = fitted
    r = outcomes[0].result
    x = _inputs_from_result(r, 80, 2)
    with h5py.File(default_root / "gt" / f"{r.attrs['take_uid']}.h5") as g:
        truth = _gt_at(g["wearer/coco17_world"][()], r["time_s"][:80])  # (80, 17, 3) at the samples' times
    body = BodyModel(vertex_keypoints=FACE_KEYPOINTS)
    cfg = BodyFitConfig(refine_cameras=False)

    def face_frame(p):  # (M, 3, 3): x from the right to the left ear, y towards the nose, z = x cross y
        ex = p[:, 3] - p[:, 4]
        ex = ex / np.linalg.norm(ex, axis=-1, keepdims=True)
        ey = p[:, 0] - 0.5 * (p[:, 3] + p[:, 4])
        ey = ey - (ey * ex).sum(-1, keepdims=True) * ex
        ey = ey / np.linalg.norm(ey, axis=-1, keepdims=True)
        return np.stack([ex, ey, np.cross(ex, ey)], -1)

    def turn_error(p):  # median angle (degrees) between the fitted and the true face frames
        R = face_frame(p) @ np.swapaxes(face_frame(truth), 1, 2)
        return np.degrees(np.median(np.arccos(np.clip((np.trace(R, axis1=1, axis2=2) - 1) / 2, -1, 1))))

    fits = {w: fit_sequence(body, x, dataclasses.replace(cfg, w_head_turn=w)) for w in (0.0, cfg.w_head_turn)}
    coco = {w: f.joints[:, coco_rows(body)] for w, f in fits.items()}
    turn = {w: turn_error(p) for w, p in coco.items()}
    face = {w: 1000 * np.linalg.norm(p[:, :5] - truth[:, :5], axis=-1).mean() for w, p in coco.items()}
    body_err = {w: 1000 * np.linalg.norm(p[:, 5:] - truth[:, 5:], axis=-1).mean() for w, p in coco.items()}
    assert turn[cfg.w_head_turn] < 0.75 * turn[0.0], turn  # measured: 15.4 -> 10.5 degrees (the rest includes
    # the fitted face's shape: its nose and ears do not sit where the truth's do)
    assert face[cfg.w_head_turn] < face[0.0] - 2.0, face  # mm; measured 24.4 -> 20.6
    assert body_err[cfg.w_head_turn] < body_err[0.0] + 0.5, body_err  # mm; measured 32.2 -> 30.8


def _inputs_from_result(r, n=None, v=None) -> FitInputs:
    """The pipeline's own fit inputs of a result (``build_fit_inputs``: production weights, rejections and
    pruning), cut to its first ``n`` grid frames and ``v`` views."""
    rig = EgoExoDataset(r.attrs["dataset_root"]).take(r.attrs["take_uid"]).rig
    x = build_fit_inputs(r, rig, r.fps)
    n, v = n or len(x.keypoints), v or x.keypoints.shape[1]
    return FitInputs(x.fps, x.keypoints[:n, :v], x.weights[:n, :v], x.obs_frame[:n], x.tri[:n], x.params[:v],
                     x.T_cam_world[:v], head=x.head[:n], head_rotation=x.head_rotation[:n])  # fmt: skip


def test_fused_and_torch_fits_agree_against_the_truth(default_root, fitted):
    """The same take fitted on the fused operators and on the torch reference path. Without the second
    pass (a smooth objective, no discrete decisions) PA-MPJPE against the synthetic truth differs by
    <= 0.1 mm (issue acceptance) and the fits agree within a millimetre; with it, as closely as the
    fit's own sensitivity to rounding allows."""
    import h5py

    from motionkit.conventions import SMPLX_TO_COCO17
    from motionkit.eval.metrics import pa_mpjpe

    _, outcomes = fitted
    r = outcomes[0].result
    inp = _inputs_from_result(r, n=100)  # the first 5 s of the take: four fits of it
    body = BodyModel(vertex_keypoints=FACE_KEYPOINTS)
    with h5py.File(default_root / "gt" / f"{r.attrs['take_uid']}.h5") as g:
        gt = _gt_at(g["wearer/coco17_world"][()], r["grid/time_s"][:100])
    got = {}
    for second_pass in (0, BodyFitConfig.second_pass_iters):
        fits = {k: fit_sequence(body, inp, BodyFitConfig(kernels=k, second_pass_iters=second_pass))
                for k in ("torch", "fused")}  # fmt: skip
        pa = {k: np.nanmean(pa_mpjpe(f.joints[:, list(SMPLX_TO_COCO17)], gt)) for k, f in fits.items()}  # mm
        diff = np.linalg.norm(fits["fused"].joints - fits["torch"].joints, axis=-1)
        got[second_pass] = abs(pa["fused"] - pa["torch"]), np.median(diff)
    # measured 0.06 mm and 0.60 mm (the PA bound is the acceptance line of the fused operators)
    assert got[0][0] <= 0.1 and got[0][1] < 1e-3, got
    # metres: float32 sums in another order, through ~900 Adam steps of a non-convex fit whose second
    # pass drops observations near its 30-px line and whose limb pairs choose a labelling per view (a
    # near-tie may go either way). The fit's own sensitivity bounds this: inputs moved by 1e-4 px move the
    # median joint by 2.0-3.7 mm and a take's PA-MPJPE by up to 0.18 mm on these takes. Measured here
    # 0.11 mm and 1.5 mm
    assert got[second_pass][0] <= 0.2 and got[second_pass][1] < 5e-3, got


def test_fused_iteration_dispatches_at_most_5_percent_of_the_torch_operations(fitted):
    """A stage-B Adam iteration on the fused operators dispatches <= 5 % of the ATen operations of the
    torch path (profiler; per iteration = difference of 3 and 1 iterations)."""
    from torch.profiler import ProfilerActivity, profile

    _, outcomes = fitted
    inp = _inputs_from_result(outcomes[0].result, n=40)
    body = BodyModel(vertex_keypoints=FACE_KEYPOINTS)

    def aten_ops(kernels, iters):
        cfg = BodyFitConfig(kernels=kernels, iters=(0, iters, 0), second_pass_iters=0)
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            fit_batch(body, [inp], cfg)
        return sum(e.name.startswith("aten::") for e in prof.events())

    per_it = {k: (aten_ops(k, 3) - aten_ops(k, 1)) / 2 for k in ("torch", "fused")}
    assert per_it["torch"] > 2000  # the reference path is launch-bound: thousands of small operations
    assert per_it["fused"] <= 0.05 * per_it["torch"], per_it


def test_fit_takes_batches_long_and_short_takes_like_fitting_each_alone(fitted):
    """fit_takes: a long take (windows) and a short one fitted together equal fit_take of each, bit for
    bit on the fused operators (padding included)."""

    _, outcomes = fitted
    long_inp = _inputs_from_result(outcomes[0].result, n=150)
    short_inp = _inputs_from_result(outcomes[1].result, n=60, v=3)
    body = BodyModel(vertex_keypoints=FACE_KEYPOINTS)
    cfg = BodyFitConfig(window=80, overlap=20, iters=(20, 40, 20))  # equality needs no convergence
    together = fit_takes(body, [long_inp, short_inp], cfg)
    alone = [fit_take(body, x, cfg) for x in (long_inp, short_inp)]
    assert together[0].losses["windows"] == 3
    for got, ref in zip(together, alone, strict=True):
        np.testing.assert_array_equal(got.joints, ref.joints)
        np.testing.assert_array_equal(got.betas, ref.betas)


def _take_start(r, n: int = 120) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The first ``n`` grid frames of a fitted result: ``selected (n, V)``, the production fit weights
    ``(n, V, 17)`` and a copy of the keypoints ``(n, V, 17, 2)``."""
    x = _inputs_from_result(r, n)
    return r["association/det_index"][:n] >= 0, x.weights, x.keypoints.copy()


def _start_inputs(r, kp: np.ndarray, w: np.ndarray) -> FitInputs:
    """``FitInputs`` of the first ``len(kp)`` grid frames of ``r`` with these keypoints and weights."""
    return dataclasses.replace(_inputs_from_result(r, len(kp)), keypoints=kp, weights=w)


def test_second_pass_drops_left_right_labels_the_fitted_body_contradicts(fitted):
    """Eyes swapped in one view for up to 30 frames where both are seen 8-25 px apart: each swapped eye
    is within 30 px of its own projection (the eyes are close together), so only the side check of the
    second pass removes them; its pair rule (``second_pass_pairs``) adds the partners that lie nearer
    the other label's projection too."""
    r = fitted[1][0].result
    sel, w, kp = _take_start(r)
    eyes = [1, 2]
    sep = np.linalg.norm(kp[:, :, 1] - kp[:, :, 2], axis=-1)
    apart = sel & (w[..., eyes] > 0).all(-1) & (sep > 8) & (sep < 25)  # both eyes seen, 8-25 px apart
    v = int(np.argmax(apart.sum(0)))  # the view with most such frames
    frames = np.flatnonzero(apart[:, v])[:30]
    assert len(frames) >= 15, apart.sum(0)
    kp[frames, v, 1], kp[frames, v, 2] = kp[frames, v, 2].copy(), kp[frames, v, 1].copy()
    inp = _start_inputs(r, kp, w)
    body = fit_body_model()
    got, other = {}, {}
    for sides, pairs in ((False, False), (True, False), (True, True)):
        cfg = BodyFitConfig(iters=(40, 80, 40), second_pass_iters=40, second_pass_sides=sides, second_pass_pairs=pairs)
        out = fit_sequence(body, inp, cfg)
        got[sides, pairs] = out.obs_weight[frames, v][:, eyes] > 0
        other[sides, pairs] = (np.delete(out.obs_weight[:, :, eyes], v, axis=1) > 0).mean()
    assert got[False, False].mean() > 0.8  # the 30-px rule alone keeps most of them (measured 91 %)
    assert got[True, False].mean() < 0.2, got[True, False].mean()  # measured 7 %
    # the price: eyes only ~15 px apart are ambiguous, and some right ones go too (measured 14.2 -> 12.8 %
    # of the other views' eye observations kept; the face turned away hides most of them anyway)
    assert other[True, False] > 0.72 * other[False, False], other
    # the pair rule takes a partner only where it lies nearer the other label's projection too: here the
    # partners the side check left lie nearer their own (measured: 4 and 3 of the 23 swapped camera-frames
    # keep an eye with the rule and without it; the two fits differ, so a frame may go either way); it
    # keeps at most one more, and does not cost the other views
    assert got[True, True].any(-1).sum() <= min(0.3 * len(frames), got[True, False].any(-1).sum() + 1), got
    assert other[True, True] > 0.95 * other[True, False], other


def test_interchangeable_limb_labels_keep_the_limb_where_the_body_puts_it(default_root, fitted):
    """One leg's labels swapped in one view for 30 frames while only one other view sees the legs:
    nothing can test the swap across views, and the plain loss pulls the legs toward the swapped labels;
    with ``symmetric_limbs`` the pair costs its cheaper labelling and the legs stay near the truth."""
    r = fitted[1][0].result
    _, w, kp = _take_start(r)
    legs = [13, 14, 15, 16]
    seen = (w[:, :, legs] > 0).all(-1)  # (n, V) views that see both legs
    u, v = np.argsort(-seen.sum(0))[:2]  # the two views that see them most
    w[:, [c for c in range(w.shape[1]) if c not in (u, v)], 13:17] = 0.0
    sep = np.linalg.norm(kp[:, v, 15] - kp[:, v, 16], axis=-1)
    frames = np.flatnonzero(seen[:, u] & seen[:, v] & (sep > 40))[:30]
    assert len(frames) >= 15
    for a, b in ((13, 14), (15, 16)):
        kp[frames, v, a], kp[frames, v, b] = kp[frames, v, b].copy(), kp[frames, v, a].copy()
    inp = _start_inputs(r, kp, w)
    truth = read_gt(default_root, r.attrs["take_uid"])["landmarks"][inp.obs_frame][frames][:, legs]
    body = fit_body_model()
    err = {}
    for symmetric in (False, True):
        cfg = BodyFitConfig(iters=(40, 80, 40), second_pass_iters=40, refine_cameras=False, symmetric_limbs=symmetric)
        out = fit_sequence(body, inp, cfg)
        fitted_legs = out.joints[frames][:, coco_rows(body)[legs]]
        err[symmetric] = float(np.nanmean(np.linalg.norm(fitted_legs - truth, axis=-1)))
    assert err[True] < 0.65 * err[False], err  # measured 68.7 -> 37.7 mm (legs, swapped frames, not aligned)


def test_limb_labels_become_interchangeable_from_the_chosen_stage(fitted):
    """``symmetric_limbs_from``: with "C", stages A and B fit the labels as given (a jog whose legs each
    view could match in either labelling was fitted with crossed legs otherwise), so after them the fit
    equals the one without interchangeable labels; with "B" it does not (a leg swapped in one view)."""
    r = fitted[1][0].result
    _, w, kp = _take_start(r, 60)
    v = int(np.argmax((w[:, :, 13:17] > 0).all(-1).sum(0)))  # the view that sees both legs most often
    frames = np.flatnonzero((w[:, v, 13:17] > 0).all(-1))[:20]
    for a, b in ((13, 14), (15, 16)):
        kp[frames, v, a], kp[frames, v, b] = kp[frames, v, b].copy(), kp[frames, v, a].copy()
    inp = _start_inputs(r, kp, w)
    body = fit_body_model()
    base = BodyFitConfig(iters=(20, 40, 0), second_pass_iters=0, refine_cameras=False)
    labelled = fit_sequence(body, inp, dataclasses.replace(base, symmetric_limbs=False)).joints
    from_c = fit_sequence(body, inp, dataclasses.replace(base, symmetric_limbs_from="C")).joints
    from_b = fit_sequence(body, inp, dataclasses.replace(base, symmetric_limbs_from="B")).joints
    assert np.array_equal(from_c, labelled)
    assert np.abs(from_b - labelled).max() > 0.01  # metres
    with pytest.raises(ValueError, match="symmetric_limbs_from"):
        BodyFitConfig(symmetric_limbs_from="A")
