import h5py
import numpy as np
import torch

from motionkit.body.model import BodyModel
from motionkit.conventions import SMPLX_TO_COCO17
from motionkit.data.egoexo4d import EgoExoDataset
from motionkit.data.observations import read_observations
from motionkit.synthetic.writer import SynthConfig, write_synthetic_dataset


def _gt(root, uid):
    return h5py.File(root / "gt" / f"{uid}.h5", "r")


def test_deterministic_per_seed(tmp_path):
    cfg = SynthConfig(takes=1, seed=3, duration=2.0, preset="clean")
    a = write_synthetic_dataset(tmp_path / "a", cfg)
    b = write_synthetic_dataset(tmp_path / "b", cfg)
    assert a == b
    for rel in ("takes.json", "annotations/splits.json"):
        assert (tmp_path / "a" / rel).read_text() == (tmp_path / "b" / rel).read_text()
    oa, ob = (read_observations(tmp_path / d / "observations" / f"{a[0]}.h5") for d in "ab")
    np.testing.assert_array_equal(oa.keypoints, ob.keypoints)
    with _gt(tmp_path / "a", a[0]) as fa, _gt(tmp_path / "b", a[0]) as fb:
        np.testing.assert_array_equal(fa["wearer/coco17_world"][()], fb["wearer/coco17_world"][()])
    c = write_synthetic_dataset(tmp_path / "c", SynthConfig(takes=1, seed=4, duration=2.0, preset="clean"))
    assert c != a


def test_one_config_per_take_mixes_durations_and_scenarios(tmp_path):
    """``take_configs``: take ``i`` is take ``i`` of its own config (what a dataset of one config writes)."""
    mixed = [SynthConfig(seed=3, duration=1.0, preset="clean"),
             SynthConfig(seed=3, duration=2.0, preset="clean", scenario="music")]  # fmt: skip
    uids = write_synthetic_dataset(tmp_path / "mixed", mixed[0], take_configs=mixed)
    infos = {t.take_uid: t for t in EgoExoDataset(tmp_path / "mixed").takes()}
    assert [infos[u].n_frames for u in uids] == [30, 60]
    assert infos[uids[1]].take_name.startswith("synth_music_3_001")
    alone = write_synthetic_dataset(tmp_path / "alone", SynthConfig(takes=2, seed=3, duration=2.0, preset="clean",
                                                                    scenario="music"))  # fmt: skip
    assert alone[1] == uids[1]
    with _gt(tmp_path / "mixed", uids[1]) as fa, _gt(tmp_path / "alone", uids[1]) as fb:
        np.testing.assert_array_equal(fa["wearer/coco17_world"][()], fb["wearer/coco17_world"][()])


def test_gt_parameters_reproduce_gt_joints(synth_root):
    ds = EgoExoDataset(synth_root)
    uid = ds.takes()[0].take_uid
    bm = BodyModel(dtype=torch.float64)
    with _gt(synth_root, uid) as f:
        s = f["wearer/smplx"]
        out = bm(
            torch.as_tensor(s["betas"][()]),
            torch.as_tensor(s["global_orient"][()]),
            torch.as_tensor(s["body_pose"][()].reshape(-1, 21, 3)),
            torch.as_tensor(s["transl"][()]),
        ).numpy()
        np.testing.assert_allclose(out[:, SMPLX_TO_COCO17], f["wearer/coco17_world"][()], atol=1e-6)


def test_motion_is_varied_and_on_the_floor(tmp_path):
    import json

    write_synthetic_dataset(tmp_path, SynthConfig(takes=2, seed=1, duration=30.0, bystanders=0, preset="clean"))
    acts = set()
    for info in EgoExoDataset(tmp_path).takes():
        with _gt(tmp_path, info.take_uid) as f:
            j = f["wearer/joints_smplx"][()]
            floor = f.attrs["floor_z"]
            labels = json.loads(f.attrs["activities"])
        feet = j[:, [7, 8, 10, 11], 2].min(1)
        assert np.all(feet > floor - 0.02) and np.median(feet - floor) < 0.12
        pelvis_speed = np.linalg.norm(np.diff(j[:, 0, :2], axis=0), axis=1) * 30
        assert pelvis_speed.max() > 0.8  # walks
        assert (pelvis_speed < 0.1).mean() > 0.05  # and stops / stands
        head_h = j[:, 15, 2] - floor
        for t0, t1, act in labels:
            acts.add(act)
            seg = slice(max(0, int(t0 * 30)), int(t1 * 30))
            if act == "crouch" and t1 - t0 > 2 and seg.stop <= len(j):
                assert head_h[seg].min() < np.median(head_h) - 0.25
    assert len(acts) >= 5, acts


def test_simulated_detections_realistic(synth_root):
    ds = EgoExoDataset(synth_root)
    uid = ds.takes()[0].take_uid
    obs = read_observations(synth_root / "observations" / f"{uid}.h5")
    with _gt(synth_root, uid) as f:
        pid = f["detections/person_id"][()]
        vis = f["wearer/visible"][()]
        outl = f["detections/outlier"][()]
        swapped = f["detections/lr_swapped"][()]
        coco = f["wearer/coco17_world"][()]
    F, V = vis.shape
    assert len(pid) == len(obs)
    assert (pid == -1).sum() > 0 and (pid > 0).sum() > 0  # false positives and bystanders
    wearer = pid == 0
    det_vis = np.zeros_like(vis)
    det_vis[obs.frame_index[wearer], obs.camera[wearer]] = True
    assert det_vis[vis].mean() > 0.95
    assert 0.5 < vis.mean() < 0.99  # occlusions and leaving views happen
    assert 0.01 < outl[wearer].mean() < 0.06 and swapped[wearer].any()
    # clean keypoints sit within a few pixels of the true projection
    take = ds.take(uid)
    rig = take.rig
    m = wearer & ~swapped
    proj = rig.project(coco[obs.frame_index[m]])  # (N, V, 17, 2)
    kp_true = proj[np.arange(m.sum()), obs.camera[m]]
    err = np.linalg.norm(obs.keypoints[m] - kp_true, axis=-1)
    good = np.isfinite(err) & ~outl[m] & (obs.keypoint_conf[m] >= 0.7)
    assert 2.0 < np.median(err[good]) < 6.0
