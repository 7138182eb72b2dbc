import json

import numpy as np
import pytest
from click.testing import CliRunner

from motionkit.cli import main
from motionkit.data.egoexo4d import EgoExoDataset
from motionkit.eval.protocol import segment_coverage, video_time_coverage
from motionkit.eval.run import evaluate
from motionkit.synthetic.writer import SynthConfig, write_synthetic_dataset
from tests.helpers import gt_result


def test_coverage_golden():
    # 10 fps samples on every multiple of 3 cover the video timeline (but within one frame of the end)
    n = 300
    s = np.arange(0, n, 3) / 30.0
    cov = video_time_coverage(s, np.ones(len(s), bool), n, rate=10.0)
    assert cov[: n - 1].all()
    segs = [(0.0, 3.2), (3.2, 6.4)]
    np.testing.assert_allclose(segment_coverage(s, np.ones(len(s), bool), segs, rate=10.0, mode="native"), 0.5)
    np.testing.assert_allclose(segment_coverage(s, np.ones(len(s), bool), segs, rate=10.0, mode="interpolated"), 1.0)
    # at 20 fps every sample covers its nearest frames: 2 samples cover 3 frames
    s20 = np.arange(0, 200) / 20.0
    v = np.ones(200, bool)
    v[100] = False
    cov = video_time_coverage(s20, v, 300, rate=20.0)
    assert cov.sum() == 300 - 1 and not cov[150]  # sample 100 (5.0 s) alone covers frame 150


@pytest.fixture(scope="module")
def offset_datasets(tmp_path_factory):
    """The same synthetic takes twice: annotations shifted by a known parent-frame offset, and not."""
    base = tmp_path_factory.mktemp("offsets")
    offset = np.zeros((17, 3))
    offset[11:13] = [0.0, -0.04, 0.02]  # hips: 4 cm down, 2 cm forward in the pelvis frame
    offset[5:7] = [0.0, 0.03, 0.0]  # shoulders up
    offset[15:17] = [0.0, 0.0, 0.03]  # ankles forward in the knee frame
    # clean preset: an exactly known offset on exact joint centres is what this test recovers
    cfg = dict(takes=3, seed=21, duration=10.0, bystanders=0, preset="clean")
    write_synthetic_dataset(base / "shifted", SynthConfig(**cfg, annotation_offset=offset.tolist()))
    write_synthetic_dataset(base / "plain", SynthConfig(**cfg))
    fits = base / "fits"
    for info in EgoExoDataset(base / "plain").takes():
        gt_result(base / "plain", info.take_uid, fits, pose_noise_rad=0.005)
    return base, offset, fits


def test_offsets_recovered_and_corrected_error_returns_to_unshifted(offset_datasets):
    base, offset, fits = offset_datasets
    rep_plain, _ = evaluate(base / "plain", fits, split="val", offsets_from=None)
    rep_shift, est = evaluate(base / "shifted", fits, split="val", offsets_from="train")
    assert rep_shift["offsets"]["n_takes"] == 2
    assert np.abs(est - offset).max() < 0.001  # within 1 mm, in each joint's parent frame
    u_plain = rep_plain["pa_mpjpe"]["uncorrected"]["take_mean"]
    u_shift = rep_shift["pa_mpjpe"]["uncorrected"]["take_mean"]
    c_shift = rep_shift["pa_mpjpe"]["corrected"]["take_mean"]
    assert u_shift > u_plain + 5.0  # the shift is visible
    assert abs(c_shift - u_plain) < 1.0  # and the correction removes it
    assert rep_plain["coverage"]["video_time"] > 0.99


def test_eval_command_writes_report(offset_datasets, tmp_path):
    base, _, fits = offset_datasets
    r = CliRunner().invoke(main, ["eval", "--root", str(base / "shifted"), "--fits", str(fits), "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert "PA-MPJPE" in r.output and "corrected" in r.output
    rep = json.loads((tmp_path / "eval.json").read_text())
    assert rep["split"] == "val" and rep["n_takes_scored"] == 1 and len(rep["per_joint"]["names"]) == 17
    md = (tmp_path / "eval.md").read_text()
    assert "| split | takes scored | uncorrected | corrected | coverage (video time) |" in md
    for png in ("eval_per_joint.png", "eval_take_cdf.png"):
        assert (tmp_path / png).stat().st_size > 5000
    assert (tmp_path / "offsets.json").is_file()
    args = ["eval", "--root", str(base / "shifted"), "--fits", str(fits), "--out", str(tmp_path / "b")]
    r2 = CliRunner().invoke(main, [*args, "--offsets", str(tmp_path / "offsets.json"), "--json"])
    assert r2.exit_code == 0
    assert json.loads(r2.output)["pa_mpjpe"]["corrected"]["take_mean"] == pytest.approx(
        rep["pa_mpjpe"]["corrected"]["take_mean"], abs=1e-9
    )


def test_eval_without_fits_fails_clearly(synth_root, tmp_path):
    r = CliRunner().invoke(main, ["eval", "--root", str(synth_root), "--fits", str(tmp_path)])
    assert r.exit_code != 0 and "no fitted val takes" in r.output
    r = CliRunner().invoke(main, ["eval", "--root", str(synth_root), "--fits", str(tmp_path), "--split", "vla"])
    assert r.exit_code != 0 and f"no fitted vla takes with manual annotations in {tmp_path} (splits of " in r.output
    assert r.output.rstrip().endswith(": train, val)")  # a typo'd split: the ones there are
