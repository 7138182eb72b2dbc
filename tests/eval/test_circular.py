"""A fit made from annotation2D is scored against the same annotations: eval must say so and leave it out."""

from __future__ import annotations

import json

from click.testing import CliRunner

from motionkit.cli import main
from motionkit.data.egoexo4d import EgoExoDataset
from motionkit.eval.run import evaluate
from motionkit.pipeline import PipelineConfig, run_fit


def test_circular_fits_are_marked_and_left_out(synth_root, tmp_path):
    info = EgoExoDataset(synth_root).takes("val")[0]
    cfg = PipelineConfig(detector="annotation", fit_iters=(5, 10, 5))
    run_fit(synth_root, info.take_uid, tmp_path, cfg, progress=False, plot=False)
    report, _ = evaluate(synth_root, tmp_path, split="val", offsets_from=None)
    assert report["circular_takes"] == [info.take_uid] and report["n_takes"] == 0
    assert report["detections_source"] == {info.take_uid: "annotation"}
    both, _ = evaluate(synth_root, tmp_path, split="val", offsets_from=None, allow_circular=True)
    assert both["n_takes"] == 1 and both["per_take"][0]["detections_source"] == "annotation"

    r = CliRunner().invoke(main, ["eval", "--root", str(synth_root), "--fits", str(tmp_path), "--offsets-from", "none"])
    assert r.exit_code != 0 and "circular" in r.output and "--allow-circular" in r.output
    r = CliRunner().invoke(main, ["eval", "--root", str(synth_root), "--fits", str(tmp_path), "--offsets-from",
                                  "none", "--allow-circular", "--json"])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert json.loads(r.output.splitlines()[-1])["circular_included"] is True
