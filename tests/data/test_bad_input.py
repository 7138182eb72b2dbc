"""Every malformed input gives one clear DataError naming the file (and line), never a deep traceback."""

import json
import shutil

import numpy as np
import pytest

from motionkit.common.errors import DataError
from motionkit.data.egoexo4d import (
    EgoExoDataset,
    read_body_annotation,
    read_closed_loop_trajectory,
    read_gopro_calibs,
)


@pytest.fixture()
def take_copy(synth_root, tmp_path):
    """A private copy of the first synthetic take's dataset (so tests can break it)."""
    root = tmp_path / "ds"
    shutil.copytree(synth_root, root)
    ds = EgoExoDataset(root)
    return ds.take(ds.takes()[0].take_uid)


def _lines(p):
    return p.read_text().splitlines()


def test_truncated_trajectory(take_copy):
    p = take_copy.take_dir / "trajectory" / "closed_loop_trajectory.csv"
    lines = _lines(p)
    lines[-1] = lines[-1][: len(lines[-1]) // 3]
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError) as e:
        read_closed_loop_trajectory(p, cache=False)
    assert str(p) in str(e.value) and f"line {len(lines)}" in str(e.value)


def test_malformed_number_in_trajectory(take_copy):
    p = take_copy.take_dir / "trajectory" / "closed_loop_trajectory.csv"
    lines = _lines(p)
    f = lines[5].split(",")
    f[3] = "abc"
    lines[5] = ",".join(f)
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match="line 6"):
        read_closed_loop_trajectory(p, cache=False)


def test_trajectory_missing_column(take_copy):
    p = take_copy.take_dir / "trajectory" / "closed_loop_trajectory.csv"
    rows = [ln.split(",") for ln in _lines(p)]
    p.write_text("\n".join(",".join(r[:-1]) for r in rows) + "\n")
    with pytest.raises(DataError, match="missing columns.*quality_score") as e:
        read_closed_loop_trajectory(p, cache=False)
    assert "line 1" in str(e.value)


@pytest.mark.parametrize("quat,what", [(("nan", "0", "0", "1"), "NaN"), (("0.5", "0", "0", "1"), "non-unit")])
def test_bad_trajectory_quaternion(take_copy, quat, what):
    p = take_copy.take_dir / "trajectory" / "closed_loop_trajectory.csv"
    lines = _lines(p)
    f = lines[10].split(",")
    f[6:10] = quat
    lines[10] = ",".join(f)
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=f"line 11: {what}"):
        read_closed_loop_trajectory(p, cache=False)


def test_unknown_intrinsics_type(take_copy):
    p = take_copy.take_dir / "trajectory" / "gopro_calibs.csv"
    lines = _lines(p)
    lines[2] = lines[2].replace("KANNALABRANDTK3", "PINHOLE")
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=r"line 3: unknown intrinsics_type 'PINHOLE'"):
        read_gopro_calibs(p)


def test_truncated_calibration(take_copy):
    p = take_copy.take_dir / "trajectory" / "gopro_calibs.csv"
    lines = _lines(p)
    lines[-1] = ",".join(lines[-1].split(",")[:8])
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=f"line {len(lines)}: row has the wrong number of fields"):
        read_gopro_calibs(p)


def test_a_camera_row_with_an_unusable_pose_is_dropped_with_its_reason(take_copy):
    """One broken row no longer fails the whole take: the camera is dropped, as a quality-0 one is."""
    p = take_copy.take_dir / "trajectory" / "gopro_calibs.csv"
    lines = _lines(p)
    header = lines[0].split(",")
    f = lines[1].split(",")
    f[5:9] = ["0.9", "0.9", "0", "0"]  # a non-unit quaternion
    lines[1] = ",".join(f)
    g = lines[2].split(",")
    g[header.index("tx_world_cam")] = "nan"  # a non-finite position
    lines[2] = ",".join(g)
    p.write_text("\n".join(lines) + "\n")
    rows = read_gopro_calibs(p)
    assert rows[0][1] == rows[1][1] == -2
    assert "line 2: non-unit quaternion" in rows[0][0].meta["invalid"]
    assert "line 3: non-finite pose" in rows[1][0].meta["invalid"]
    bad = {rows[0][0].name, rows[1][0].name}
    with pytest.warns(UserWarning, match="skipping cameras with an unusable calibration"):
        rig = take_copy.rig
    assert bad.isdisjoint(rig.names) and len(rig) >= 2
    status = take_copy.camera_status
    assert {n: status[n] for n in bad} == dict.fromkeys(bad, "CAM_INVALID_CALIBRATION")


def test_no_usable_camera_says_why_each_was_dropped(take_copy):
    p = take_copy.take_dir / "trajectory" / "gopro_calibs.csv"
    lines = _lines(p)
    col = lines[0].split(",").index("qw_world_cam")
    rows = [ln.split(",") for ln in lines[1:]]
    for r in rows:
        r[col] = "nan"
    p.write_text("\n".join([lines[0], *(",".join(r) for r in rows)]) + "\n")
    with pytest.warns(UserWarning), pytest.raises(DataError) as err:
        take_copy.rig  # noqa: B018 - the property reads the file
    msg = str(err.value)
    assert msg.startswith(str(p)) and "no usable camera" in msg and "line 2: NaN quaternion" in msg, msg


def test_calibration_missing_columns(take_copy):
    p = take_copy.take_dir / "trajectory" / "gopro_calibs.csv"
    p.write_text("cam_uid,graph_uid\ncam01,g\n")
    with pytest.raises(DataError, match="missing columns"):
        read_gopro_calibs(p)


def test_take_not_in_takes_json(take_copy):
    with pytest.raises(DataError, match="takes.json: take 'no_such_take' not found"):
        take_copy.dataset.take("no_such_take")


def test_missing_trajectory_folder(take_copy):
    shutil.rmtree(take_copy.take_dir / "trajectory")
    with pytest.raises(DataError, match="closed_loop_trajectory.csv not found \\(nor the capture copy"):
        _ = take_copy.trajectory
    with pytest.raises(DataError, match="trajectory folder missing"):
        _ = take_copy.rig


def test_malformed_takes_json(take_copy):
    p = take_copy.dataset.root / "takes.json"
    p.write_text(p.read_text()[:200])
    with pytest.raises(DataError, match=r"takes.json, line \d+: malformed JSON"):
        EgoExoDataset(take_copy.dataset.root).takes()


def test_takes_json_missing_field(take_copy):
    """One malformed entry is warned about by name; the other takes still list (and fit)."""
    p = take_copy.dataset.root / "takes.json"
    data = json.loads(p.read_text())
    bad = data[0]["take_name"]
    del data[0]["timesync_start_idx"]
    p.write_text(json.dumps(data))
    ds = EgoExoDataset(take_copy.dataset.root)
    with pytest.warns(UserWarning, match=f"take entry 0 \\({bad}\\): missing or bad field"):
        names = [t.take_name for t in ds.takes()]
    assert bad not in names and len(names) == len(data) - 1 and len(ds.skipped_entries) == 1
    p.write_text(json.dumps([data[0]]))  # nothing usable left: a clear error
    with pytest.raises(DataError, match="no usable take entry"), pytest.warns(UserWarning):
        EgoExoDataset(take_copy.dataset.root).takes()


def test_malformed_annotation(tmp_path):
    p = tmp_path / "a.json"
    p.write_text('{"12": [{"annotation3D": {"nose": {"x": 1, "y": "oops", "z": 0}}}]}')
    with pytest.raises(DataError, match="frame 12, joint nose"):
        read_body_annotation(p)
    p.write_text('{"12": {"annotation3D": {}}}')
    with pytest.raises(DataError, match="expected a list"):
        read_body_annotation(p)
    for frame in ('["oops"]', '[{"annotation3D": [1, 2]}]', '[{"annotation2D": {"cam01": [0, 1]}}]'):
        p.write_text(f'{{"12": {frame}}}')
        with pytest.raises(DataError, match="a.json: frame 12: (expected an object|annotation3D, annotation2D)"):
            read_body_annotation(p)


def test_annotation_parsed_by_name_and_empty_frames_dropped(tmp_path):
    p = tmp_path / "a.json"
    p.write_text(
        json.dumps(
            {
                "30": [
                    {"annotation3D": {"Left-Eye": {"x": 1, "y": 2, "z": 3, "num_views_for_3d": 3}}, "annotation2D": {}}
                ],
                "6": [
                    {
                        "annotation3D": {"right-ankle": {"x": 4, "y": 5, "z": 6, "num_views_for_3d": 2}},
                        "annotation2D": {"cam01": {"nose": {"x": 10.5, "y": 20.5, "placement": "auto"}}},
                    }
                ],
                "9": [],
                "12": [{"annotation3D": {}, "annotation2D": {}}],
            }
        )
    )
    ann = read_body_annotation(p)
    assert ann.frames.tolist() == [6, 30]
    np.testing.assert_array_equal(ann.joints3d[1, 1], [1, 2, 3])
    np.testing.assert_array_equal(ann.joints3d[0, 16], [4, 5, 6])
    assert np.isnan(ann.joints3d[0, :16]).all() and ann.num_views[1, 1] == 3
    assert ann.joints2d["cam01"][0, 0].tolist() == [10.5, 20.5] and ann.placement2d["cam01"][0, 0] == "auto"


def test_missing_root():
    with pytest.raises(DataError, match="dataset root not found"):
        EgoExoDataset("/nonexistent/egoexo4d")


def test_excluded_scenarios_are_skipped_by_batch_as_by_eval(take_copy, tmp_path):
    from click.testing import CliRunner

    from motionkit.cli import main

    root = take_copy.dataset.root
    data = json.loads((root / "takes.json").read_text())
    for t in data:
        t["task_name"] = "Rock Climbing"
    (root / "takes.json").write_text(json.dumps(data))
    assert all(t.excluded_scenario for t in EgoExoDataset(root).takes())
    r = CliRunner().invoke(main, ["batch", "--root", str(root), "--out", str(tmp_path / "o"), "--all"])
    assert r.exit_code != 0 and "excluded scenarios" in r.output and "no takes selected" in r.output
