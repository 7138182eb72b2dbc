"""Scenario presets: occluders hide what they stand in front of, the ground truth records who sees what,
annotations follow visibility, and every scenario is deterministic."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest

from motionkit.conventions import COCO17_NAMES
from motionkit.data.egoexo4d import EgoExoDataset
from motionkit.eval.compare import scenario_of
from motionkit.geometry.camera import Camera, CameraRig, look_at
from motionkit.synthetic.scenarios import (
    OCCLUDER_COLUMNS,
    SCENARIO_NAMES,
    box_corners,
    scenario,
    segment_hits_boxes,
)
from motionkit.synthetic.scene import FITTABLE_LANDMARKS, person_views
from motionkit.synthetic.writer import SynthConfig, write_synthetic_dataset
from tests.helpers import tree_digest


def _inside(box: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Reference: is each point ``(..., 3)`` inside the box, by its corners' own frame (independent of
    the slab test: the box's edge vectors from corner 0)."""
    c = box_corners(box)
    o, ex, ey, ez = c[0], c[4] - c[0], c[2] - c[0], c[1] - c[0]
    d = p - o
    return np.all([(0 <= (d @ e) / (e @ e)) & ((d @ e) / (e @ e) <= 1) for e in (ex, ey, ez)], axis=0)


def test_segment_test_matches_dense_sampling():
    rng = np.random.default_rng(0)
    boxes = np.array([[0.0, 0.0, 0.5, 1.2, 0.4, 1.0, 0.7], [1.5, -1.0, 0.2, 0.3, 0.3, 0.4, -0.3]])
    origins = rng.uniform(-4, 4, (3, 3)) + np.array([0, 0, 1.5])
    points = rng.uniform(-2, 2, (200, 3, 1, 3)) * np.array([1, 1, 0.6]) + np.array([0, 0, 0.6])
    got = segment_hits_boxes(origins, points, boxes)[..., 0]  # (200, 3)
    s = np.linspace(0, 1, 4001)[:, None, None, None]
    length = np.linalg.norm(points[:, :, 0] - origins, axis=-1)
    along = origins + s * (points[:, :, 0] - origins)  # (S, 200, 3, 3)
    keep = s[..., 0] <= 1 - 0.02 / length  # the last 2 cm are left out
    want = np.zeros_like(got)
    for b in boxes:
        want |= (_inside(b, along) & keep).any(0)
    agree = got == want
    assert agree.mean() >= 0.99, agree.mean()  # disagreements only where a segment grazes an edge
    assert 0.05 < want.mean() < 0.9


def test_a_box_hides_the_points_behind_it_from_that_camera_only():
    params = np.r_[1750.0, 1750, 1920, 1080, np.zeros(4)]
    centres = [(4, 0, 1.5), (-4, 0, 1.5)]
    cams = [Camera(f"cam{i}", 3840, 2160, params, look_at(np.array(c), np.array([0.0, 0, 0.8])))
            for i, c in enumerate(centres)]  # fmt: skip
    rig = CameraRig(cams)
    pts = np.zeros((1, 76, 3)) + np.array([0.0, 0, 1.0])
    coco = np.tile(np.array([0.0, 0.0, 1.0]), (1, 17, 1))
    coco[0, 13:] = [0.0, 0.0, 0.3]  # knees and ankles low
    counter = np.array([[1.0, 0.0, 0.45, 0.6, 2.0, 0.9, 0.0]])  # 0.9 m tall, between cam0 and the person
    pv = person_views(rig, [pts], [coco], self_occlusion=False, occluders=counter)[0]
    assert not pv.kp_ok[0, 0, 13:].any() and pv.kp_ok[0, 0, :13].all()  # cam0: legs hidden, torso seen over it
    assert pv.kp_ok[0, 1].all()  # cam1 is on the other side


def test_scenarios_are_known_and_unknown_ones_refused():
    assert {"generic", "cooking", "health", "bike_repair", "music", "basketball", "dance", "soccer"} <= set(
        SCENARIO_NAMES
    )
    with pytest.raises(ValueError, match="unknown scenario"):
        SynthConfig(scenario="rock_climbing")
    assert scenario("basketball").cameras == 5


def test_same_seed_scenario_and_preset_give_identical_files(tmp_path):
    for d in ("a", "b"):
        write_synthetic_dataset(tmp_path / d, SynthConfig(takes=1, seed=4, duration=1.0, scenario="bike_repair"))
    assert tree_digest(tmp_path / "a") == tree_digest(tmp_path / "b")


@pytest.fixture(scope="module")
def cooking_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("cooking")
    write_synthetic_dataset(root, SynthConfig(takes=2, seed=6, duration=3.0, scenario="cooking"))
    return root


def test_cooking_ground_truth_records_furniture_and_who_sees_what(cooking_root, tmp_path):
    ds = EgoExoDataset(cooking_root)
    hidden_legs = []
    for t in ds.takes():
        assert scenario_of(t.take_name) == "cooking"
        with h5py.File(cooking_root / "gt" / f"{t.take_uid}.h5") as f:
            occ = f["scene/occluders"][()]
            assert occ.shape == (2, 7) and json.loads(f["scene/occluders"].attrs["columns"]) == list(OCCLUDER_COLUMNS)
            floor = f.attrs["floor_z"]
            assert np.allclose(occ[:, 2] - occ[:, 5] / 2, floor)  # counters stand on the floor ...
            assert np.allclose(occ[:, 5], 0.9)  # ... 0.9 m tall
            lv, fv = f["wearer/landmark_views"][()], f["wearer/fittable_views"][()]
            n_cams = len(json.loads(f.attrs["camera_names"]))
            assert f["wearer/obs_kind"].shape[:2] == (len(fv), n_cams)
            assert lv.shape == (len(fv), 17) and fv.max() <= n_cams
            assert (fv <= (lv > 0).sum(-1)).all()  # a fittable view sees some landmarks
            hidden_legs.append((lv[:, 13:] < lv[:, 5:7].min(-1, keepdims=True)).mean())
        # annotations: a joint in annotation3D only where >= 2 cameras see it, with that count
        ann = json.loads((cooking_root / "annotations/ego_pose" / t.split / "body/annotation" /
                          f"{t.take_uid}.json").read_text())  # fmt: skip
        for k, (a,) in ann.items():
            for name, p in a["annotation3D"].items():
                j = COCO17_NAMES.index(name)
                assert p["num_views_for_3d"] == lv[int(k), j] >= 2
            in_2d = [name for pts in a["annotation2D"].values() for name in pts]
            assert set(in_2d) <= set(a["annotation3D"])
            for name in a["annotation3D"]:  # annotation2D in exactly the cameras that see the joint
                assert in_2d.count(name) == lv[int(k), COCO17_NAMES.index(name)]
    # the counters hide the legs from more cameras than the shoulders (measured 0.41, 0.72; the generic scene
    # with the same seed: 0.0, 0.003)
    generic = tmp_path / "generic"
    write_synthetic_dataset(generic, SynthConfig(takes=2, seed=6, duration=3.0))
    plain = []
    for t in EgoExoDataset(generic).takes():
        with h5py.File(generic / "gt" / f"{t.take_uid}.h5") as f:
            lv = f["wearer/landmark_views"][()]
            plain.append((lv[:, 13:] < lv[:, 5:7].min(-1, keepdims=True)).mean())
    assert min(hidden_legs) > 0.3 and max(plain) < 0.05, (hidden_legs, plain)
    assert FITTABLE_LANDMARKS == 8
