import json

import numpy as np
from click.testing import CliRunner

from motionkit.cli import main
from motionkit.data.egoexo4d import EgoExoDataset
from tests.helpers import gt_result


def test_codes_and_features_commands_on_result_files(default_root, tmp_path):
    uids = [t.take_uid for t in EgoExoDataset(default_root).takes()]
    out = tmp_path / "fits"
    p0 = gt_result(default_root, uids[0], out, drop=slice(90, 100))
    gt_result(default_root, uids[1], out)
    runner = CliRunner()
    r = runner.invoke(main, ["codes", str(p0), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["runs"] == [[0, 90], [100, 200]] and len(doc["event_sets"]) == 2
    assert any(e["spatial_category"] != "no_action" for es in doc["event_sets"] for e in es["events"])
    assert p0.with_suffix(".codes.png").stat().st_size > 10_000
    r = runner.invoke(main, ["codes", str(out)])
    assert r.exit_code == 0 and r.output.count("QA-eligible") == 2
    r = runner.invoke(main, ["features", str(p0), "--out", str(tmp_path / "f.npy")])
    assert r.exit_code == 0, r.output
    feats = np.load(tmp_path / "f.npy")
    runs = json.loads((tmp_path / "f.runs.json").read_text())
    assert feats.shape == (89 + 99, 263) and runs["runs"][1] == {
        "frames": [100, 200],
        "rows": [89, 188],
        "time_s": [5.0, 9.9],
    }
    r = runner.invoke(main, ["features", str(out), "--out", str(tmp_path / "ff")])
    assert r.exit_code == 0 and len(list((tmp_path / "ff").glob("*.hml263.npy"))) == 2


def test_codes_on_a_file_without_fit(tmp_path, synth_root):
    take = EgoExoDataset(synth_root).takes()[0]
    runner = CliRunner()
    args = ["fit", "--take", take.take_uid, "--root", str(synth_root), "--out", str(tmp_path), "--until", "associate"]
    r = runner.invoke(main, args)
    assert r.exit_code == 0
    r = runner.invoke(main, ["codes", str(tmp_path / f"{take.take_uid}.h5")])
    assert r.exit_code != 0 and "has no fit" in r.output


def test_features_are_computed_at_20_fps_whatever_the_fit_rate():
    from motionkit.motion.derive import derive_motion

    rng = np.random.default_rng(0)
    t30 = np.arange(90) / 30.0
    base = rng.normal(0, 0.3, (55, 3)) + np.array([0, 0, 1.0])
    walk = np.stack([t30 * 1.2, np.zeros_like(t30), np.zeros_like(t30)], 1)  # 1.2 m/s along x
    joints = base[None] + walk[:, None]
    go = np.zeros((90, 3))
    d30 = derive_motion(joints, go, np.ones(90, bool), 30.0)
    d20 = derive_motion(joints[::3], go[::3], np.ones(30, bool), 10.0)  # a 10 fps fit
    for d, fps in ((d30, 30.0), (d20, 10.0)):
        assert d.source_fps == fps and d.feature_attrs()["fps"] == 20.0
        (times,) = d.feature_time_s
        np.testing.assert_allclose(np.diff(times), 0.05)
        assert len(d.features[0]) == len(times)
    assert len(d30.features[0]) == 59 and len(d20.features[0]) == 58  # 2.97 s and 2.9 s of fit at 20 fps
    # the same motion gives the same features at any fit rate (linear motion: resampling is exact)
    np.testing.assert_allclose(d30.features[0][:58], d20.features[0], atol=1e-5)
