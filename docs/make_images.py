"""Regenerate the pictures of the docs and the README (``python docs/make_images.py``): one frame of each
scenario's scene from its first camera (deterministic), one frame of ``motionkit render``'s overlay video
of a fitted synthetic take, and a screenshot of ``motionkit view`` on it (headless Chromium, where
installed)."""

import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import cv2

from motionkit.data.store import read_result
from motionkit.pipeline import PipelineConfig, run_take
from motionkit.render import render_frames
from motionkit.synthetic.preview import scene_picture
from motionkit.synthetic.scenarios import SCENARIO_NAMES
from motionkit.synthetic.writer import SynthConfig, write_synthetic_dataset
from motionkit.viewer import serve

OUT = Path(__file__).parent / "images"
PNG = [cv2.IMWRITE_PNG_COMPRESSION, 9]


def scenario_pictures() -> None:
    for name in SCENARIO_NAMES:
        img = scene_picture(SynthConfig(seed=1, duration=4.0, scenario=name), time_s=3.0, width=480)
        cv2.imwrite(str(OUT / f"scenario_{name}.png"), img, PNG)


def overlay_frame() -> None:
    from motionkit.data.egoexo4d import EgoExoDataset

    tmp = Path(tempfile.mkdtemp(prefix="mk_images_"))
    cfg = SynthConfig(seed=4, duration=3.0, scenario="cooking", videos=True, video_scale=0.25)
    (uid,) = write_synthetic_dataset(tmp / "ds", cfg)
    run = run_take(tmp / "ds", uid, tmp / "fits", PipelineConfig(device="cpu"), progress=False, plot=False)
    result = read_result(run.path)
    take = EgoExoDataset(tmp / "ds").take(uid)
    frames = render_frames(result, ["cam01", "cam02", "cam03", "cam04"], take, width=400)
    for _ in range(30):  # 1.5 s into the take
        img = next(frames)
    cv2.imwrite(str(OUT / "render_overlay.jpg"), img, [cv2.IMWRITE_JPEG_QUALITY, 80])
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        server, viewer = serve(result, port=port, host="127.0.0.1")
        viewer.slider.value = 30
        viewer.show(30)
        shot = tmp / "viewer.png"
        subprocess.run([chromium, "--headless=new", "--no-sandbox", "--use-angle=swiftshader",
                        "--enable-unsafe-swiftshader", "--window-size=1000,640", "--virtual-time-budget=15000",
                        f"--screenshot={shot}", f"http://127.0.0.1:{port}"],
                       check=True, capture_output=True)  # fmt: skip
        server.stop()
        cv2.imwrite(str(OUT / "viewer.jpg"), cv2.imread(str(shot))[:, :, :], [cv2.IMWRITE_JPEG_QUALITY, 80])


if __name__ == "__main__":
    OUT.mkdir(exist_ok=True)
    scenario_pictures()
    overlay_frame()
    print(f"wrote {OUT}")
