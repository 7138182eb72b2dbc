"""Synthetic exo videos (docs/synthetic.md, "Videos"): the people of a synthetic take drawn as filled
body-part silhouettes over a static background, seen through each exo camera's true fisheye model,
with a frame-index stamp in every written frame.

Frame stamp: 16 squares of 16 x 16 px in the top-left corner of the written frame; square ``k`` spans
``x in [16k, 16k + 16)``, ``y in [0, 16)``; white = 1, black = 0; the take frame index in binary, most
significant bit first (``k = 0``).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from motionkit.common.files import atomic_path
from motionkit.conventions import TAKE_FPS
from motionkit.geometry.camera import Camera
from motionkit.synthetic.scenarios import box_corners

STAMP_BITS = 16
STAMP_SQUARE = 16
DOWNSCALED_HEIGHT = 448  # the release's frame_aligned_videos/downscaled/448 copies
# body parts as SMPL-X joint segments (parent, child) and their radius (m); the head is a disc at joint 15
SEGMENTS = (
    (0, 3, 0.13), (3, 6, 0.13), (6, 9, 0.14), (9, 12, 0.09), (12, 15, 0.06),  # pelvis, spine, neck
    (0, 1, 0.09), (1, 4, 0.08), (4, 7, 0.06), (7, 10, 0.05),  # left leg
    (0, 2, 0.09), (2, 5, 0.08), (5, 8, 0.06), (8, 11, 0.05),  # right leg
    (9, 13, 0.06), (13, 16, 0.06), (16, 18, 0.05), (18, 20, 0.04),  # left arm
    (9, 14, 0.06), (14, 17, 0.06), (17, 19, 0.05), (19, 21, 0.04),  # right arm
)  # fmt: skip
HEAD_RADIUS_M = 0.11
# one hue family per person (BGR): the wearer's are warm, bystanders' cool; parts alternate shades
PERSON_COLOURS = (
    ((40, 60, 220), (60, 110, 255), (30, 40, 160)),
    ((200, 120, 40), (255, 170, 80), (150, 80, 20)),
    ((60, 180, 60), (110, 230, 110), (40, 120, 40)),
)
# one colour per COCO-17 keypoint marker (BGR), far from each other and from the people's colours, for
# deterministic test detectors
MARKER_RADIUS_PX = 3
OCCLUDER_COLOUR = (70, 95, 120)  # BGR: brown-grey furniture
MARKER_COLOURS = (
    (0, 180, 180),
    (0, 255, 60),
    (0, 255, 180),
    (60, 255, 0),
    (120, 0, 0),
    (120, 0, 120),
    (120, 0, 255),
    (120, 255, 0),
    (180, 0, 0),
    (180, 0, 120),
    (180, 0, 255),
    (180, 60, 180),
    (180, 120, 255),
    (255, 0, 0),
    (255, 0, 120),
    (255, 0, 255),
    (255, 60, 180),
)  # fmt: skip: pairwise >= 60 apart in some channel, >= 75 from every silhouette colour


def stamp_frame_index(img: np.ndarray, index: int) -> np.ndarray:
    """Write the frame-index stamp into ``img (H, W, 3)`` uint8 in place (and return it)."""
    if not 0 <= index < 2**STAMP_BITS:
        raise ValueError(f"frame index {index} does not fit in {STAMP_BITS} bits")
    for k in range(STAMP_BITS):
        bit = (index >> (STAMP_BITS - 1 - k)) & 1
        img[:STAMP_SQUARE, STAMP_SQUARE * k : STAMP_SQUARE * (k + 1)] = 255 * bit
    return img


def read_frame_stamp(img: np.ndarray) -> int:
    """The frame index stamped into ``img`` (each square's central 8 x 8 pixels, thresholded at 128)."""
    a, b = STAMP_SQUARE // 4, 3 * STAMP_SQUARE // 4
    value = 0
    for k in range(STAMP_BITS):
        sq = img[a:b, STAMP_SQUARE * k + a : STAMP_SQUARE * k + b]
        value = (value << 1) | int(sq.mean() >= 128)
    return value


def background(width: int, height: int, seed: int) -> np.ndarray:
    """A static background ``(H, W, 3)`` uint8 BGR: a floor/wall gradient with a faint texture."""
    rng = np.random.default_rng(seed)
    y = np.linspace(0, 1, height)[:, None, None]
    top, bottom = rng.uniform(90, 150, 3), rng.uniform(40, 90, 3)
    img = top * (1 - y) + bottom * y + np.zeros((1, width, 1))
    coarse = rng.normal(0, 6, (height // 32 + 2, width // 32 + 2, 1))
    img = img + np.repeat(np.repeat(coarse, 32, 0), 32, 1)[:height, :width]
    return np.clip(img, 0, 255).astype(np.uint8)


def render_frame(cam: Camera, people_joints: list[np.ndarray], bg: np.ndarray,
                 markers: list[np.ndarray] | None = None,
                 occluders: np.ndarray | None = None) -> np.ndarray:  # fmt: skip
    """One frame ``(H, W, 3)`` uint8 BGR seen by ``cam`` (at the written resolution, see
    ``Camera.scaled``): each person's SMPL-X joints ``(>=22, 3)`` (world, metres) drawn as capsules and a
    head disc, and the scene's ``occluders (K, 7)`` (world boxes) as flat grey shapes, far things first;
    ``markers``: per person ``(17, 3)`` COCO points drawn as dots in ``MARKER_COLOURS`` (for test
    detectors; None: no dots)."""
    import cv2

    img = bg.copy()
    f = float(cam.params[0])
    items = []  # (depth, kind, person, data)
    for box in occluders if occluders is not None else ():
        corners = box_corners(box)
        pc = cam.world_to_cam(corners)
        if (pc[:, 2] > 0.2).all():
            uv = cam.project(corners)
            hull = cv2.convexHull(np.round(uv * 16).astype(np.int32))
            items.append((float(pc[:, 2].mean()), "box", -1, hull))  # painted at the depth of its centre
    for p, J in enumerate(people_joints):
        pc = cam.world_to_cam(J[:22])
        uv, ok = cam.project(J[:22], return_valid=True)
        for s, (a, b, r) in enumerate(SEGMENTS):
            if ok[a] and ok[b] and pc[a, 2] > 0.2 and pc[b, 2] > 0.2:
                depth = 0.5 * (pc[a, 2] + pc[b, 2])
                items.append((depth, "seg", p, (uv[a], uv[b], max(1, round(f * r / depth)), s)))
        if ok[15] and pc[15, 2] > 0.2:
            items.append((pc[15, 2] - 0.05, "head", p, (uv[15], max(2, round(f * HEAD_RADIUS_M / pc[15, 2])))))
    for _, kind, p, data in sorted(items, key=lambda t: -t[0]):
        palette = PERSON_COLOURS[p % len(PERSON_COLOURS)]
        if kind == "box":
            cv2.fillConvexPoly(img, data, OCCLUDER_COLOUR, lineType=cv2.LINE_AA, shift=4)
        elif kind == "seg":
            a, b, thick, s = data
            cv2.line(img, _pt(a), _pt(b), palette[s % 3], thickness=2 * thick, lineType=cv2.LINE_AA, shift=4)
        else:
            c, rad = data
            cv2.circle(img, _pt(c), rad * 16, palette[1], thickness=-1, lineType=cv2.LINE_AA, shift=4)
    for pts in markers or []:
        uv, ok = cam.project(pts, return_valid=True)
        for j in np.flatnonzero(ok):
            cv2.circle(img, _pt(uv[j]), MARKER_RADIUS_PX * 16, MARKER_COLOURS[j], thickness=-1, lineType=cv2.LINE_AA,
                       shift=4)  # fmt: skip
    return img


def _pt(uv: np.ndarray) -> tuple[int, int]:
    """Pixel centre coordinates -> cv2's fixed-point (4 fractional bits) point."""
    return int(round(uv[0] * 16)), int(round(uv[1] * 16))


def write_video(path: Path, frames, fps: float = TAKE_FPS) -> Path:
    """Write BGR uint8 frames (an iterable of ``(H, W, 3)``) as MP4 (MPEG-4 part 2), atomically."""
    import cv2

    writer = None
    with atomic_path(path) as tmp:
        mp4 = tmp.with_name(tmp.name + ".mp4")  # OpenCV picks the container from the extension
        try:
            for img in frames:
                if writer is None:
                    h, w = img.shape[:2]
                    writer = cv2.VideoWriter(str(mp4), cv2.VideoWriter_fourcc(*"mp4v"), fps, (w, h))
                    if not writer.isOpened():
                        raise RuntimeError(f"cannot write {path} with OpenCV's mp4v encoder")
                writer.write(img)
        finally:
            if writer is not None:
                writer.release()
        os.replace(mp4, tmp)
    return path


def video_sizes(cam: Camera, scale: float) -> tuple[float, float]:
    """Scales of the full-size video (``scale`` x the calibration size) and of the 448p copy (short side 448)."""
    return scale, DOWNSCALED_HEIGHT / min(cam.width, cam.height)


def render_camera_videos(take_dir: Path, cam: Camera, people_joints: list[np.ndarray], *, scale: float = 1.0,
                         seed: int = 0, markers: list[np.ndarray] | None = None, drop_last: int = 0,
                         occluders: np.ndarray | None = None) -> list[Path]:  # fmt: skip
    """``frame_aligned_videos/<cam>.mp4`` (``scale`` x calibration size) and
    ``frame_aligned_videos/downscaled/448/<cam>.mp4`` of one camera: ``people_joints[p] (F, >=22, 3)``,
    ``markers[p] (F, 17, 3)``; every frame stamped with its take frame index. ``drop_last``: frames
    left out at the end (a container shorter than the take, for tests); ``occluders (K, 7)``: furniture."""
    n = len(people_joints[0]) - drop_last
    paths = []
    for sub, s in zip(("", "downscaled/448/"), video_sizes(cam, scale), strict=True):
        c = cam.scaled(s)
        bg = background(c.width, c.height, seed)

        def frames(c=c, bg=bg):
            for i in range(n):
                mk = None if markers is None else [m[i] for m in markers]
                yield stamp_frame_index(render_frame(c, [J[i] for J in people_joints], bg, mk, occluders), i)

        paths.append(write_video(take_dir / "frame_aligned_videos" / f"{sub}{cam.name}.mp4", frames()))
    return paths
