"""Overlay videos (``motionkit render``): the fitted body mesh drawn through the real KB3 cameras onto the
take's exo videos, or onto grey frames when the take has none.

Each output frame is one sample of the fit grid: the body's silhouette (filled, half transparent) and
outline from the body model that made the fit, seen through the cameras the fit used
(``fit/T_cam_world``, the calibration's intrinsics, the fisheye model included), over the video frame
the sample came from, with the take frame, the fit's validity and that view's reprojection error
written on it. Invalid samples show the frame without a body. ``--camera all`` tiles every camera.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from motionkit.body.mesh import PosedMesh
from motionkit.body.model_file import load_model_file
from motionkit.common.errors import DataError
from motionkit.data.egoexo4d import Take
from motionkit.data.fitted_body import fit_model_path, fitted_body, fitted_rig, fitted_valid, take_of_result
from motionkit.data.store import TakeResult
from motionkit.detect.frames import camera_for_video, exo_video_path, iter_frames, video_info
from motionkit.geometry.camera import Camera
from motionkit.synthetic.video import write_video

BODY_COLOUR = (255, 60, 230)  # BGR: magenta, unlike any person of the synthetic videos
INVALID_GREY = 96
PANEL_WIDTH = 960  # pixels across one camera's panel


class FittedMesh(PosedMesh):
    """The body model that made a fit and its pose at every grid sample: ``vertices(m)`` is the mesh
    ``(V, 3)`` (world metres) at sample ``m`` (meaningless where the sample is not valid)."""

    @classmethod
    def of(cls, result: TakeResult) -> FittedMesh:
        joints, rotations = fitted_body(result, return_transforms=True)
        return cls(load_model_file(fit_model_path(result)), result["smplx/betas"], joints[:, :55], rotations)


def silhouette(cam: Camera, vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """``(H, W)`` bool: pixels covered by the mesh ``vertices (V, 3)`` (world) seen by ``cam`` (KB3);
    faces with a vertex behind the camera or off the fisheye's valid range are left out."""
    import cv2

    uv, ok = cam.project(vertices, return_valid=True)
    front = ok & (cam.world_to_cam(vertices)[:, 2] > 0.05)
    tri = faces[front[faces].all(1)]
    mask = np.zeros((cam.height, cam.width), np.uint8)
    pts = np.round(uv[tri] * 16).astype(np.int32)  # (F, 3, 2), 4 fractional bits
    for p in pts:  # one call per triangle: fillPoly with many polygons fills overlaps by the even-odd rule
        cv2.fillConvexPoly(mask, p, 1, lineType=cv2.LINE_8, shift=4)
    return mask.astype(bool)


def _frames(take: Take | None, cam: Camera, frame_index: np.ndarray, width: int) -> Iterator[tuple[np.ndarray, Camera]]:
    """BGR frames of ``cam``'s video at ``frame_index`` (grey where there is no video, where it does not open
    (with a warning) or where the frame does not decode), resized to ``width``, with the camera model for that
    size."""
    path = exo_video_path(take, cam.name) if take is not None else None
    scaled = cam.scaled(width / cam.width)
    grey = np.full((scaled.height, scaled.width, 3), INVALID_GREY, np.uint8)
    size = None
    if path is not None and path.is_file():
        try:
            _n, *size = video_info(path)
        except DataError as exc:
            warnings.warn(f"{exc}: {cam.name} drawn on grey", stacklevel=2)
    if size is None:
        for _ in frame_index:
            yield grey.copy(), scaled
        return
    import cv2

    vcam = camera_for_video(cam, *size)
    for batch in iter_frames(path, frame_index):
        for img, ok in zip(batch.frames, batch.ok, strict=True):
            if not ok or img is None:
                yield grey.copy(), scaled
                continue
            bgr = cv2.cvtColor(img, cv2.COLOR_RGB2BGR)
            if bgr.shape[1] != scaled.width:
                bgr = cv2.resize(bgr, (scaled.width, scaled.height), interpolation=cv2.INTER_AREA)
            yield bgr, vcam.scaled(scaled.width / vcam.width)


def _draw(img: np.ndarray, cam: Camera, vertices: np.ndarray | None, faces: np.ndarray, lines: list[str]) -> None:
    import cv2

    if vertices is not None:
        mask = silhouette(cam, vertices, faces)
        img[mask] = (0.5 * img[mask] + 0.5 * np.array(BODY_COLOUR)).astype(np.uint8)
        contours, _ = cv2.findContours(mask.astype(np.uint8), cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
        cv2.drawContours(img, contours, -1, BODY_COLOUR, 2, lineType=cv2.LINE_AA)
    for k, text in enumerate(lines):
        y = 44 + 26 * k  # below the synthetic videos' frame-index stamp
        cv2.putText(img, text, (10, y), cv2.FONT_HERSHEY_SIMPLEX, 0.7, (0, 0, 0), 4, cv2.LINE_AA)
        cv2.putText(img, text, (10, y), cv2.FONT_HERSHEY_SIMPLEX, 0.7, (255, 255, 255), 1, cv2.LINE_AA)


def render_frames(result: TakeResult, cameras: list[str], take: Take | None = None,
                  width: int = PANEL_WIDTH) -> Iterator[np.ndarray]:  # fmt: skip
    """The overlay frames (BGR), one per grid sample: the ``cameras`` side by side (two rows beyond
    three cameras), each ``width`` pixels across."""
    rig = fitted_rig(result)
    missing = [c for c in cameras if c not in rig.names]
    if missing:
        raise DataError(None, f"camera(s) {', '.join(missing)} not in the fit; its cameras: {', '.join(rig.names)}")
    mesh = FittedMesh.of(result)
    valid = fitted_valid(result)
    frames = result["grid/frame_index"]
    reproj = result["reprojection/px"] if "reprojection/px" in result.arrays else None
    streams = [_frames(take, rig[rig.names.index(c)], frames, width) for c in cameras]
    cols = len(cameras) if len(cameras) <= 3 else int(np.ceil(len(cameras) / 2))
    for m in range(len(frames)):
        vertices = mesh.vertices(m) if valid[m] else None
        panels = []
        for c, stream in zip(cameras, streams, strict=True):
            img, cam = next(stream)
            v = rig.names.index(c)
            err = reproj[m, v] if reproj is not None else np.nan
            lines = [f"{c}  take frame {int(frames[m])}  t {m / result.fps:.2f} s",
                     "valid" + (f", reprojection {err:.1f} px" if np.isfinite(err) else ", view not used")
                     if valid[m] else "not valid: no body drawn"]  # fmt: skip
            _draw(img, cam, vertices, mesh.faces, lines)
            panels.append(img)
        while len(panels) % cols:
            panels.append(np.zeros_like(panels[0]))
        h = max(p.shape[0] for p in panels)
        panels = [np.pad(p, ((0, h - p.shape[0]), (0, 0), (0, 0))) for p in panels]
        yield np.vstack([np.hstack(panels[r : r + cols]) for r in range(0, len(panels), cols)])


def render_take(result: TakeResult, camera: str, out: Path, root: str | Path | None = None,
                width: int = PANEL_WIDTH) -> Path:  # fmt: skip
    """Write the overlay video of ``camera`` (a name, or ``all``) to ``out`` (MP4 at the fit rate,
    atomically). ``root``: the dataset whose videos to draw on (``take_of_result``; grey frames where the
    dataset the fit was made from, or its videos, are missing)."""
    names = fitted_rig(result).names if camera == "all" else [camera]
    return write_video(Path(out), render_frames(result, names, take_of_result(result, root), width), fps=result.fps)
