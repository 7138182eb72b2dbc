"""``motionkit view``: the scene it builds, its standalone recording, and the page in a real browser
(headless Chromium, skipped where it is not installed)."""

from __future__ import annotations

import base64
import importlib.util
import re
import shutil
import socket
import subprocess
import sys

import cv2
import numpy as np
import pytest
from click.testing import CliRunner

from motionkit.cli import main
from motionkit.data.fitted_body import take_of_result
from motionkit.data.store import read_result
from motionkit.viewer import serve, take_scene, write_recording

HAVE_VISER = importlib.util.find_spec("viser") is not None
needs_viser = pytest.mark.skipif(not HAVE_VISER, reason="viser is not installed (pip install 'motionkit[viz]')")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def test_without_viser_the_command_says_how_to_install_it(fitted_with_videos, monkeypatch, tmp_path):
    _root, _uid, path = fitted_with_videos
    monkeypatch.setitem(sys.modules, "viser", None)  # import viser now raises ImportError
    out = CliRunner().invoke(main, ["view", str(path), "--out", str(tmp_path / "x.html")])
    assert out.exit_code != 0 and "motionkit[viz]" in out.output and "Traceback" not in out.output
    assert not (tmp_path / "x.html").exists()
    bad = tmp_path / "broken.h5"
    bad.write_bytes(b"not an HDF5 file")
    out = CliRunner().invoke(main, ["view", str(bad)])
    assert out.exit_code != 0 and "broken.h5" in out.output and "Traceback" not in out.output


@needs_viser
def test_scene_holds_the_fitted_body_cameras_and_trajectory(fitted_with_videos):
    root, uid, path = fitted_with_videos
    result = read_result(path)
    scene = take_scene(result, take_of_result(result))
    M = len(result["time_s"])
    assert scene.joints.shape == (M, 55, 3) and scene.rotations.shape == (M, 55, 3, 3)
    np.testing.assert_allclose(scene.joints[:, 0], result["joints/smplx"][:, 0], atol=1e-6)  # the fitted pelvis
    assert set(scene.images) == set(scene.rig.names)  # a video frame on every camera frustum
    assert scene.aria is not None and len(scene.annotations) == M


@needs_viser
def test_the_landmarks_the_fit_does_not_trust_are_shown_and_named(fitted_with_videos):
    """At a valid sample whose left knee and ankle the fit does not trust, the red points sit on those
    two fitted landmarks and the text names them; at a fully trusted sample and at an invalid one
    nothing is marked."""
    import viser

    from motionkit.viewer import Viewer

    _root, _uid, path = fitted_with_videos
    result = read_result(path)
    scene = take_scene(result)
    np.testing.assert_array_equal(scene.trusted, result["fit/joint_trusted"].astype(bool))
    m, n = np.flatnonzero(scene.valid)[:2]
    scene.trusted = scene.trusted.copy()
    scene.trusted[[m, n]] = True
    scene.trusted[m, [13, 15]] = False
    assert scene.untrusted(m) == [13, 15] and scene.untrusted(n) == []
    off = np.flatnonzero(~scene.valid)
    assert not len(off) or scene.untrusted(off[0]) == []
    server = viser.ViserServer(host="127.0.0.1", port=_free_port(), verbose=False)
    try:
        viewer = Viewer(server, scene)
        viewer.show(m)
        assert viewer.untrusted.visible
        # viser keeps point clouds in float16: about a millimetre at these coordinates
        np.testing.assert_allclose(viewer.untrusted.points, result["joints/coco17"][m, [13, 15]], atol=2e-3)
        assert "not trusted: left-knee, left-ankle" in viewer.info.content
        viewer.show(n)
        assert not viewer.untrusted.visible and "not trusted" not in viewer.info.content
    finally:
        server.stop()


@needs_viser
def test_recording_is_a_standalone_page(fitted_with_videos, tmp_path):
    _root, _uid, path = fitted_with_videos
    out = write_recording(read_result(path), tmp_path / "take.html", port=_free_port())
    html = out.read_text()
    data = re.search(r'window.__VISER_EMBED_DATA__="([A-Za-z0-9+/=]+)"', html)
    assert data and len(base64.b64decode(data.group(1))) > 100_000  # the mesh and every frame's bones


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _screenshot(url: str, out) -> np.ndarray:
    cmd = [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu-sandbox", "--use-angle=swiftshader",
           "--enable-unsafe-swiftshader", "--window-size=1000,700", "--virtual-time-budget=15000",
           "--hide-scrollbars", f"--screenshot={out}", url]  # fmt: skip
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)
    return cv2.imread(str(out))[..., ::-1]  # RGB


def _body_pixels(img: np.ndarray) -> np.ndarray:
    """Pixels in the body's hue (magenta, any shading): red and blue well above green."""
    r, g, b = (img[..., k].astype(int) for k in range(3))
    return (r - g > 60) & (b - g > 60) & (np.abs(r - b) < 90)


@needs_viser
@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium)")
def test_browser_shows_the_body_where_the_camera_looks(fitted_with_videos, tmp_path):
    _root, _uid, path = fitted_with_videos
    port = _free_port()
    server, viewer = serve(read_result(path), port=port, host="127.0.0.1")
    try:
        img = _screenshot(f"http://127.0.0.1:{port}", tmp_path / "on.png")
        body = _body_pixels(img)
        assert body.sum() > 300, body.sum()
        ys, xs = np.nonzero(body)
        h, w = body.shape
        # the initial camera looks at the body: it is in the middle of the canvas (the GUI panel is on the right)
        assert 0.2 * w < xs.mean() < 0.8 * w and 0.2 * h < ys.mean() < 0.8 * h, (xs.mean(), ys.mean())
        viewer.toggles["body"].value = False
        viewer.body.visible = False
        img = _screenshot(f"http://127.0.0.1:{port}", tmp_path / "off.png")
        assert _body_pixels(img).sum() < 20
    finally:
        server.stop()
