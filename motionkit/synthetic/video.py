"""Synthetic exo videos (docs/synthetic.md, "Videos"): the people of a synthetic take drawn as their
body meshes, one filled shape per body part (the convex hull of the part's projected vertices, far parts
first), over a static background, seen through each exo camera's true fisheye model, with a
frame-index stamp in every written frame.

Frame stamp: 16 squares of 16 x 16 px in the top-left corner of the written frame; square ``k`` spans
``x in [16k, 16k + 16)``, ``y in [0, 16)``; white = 1, black = 0; the take frame index in binary, most
significant bit first (``k = 0``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from motionkit.body.mesh import PosedMesh, body_parts
from motionkit.common.files import atomic_path
from motionkit.conventions import TAKE_FPS
from motionkit.geometry.camera import Camera
from motionkit.synthetic.scenarios import box_corners

STAMP_BITS = 16
STAMP_SQUARE = 16
DOWNSCALED_HEIGHT = 448  # the release's frame_aligned_videos/downscaled/448 copies
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


def render_frame(cam: Camera, people_vertices: list[np.ndarray], parts: list[np.ndarray], bg: np.ndarray,
                 markers: list[np.ndarray] | None = None,
                 occluders: np.ndarray | None = None) -> np.ndarray:  # fmt: skip
    """One frame ``(H, W, 3)`` uint8 BGR seen by ``cam`` (at the written resolution, see
    ``Camera.scaled``): each person's mesh ``(V, 3)`` (world, metres) drawn part by part (``parts``: the
    vertex indices of each part, ``body.mesh.body_parts``; the convex hull of each part's projected
    vertices in one of the person's colours) and the scene's ``occluders (K, 7)`` (world boxes) as flat
    grey shapes, far things first;
    ``markers``: per person ``(17, 3)`` COCO points drawn as dots in ``MARKER_COLOURS`` (for test
    detectors; None: no dots)."""
    import cv2

    img = bg.copy()
    items = []  # (depth, person (-1: furniture), part, fixed-point hull)
    for box in occluders if occluders is not None else ():
        corners = box_corners(box)
        pc = cam.world_to_cam(corners)
        if (pc[:, 2] > 0.2).all():
            hull = cv2.convexHull(np.round(cam.project(corners) * 16).astype(np.int32))
            items.append((float(pc[:, 2].mean()), -1, 0, hull))  # painted at the depth of its centre
    for p, verts in enumerate(people_vertices):
        uv, ok = cam.project(verts, return_valid=True)
        depth = cam.world_to_cam(verts)[:, 2]
        seen = ok & (depth > 0.2)
        for part, idx in enumerate(parts):
            sel = idx[seen[idx]]
            if len(sel) >= 3:
                hull = cv2.convexHull(np.round(uv[sel] * 16).astype(np.int32))
                items.append((float(depth[sel].mean()), p, part, hull))
    for _, p, part, hull in sorted(items, key=lambda t: -t[0]):
        colour = OCCLUDER_COLOUR if p < 0 else PERSON_COLOURS[p % len(PERSON_COLOURS)][part % 3]
        cv2.fillConvexPoly(img, hull, colour, lineType=cv2.LINE_AA, shift=4)
    for pts in markers or []:
        uv, ok = cam.project(pts, return_valid=True)
        for j in np.flatnonzero(ok):
            cv2.circle(img, _pt(uv[j]), MARKER_RADIUS_PX * 16, MARKER_COLOURS[j], thickness=-1, lineType=cv2.LINE_AA,
                       shift=4)  # fmt: skip
    return img


def _pt(uv: np.ndarray) -> tuple[int, int]:
    """Pixel centre coordinates -> cv2's fixed-point (4 fractional bits) point."""
    return int(round(uv[0] * 16)), int(round(uv[1] * 16))


@contextlib.contextmanager
def video_writer(path: Path, fps: float = TAKE_FPS) -> Iterator[Callable[[np.ndarray], None]]:
    """Yield ``write(img)`` that appends a BGR uint8 frame ``(H, W, 3)`` to the MP4 (MPEG-4 part 2) at
    ``path``; the file appears (atomically) when the block ends without an error."""
    import cv2

    writer = None
    with atomic_path(path) as tmp:
        mp4 = tmp.with_name(tmp.name + ".mp4")  # OpenCV picks the container from the extension

        def write(img: np.ndarray) -> None:
            nonlocal writer
            if writer is None:
                h, w = img.shape[:2]
                writer = cv2.VideoWriter(str(mp4), cv2.VideoWriter_fourcc(*"mp4v"), fps, (w, h))
                if not writer.isOpened():
                    raise RuntimeError(f"cannot write {path} with OpenCV's mp4v encoder")
            writer.write(img)

        try:
            yield write
            if writer is None:
                raise ValueError(f"{path}: no frames to write")
        except BaseException:
            if writer is not None:
                writer.release()
            mp4.unlink(missing_ok=True)  # the encoder's file beside the temporary one
            raise
        writer.release()
        os.replace(mp4, tmp)


def write_video(path: Path, frames, fps: float = TAKE_FPS) -> Path:
    """Write BGR uint8 frames (an iterable of ``(H, W, 3)``) as MP4 (MPEG-4 part 2), atomically."""
    with video_writer(path, fps) as write:
        for img in frames:
            write(img)
    return path


def video_sizes(cam: Camera, scale: float) -> tuple[float, float]:
    """Scales of the full-size video (``scale`` x the calibration size) and of the 448p copy (short side 448)."""
    return scale, DOWNSCALED_HEIGHT / min(cam.width, cam.height)


def render_take_videos(take_dir: Path, cams: list[Camera], people: list[PosedMesh], *, scale: float = 1.0,
                       seed: int = 0, markers: list[np.ndarray] | None = None,
                       occluders: np.ndarray | None = None) -> list[Path]:  # fmt: skip
    """``frame_aligned_videos/<cam>.mp4`` (``scale`` x calibration size) and
    ``frame_aligned_videos/downscaled/448/<cam>.mp4`` of every camera in ``cams`` (camera ``k``'s
    background drawn with seed ``seed * 1000 + k``): the ``people``'s meshes (one ``PosedMesh`` per person,
    a frame per take frame), ``markers[p] (F, 17, 3)``; every frame stamped with its take frame index.
    Each frame's meshes are posed once for every camera; ``occluders (K, 7)``: furniture."""
    parts = body_parts(people[0].model)
    views = []  # (path, camera at the written size, background)
    for k, cam in enumerate(cams):
        for sub, s in zip(("", "downscaled/448/"), video_sizes(cam, scale), strict=True):
            c = cam.scaled(s)
            views.append((take_dir / "frame_aligned_videos" / f"{sub}{cam.name}.mp4", c,
                          background(c.width, c.height, seed * 1000 + k)))  # fmt: skip
    with contextlib.ExitStack() as stack:
        writers = [stack.enter_context(video_writer(path)) for path, _, _ in views]
        for i in range(len(people[0])):
            verts = [person.vertices(i) for person in people]
            mk = None if markers is None else [m[i] for m in markers]
            for write, (_, c, bg) in zip(writers, views, strict=True):
                write(stamp_frame_index(render_frame(c, verts, parts, bg, mk, occluders), i))
    return [path for path, _, _ in views]
