import json
import subprocess
import sys

import click
import numpy as np
import pytest
from click.testing import CliRunner

from motionkit.cli import main
from motionkit.data.egoexo4d import EgoExoDataset
from motionkit.data.store import read_result


def test_help_lists_working_commands():
    r = CliRunner().invoke(main, ["--help"])
    assert r.exit_code == 0
    for cmd in ("fit", "synth", "takes"):
        assert cmd in r.output
    r = CliRunner().invoke(main, ["fit", "--help"])
    assert r.exit_code == 0 and "--until" in r.output and "--fps" in r.output


def test_synth_then_fit_json(tmp_path):
    runner = CliRunner()
    root = tmp_path / "ds"
    r = runner.invoke(main, ["synth", "--root", str(root), "--takes", "1", "--duration", "3", "--seed", "9"])
    assert r.exit_code == 0, r.output
    take = EgoExoDataset(root).takes()[0]
    out = tmp_path / "out"
    r = runner.invoke(main, ["fit", "--take", take.take_name, "--root", str(root), "--out", str(out), "--json"])
    assert r.exit_code == 0, r.output
    s = json.loads(r.output.strip().splitlines()[-1])
    assert s["status"] == "ok" and s["frames"] == 60 and s["body_model"]["synthetic"] is True
    res = read_result(out / f"{take.take_uid}.h5")
    assert res.attrs["take_uid"] == take.take_uid and res.body_model["kind"] == "synthetic"
    assert res["aria/valid"].all()
    np.testing.assert_allclose(np.diff(res["grid/time_s"]), 0.05)
    # a rerun reuses the cached stages
    r = runner.invoke(main, ["fit", "--take", take.take_uid, "--root", str(root), "--out", str(out), "--json"])
    s2 = json.loads(r.output.strip().splitlines()[-1])
    assert s2["reused_stages"] == s["stages"]
    # --device auto (the default) fits on the CPU here, on the fused operators; both are recorded
    assert (s["fit_device"], s["fit_kernels"]) == ("cpu", "fused") == (s2["fit_device"], s2["fit_kernels"])
    assert (res.attrs["fit_device"], res.attrs["fit_kernels"]) == ("cpu", "fused")
    # device and operators do not change what a result means: the torch path reuses the fused result
    r = runner.invoke(main, ["fit", "--take", take.take_uid, "--root", str(root), "--out", str(out), "--json",
                             "--kernels", "torch", "--device", "cpu"])  # fmt: skip
    assert json.loads(r.output.strip().splitlines()[-1])["reused_stages"] == s["stages"]
    # what the fit trusts, per body part of the valid frames, in the summary and the printout
    valid, trusted = res["valid"].astype(bool), res["fit/joint_trusted"].astype(bool)
    assert s["trusted_share"]["legs"] == pytest.approx(trusted[valid][:, 13:].mean())
    r = runner.invoke(main, ["fit", "--take", take.take_uid, "--root", str(root), "--out", str(out)])
    legs = f"legs {100 * trusted[valid][:, 13:].mean():.1f} %"
    assert r.exit_code == 0 and "landmarks trusted in the valid frames: torso" in r.output and legs in r.output


def test_doctor_reports_the_operators_and_devices():
    r = CliRunner().invoke(main, ["doctor", "--json"])
    assert r.exit_code == 0, r.output
    rep = json.loads(r.output.strip().splitlines()[-1])
    assert rep["kernels"]["cpu"] is True and rep["default_device"] in ("cpu", "cuda")
    assert set(rep["kernels"]) == {"cpu", "cuda", "error"}
    r = CliRunner().invoke(main, ["doctor"])
    assert r.exit_code == 0 and "fused operators: cpu yes" in r.output


def test_kernels_option_is_validated():
    r = CliRunner().invoke(main, ["fit", "--take", "demo", "--kernels", "cuda-magic"])
    assert r.exit_code != 0 and "--kernels" in r.output


def test_a_cross_view_rule_the_config_rejects_is_a_usage_error(tmp_path, synth_root):
    """A tracklet error above the two-view one (0.24 by default) is refused before anything runs; raising
    both is accepted (the run then fails on the unknown take, not on the options)."""
    base = ["fit", "--take", "nope", "--root", str(synth_root), "--out", str(tmp_path / "out")]
    r = CliRunner().invoke(main, [*base, "--cross-view-tracklet-error", "0.3"])
    assert r.exit_code == 2 and "tracklet_two_view_error" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(main, [*base, "--cross-view-tracklet-error", "0.3", "--cross-view-two-view-error", "0.4"])
    assert r.exit_code != 0 and "'nope' not found" in r.output


def test_fit_unknown_take_fails_cleanly(tmp_path, synth_root):
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["fit", "--take", "nope", "--root", str(synth_root), "--out", str(out)])
    assert r.exit_code != 0
    assert "takes.json" in r.output and "'nope' not found" in r.output
    assert "Traceback" not in r.output
    assert not out.exists() or not list(out.iterdir())


def test_fit_records_failure_in_result(tmp_path, synth_root):
    import shutil

    root = tmp_path / "ds"
    shutil.copytree(synth_root, root)
    take = EgoExoDataset(root).takes()[0]
    (root / take.root_dir / "trajectory" / "closed_loop_trajectory.csv").write_text("graph_uid\n")
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["fit", "--take", take.take_uid, "--root", str(root), "--out", str(out)])
    assert r.exit_code != 0 and "closed_loop_trajectory.csv" in r.output and "missing columns" in r.output
    res = read_result(out / f"{take.take_uid}.h5")
    assert res.attrs["status"] == "failed" and "closed_loop_trajectory.csv" in res.attrs["message"]
    assert res.stages == ["load"]


def test_an_output_folder_that_cannot_be_written_fails_before_the_work(tmp_path, synth_root):
    (tmp_path / "a_file").write_text("")
    out = tmp_path / "a_file" / "out"  # no folder can be made under a file, whoever runs the test
    take = EgoExoDataset(synth_root).takes()[0].take_uid
    for args in (["fit", "--take", take], ["batch", "--all"]):
        r = CliRunner().invoke(main, [*args, "--root", str(synth_root), "--out", str(out)])
        assert r.exit_code == 1 and f"{out}: cannot write results there" in r.output, r.output
        assert "[load]" not in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(main, ["synth", "--root", str(out), "--takes", "1"])
    assert r.exit_code == 1 and str(tmp_path / "a_file") in r.output and "Traceback" not in r.output, r.output


def test_status_names_a_damaged_batch_record(tmp_path):
    (tmp_path / "manifest.jsonl").write_text("")
    (tmp_path / "batch.json").write_text("garbage")
    r = CliRunner().invoke(main, ["status", str(tmp_path)])
    assert r.exit_code == 1 and "batch.json, line 1: malformed JSON" in r.output and "Traceback" not in r.output


def test_bad_until(tmp_path, synth_root):
    r = CliRunner().invoke(main, ["fit", "--take", "x", "--root", str(synth_root), "--until", "nonsense"])
    assert r.exit_code != 0 and "unknown stage" in r.output


def test_every_command_loads_and_the_help_loads_none_of_them():
    from motionkit.cli import COMMANDS

    ctx = click.Context(main)
    for name in COMMANDS:
        cmd = main.get_command(ctx, name)
        assert isinstance(cmd, click.Command) and cmd.name == name, name
    probe = "import sys; from click.testing import CliRunner; from motionkit.cli import main; "
    probe += "r = CliRunner().invoke(main, ['--help']); assert r.exit_code == 0, r.output; "
    probe += "print(sorted(m for m in ('torch', 'motionkit.pipeline', 'motionkit.cli.fit') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out  # `motionkit --help` stays fast: nothing heavy is imported


def test_warnings_reach_the_terminal_as_one_clean_line(synth_root, tmp_path):
    """Take 1 of ``synth_root`` has a quality-0 camera: the warning names the calibration file, once, with
    no echo of Python source."""
    uid = EgoExoDataset(synth_root).takes()[1].take_uid
    cmd = [sys.executable, "-m", "motionkit.cli", "fit", "--take", uid, "--root", str(synth_root), "--until", "load",
           "--out", str(tmp_path), "--json"]  # fmt: skip
    err = subprocess.run(cmd, capture_output=True, text=True, check=True).stderr
    lines = [ln for ln in err.splitlines() if "quality != 1" in ln]
    assert lines and all(ln.startswith("warning: ") and "gopro_calibs.csv" in ln for ln in lines), err
    assert "self.func" not in err and "warnings.warn" not in err
