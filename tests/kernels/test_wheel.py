"""A normal (non-editable) install carries the C++/CUDA sources: a wheel built from the repository,
installed into a fresh virtual environment, has its fused CPU operators there."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from motionkit.kernels import build

REPO = Path(__file__).resolve().parents[2]


def _run(cmd: list, **kw) -> subprocess.CompletedProcess:
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    assert done.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{done.stdout}\n{done.stderr}"
    return done


@pytest.mark.slow
def test_a_wheel_installed_in_a_fresh_environment_has_the_fused_operators(tmp_path):
    pytest.importorskip("setuptools")
    src = tmp_path / "src"  # a copy: building in place would leave build/ and *.egg-info in the checkout
    shutil.copytree(REPO / "motionkit", src / "motionkit", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", tmp_path / "dist", src]
    )
    wheel = next((tmp_path / "dist").glob("motionkit-*.whl"))
    shipped = {n.rsplit("/", 1)[-1] for n in zipfile.ZipFile(wheel).namelist() if "/kernels/csrc/" in n}
    assert set(build.CPU_SOURCES + build.CUDA_SOURCES + build.HEADERS) <= shipped

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv])
    site = Path(_run([venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
                .stdout.strip())  # fmt: skip
    _run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-compile", "--target", site, wheel])
    # the fresh environment borrows this one's dependencies (torch, numpy, ...) as a plain path entry, so
    # this environment's editable motionkit (a .pth finder there) is not seen
    (site / "borrowed_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    probe = (
        "import json, motionkit, motionkit.kernels as k; from motionkit.kernels import build; "
        "print(json.dumps({'file': motionkit.__file__, 'csrc': str(build.CSRC), 'status': k.status()}))"
    )
    env = {**os.environ, "PYTHONPATH": ""}
    got = json.loads(
        _run([venv / "bin" / "python", "-c", probe], cwd=tmp_path, env=env).stdout.strip().splitlines()[-1]
    )
    assert Path(got["file"]).is_relative_to(site), got["file"]
    assert Path(got["csrc"]).is_relative_to(site)
    assert got["status"]["cpu"] is True, got["status"]
