"""HumanMoveVQA tracks: every record's sign and word agree with the public generator's reading
(x + = right, y + = up, z + = forward = "away from starting position", yaw + = clockwise, pitch + =
forward, roll + = right), in both frames, on motions whose answers are known; the export command."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from motionkit.cli import main
from motionkit.data.egoexo4d import EgoExoDataset
from motionkit.geometry.rotations import axis_rotation
from motionkit.motion.humanmovevqa import track_document, track_events
from tests.helpers import gt_result

FPS = 20.0
T = 200
RAMP = np.clip((np.arange(T) / FPS - 1.0) / 5.0, 0, 1)  # moves between 1 s and 6 s of a 10-s track
HEADING = axis_rotation("y", np.deg2rad(30.0))  # the subject faces 30 degrees off world +z (y-up world)

# The generator's reading, written out independently of motionkit's tables: the word of a positive
# intensity for each code ("counterclockwise" contains "clockwise": the suffix decides)
POSITIVE_SUFFIX = {
    "displacement_x": "_right",
    "displacement_y": "_up",
    "displacement_z": "_forward",
    "rotation_yaw": "_turn_clockwise",
    "rotation_pitch": "_leaning_forward",
    "rotation_roll": "_leaning_right",
}
NEGATIVE_SUFFIX = {
    "displacement_x": "_left",
    "displacement_y": "_down",
    "displacement_z": "_backward",
    "rotation_yaw": "_turn_counterclockwise",
    "rotation_pitch": "_leaning_backward",
    "rotation_roll": "_leaning_left",
}


def _motion(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Root positions (T, 3) and orientations (T, 3, 3), y-up world, for a known motion."""
    left, fwd = HEADING[:, 0], HEADING[:, 2]
    p = np.tile([0.0, 0.95, 0.0], (T, 1))
    R = np.repeat(HEADING[None], T, 0)
    if name == "walk_right":
        p = p - left * 2.0 * RAMP[:, None]
    elif name == "walk_left":
        p = p + left * 2.0 * RAMP[:, None]
    elif name == "step_back":
        p = p - fwd * 0.8 * RAMP[:, None]
    elif name == "turn_clockwise":  # seen from above (+y): a negative rotation about up
        R = np.stack([axis_rotation("y", -np.deg2rad(120.0) * r) for r in RAMP]) @ HEADING
    elif name == "lean_forward":  # about the body's left axis, head toward the body's front
        R = HEADING @ np.stack([axis_rotation("x", np.deg2rad(40.0) * r) for r in RAMP])
    return p, R


def _camera(facing_subject: bool) -> np.ndarray:
    """Camera-to-world rotation (x right, y down, z viewing direction) of a level camera in front of the
    subject looking at it (``facing_subject``) or behind it looking the way it faces."""
    view = -HEADING[:, 2] if facing_subject else HEADING[:, 2]
    down = np.array([0.0, -1.0, 0.0])
    return np.stack([np.cross(down, view), down, view], 1)


def _doc(name: str, frame: str, facing_subject: bool = True) -> dict:
    p, R = _motion(name)
    cam = _camera(facing_subject) if frame == "camera" else None
    es = track_events(p, R, FPS, frame=frame, camera_R_world=cam, motion_id=f"{name}_{frame}")
    return track_document(es, frame=frame, camera="camX" if cam is not None else None,
                          video={}, source={})  # fmt: skip


def _records(doc: dict) -> list[tuple[str, dict]]:
    return [(code, s["quant"]) for code, segs in doc["quantitative_values"].items() for s in segs]


def _check_reading(doc: dict) -> None:
    for code, q in _records(doc):
        if q["spatial_category"] == "no_action":
            continue
        suffix = POSITIVE_SUFFIX[code] if q["intensity"] > 0 else NEGATIVE_SUFFIX[code]
        assert q["spatial_category"].endswith(suffix), (code, q)
        assert np.sign(q["velocity"]) == np.sign(q["intensity"]), (code, q)


# (motion, frame, camera in front of the subject) -> the only QA-relevant code and its word and intensity
KNOWN = [
    ("walk_right", "person", True, "displacement_x", "right", 20),
    ("walk_left", "person", True, "displacement_x", "left", -20),
    ("step_back", "person", True, "displacement_z", "backward", -8),
    ("turn_clockwise", "person", True, "rotation_yaw", "clockwise", 120),
    ("lean_forward", "person", True, "rotation_pitch", "forward", 40),
    # a camera facing the subject sees its right as the image's left, and a step back as going away
    ("walk_right", "camera", True, "displacement_x", "left", -20),
    ("walk_left", "camera", True, "displacement_x", "right", 20),
    ("step_back", "camera", True, "displacement_z", "backward", -8),
    # a camera behind the subject sees its right as the image's right, a step back as coming closer
    ("walk_right", "camera", False, "displacement_x", "right", 20),
    ("step_back", "camera", False, "displacement_z", "forward", 8),
    # rotations are the body's own in both frames
    ("turn_clockwise", "camera", True, "rotation_yaw", "clockwise", 120),
    ("lean_forward", "camera", False, "rotation_pitch", "forward", 40),
]


@pytest.mark.parametrize(("name", "frame", "facing", "code", "word", "total"), KNOWN)
def test_known_motions_read_as_the_generator_reads_them(name, frame, facing, code, word, total):
    doc = _doc(name, frame, facing)
    _check_reading(doc)
    significant = [(c, q) for c, q in _records(doc) if q["spatial_category"] != "no_action"]
    assert {c for c, _ in significant} == {code}, significant
    assert all(q["spatial_category"].endswith("_" + word) for _, q in significant)
    # first-frame normalised, units as stated: 2 m = 20 units of 10 cm, 0.8 m = 8; rotations in degrees
    assert sum(q["intensity"] for _, q in significant) == total
    assert doc["normalize_first_frame"] and doc["frame"]["type"] == frame
    assert doc["units"]["displacement_m"] == 0.1 and doc["units"]["displacement_label"] == "10 cm"
    assert doc["units"]["rotation_intensity"] == "degrees"


def test_export_command_writes_one_track_per_valid_run_and_reports_takes_without_one(default_root, tmp_path):
    uids = [t.take_uid for t in EgoExoDataset(default_root).takes()]
    fits = tmp_path / "fits"
    # two valid runs; the fit does not trust the left shoulder on grid frames 120..129 (run 1's 20..29)
    gt_result(default_root, uids[0], fits, drop=slice(90, 100), untrusted=(slice(120, 130), (5,)))
    gt_result(default_root, uids[1], fits, drop=slice(0, None))  # no valid run
    out = tmp_path / "hmv"
    runner = CliRunner()
    r = runner.invoke(main, ["codes", str(fits), "--format", "humanmovevqa", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert f"{uids[1]}: not exported: no valid run" in r.output
    files = sorted(out.glob("*_spatial_caption.json"))
    assert [f.name for f in files] == [f"{uids[0]}_run0_spatial_caption.json", f"{uids[0]}_run1_spatial_caption.json"]
    index = json.loads((out / "index.json").read_text())
    skipped = {t["take_uid"]: t["skipped"] for t in index["takes"]}
    assert skipped[uids[0]] == "" and skipped[uids[1]].startswith("no valid run")
    doc = json.loads(files[1].read_text())
    assert doc["motion_id"] == f"{uids[0]}_run1" and doc["fps"] == 20.0 and doc["num_frames"] == 100
    # track frame k of run 1 (grid frames 100..199 at 20 fps) is take/video frame rint(1.5 (100 + k))
    assert doc["video"]["video_frame"] == np.rint(1.5 * np.arange(100, 200)).astype(int).tolist()
    assert doc["video"]["root_trusted"] == [not 20 <= k < 30 for k in range(100)]
    shares = [rec["root_trusted_share"] for code in doc["quantitative_values"].values() for rec in code]
    assert shares and min(shares) < 1.0 <= max(shares)
    _check_reading(doc)
    assert any(q["spatial_category"] != "no_action" for _, q in _records(doc))
    # deterministic: the same fit gives byte-identical files
    first = {f.name: f.read_bytes() for f in files}
    r = runner.invoke(main, ["codes", str(fits), "--format", "humanmovevqa", "--out", str(out)])
    assert r.exit_code == 0 and {f.name: f.read_bytes() for f in files} == first
    # the camera frame names the camera in the file and the motion id
    r = runner.invoke(main, ["codes", str(fits), "--format", "humanmovevqa", "--out", str(tmp_path / "cam"),
                             "--frame", "camera", "--camera", "cam02"])  # fmt: skip
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "cam" / f"{uids[0]}_cam02_run0_spatial_caption.json").read_text())
    assert doc["frame"] == {**doc["frame"], "type": "camera", "camera": "cam02"} and doc["video"]["camera"] == "cam02"
    _check_reading(doc)


def test_export_command_errors(default_root, tmp_path):
    uid = EgoExoDataset(default_root).takes()[0].take_uid
    p = gt_result(default_root, uid, tmp_path / "fits")
    runner = CliRunner()
    r = runner.invoke(main, ["codes", str(p), "--format", "humanmovevqa", "--frame", "camera"])
    assert r.exit_code != 0 and "needs --camera" in r.output
    r = runner.invoke(main, ["codes", str(p), "--format", "humanmovevqa", "--frame", "camera", "--camera", "cam99",
                             "--out", str(tmp_path / "x")])  # fmt: skip
    assert r.exit_code != 0 and "no camera 'cam99'" in r.output and "no track written" in r.output
