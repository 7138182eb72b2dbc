"""Detection throughput on exo videos: decoding (OpenCV through motionkit.detect.frames, PyAV,
torchvision), RF-DETR Nano person detection on 448p frames and RFDETRKeypointPreview on 576-px crops
(random weights: speed does not depend on them), on the CPU and, where present, on a GPU.

The whole Ego-Exo4D at 20 fps is ~59 M exo images; the target on one H200 is >= 700 images/s for
decode + Nano detection + keypoints on crops.

Usage: ``python benchmarks/bench_detect.py [--frames 60] [--scale 0.5] [--devices cpu,cuda]``.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np


def _time(fn, n_images: int, repeat: int = 1) -> tuple[float, float]:
    """Best images/s and its seconds over ``repeat`` runs (after one warm-up run when repeating)."""
    if repeat > 1:
        fn()
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return n_images / best, best


def decode_motionkit(path: Path, frames: np.ndarray, decoder: str, read_ahead: int = 2) -> None:
    from motionkit.detect.frames import iter_frames

    for b in iter_frames(path, frames, batch_size=16, decoder=decoder, read_ahead=read_ahead):
        assert b.ok.all()


def decode_pyav_raw(path: Path, frames: np.ndarray) -> None:
    """PyAV decoding every frame sequentially, converting the wanted ones (a lower bound on its cost)."""
    import av

    want = set(int(f) for f in frames)
    with av.open(str(path)) as c:
        s = c.streams.video[0]
        s.thread_type = "AUTO"
        for i, fr in enumerate(c.decode(s)):
            if i in want:
                fr.to_ndarray(format="rgb24")
            if i >= max(want):
                break


def decode_torchvision(path: Path, frames: np.ndarray) -> None:
    from torchvision.io import VideoReader

    want = set(int(f) for f in frames)
    r = VideoReader(str(path), "video")
    for i, fr in enumerate(r):
        if i in want:
            fr["data"].numpy()
        if i >= max(want):
            break


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=60, help="take frames (30 fps) in the test video")
    ap.add_argument("--scale", type=float, default=0.5, help="video size relative to 4K (1.0 = the release's)")
    ap.add_argument("--devices", default=None)
    ap.add_argument("--batch", type=int, default=8, help="images per detector / keypoint batch")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="mk_bench_detect_"))
    os.environ.setdefault("MOTIONKIT_HOME", str(tmp / "home"))
    import torch

    from motionkit.data.egoexo4d import EgoExoDataset
    from motionkit.detect.frames import exo_video_path, read_frames
    from motionkit.detect.topdown import crop_for_box, detect_people, extract_crop
    from motionkit.synthetic.writer import SynthConfig, write_synthetic_dataset

    write_synthetic_dataset(tmp / "ds", SynthConfig(takes=1, seed=7, duration=args.frames / 30, videos=True,
                                                    video_scale=args.scale, extra_camera="none"))  # fmt: skip
    ds = EgoExoDataset(tmp / "ds")
    take = ds.take(ds.takes()[0].take_uid)
    path = exo_video_path(take, take.rig.names[0])
    every = np.arange(0, args.frames)
    every3 = np.arange(0, args.frames, 3)  # a 10 fps grid: 2 of every 3 frames skipped
    h, w = read_frames(path, [0]).frames[0].shape[:2]
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    print(f"# detection throughput; {platform.machine()}, {os.cpu_count()} cores, {gpu}, torch {torch.__version__}, "
          f"threads {torch.get_num_threads()}; test video {w}x{h} mp4v, {args.frames} frames")  # fmt: skip
    print("\n## decoding (images/s)")
    print(f"| {'decoder':<34} | {'every frame':>11} | {'every 3rd':>9} |")
    print("|------------------------------------|-------------|-----------|")
    rows = (
        ("iter_frames, decoder=pyav", lambda p, f: decode_motionkit(p, f, "pyav")),
        ("iter_frames, pyav, no read-ahead", lambda p, f: decode_motionkit(p, f, "pyav", read_ahead=0)),
        ("iter_frames, decoder=opencv", lambda p, f: decode_motionkit(p, f, "opencv")),
        ("PyAV, plain sequential loop", decode_pyav_raw),
        ("torchvision.io.VideoReader", decode_torchvision),
    )
    for name, fn in rows:
        try:
            a, _ = _time(lambda fn=fn: fn(path, every), len(every), repeat=5)
            b, _ = _time(lambda fn=fn: fn(path, every3), len(every3), repeat=5)
            print(f"| {name:<34} | {a:11.1f} | {b:9.1f} |")
        except Exception as exc:  # noqa: BLE001 - a decoder missing here is a row, not a failure
            print(f"| {name:<34} | unavailable: {type(exc).__name__}: {str(exc)[:60]} |")

    try:
        from motionkit.detect.rfdetr_backend import RFDETRDetector, RFDETRKeypoints
    except ImportError:
        print("\nRF-DETR not installed: no inference rows")
        return
    frames = [f for f in read_frames(path, every[: 2 * args.batch]).frames]
    devices = args.devices.split(",") if args.devices else ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    print("\n## inference (random weights; images/s)")
    head = ("device", "precision", "Nano detection on 448p", "keypoints on 576-px crops", "decode+det+kp")
    print(f"| {head[0]:<6} | {head[1]:<9} | {head[2]:>22} | {head[3]:>25} | {head[4]:>13} |")
    print("|--------|-----------|------------------------|---------------------------|---------------|")
    runs = [(dev, p) for dev in devices for p in (("float32", "float16") if dev.startswith("cuda") else ("float32",))]
    dec_rate, _ = _time(lambda: decode_motionkit(path, every, "pyav"), len(every), repeat=3)
    for dev, prec in runs:
        kw = dict(threshold=0.0, allow_random_init=True, device=dev, batch_size=args.batch, precision=prec)
        det = RFDETRDetector("nano", **kw)
        kp = RFDETRKeypoints(**kw)
        n = len(frames)
        det_rate, _ = _time(lambda det=det: detect_people(frames, det), n, repeat=3)
        box = np.array([w * 0.4, h * 0.2, w * 0.55, h * 0.9])
        crops = [extract_crop(f, crop_for_box(box, kp.input_size)) for f in frames]
        in_crop = np.tile([100.0, 50, 400, 500], (n, 1))
        kp_rate, _ = _time(lambda kp=kp, crops=crops, in_crop=in_crop: kp.estimate_crops(crops, in_crop), n, repeat=3)
        total = 1.0 / (1.0 / dec_rate + 1.0 / det_rate + 1.0 / kp_rate)  # one person per image, one after another
        print(f"| {dev:<6} | {prec:<9} | {det_rate:22.1f} | {kp_rate:25.1f} | {total:13.1f} |")
    print(
        "\nEgo-Exo4D at 20 fps: ~59 M exo images; target on one H200: >= 700 images/s (decode + detection + keypoints)."
    )


if __name__ == "__main__":
    main()
