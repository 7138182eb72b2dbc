"""A fitted take as a binary glTF 2.0 file (``motionkit export --format glb``).

What the file holds (units metres; glTF's +Y up, so one ``world`` node turns the Ego-Exo4D world, z up,
into y up with ``conventions.R_ZUP_TO_YUP``):

* ``body``: the body model's template with the take's shape blend (``v_template + shapedirs betas``), its
  faces and skinning weights (every non-zero weight, in as many ``JOINTS_n``/``WEIGHTS_n`` sets of four
  as the model needs), skinned to the 55 SMPL-X joint nodes. The pose correctives of the 21 body joints
  are morph targets (one per non-zero column of ``posedirs``) whose animated weights are the entries of
  ``R_j - I``, so the animated mesh is the body model's mesh exactly, not a linear-blend approximation.
* One animation at the fit rate (or ``fps``): the pelvis translation and the rotations of the pelvis and
  the 21 body joints (jaw, eyes and hands stay at rest, as motionkit fits them), the morph weights.
  Invalid frames are filled as in the BVH export (SLERP between valid frames, held at the ends); the
  filled frames and valid runs are listed in ``asset.extras`` and in the side-car ``<name>.glb.json``.
* When the take's dataset is readable: each exocentric camera as a camera node (a pinhole with the KB3
  camera's focal length and principal height, which is an approximation: KB3's fisheye distortion has no
  glTF equivalent), and the Aria device trajectory as a line.

The writer is a few lines of standard library (a JSON chunk and a binary chunk); the same fit gives the
same bytes.
"""

from __future__ import annotations

import contextlib
import json
import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from motionkit.body.model_file import BodyModelFile, load_model_file
from motionkit.common.errors import DataError
from motionkit.common.files import write_bytes_atomic, write_json_atomic
from motionkit.conventions import (
    COCO17_NAMES,
    R_ZUP_TO_YUP,
    SMPLX_JOINT_NAMES,
    SMPLX_NUM_JOINTS,
    SMPLX_PARENTS,
    TAKE_FPS,
)
from motionkit.data.bvh import filled_parameters, joint_trust
from motionkit.data.egoexo4d import BodyAnnotation
from motionkit.data.fitted_body import fit_model_path, fitted_rig, take_of_result
from motionkit.data.store import TakeResult
from motionkit.geometry.interpolation import valid_runs

BODY_JOINTS = 22
FLOAT, UINT16, UINT32 = 5126, 5123, 5125
ARRAY_BUFFER, ELEMENT_ARRAY_BUFFER = 34962, 34963
OPENCV_TO_GLTF_CAMERA = np.diag([1.0, -1.0, -1.0])  # +z forward, +y down -> -z forward, +y up


class _Builder:
    """Accessors over one binary buffer (each view 4-byte aligned)."""

    def __init__(self) -> None:
        self.blob = bytearray()
        self.views: list[dict] = []
        self.accessors: list[dict] = []

    def add(self, data: np.ndarray, kind: str, component: int, target: int | None = None, bounds: bool = False) -> int:
        dtype = {FLOAT: "<f4", UINT16: "<u2", UINT32: "<u4"}[component]
        arr = np.ascontiguousarray(data, dtype=dtype)
        self.blob += b"\0" * (-len(self.blob) % 4)
        view = {"buffer": 0, "byteOffset": len(self.blob), "byteLength": arr.nbytes}
        if target is not None:
            view["target"] = target
        self.views.append(view)
        self.blob += arr.tobytes()
        width = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT4": 16}[kind]
        flat = arr.reshape(-1, width)
        acc = {"bufferView": len(self.views) - 1, "componentType": component, "count": len(flat), "type": kind}
        if bounds:
            acc["min"] = [v.item() for v in flat.min(0)]
            acc["max"] = [v.item() for v in flat.max(0)]
        self.accessors.append(acc)
        return len(self.accessors) - 1


def _quat(R: np.ndarray) -> np.ndarray:
    """``(..., 3, 3)`` -> ``(..., 4)`` xyzw (glTF's order), successive frames on the same hemisphere."""
    q = Rotation.from_matrix(R.reshape(-1, 3, 3)).as_quat().reshape(*R.shape[:-2], 4)
    if q.ndim == 2:  # a sequence: no sign flips between frames
        flip = np.cumprod(np.where(np.sum(q[1:] * q[:-1], -1) < 0, -1.0, 1.0))
        q[1:] *= flip[:, None]
    return q


def _column_major(M: np.ndarray) -> np.ndarray:
    return np.swapaxes(M, -1, -2).reshape(*M.shape[:-2], 16)


def _skin_sets(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(V, 55)`` weights -> joints ``(S, V, 4)`` and weights ``(S, V, 4)``: every non-zero weight,
    largest first, in sets of four; each row sums to one."""
    order = np.argsort(-weights, axis=1, kind="stable")
    k = int((weights > 0).sum(1).max())
    k4 = -(-k // 4) * 4
    idx = order[:, :k4]
    w = np.take_along_axis(weights, idx, 1)
    w = w / w.sum(1, keepdims=True)
    idx = np.where(w > 0, idx, 0)
    return idx.reshape(len(w), -1, 4).transpose(1, 0, 2), w.reshape(len(w), -1, 4).transpose(1, 0, 2)


@dataclass
class _Extras:
    """What the take's dataset adds, when it is readable: camera nodes and cameras, the trajectory mesh,
    the body annotation."""

    camera_nodes: list[dict] = field(default_factory=list)
    cameras: list[dict] = field(default_factory=list)
    meshes: list[dict] = field(default_factory=list)
    annotation: BodyAnnotation | None = None


def _dataset_extras(result: TakeResult, b: _Builder) -> _Extras:
    out = _Extras()
    take = take_of_result(result)
    if take is None:
        return out
    # the cameras in the fitted body's world (fit/world_shift_m); a result without its cameras: the calibration
    rig = fitted_rig(result) if "cameras/size" in result.arrays else take.rig
    for cam in rig:
        T = cam.T_world_cam
        out.cameras.append({"name": cam.name, "type": "perspective", "perspective": {
            "yfov": float(2 * np.arctan(cam.height / (2 * cam.K[1, 1]))), "aspectRatio": cam.width / cam.height,
            "znear": 0.05}})  # fmt: skip
        out.camera_nodes.append({"name": cam.name, "camera": len(out.cameras) - 1,
                                 "translation": [float(v) for v in T[:3, 3]],
                                 "rotation": [float(v) for v in _quat(T[:3, :3] @ OPENCV_TO_GLTF_CAMERA)]})  # fmt: skip
    with contextlib.suppress(DataError, OSError):
        traj = take.trajectory
        if len(traj) > 1:
            acc = b.add(traj.position[:: max(1, len(traj) // 5000)], "VEC3", FLOAT, ARRAY_BUFFER, bounds=True)
            out.meshes.append({"name": "aria_trajectory", "primitives": [{"attributes": {"POSITION": acc}, "mode": 3}]})
    with contextlib.suppress(DataError, OSError):
        out.annotation = take.body_annotation()
    return out


def _annotation_tracks(annotation: BodyAnnotation, first_frame: float, duration_s: float) -> tuple[np.ndarray, list]:
    """Keys ``(K,)`` seconds on the animation's clock and, per annotated COCO-17 keypoint, its name,
    positions ``(K, 3)`` (world, z up; held where absent) and scales ``(K, 3)`` (0 where absent)."""
    t = (annotation.frames - first_frame) / TAKE_FPS
    keep = (t >= 0) & (t <= duration_s + 1e-9)
    t, xyz = t[keep], annotation.joints3d[keep]
    present = np.isfinite(xyz).all(-1)
    tracks = []
    for k, name in enumerate(COCO17_NAMES):
        if present[:, k].any():
            held = np.where(present[:, k, None], xyz[:, k], xyz[present[:, k], k][0])
            tracks.append((name, held, np.repeat(present[:, k, None], 3, 1).astype(float)))
    return t, tracks


def glb_bytes(result: TakeResult, fps: float | None = None, model: BodyModelFile | None = None) -> tuple[bytes, dict]:
    """The ``.glb`` of a fitted take and its side-car record (valid runs, filled frames, contents)."""
    go, bp, tr, valid, rate = filled_parameters(result, fps)
    model = model if model is not None else load_model_file(fit_model_path(result))
    betas = np.asarray(result["smplx/betas"], dtype=np.float64)
    v_shaped = model.v_template + model.shapedirs @ betas  # (V, 3) body rest frame
    J = model.J_regressor @ v_shaped  # (55, 3)
    T = len(go)
    R_local = np.concatenate([Rotation.from_rotvec(go).as_matrix()[:, None],
                              Rotation.from_rotvec(bp.reshape(-1, 3)).as_matrix().reshape(T, 21, 3, 3)], 1)  # fmt: skip
    pose_feat = (R_local[:, 1:] - np.eye(3)).reshape(T, 189)
    dirs = model.posedirs[:, :, :189]
    used = np.flatnonzero(np.abs(dirs).reshape(-1, 189).max(0) > 0)

    b = _Builder()
    joint_idx, joint_w = _skin_sets(model.weights)
    attributes = {"POSITION": b.add(v_shaped, "VEC3", FLOAT, ARRAY_BUFFER, bounds=True)}
    for s in range(len(joint_idx)):
        attributes[f"JOINTS_{s}"] = b.add(joint_idx[s], "VEC4", UINT16, ARRAY_BUFFER)
        attributes[f"WEIGHTS_{s}"] = b.add(joint_w[s], "VEC4", FLOAT, ARRAY_BUFFER)
    faces = model.faces.reshape(-1)
    indices = b.add(faces, "SCALAR", UINT16 if faces.max() < 65535 else UINT32, ELEMENT_ARRAY_BUFFER)
    targets = [{"POSITION": b.add(dirs[:, :, k], "VEC3", FLOAT, ARRAY_BUFFER, bounds=True)} for k in used]
    primitive = {"attributes": attributes, "indices": indices, "mode": 4}
    if targets:
        primitive["targets"] = targets
    body_mesh = {"name": "body", "primitives": [primitive]}
    if targets:
        body_mesh["weights"] = [0.0] * len(targets)
        body_mesh["extras"] = {"targetNames": [f"pose_{k // 9 + 1}_{k % 9}" for k in used]}

    # nodes: 0 world (z up -> y up), 1..55 joints, then the body mesh and the cameras
    world = {"name": "world", "rotation": [float(v) for v in _quat(R_ZUP_TO_YUP)], "children": [1]}
    joints = []
    for j in range(SMPLX_NUM_JOINTS):
        off = J[j] if j == 0 else J[j] - J[SMPLX_PARENTS[j]]
        node = {"name": SMPLX_JOINT_NAMES[j], "translation": [float(v) for v in off]}
        kids = [c + 1 for c in range(1, SMPLX_NUM_JOINTS) if SMPLX_PARENTS[c] == j]
        if kids:
            node["children"] = kids
        joints.append(node)
    bind = np.tile(np.eye(4), (SMPLX_NUM_JOINTS, 1, 1))
    bind[:, :3, 3] = -J
    inverse_bind = b.add(_column_major(bind), "MAT4", FLOAT)  # mesh (body rest frame) -> joint j's frame
    body_node = len(joints) + 1
    extras = _dataset_extras(result, b)
    nodes = [world, *joints, {"name": "body", "mesh": 0, "skin": 0}]
    meshes = [body_mesh]

    def add_node(node: dict) -> int:
        world["children"].append(len(nodes))
        nodes.append(node)
        return len(nodes) - 1

    for node in extras.camera_nodes:
        add_node(node)
    for mesh in extras.meshes:
        add_node({"name": mesh["name"], "mesh": len(meshes)})
        meshes.append(mesh)

    fit_times = b.add(np.arange(T) / rate, "SCALAR", FLOAT, bounds=True)
    samplers, channels = [], []

    def animate(values, kind: str, node: int, path: str, times: int = fit_times, interpolation: str = "LINEAR"):
        samplers.append({"input": times, "output": b.add(values, kind, FLOAT), "interpolation": interpolation})
        channels.append({"sampler": len(samplers) - 1, "target": {"node": node, "path": path}})

    animate(J[0] + tr, "VEC3", 1, "translation")
    for j in range(BODY_JOINTS):
        animate(_quat(R_local[:, j]), "VEC4", j + 1, "rotation")
    if targets:
        animate(pose_feat[:, used], "SCALAR", body_node, "weights")
    annotated = []
    if extras.annotation is not None:
        first_frame = float(np.asarray(result["grid/frame_pos"])[0])
        keys, tracks = _annotation_tracks(extras.annotation, first_frame, (T - 1) / rate)
        if tracks:
            key_times = b.add(keys, "SCALAR", FLOAT, bounds=True)
            point = b.add(np.zeros((1, 3)), "VEC3", FLOAT, ARRAY_BUFFER, bounds=True)
            meshes.append(
                {"name": "annotation_keypoint", "primitives": [{"attributes": {"POSITION": point}, "mode": 0}]}
            )
            for name, positions, scales in tracks:
                node = add_node({"name": f"annotation_{name}", "mesh": len(meshes) - 1})
                animate(positions, "VEC3", node, "translation", key_times, "STEP")
                animate(scales, "VEC3", node, "scale", key_times, "STEP")
                annotated.append(name)

    side = {"take_uid": str(result.attrs.get("take_uid")), "take_name": str(result.attrs.get("take_name", "")),
            "fps": rate, "frames": T, "units": "m", "up": "y", "valid_runs": [list(r) for r in valid_runs(valid)],
            "filled_frames": np.flatnonzero(~valid).tolist(), "joint_trust": joint_trust(result),
            "pose_corrective_targets": len(targets),
            "cameras": [c["name"] for c in extras.cameras],
            "annotation_keypoints": annotated, "camera_model": "pinhole approximation of KB3 (fx, fy, height)",
            "body_model": result.body_model}  # fmt: skip
    side = json.loads(json.dumps(side, default=str))
    doc = {
        "asset": {"version": "2.0", "generator": "motionkit", "extras": side},
        "scene": 0,
        "scenes": [{"name": side["take_name"] or side["take_uid"], "nodes": [0, body_node]}],
        "nodes": nodes,
        "meshes": meshes,
        "skins": [
            {
                "name": "smplx",
                "joints": list(range(1, SMPLX_NUM_JOINTS + 1)),
                "skeleton": 1,
                "inverseBindMatrices": inverse_bind,
            }
        ],  # fmt: skip
        "animations": [{"name": "fit", "samplers": samplers, "channels": channels}],
        "accessors": b.accessors,
        "bufferViews": b.views,
        "buffers": [{"byteLength": len(b.blob) + (-len(b.blob) % 4)}],
    }
    if extras.cameras:
        doc["cameras"] = extras.cameras
    return _glb(doc, bytes(b.blob)), side


def _glb(doc: dict, blob: bytes) -> bytes:
    """GLB container: 12-byte header, a JSON chunk padded with spaces, a BIN chunk padded with zeros."""
    js = json.dumps(doc, separators=(",", ":"), sort_keys=True).encode()
    js += b" " * (-len(js) % 4)
    blob += b"\0" * (-len(blob) % 4)
    total = 12 + 8 + len(js) + 8 + len(blob)
    return (struct.pack("<4sII", b"glTF", 2, total) + struct.pack("<I4s", len(js), b"JSON") + js
            + struct.pack("<I4s", len(blob), b"BIN\0") + blob)  # fmt: skip


def write_take(result: TakeResult, out_dir: Path, fps: float | None = None) -> Path:
    """``<out_dir>/<take_name>.glb`` and its side-car ``.glb.json`` (atomic; the same fit, the same bytes)."""
    name = str(result.attrs.get("take_name") or result.attrs["take_uid"])
    data, side = glb_bytes(result, fps)
    path = Path(out_dir) / f"{name}.glb"
    write_bytes_atomic(path, data)
    write_json_atomic(path.with_suffix(".glb.json"), side, indent=1)
    return path
