"""Layouts of real Ego-Exo4D releases that differ from the common case (checked against public
excerpts of real files): another Aria device name, a capture-level trajectory only, the frame-first
camera_pose layout of the docs, trajectories from another world frame, cameras posed for a window."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from motionkit.common.errors import DataError
from motionkit.data.egoexo4d import EgoExoDataset, read_camera_pose
from motionkit.data.store import read_result
from motionkit.pipeline import PipelineConfig, run_fit


@pytest.fixture
def copy(synth_root, tmp_path):
    root = tmp_path / "ds"
    shutil.copytree(synth_root, root)
    return root


def _aria02_capture_trajectory(root):
    """Rename the ego device to aria02 everywhere and keep only the capture's trajectory."""
    takes = json.loads((root / "takes.json").read_text())
    for t in takes:
        for c in t["capture"]["cameras"]:
            if c["is_ego"]:
                c["cam_id"] = "aria02"
        cap = root / t["capture"]["root_dir"]
        ts = cap / "timesync.csv"
        ts.write_text(ts.read_text().replace("aria01_", "aria02_"))
        (cap / "trajectory").mkdir(exist_ok=True)
        shutil.move(root / t["root_dir"] / "trajectory" / "closed_loop_trajectory.csv",
                    cap / "trajectory" / "closed_loop_trajectory.csv")  # fmt: skip
    (root / "takes.json").write_text(json.dumps(takes))
    return takes[0]


def test_aria02_with_only_a_capture_trajectory_loads_and_fits(copy, tmp_path):
    entry = _aria02_capture_trajectory(copy)
    take = EgoExoDataset(copy).take(entry["take_uid"])
    assert take.aria_device == "aria02" and take.trajectory_path.parent.parent == take.capture_dir
    out = run_fit(copy, take.uid, tmp_path / "out", PipelineConfig(fit_iters=(5, 10, 5)), progress=False, plot=False)
    r = read_result(out.path)
    assert r.attrs["status"] == "ok" and r["aria/valid"].mean() > 0.9


def test_trajectory_from_another_world_frame_is_refused(copy):
    take = EgoExoDataset(copy).take(EgoExoDataset(copy).takes()[0].take_uid)
    p = take.trajectory_path
    p.write_text(p.read_text().replace("graph0,", "graph7,"))
    with pytest.raises(DataError, match="different world frames"):
        _ = take.trajectory


def test_frame_first_camera_pose_layout_reads_like_the_camera_first_one(copy, tmp_path):
    ds = EgoExoDataset(copy)
    take = ds.take(ds.takes()[0].take_uid)
    src = take.annotation_path("camera_pose", "camera_pose")
    cam_first = json.loads(src.read_text())
    frames = sorted(cam_first["aria01"]["camera_extrinsics"], key=int)
    frame_first = {"metadata": cam_first["metadata"]}
    for f in frames:
        frame_first[f] = {}
        for c, v in cam_first.items():
            if c != "metadata":
                ext = v["camera_extrinsics"][f] if c == "aria01" else v["camera_extrinsics"]
                frame_first[f][c] = {**v, "camera_extrinsics": ext}
    alt = tmp_path / "frame_first.json"
    alt.write_text(json.dumps(frame_first))
    a, b = read_camera_pose(src), read_camera_pose(alt)
    assert set(a) == set(b)
    np.testing.assert_allclose(a["cam01"]["T_cam_world"], b["cam01"]["T_cam_world"])
    np.testing.assert_allclose(a["cam01"]["K"], b["cam01"]["K"])
    assert a["aria01"]["T_cam_world"].keys() == b["aria01"]["T_cam_world"].keys()


def test_camera_pose_window_limits_its_frames(copy):
    ds = EgoExoDataset(copy)
    take = ds.take(ds.takes()[0].take_uid)
    p = take.calibration_path
    lines = p.read_text().splitlines()
    cols = lines[0].split(",")
    row = lines[1].split(",")
    row[cols.index("start_frame_idx")], row[cols.index("end_frame_idx")] = "30", "60"
    p.write_text("\n".join([lines[0], ",".join(row), *lines[2:]]) + "\n")
    take = EgoExoDataset(copy).take(take.uid)
    active = take.camera_active(np.arange(100))
    first = take.rig.names.index(row[0])
    np.testing.assert_array_equal(np.flatnonzero(active[:, first]), np.arange(30, 61))
    assert active[:, [v for v in range(len(take.rig)) if v != first]].all()
