"""``synth --releases``: other methods' releases written from the truth in their own layouts, and what the
comparison finds in them equals a direct computation from the files and the recorded truth."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from click.testing import CliRunner

from motionkit.cli import main
from motionkit.data.egoexo4d import EgoExoDataset
from motionkit.data.releases import read_release
from motionkit.eval.compare import Method, compare
from motionkit.eval.metrics import pa_mpjpe_naive
from motionkit.synthetic.writer import SynthConfig, write_synthetic_dataset
from tests.helpers import gt_result

FORMATS = ("ee4d-motion", "egoexo4d-hm", "coco17-json", "smplx-npz")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("releases")
    write_synthetic_dataset(root, SynthConfig(takes=3, seed=12, duration=6.0, releases=FORMATS))
    for info in EgoExoDataset(root).takes():
        gt_result(root, info.take_uid, root / "fits")
    return root


def _path(root, fmt):
    return root / "releases" / fmt / ("predictions.json" if fmt == "coco17-json" else "")


def test_each_release_reads_with_its_recorded_coverage(dataset):
    truth = json.loads((dataset / "gt" / "releases.json").read_text())
    for info in EgoExoDataset(dataset).takes():
        for fmt in FORMATS:
            sj = read_release(fmt, _path(dataset, fmt), info.take_uid, info.take_name)
            rec = truth[fmt]["takes"][info.take_uid]
            assert len(sj.frame_pos) == rec["samples"] and sj.native_fps == rec["native_fps"]
            assert sj.valid.all()


def test_the_comparison_equals_direct_computations_from_the_files(dataset):
    methods = [Method("motionkit", "motionkit", dataset / "fits")]
    methods += [Method(f, f, _path(dataset, f)) for f in FORMATS]
    rep = compare(dataset, methods, split="val", offsets_from="train")
    truth = json.loads((dataset / "gt" / "releases.json").read_text())
    ds = EgoExoDataset(dataset)
    for split in ("val", "train"):
        infos = ds.takes(split)
        assert rep["takes"][split]["intersection"] == len(infos)
        for fmt in FORMATS:
            per_take, covered, total = [], 0.0, 0
            for info in infos:
                sj = read_release(fmt, _path(dataset, fmt), info.take_uid, info.take_name)
                ann = ds.take(info.take_uid).body_annotation("annotation")
                at = np.isin(ann.frames, sj.frame_pos)  # annotation keys fall on every format's samples
                pred = sj.joints[np.searchsorted(sj.frame_pos, ann.frames[at])]
                per_take.append(np.nanmean(pa_mpjpe_naive(pred, ann.joints3d[at])))
                rec = truth[fmt]["takes"][info.take_uid]
                covered += rec["coverage_video_time"] * info.n_frames
                total += info.n_frames
            assert abs(rep["table9"]["rows"][fmt][split]["uncorrected"] - np.mean(per_take)) <= 0.01, fmt
            assert rep["table10"][split][fmt]["video_time"] == pytest.approx(covered / total, abs=1e-12), fmt


def test_figure37_equals_a_direct_count_of_covered_segment_points(dataset):
    rep = compare(dataset, [Method("ee4d", "ee4d-motion", _path(dataset, "ee4d-motion"))], split="val",
                  offsets_from=None)  # fmt: skip
    shares = []
    for info in EgoExoDataset(dataset).takes("val"):
        sj = read_release("ee4d-motion", _path(dataset, "ee4d-motion"), info.take_uid, info.take_name)
        t = sj.time_s[sj.valid]
        dur = info.n_frames / 30.0
        for a in np.arange(0, dur - 1e-9, 3.2):
            pts = a + np.arange(int(np.floor((min(a + 3.2, dur) - a) * 20 + 1e-9))) / 20
            near = np.abs(t[None, :] - pts[:, None]).min(1) <= 1 / 40 + 1e-9  # a valid sample within half a period
            shares.append(near.mean())
    want = [float(np.mean(np.array(shares) >= x - 1e-9)) for x in rep["figure37"]["thresholds"]]
    assert rep["figure37"]["ee4d"]["native"] == want
    assert want[-1] < 1.0 < 1 + want[0]  # the 2-s hole leaves segments partly covered


def test_an_exported_fit_scores_as_the_fit_itself(dataset, tmp_path):
    out = CliRunner().invoke(main, ["export", str(dataset / "fits"), "--format", "smplx-npz", "--out", str(tmp_path)])
    assert out.exit_code == 0, out.output
    methods = [Method("motionkit", "motionkit", dataset / "fits"), Method("export", "smplx-npz", tmp_path)]
    rep = compare(dataset, methods, split="val", offsets_from="train")
    for split in ("val", "train"):
        a, b = rep["table9"]["rows"]["motionkit"][split], rep["table9"]["rows"]["export"][split]
        assert abs(a["uncorrected"] - b["uncorrected"]) <= 0.01 and abs(a["corrected"] - b["corrected"]) <= 0.01


def test_releases_are_deterministic_and_unknown_formats_are_refused(dataset, tmp_path):
    write_synthetic_dataset(tmp_path, SynthConfig(takes=3, seed=12, duration=6.0, releases=FORMATS))
    for p in sorted((dataset / "releases").rglob("*")):
        if p.is_file():
            q = tmp_path / p.relative_to(dataset)
            assert hashlib.sha256(p.read_bytes()).digest() == hashlib.sha256(q.read_bytes()).digest(), p.name
    with pytest.raises(ValueError, match="unknown releases"):
        write_synthetic_dataset(tmp_path / "x", SynthConfig(takes=1, releases=("bvh",)))
