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
    assert feats.shape == (89 + 99, 263) and runs["runs"][1] == {"frames": [100, 200], "rows": [89, 188]}
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
