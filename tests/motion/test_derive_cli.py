import json

import numpy as np
import pytest
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
    fitted = gt_result(synth_root, EgoExoDataset(synth_root).takes()[1].take_uid, tmp_path)
    for command, written in (("codes", ".codes.json"), ("features", ".hml263.npy")):  # a folder: the others go on
        r = runner.invoke(main, [command, str(tmp_path)])
        assert r.exit_code == 0, r.output
        assert f"no {command}: {tmp_path / take.take_uid}.h5: result of take {take.take_uid} has no fit" in r.output
        assert fitted.with_suffix(written).is_file()


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


def test_events_and_feature_rows_say_whether_the_fit_trusted_what_they_rest_on(default_root, tmp_path):
    """A fit that trusts every landmark but the left hip on grid frames 20..29 (of the first of two
    valid runs, 0..89 and 100..199): each event records the share of its frames start..end outside
    20..29; feature row i (samples i and i + 1) trusts the left hip unless one of its samples is in
    20..29 (rows 19..29 of the first run); the events themselves are those of the same fit without
    trust. Without trust nothing is claimed."""
    uid = EgoExoDataset(default_root).takes()[0].take_uid
    plain = gt_result(default_root, uid, tmp_path / "plain", drop=slice(90, 100))
    p = gt_result(default_root, uid, tmp_path / "trust", drop=slice(90, 100), untrusted=(slice(20, 30), (11,)))
    runner = CliRunner()
    docs = {}
    for f in (plain, p):
        r = runner.invoke(main, ["codes", str(f), "--json"] + ([] if f is p else ["--no-plot"]))
        assert r.exit_code == 0, r.output
        docs[f] = json.loads(r.output)
    assert p.with_suffix(".codes.png").stat().st_size > 10_000  # untrusted stretches drawn red
    assert not plain.with_suffix(".codes.png").exists()
    with_trust, without = docs[p]["event_sets"], docs[plain]["event_sets"]
    shares = []
    for es, es0 in zip(with_trust, without, strict=True):
        assert [{**e, "root_trusted_share": None} for e in es["events"]] == es0["events"]
        for e in es["events"]:
            s, t = e["start_frame"], e["end_frame"]
            hidden = len(set(range(s, t + 1)) & set(range(20, 30))) if es is with_trust[0] else 0
            assert e["root_trusted_share"] == pytest.approx(1 - hidden / (t - s + 1), abs=1e-4)
            shares.append(e["root_trusted_share"])
    assert min(shares) < 1.0 and {es["anchor_root_trusted"] for es in with_trust} == {True}
    assert all(e["root_trusted_share"] is None for es in without for e in es["events"])
    assert all(es["anchor_root_trusted"] is None for es in without)
    eligible = [e for es in with_trust for e in es["events"] if e["qa_eligible"]]
    whole = sum(e["root_trusted_share"] == 1.0 for e in eligible)
    assert 0 < whole < len(eligible)  # one QA-eligible event crosses the untrusted stretch
    r = runner.invoke(main, ["codes", str(p), "--no-plot"])
    assert r.exit_code == 0 and f"{len(eligible)} QA-eligible ({whole} on a torso trusted throughout)" in r.output
    r = runner.invoke(main, ["codes", str(plain), "--no-plot"])
    assert r.exit_code == 0 and "QA-eligible ->" in r.output and "trusted" not in r.output

    r = runner.invoke(main, ["features", str(p), "--out", str(tmp_path / "f.npy")])
    assert r.exit_code == 0, r.output
    trusted = np.load(tmp_path / "f.joint_trusted.npy")
    assert trusted.shape == (89 + 99, 17) and trusted.dtype == bool
    expected = np.ones_like(trusted)
    expected[19:30, 11] = False
    np.testing.assert_array_equal(trusted, expected)
    r = runner.invoke(main, ["features", str(plain), "--out", str(tmp_path / "g.npy")])
    assert r.exit_code == 0 and not (tmp_path / "g.joint_trusted.npy").exists()


def test_a_resampled_feature_row_is_trusted_where_both_fit_samples_around_its_times_are():
    """30 fps fit samples, landmark 9 untrusted at sample 30 (t = 1 s). Feature times (20 fps) 0.95 and
    1.05 s lie between trusted samples, 1.0 s falls on the untrusted one: rows 19 (0.95 -> 1.0 s) and 20
    (1.0 -> 1.05 s) lose landmark 9, nothing else changes."""
    from motionkit.motion.derive import feature_rows_trusted

    t = np.arange(90) / 30.0
    trusted = np.ones((90, 17), bool)
    trusted[30, 9] = False
    rows = feature_rows_trusted(trusted, t)
    expected = np.ones((59, 17), bool)  # 2.97 s of fit: feature times 0 .. 2.95 s, 59 rows
    expected[[19, 20], 9] = False
    np.testing.assert_array_equal(rows, expected)
    t20 = np.arange(40) / 20.0  # at the features' own rate the samples are the feature times
    rows = feature_rows_trusted(trusted[:40], t20)
    expected = np.ones((39, 17), bool)
    expected[[29, 30], 9] = False
    np.testing.assert_array_equal(rows, expected)
