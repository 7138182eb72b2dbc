"""Refits side by side: every figure of the comparison equals a direct computation from the files."""

from __future__ import annotations

import json
import pickle
import shutil

import h5py
import numpy as np
import pytest
from click.testing import CliRunner
from scipy.spatial.transform import Rotation

from motionkit.cli import main
from motionkit.common.errors import DataError
from motionkit.data.egoexo4d import EgoExoDataset
from motionkit.data.releases import read_release
from motionkit.data.releases.egoexo4d_hm import BODY25_TO_COCO17
from motionkit.eval.compare import Method, compare, official_clip_frames, skeleton_frames
from motionkit.eval.metrics import pa_mpjpe_naive
from motionkit.eval.protocol import video_time_coverage
from motionkit.eval.report import compare_markdown
from tests.helpers import gt_result

HOLE = range(90, 150)  # take frames EE4D-Motion's stand-in leaves out


@pytest.fixture(scope="module")
def releases(default_root, tmp_path_factory):
    """motionkit fits (the truth with pose noise), a prediction JSON (the true landmarks with a per-joint
    offset in each joint's skeleton frame, every frame), Human Meshes joints (the landmarks with noise)
    and EE4D-Motion fits (the true SMPL-X parameters at 10 fps with a hole), for both takes (one val, one
    train)."""
    out = tmp_path_factory.mktemp("releases")
    ds = EgoExoDataset(default_root)
    preds = {}
    rng = np.random.default_rng(0)
    bias = rng.normal(0, 0.02, (17, 3))
    for info in ds.takes():
        uid, name = info.take_uid, info.take_name
        gt_result(default_root, uid, out / "fits", pose_noise_rad=0.03)
        with h5py.File(default_root / "gt" / f"{uid}.h5") as f:
            coco = f["wearer/coco17_world"][()]
            s = {k: f["wearer/smplx"][k][()] for k in f["wearer/smplx"]}
        biased = coco + np.einsum("fjab,jb->fja", skeleton_frames(coco), bias)  # a convention offset per joint
        preds[uid] = {"take_name": name, "body": {str(k): biased[k].tolist() for k in range(len(coco))}}
        j = np.zeros((1, len(coco), 67, 3))
        j[0][:, BODY25_TO_COCO17] = coco + rng.normal(0, 0.01, coco.shape)
        (out / "hm" / name).mkdir(parents=True)
        np.savez(out / "hm" / name / "points_triangulated_world_results_merged.npz", joints3d=j,
                 valid=np.ones((1, len(coco)), np.int8))  # fmt: skip

        def six(rv):
            return Rotation.from_rotvec(rv.reshape(-1, 3)).as_matrix()[:, :2].reshape(-1)

        fits = {k: {"final_smpl_params": {"global_orient": six(s["global_orient"][k]), "betas": s["betas"],
                                          "body_pose": six(s["body_pose"][k]), "transl": s["transl"][k]}}
                for k in range(0, len(coco), 3) if k not in HOLE}  # fmt: skip
        (out / "ee4d" / name).mkdir(parents=True)
        (out / "ee4d" / name / "multiview_optim_2.pkl").write_bytes(pickle.dumps(fits))
    (out / "preds.json").write_text(json.dumps(preds))
    return out


def _methods(r):
    return [Method("motionkit", "motionkit", r / "fits"), Method("biased", "coco17-json", r / "preds.json"),
            Method("hm", "egoexo4d-hm", r / "hm"), Method("ee4d", "ee4d-motion", r / "ee4d")]  # fmt: skip


def test_table9_table10_and_official_equal_direct_computations(default_root, releases):
    rep = compare(default_root, _methods(releases), split="val", offsets_from="train")
    ds = EgoExoDataset(default_root)
    (val,) = ds.takes("val")
    ann = ds.take(val.take_uid).body_annotation("annotation")
    assert rep["takes"]["val"] == {"annotated": 1, "intersection": 1, "motionkit": 1, "biased": 1, "hm": 1, "ee4d": 1}
    for name, fmt, path in (("biased", "coco17-json", releases / "preds.json"), ("hm", "egoexo4d-hm", releases / "hm")):
        sj = read_release(fmt, path, val.take_uid, val.take_name)
        pred = sj.joints[np.searchsorted(sj.frame_pos, ann.frames)]  # 30 fps sources: every annotated frame
        direct = np.nanmean(pa_mpjpe_naive(pred, ann.joints3d))
        assert abs(rep["table9"]["rows"][name]["val"]["uncorrected"] - direct) <= 0.01
        # official: clips of annotated frames, no alignment, per (frame, joint) with an annotation, cm
        kept = np.isin(ann.frames, official_clip_frames(ann.frames))
        err = np.linalg.norm(pred[kept] - ann.joints3d[kept], axis=-1)
        assert abs(rep["official"][name]["val"]["mpjpe_cm"] - 100 * np.nanmean(err)) <= 1e-3
        assert rep["official"][name]["val"]["n_joint_observations"] == int(np.isfinite(err).sum())
    # EE4D-Motion's 10 fps samples cover frames k - 1, k, k + 1; the hole leaves its frames uncovered
    ee4d = read_release("ee4d-motion", releases / "ee4d", val.take_uid, val.take_name)
    covered = np.zeros(val.n_frames, bool)
    for k in ee4d.frame_pos[ee4d.valid].astype(int):
        covered[max(k - 1, 0) : k + 2] = True
    assert rep["table10"]["val"]["ee4d"]["video_time"] == pytest.approx(covered.mean(), abs=1e-12)
    assert rep["table10"]["val"]["ee4d"]["native_fps"] == 10.0 and rep["table10"]["val"]["biased"]["video_time"] == 1.0
    # a per-joint offset in the joints' frames is what the correction removes (measured 27.9 -> 11.8 mm)
    row = rep["table9"]["rows"]["biased"]["val"]
    assert row["corrected"] < 0.6 * row["uncorrected"]
    d = rep["table9"]["delta"]
    assert d["of"] == "motionkit" and d["minus"] == "biased"
    assert d["val"]["uncorrected"] == pytest.approx(
        rep["table9"]["rows"]["motionkit"]["val"]["uncorrected"] - row["uncorrected"]
    )
    f37 = rep["figure37"]["ee4d"]
    assert f37["native"][0] == 1.0 and f37["native"][-1] < 1.0  # the hole leaves some segments partly uncovered


def test_ten_fps_coverage_rule_on_a_constructed_case():
    got = video_time_coverage(np.array([3, 9]) / 30.0, np.array([True, True]), 14, 10.0)
    assert np.flatnonzero(got).tolist() == [2, 3, 4, 8, 9, 10]


def test_official_clips_split_at_gaps_and_drop_short_ones():
    frames = np.r_[np.arange(0, 120, 3), np.arange(200, 290, 3), np.arange(300, 420, 3)]
    kept = official_clip_frames(frames)
    assert kept.tolist() == np.r_[np.arange(0, 120, 3), np.arange(300, 420, 3)].tolist()


def test_skeleton_frames_are_rotations_that_follow_the_body():
    J = np.random.default_rng(3).normal(0, 0.3, (4, 17, 3))
    F = skeleton_frames(J)
    np.testing.assert_allclose(np.einsum("nkji,nkjl->nkil", F, F), np.broadcast_to(np.eye(3), F.shape), atol=1e-12)
    np.testing.assert_allclose(np.linalg.det(F), 1.0, atol=1e-12)
    R = Rotation.random(random_state=1).as_matrix()
    np.testing.assert_allclose(skeleton_frames(J @ R.T), np.einsum("ij,nkjl->nkil", R, F), atol=1e-12)


def test_disjoint_methods_and_bad_compare_arguments_fail_clearly(default_root, releases, tmp_path):
    (releases / "hm" / "not_a_take").mkdir(exist_ok=True)  # a folder for a take the dataset does not have
    with pytest.warns(UserWarning, match="hm: 1 entry match no take"):
        rep = compare(default_root, [Method("hm", "egoexo4d-hm", releases / "hm")], offsets_from=None)
    assert rep["takes"]["unmatched"] == {"hm": ["not_a_take"]}
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="no take of the annotated"):
        compare(
            default_root, [Method("a", "motionkit", releases / "fits"), Method("b", "egoexo4d-hm", tmp_path / "empty")]
        )
    ds = EgoExoDataset(default_root)
    (val,) = ds.takes("val")
    (train,) = ds.takes("train")
    (tmp_path / "only_val").mkdir()
    (tmp_path / "only_train").mkdir()
    (tmp_path / "only_val" / f"{val.take_uid}.h5").write_bytes((releases / "fits" / f"{val.take_uid}.h5").read_bytes())
    (tmp_path / "only_train" / f"{train.take_uid}.h5").write_bytes(
        (releases / "fits" / f"{train.take_uid}.h5").read_bytes()
    )
    with pytest.raises(DataError, match="share no annotated val take"):
        compare(default_root, [Method("a", "motionkit", tmp_path / "only_val"),
                               Method("b", "motionkit", tmp_path / "only_train")])  # fmt: skip
    with pytest.warns(UserWarning, match="share no annotated train take to estimate offsets"):  # val scores stand
        rep = compare(default_root, [Method("a", "motionkit", tmp_path / "only_val"),
                                     Method("b", "motionkit", releases / "fits")])  # fmt: skip
    assert rep["takes"]["val"]["intersection"] == 1 and rep["takes"]["train"]["intersection"] == 0
    assert all(rep["methods"][m]["val"]["offsets"]["from_split"] is None for m in "ab")
    with pytest.raises(ValueError, match="NAME=FORMAT:PATH"):
        Method.parse("ee4d-motion")
    with pytest.raises(ValueError, match="unknown format 'bvh'"):
        Method.parse("x=bvh:/tmp")


def test_eval_command_writes_both_protocols(default_root, releases, tmp_path):
    args = ["eval", "--root", str(default_root), "--fits", str(releases / "fits"), "--out", str(tmp_path),
            "--compare", f"biased=coco17-json:{releases / 'preds.json'}",
            "--compare", f"ee4d=ee4d-motion:{releases / 'ee4d'}"]  # fmt: skip
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 0, out.output
    rep = json.loads((tmp_path / "eval.json").read_text())
    assert {"methods", "table9", "table10", "official"} <= set(rep)
    assert set(rep["methods"]) == {"motionkit", "biased", "ee4d"} and set(rep["methods"]["ee4d"]) == {"val", "train"}
    assert {"mpjpe_cm", "mpjve", "n_joint_observations", "per_scenario"} <= set(rep["official"]["ee4d"]["val"])
    assert "Table 9" in (tmp_path / "eval.md").read_text() and (tmp_path / "eval_figure37.png").stat().st_size > 1000


def test_a_damaged_take_file_leaves_that_take_out_of_its_method(default_root, releases, tmp_path):
    (train,) = EgoExoDataset(default_root).takes("train")
    shutil.copytree(releases / "hm", tmp_path / "hm")
    damaged = tmp_path / "hm" / train.take_name / "points_triangulated_world_results_merged.npz"
    damaged.write_bytes(damaged.read_bytes()[:200])  # a download cut short
    methods = [Method("fits", "motionkit", releases / "fits"), Method("hm", "egoexo4d-hm", tmp_path / "hm")]
    with pytest.warns(UserWarning, match=r"hm: .*merged\.npz: not a readable \.npz file .*; left out"):
        rep = compare(default_root, methods)
    assert rep["takes"]["unreadable"] == {"fits": [], "hm": [str(damaged)]}
    assert rep["takes"]["val"]["intersection"] == 1 and rep["takes"]["train"]["intersection"] == 0
    assert "hm: 1 damaged file(s) left out" in compare_markdown(rep)
