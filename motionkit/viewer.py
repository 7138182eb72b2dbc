"""``motionkit view``: a fitted take in 3D in the browser, on viser (the web viewer of nerfstudio and EgoAllo).

Layers, each with a toggle: the body (the body model that made the fit as a skinned mesh, posed per fit
sample from the fitted joint rotations; coloured by the frame's reprojection error when asked), the exo
cameras as frusta (with a frame of the take's video on them when the take has videos), the Aria head
trajectory, the annotated 3D keypoints of the current frame when the take has annotations, the fitted
landmarks the fit does not trust at the current sample (red; ``fit/joint_trusted``: a valid frame can
hold a guessed leg, and the text names them), and a floor grid. A timeline slider and a play toggle
move through the fit samples; invalid samples hide the body.
The world is Ego-Exo4D's (z up, metres).

viser is an optional dependency (``pip install 'motionkit[viz]'``); everything else of motionkit works
without it.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from motionkit.body.mesh import shaped_template
from motionkit.body.model_file import load_model_file
from motionkit.common.errors import DataError
from motionkit.common.files import write_text_atomic
from motionkit.conventions import COCO17_NAMES, TAKE_FPS
from motionkit.data.egoexo4d import Take
from motionkit.data.fitted_body import fit_model_path, fitted_body, fitted_rig, fitted_valid, take_of_result
from motionkit.data.store import TakeResult
from motionkit.detect.frames import exo_video_path, read_frames
from motionkit.geometry.rotations import matrix_to_quat_xyzw

BODY_RGB = (230, 60, 255)  # magenta: what the browser test looks for
CAMERA_RGB = (40, 40, 40)
ARIA_RGB = (255, 140, 0)
ANNOTATION_RGB = (0, 170, 255)
UNTRUSTED_RGB = (255, 30, 30)
MISSING_EXTRA = "motionkit view needs viser: pip install 'motionkit[viz]' (or pip install viser)"


def import_viser():
    """The viser module, or a ``click``-friendly ``RuntimeError`` saying how to install it."""
    try:
        import viser
    except ImportError as exc:
        raise RuntimeError(MISSING_EXTRA) from exc
    return viser


def _wxyz(R: np.ndarray) -> np.ndarray:
    """Rotation matrices ``(..., 3, 3)`` -> quaternions ``(..., 4)`` scalar first (viser's order)."""
    q = matrix_to_quat_xyzw(R)
    return np.concatenate([q[..., 3:], q[..., :3]], -1)


def error_rgb(err_px: float, lo: float = 5.0, hi: float = 40.0) -> tuple[int, int, int]:
    """Green (<= ``lo`` px) through yellow to red (>= ``hi`` px); the body colour when not finite."""
    if not np.isfinite(err_px):
        return BODY_RGB
    u = float(np.clip((err_px - lo) / (hi - lo), 0.0, 1.0))
    return (int(round(255 * min(1.0, 2 * u))), int(round(255 * min(1.0, 2 * (1 - u)))), 40)


@dataclass
class TakeScene:
    """What the viewer shows of one fitted take, on the fit grid of ``M`` samples: the skinned body's
    rest ``vertices (V, 3)``, ``faces``, ``skin_weights (V, 55)`` and rest joints ``rest_joints (55, 3)``;
    per sample the joints ``joints (M, 55, 3)`` and their world rotations ``rotations (M, 55, 3, 3)``,
    ``valid (M,)`` and the median reprojection error ``error_px (M,)``; the cameras (``rig``) with an
    optional video frame each (``images``), the Aria trajectory ``aria (N, 3)``, per sample the
    annotated keypoints ``annotations`` (``(17, 3)``, NaN where absent, or None), and the fitted COCO
    landmarks ``landmarks (M, 17, 3)`` with the fit's per-joint trust ``trusted (M, 17)`` (None for fits
    without it)."""

    name: str
    fps: float
    vertices: np.ndarray
    faces: np.ndarray
    skin_weights: np.ndarray
    rest_joints: np.ndarray
    joints: np.ndarray
    rotations: np.ndarray
    valid: np.ndarray
    error_px: np.ndarray
    rig: object
    images: dict = field(default_factory=dict)
    aria: np.ndarray | None = None
    annotations: list | None = None
    landmarks: np.ndarray | None = None
    trusted: np.ndarray | None = None

    def untrusted(self, m: int) -> list[int]:
        """The COCO landmarks of valid sample ``m`` that the fit does not trust (none when unknown)."""
        if self.trusted is None or self.landmarks is None or not self.valid[m]:
            return []
        return [j for j in np.flatnonzero(~self.trusted[m]) if np.isfinite(self.landmarks[m, j]).all()]


def take_scene(result: TakeResult, take: Take | None = None) -> TakeScene:
    """The ``TakeScene`` of a result file (``take``: its dataset take, for videos and annotations)."""
    model = load_model_file(fit_model_path(result))
    v_shaped = shaped_template(model, result["smplx/betas"])
    joints, rotations = fitted_body(result, return_transforms=True)
    reproj = result["reprojection/px"] if "reprojection/px" in result.arrays else None
    with np.errstate(all="ignore"):
        err = np.nanmedian(reproj, axis=1) if reproj is not None else np.full(len(joints), np.nan)
    rig = fitted_rig(result)
    scene = TakeScene(
        name=str(result.attrs.get("take_name", result.attrs.get("take_uid", "take"))),
        fps=result.fps,
        vertices=v_shaped,
        faces=model.faces,
        skin_weights=model.weights,
        rest_joints=model.J_regressor @ v_shaped,
        joints=joints[:, :55],
        rotations=rotations,
        valid=fitted_valid(result),
        error_px=err,
        rig=rig,
        aria=result["aria/position"] if "aria/position" in result.arrays else None,
        landmarks=result["joints/coco17"] if "joints/coco17" in result.arrays else None,
        trusted=result["fit/joint_trusted"].astype(bool) if "fit/joint_trusted" in result.arrays else None,
    )
    if take is not None:
        frames = result["grid/frame_index"]
        first = int(frames[np.flatnonzero(scene.valid)[0]]) if scene.valid.any() else 0
        for cam in rig:
            path = exo_video_path(take, cam.name)
            if path.is_file():
                batch = read_frames(path, [first])
                if batch.ok[0]:
                    scene.images[cam.name] = np.ascontiguousarray(batch.frames[0][::2, ::2])
        scene.annotations = _annotations(take, frames)
    return scene


def _annotations(take: Take, frames: np.ndarray) -> list | None:
    """Per fit sample the annotated 3D keypoints of its 30 fps frame ``(17, 3)`` (NaN absent), or None."""
    try:
        ann = take.body_annotation()
    except DataError:
        return None
    if ann is None or not len(ann.frames):
        return None
    by_frame = {int(f): ann.joints3d[k] for k, f in enumerate(ann.frames)}
    empty = np.full((len(COCO17_NAMES), 3), np.nan)
    return [by_frame.get(int(f), empty) for f in frames]


class Viewer:
    """The viser scene of a ``TakeScene`` and its controls. ``show(m)`` poses everything at sample ``m``."""

    def __init__(self, server, scene: TakeScene, colour_by_error: bool = False) -> None:
        self.server, self.scene = server, scene
        self.colour_by_error = colour_by_error
        sc = server.scene
        sc.set_up_direction("+z")
        rest_wxyz = np.tile([1.0, 0.0, 0.0, 0.0], (55, 1))
        self.body = sc.add_mesh_skinned("/body", scene.vertices.astype(np.float32), scene.faces,
                                        bone_wxyzs=rest_wxyz, bone_positions=scene.rest_joints,
                                        skin_weights=scene.skin_weights.astype(np.float32), color=BODY_RGB)  # fmt: skip
        self.cameras = []
        for cam in scene.rig:
            fov = 2 * np.arctan(cam.height / 2 / cam.params[1])  # vertical, pinhole approximation of KB3
            T = cam.T_world_cam
            R = T[:3, :3]
            self.cameras.append(sc.add_camera_frustum(
                f"/cameras/{cam.name}", fov=float(fov), aspect=cam.width / cam.height, scale=0.3,
                image=scene.images.get(cam.name), wxyz=_wxyz(R), position=T[:3, 3], color=CAMERA_RGB))  # fmt: skip
        self.aria = None
        if scene.aria is not None and np.isfinite(scene.aria).all(-1).sum() >= 2:
            pts = scene.aria[np.isfinite(scene.aria).all(-1)]
            segs = np.stack([pts[:-1], pts[1:]], 1)
            self.aria = sc.add_line_segments("/aria", segs, ARIA_RGB, thickness=0.01)
        self.annotations = None
        if scene.annotations is not None:
            self.annotations = sc.add_point_cloud("/annotations", np.zeros((1, 3)), ANNOTATION_RGB, point_size=0.04)
        self.untrusted = None
        if scene.trusted is not None and scene.landmarks is not None:
            self.untrusted = sc.add_point_cloud("/untrusted", np.zeros((1, 3)), UNTRUSTED_RGB, point_size=0.05)
        floor = float(np.nanmin(scene.joints[scene.valid][..., 2])) if scene.valid.any() else 0.0
        mid = np.nanmean(scene.joints[scene.valid][:, 0], 0) if scene.valid.any() else np.zeros(3)
        self.grid = sc.add_grid("/floor", 12.0, 12.0, position=(float(mid[0]), float(mid[1]), floor))
        gui = server.gui
        M = len(scene.joints)
        self.slider = gui.add_slider("sample", 0, max(M - 1, 1), 1, 0)
        self.play = gui.add_checkbox("play", False)
        self.info = gui.add_markdown("")
        self.toggles = {}
        for label, handles in (("body", [self.body]), ("cameras", self.cameras), ("Aria trajectory", [self.aria]),
                               ("annotations", [self.annotations]), ("untrusted joints", [self.untrusted]),
                               ("floor", [self.grid])):  # fmt: skip
            handles = [h for h in handles if h is not None]
            if handles:
                box = gui.add_checkbox(label, True)
                box.on_update(lambda _e, hs=handles, b=box: [setattr(h, "visible", b.value) for h in hs])
                self.toggles[label] = box
        self.slider.on_update(lambda _e: self.show(int(self.slider.value)))
        server.initial_camera.look_at = tuple(float(x) for x in mid)
        server.initial_camera.position = tuple(float(x) for x in mid + np.array([3.5, -3.5, 2.0]))
        server.initial_camera.up = (0.0, 0.0, 1.0)
        self.show(int(np.flatnonzero(scene.valid)[0]) if scene.valid.any() else 0)

    def show(self, m: int) -> None:
        """Pose the body, the annotations and the text at sample ``m``."""
        s = self.scene
        ok = bool(s.valid[m])
        if ok:
            wxyz, pos = _wxyz(s.rotations[m]), s.joints[m]
            with self.server.atomic():
                for j, bone in enumerate(self.body.bones):
                    bone.wxyz, bone.position = wxyz[j], pos[j]
            if self.colour_by_error:
                self.body.color = error_rgb(s.error_px[m])
        self.body.visible = ok and (self.toggles["body"].value if "body" in self.toggles else True)
        if self.annotations is not None:
            pts = s.annotations[m]
            pts = pts[np.isfinite(pts).all(-1)]
            if len(pts):
                self.annotations.points = pts.astype(np.float32)
            self.annotations.visible = bool(len(pts)) and self.toggles["annotations"].value
        untrusted = s.untrusted(m)
        if self.untrusted is not None:
            if untrusted:
                self.untrusted.points = s.landmarks[m, untrusted].astype(np.float32)
            self.untrusted.visible = bool(untrusted) and self.toggles["untrusted joints"].value
        err = f"{s.error_px[m]:.1f} px" if np.isfinite(s.error_px[m]) else "n/a"
        trust = f"; not trusted: {', '.join(COCO17_NAMES[j] for j in untrusted)}" if untrusted else ""
        self.info.content = (f"**{s.name}** sample {m} ({m / s.fps:.2f} s, take frame "
                             f"{int(round(m / s.fps * TAKE_FPS))}): {'valid' if ok else 'not valid'}, "
                             f"reprojection {err}{trust}")  # fmt: skip

    def run(self) -> None:
        """Advance the slider at the fit rate while ``play`` is on (blocks)."""
        while True:
            if self.play.value:
                self.slider.value = (int(self.slider.value) + 1) % len(self.scene.joints)
            time.sleep(1.0 / self.scene.fps)


def serve(result: TakeResult, port: int = 8080, root=None, colour_by_error: bool = False, host: str = "0.0.0.0"):
    """Start a viser server showing the take; returns ``(server, viewer)`` (the caller keeps it alive)."""
    viser = import_viser()
    server = viser.ViserServer(host=host, port=port, verbose=False)
    viewer = Viewer(server, take_scene(result, take_of_result(result, root)), colour_by_error)
    threading.Thread(target=viewer.run, daemon=True).start()
    return server, viewer


def write_recording(result: TakeResult, out: Path, root=None, colour_by_error: bool = False, port: int = 0) -> Path:
    """A standalone HTML page (viser's embedded recording) that plays the take without a Python process."""
    viser = import_viser()
    server = viser.ViserServer(port=port or 8099, verbose=False)
    try:
        viewer = Viewer(server, take_scene(result, take_of_result(result, root)), colour_by_error)
        rec = server.get_scene_serializer()
        for m in range(len(viewer.scene.joints)):
            viewer.show(m)
            rec.insert_sleep(1.0 / viewer.scene.fps)
        write_text_atomic(Path(out), rec.as_html())
    finally:
        server.stop()
    return Path(out)
