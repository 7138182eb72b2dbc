import json
import shutil
import warnings

import cv2
import h5py
import numpy as np
import pytest

from motionkit.conventions import COCO17_INDEX
from motionkit.data.egoexo4d import EgoExoDataset, read_closed_loop_trajectory, read_gopro_calibs


def test_list_and_find_takes(synth_root):
    ds = EgoExoDataset(synth_root)
    takes = ds.takes()
    assert len(takes) == 3
    assert {t.split for t in takes} == {"train", "val"}
    assert len(ds.takes("val")) + len(ds.takes("train")) == 3
    t = takes[1]
    assert ds.take(t.take_uid).uid == ds.take(t.take_name).uid == t.take_uid
    assert ds.take(t.take_uid).n_frames == 180


def test_cameras_quality_filter_and_missing(synth_root):
    ds = EgoExoDataset(synth_root)
    t0, t1, t2 = (ds.take(t.take_uid) for t in ds.takes())
    assert len(t0.rig) == 4
    with pytest.warns(UserWarning, match="quality != 1"):
        rig1 = t1.rig
    assert len(rig1) == 4 and t1.camera_status["cam05"] == "CAM_NOT_CALIBRATED"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rig2 = t2.rig  # cam05 is in takes.json videos but not in gopro_calibs.csv
    assert "cam05" not in rig2.names
    assert "cam05" in t2.info.raw["frame_aligned_videos"]
    # one portrait camera per take in this fixture
    assert (rig2.sizes == [2160, 3840]).all(1).sum() == 1


def test_projectaria_reads_synthetic_files(synth_root):
    mps = pytest.importorskip("projectaria_tools.core.mps")
    take = EgoExoDataset(synth_root).take(EgoExoDataset(synth_root).takes()[0].take_uid)
    calib_path = take.take_dir / "trajectory" / "gopro_calibs.csv"
    theirs = {c.camera_uid: c for c in mps.read_static_camera_calibrations(str(calib_path))}
    ours = {c.name: c for c, _ in read_gopro_calibs(calib_path)}
    assert set(theirs) == set(ours)
    for name, c in ours.items():
        np.testing.assert_allclose(theirs[name].transform_world_cam.to_matrix(), c.T_world_cam, atol=1e-6)
        np.testing.assert_allclose(np.asarray(theirs[name].intrinsics), c.params, rtol=1e-6)
        assert (theirs[name].width, theirs[name].height) == (c.width, c.height)
    traj_path = take.take_dir / "trajectory" / "closed_loop_trajectory.csv"
    theirs = mps.read_closed_loop_trajectory(str(traj_path))
    ours = read_closed_loop_trajectory(traj_path, cache=False)
    assert len(theirs) == len(ours) > 0
    for i in (0, len(ours) // 2, len(ours) - 1):
        assert int(theirs[i].tracking_timestamp.total_seconds() * 1e6 + 0.5) == ours.t_us[i]
        T = theirs[i].transform_world_device.to_matrix()
        np.testing.assert_allclose(T[:3, 3], ours.position[i], atol=1e-8)
        from motionkit.geometry.rotations import quat_xyzw_to_matrix

        np.testing.assert_allclose(T[:3, :3], quat_xyzw_to_matrix(ours.quat_xyzw[i]), atol=1e-8)


def test_annotation2d_matches_opencv_projection(synth_root):
    """annotation3D -> raw pixels (cv2.fisheye.projectPoints) -> undistortPoints with the balance-0.8
    new K reproduces annotation2D within 1 px."""
    ds = EgoExoDataset(synth_root)
    for info in ds.takes():
        take = ds.take(info.take_uid)
        ann = take.body_annotation()
        assert ann is not None and ann.frames[0] > 0 and ann.key_spacing == 3
        n_checked = 0
        for cam in take.rig:
            if cam.name not in ann.joints2d:
                continue
            K, D = cam.K, cam.D.reshape(4, 1)
            newK = cv2.fisheye.estimateNewCameraMatrixForUndistortRectify(
                K, D, (cam.width, cam.height), np.eye(3), balance=0.8
            )
            j2 = ann.joints2d[cam.name]
            m = np.isfinite(j2[..., 0])
            X = ann.joints3d[m]
            Tcw = cam.T_cam_world
            rvec, _ = cv2.Rodrigues(Tcw[:3, :3])
            raw, _ = cv2.fisheye.projectPoints(X[:, None, :], rvec, Tcw[:3, 3], K, D)
            und = cv2.fisheye.undistortPoints(raw, K, D, R=np.eye(3), P=newK)[:, 0]
            err = np.linalg.norm(und - j2[m], axis=-1)
            assert err.max() < 1.0, (cam.name, err.max())
            n_checked += m.sum()
        assert n_checked > 100


def test_annotation_joints_missing_when_unseen(synth_root):
    ds = EgoExoDataset(synth_root)
    ann = ds.take(ds.takes()[0].take_uid).body_annotation()
    present = np.isfinite(ann.joints3d[..., 0])
    assert present.mean() > 0.6
    assert (ann.num_views[present] >= 2).all() and (ann.num_views[~present] == 0).all()


def test_cpf_anchor_near_annotated_eyes(synth_root):
    ds = EgoExoDataset(synth_root)
    for info in ds.takes():
        take = ds.take(info.take_uid)
        ann = take.body_annotation()
        eyes = ann.joints3d[:, [COCO17_INDEX["left-eye"], COCO17_INDEX["right-eye"]]].mean(1)
        anchor = take.head_anchor(ann.frames)
        ok = np.isfinite(eyes).all(1) & anchor.valid
        assert ok.sum() > 20
        d = np.linalg.norm(anchor.position[ok] - eyes[ok], axis=1)
        assert d.max() < 0.15 and np.median(d) < 0.05


def test_timesync_nan_rows(synth_root):
    ds = EgoExoDataset(synth_root)
    take = ds.take(ds.takes()[0].take_uid)
    ts, reason = take.frame_device_ns(np.arange(take.n_frames))
    # gaps of 1 and 3 rows are interpolated onto the 30 Hz grid; an 8-row gap is reported
    for f in (40, 61):
        assert np.isfinite(ts[f]) and reason[f] == ""
        assert abs((ts[f + 1] - ts[f - 1]) / 2 - (ts[f] - ts[f - 1])) < 2
    assert np.all(reason[90:98] == "ARIA_TS_NAN") and np.isnan(ts[90:98]).all()
    anchor = take.head_anchor(np.arange(take.n_frames))
    assert not anchor.valid[90:98].any() and anchor.valid[:90].all()
    with pytest.raises(ValueError, match="timesync_offset"):
        type(take)(take.dataset, take.info, timesync_offset=2)


def test_sample_device_ns_reads_the_device_time_between_frames(synth_root):
    """A 20 fps sample half-way between two 30 fps frames has the mean of their device times; on a frame,
    the frame's; NaN beside a frame whose time is unknown (the 8-row timesync gap)."""
    ds = EgoExoDataset(synth_root)
    take = ds.take(ds.takes()[0].take_uid)
    ts, _ = take.frame_device_ns(np.arange(take.n_frames))
    pos = np.arange(0, 120, 1.5)  # the 20 fps grid
    at = take.sample_device_ns(pos)
    whole = pos == np.floor(pos)
    np.testing.assert_array_equal(at[whole], ts[pos[whole].astype(int)])
    half = np.flatnonzero(~whole & (pos < 88))
    np.testing.assert_allclose(
        at[half], 0.5 * (ts[np.floor(pos[half]).astype(int)] + ts[np.ceil(pos[half]).astype(int)])
    )
    assert np.isnan(at[(pos > 89) & (pos < 98)]).all() and np.isfinite(at[pos < 88]).all()
    assert take.sample_device_ns(np.array([89.0]))[0] == ts[89]  # its own time, though frame 90's is unknown


def test_trajectory_cache_lives_in_motionkit_home(synth_root, motionkit_home, tmp_path):
    src = EgoExoDataset(synth_root).take(EgoExoDataset(synth_root).takes()[0].take_uid).take_dir
    p = tmp_path / "closed_loop_trajectory.csv"
    shutil.copy(src / "trajectory" / "closed_loop_trajectory.csv", p)
    before = set(tmp_path.iterdir())
    a = read_closed_loop_trajectory(p)
    b = read_closed_loop_trajectory(p)
    assert set(tmp_path.iterdir()) == before  # nothing written beside the dataset file
    assert list((motionkit_home / "cache" / "trajectory").glob("*.npz"))
    np.testing.assert_array_equal(a.position, b.position)
    np.testing.assert_array_equal(a.t_us, b.t_us)


def test_gt_file_layout(synth_root):
    ds = EgoExoDataset(synth_root)
    uid = ds.takes()[0].take_uid
    with h5py.File(synth_root / "gt" / f"{uid}.h5") as f:
        names = json.loads(f.attrs["camera_names"])
        F = 180
        assert f["wearer/coco17_world"].shape == (F, 17, 3)
        assert f["wearer/boxes"].shape == (F, len(names), 4)
        vis = f["wearer/visible"][()]
        boxes = f["wearer/boxes"][()]
        assert np.isnan(boxes[~vis]).all() and np.isfinite(boxes[vis]).all()
        assert "bystander_1" in f and "bystander_2" in f
