"""Reader for the Ego-Exo4D on-disk layout (docs/conventions.md, "Ego-Exo4D layout"). Everything loads lazily.

ds = EgoExoDataset(root)
take = ds.take("demo_take_000")          # by take_name or take_uid
rig = take.rig                             # quality-1 exo cameras from gopro_calibs.csv
anchor = take.head_anchor(frames)          # CPF head anchor at 30 fps take frames
"""

from __future__ import annotations

import csv
import functools
import hashlib
import math
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from motionkit.common.errors import DataError
from motionkit.common.files import atomic_path, read_json
from motionkit.common.home import motionkit_home
from motionkit.conventions import COCO17_INDEX, TAKE_FPS
from motionkit.data.aria import AriaTrajectory, HeadAnchor, cad_T_device_cpf
from motionkit.geometry.camera import Camera, CameraRig
from motionkit.geometry.interpolation import bracket, lerp
from motionkit.geometry.rotations import make_transform, quat_xyzw_to_matrix

GOPRO_CALIB_COLUMNS = (
    "cam_uid",
    "graph_uid",
    "tx_world_cam",
    "ty_world_cam",
    "tz_world_cam",
    "qx_world_cam",
    "qy_world_cam",
    "qz_world_cam",
    "qw_world_cam",
    "image_width",
    "image_height",
    "intrinsics_type",
    "intrinsics_0",
    "intrinsics_1",
    "intrinsics_2",
    "intrinsics_3",
    "intrinsics_4",
    "intrinsics_5",
    "intrinsics_6",
    "intrinsics_7",
    "start_frame_idx",
    "end_frame_idx",
    "quality",
)
TRAJECTORY_COLUMNS = (
    "graph_uid",
    "tracking_timestamp_us",
    "utc_timestamp_ns",
    "tx_world_device",
    "ty_world_device",
    "tz_world_device",
    "qx_world_device",
    "qy_world_device",
    "qz_world_device",
    "qw_world_device",
    "device_linear_velocity_x_device",
    "device_linear_velocity_y_device",
    "device_linear_velocity_z_device",
    "angular_velocity_x_device",
    "angular_velocity_y_device",
    "angular_velocity_z_device",
    "gravity_x_world",
    "gravity_y_world",
    "gravity_z_world",
    "quality_score",
)
# the columns motionkit reads: timestamp, T_world_device (translation, quaternion x y z w), quality
TRAJECTORY_USED = (TRAJECTORY_COLUMNS[1], *TRAJECTORY_COLUMNS[3:10], TRAJECTORY_COLUMNS[19])
ARIA_TS_COLUMN = "aria01_214-1_capture_timestamp_ns"  # for the usual device name; see Take.aria_device


def aria_timesync_column(device: str) -> str:
    """The timesync column of an Aria device's RGB stream (``aria01`` -> ``aria01_214-1_capture_timestamp_ns``)."""
    return f"{device}_214-1_capture_timestamp_ns"


QUAT_TOL = 1e-3
MAX_TS_INTERP_ROWS = 5
TRAJ_CACHE_VERSION = 1


# ------------------------------------------------------------------------------------------------ helpers
def _check_quats(path: Path, q: np.ndarray, first_line: int = 2) -> None:
    """Raise on NaN or non-unit quaternions ``(N, 4)``; line numbers count the header as line 1."""
    n = np.linalg.norm(q, axis=1)
    bad = ~np.isfinite(n) | (np.abs(n - 1.0) > QUAT_TOL)
    if bad.any():
        i = int(np.argmax(bad))
        what = "NaN quaternion" if not np.isfinite(q[i]).all() else f"non-unit quaternion (norm {n[i]:.6f})"
        raise DataError(path, f"{what}: {q[i].tolist()}", line=first_line + i)


def _csv_header(path: Path) -> list[str]:
    if not path.is_file():
        raise DataError(path, "file not found")
    with open(path, newline="") as fh:
        header = fh.readline().strip()
    if not header:
        raise DataError(path, "empty file (no header)")
    return [h.strip() for h in header.split(",")]


def _require_columns(path: Path, header: list[str], required) -> None:
    missing = [c for c in required if c not in header]
    if missing:
        raise DataError(path, f"missing columns {missing}", line=1)


# ------------------------------------------------------------------------------------------------ calibration
INVALID_CALIBRATION = -2  # the quality given to a row whose pose or intrinsics are not usable numbers


def read_gopro_calibs(path: str | os.PathLike) -> list[tuple[Camera, int]]:
    """All rows of ``gopro_calibs.csv`` as ``(Camera, quality)`` (quality 1 good, 0 bad, -1 unknown). A row
    whose pose or intrinsics are non-finite (or whose focal length is not positive, or whose quaternion is
    not a rotation) gets quality ``INVALID_CALIBRATION``, an identity pose and the reason in
    ``meta["invalid"]``: the camera is dropped with that reason, as a quality-0 one is."""
    path = Path(path)
    header = _csv_header(path)
    _require_columns(path, header, GOPRO_CALIB_COLUMNS)
    out = []
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        for lineno, row in enumerate(reader, start=2):
            if None in row or any(row[c] is None for c in GOPRO_CALIB_COLUMNS):
                raise DataError(path, "row has the wrong number of fields (truncated file?)", line=lineno)
            if row["intrinsics_type"].strip() != "KANNALABRANDTK3":
                raise DataError(
                    path, f"unknown intrinsics_type {row['intrinsics_type']!r} (expected KANNALABRANDTK3)", line=lineno
                )
            try:
                t = np.array([float(row[f"t{a}_world_cam"]) for a in "xyz"])
                q = np.array([float(row[f"q{a}_world_cam"]) for a in "xyzw"])
                params = np.array([float(row[f"intrinsics_{i}"]) for i in range(8)])
                w, h = int(float(row["image_width"])), int(float(row["image_height"]))
                quality = int(float(row["quality"]))
                start, end = int(float(row["start_frame_idx"])), int(float(row["end_frame_idx"]))
            except ValueError as exc:
                raise DataError(path, f"bad number: {exc}", line=lineno) from exc
            meta = {"start_frame_idx": start, "end_frame_idx": end, "graph_uid": row["graph_uid"]}
            invalid = _invalid_calibration(path, t, q, params, lineno)
            if invalid:
                meta["invalid"] = invalid
                quality = INVALID_CALIBRATION
                t, q, params = np.zeros(3), np.array([0.0, 0.0, 0.0, 1.0]), np.array([1.0, 1.0, 0, 0, 0, 0, 0, 0])
            cam = Camera(
                name=row["cam_uid"].strip(),
                width=w,
                height=h,
                params=params,
                T_world_cam=make_transform(quat_xyzw_to_matrix(q / np.linalg.norm(q)), t),
                meta=meta,
            )
            out.append((cam, quality))
    if not out:
        raise DataError(path, "no camera rows")
    return out


def _invalid_calibration(path: Path, t: np.ndarray, q: np.ndarray, params: np.ndarray, lineno: int) -> str:
    """Why a calibration row cannot be used (empty when it can)."""
    try:
        _check_quats(path, q[None], first_line=lineno)
    except DataError as exc:
        return f"line {lineno}: {exc.message}"
    if not (np.isfinite(t).all() and np.isfinite(params).all()):
        return f"line {lineno}: non-finite pose or intrinsics"
    if params[0] <= 0 or params[1] <= 0:
        return f"line {lineno}: non-positive focal length"
    return ""


# ------------------------------------------------------------------------------------------------ trajectory
def _trajectory_cache_path(path: Path) -> Path:
    st = path.stat()
    key = hashlib.sha256(f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}|{TRAJ_CACHE_VERSION}".encode()).hexdigest()
    return motionkit_home() / "cache" / "trajectory" / f"{key[:32]}.npz"


def _locate_bad_row(path: Path, n_fields: int, usecols: list[int]) -> tuple[int | None, str | None]:
    """Slow scan, on the error path only: the first line with a wrong field count or a bad number."""
    with open(path) as fh:
        next(fh)
        for lineno, line in enumerate(fh, start=2):
            fields = line.rstrip("\r\n").split(",")
            if len(fields) != n_fields:
                return lineno, f"expected {n_fields} fields, found {len(fields)} (truncated file?)"
            for c in usecols:
                try:
                    float(fields[c])
                except ValueError:
                    return lineno, f"bad number {fields[c]!r} in column {c + 1}"
    return None, None


def read_closed_loop_trajectory(path: str | os.PathLike, *, cache: bool = True) -> AriaTrajectory:
    """Parse ``closed_loop_trajectory.csv`` (20 columns, ~1 kHz) into an ``AriaTrajectory``.

    Malformed rows, missing columns, NaN or non-unit quaternions and unsorted timestamps raise
    ``DataError`` naming the file and line. With ``cache`` the parsed arrays are kept as a binary
    file under ``$MOTIONKIT_HOME/cache/trajectory`` (never inside the dataset root).
    """
    path = Path(path)
    header = _csv_header(path)
    _require_columns(path, header, TRAJECTORY_COLUMNS)
    cpath = _trajectory_cache_path(path) if cache else None
    if cpath is not None and cpath.is_file():
        try:
            with np.load(cpath) as z:
                return AriaTrajectory(z["t_us"], z["position"], z["quat_xyzw"], z["quality"])
        except Exception:  # noqa: BLE001 - a broken cache is rebuilt
            pass
    cols = [header.index(c) for c in TRAJECTORY_USED]
    try:
        data = np.loadtxt(path, delimiter=",", skiprows=1, usecols=cols, dtype=np.float64, ndmin=2, comments=None)
    except ValueError as exc:
        line, what = _locate_bad_row(path, len(header), cols)
        raise DataError(path, f"malformed row: {what or exc}", line=line) from exc
    if data.shape[0] == 0:
        raise DataError(path, "no trajectory rows")
    t_us = data[:, 0]
    if not np.isfinite(t_us).all():
        i = int(np.argmax(~np.isfinite(t_us)))
        raise DataError(path, "non-finite tracking_timestamp_us", line=i + 2)
    if np.any(np.diff(t_us) < 0):
        i = int(np.argmax(np.diff(t_us) < 0)) + 1
        raise DataError(path, "tracking_timestamp_us is not sorted", line=i + 2)
    pos = data[:, 1:4]
    if not np.isfinite(pos).all():
        i = int(np.argmax(~np.isfinite(pos).all(1)))
        raise DataError(path, "non-finite device position", line=i + 2)
    q = data[:, 4:8]
    _check_quats(path, q)
    traj = AriaTrajectory(
        t_us.astype(np.int64), np.ascontiguousarray(pos), q / np.linalg.norm(q, axis=1, keepdims=True), data[:, 8]
    )
    if cpath is not None:
        try:
            with atomic_path(cpath, suffix=".npz") as tmp, open(tmp, "wb") as fh:
                np.savez(fh, t_us=traj.t_us, position=traj.position, quat_xyzw=traj.quat_xyzw, quality=traj.quality)
        except OSError:  # read-only home: just don't cache
            pass
    return traj


# ------------------------------------------------------------------------------------------------ timesync
def trajectory_graph_uid(path: str | os.PathLike) -> str | None:
    """The ``graph_uid`` (world frame) of a ``closed_loop_trajectory.csv``, from its first data row."""
    path = Path(path)
    header = _csv_header(path)
    if "graph_uid" not in header:
        return None
    with open(path, newline="") as fh:
        reader = csv.reader(fh)
        next(reader)
        row = next(reader, None)
    return row[header.index("graph_uid")].strip() if row else None


def read_timesync_column(path: str | os.PathLike, column: str = ARIA_TS_COLUMN) -> np.ndarray:
    """One column of a capture's ``timesync.csv`` as float64 (empty or 'nan' cells -> NaN)."""
    path = Path(path)
    header = _csv_header(path)
    _require_columns(path, header, [column])
    ci = header.index(column)
    vals = []
    with open(path, newline="") as fh:
        reader = csv.reader(fh)
        next(reader)
        for lineno, row in enumerate(reader, start=2):
            if len(row) != len(header):
                raise DataError(path, f"expected {len(header)} fields, found {len(row)}", line=lineno)
            cell = row[ci].strip()
            try:
                vals.append(float(cell) if cell else math.nan)
            except ValueError as exc:
                raise DataError(path, f"bad number {cell!r} in column {column}", line=lineno) from exc
    return np.asarray(vals, dtype=np.float64)


# ------------------------------------------------------------------------------------------------ annotations
@dataclass(frozen=True)
class BodyAnnotation:
    """Ego-Exo4D body annotation of one take, parsed by joint name (COCO-17 order).

    ``frames (K,)`` 30 fps take frame indices (sorted), ``joints3d (K, 17, 3)`` world metres (NaN
    where absent), ``num_views (K, 17)`` (0 where absent), ``joints2d`` camera ->
    ``(K, 17, 2)`` undistorted balance-0.8 new-K pixels (NaN where absent), ``placement2d`` camera
    -> ``(K, 17)`` str (``manual``, ``auto`` or ``""``).
    """

    frames: np.ndarray
    joints3d: np.ndarray
    num_views: np.ndarray
    joints2d: dict[str, np.ndarray] = field(default_factory=dict)
    placement2d: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def key_spacing(self) -> float:
        """Median spacing of annotation keys, in 30 fps frames."""
        return float(np.median(np.diff(self.frames))) if len(self.frames) > 1 else math.nan


def read_body_annotation(path: str | os.PathLike) -> BodyAnnotation:
    """Parse ``ego_pose/<split>/body/{annotation,automatic}/<take_uid>.json``."""
    path = Path(path)
    data = read_json(path)
    if not isinstance(data, dict):
        raise DataError(path, "expected a JSON object keyed by frame index")
    rows = []
    for key, val in data.items():
        if key == "metadata":
            continue
        try:
            frame = int(key)
        except ValueError as exc:
            raise DataError(path, f"frame key {key!r} is not an integer") from exc
        if not isinstance(val, list):
            raise DataError(path, f"frame {key}: expected a list, got {type(val).__name__}")
        if not val:
            continue
        entry = val[0]
        if not isinstance(entry, dict):
            raise DataError(path, f"frame {key}: expected an object with annotation3D/annotation2D, got "
                                  f"{type(entry).__name__}")  # fmt: skip
        a3 = entry.get("annotation3D") or {}
        a2 = entry.get("annotation2D") or {}
        if not a3 and not a2:
            continue
        if not (isinstance(a3, dict) and isinstance(a2, dict) and all(isinstance(v, dict) for v in a2.values())):
            raise DataError(path, f"frame {key}: annotation3D, annotation2D and annotation2D's cameras must be "
                                  "objects keyed by name")  # fmt: skip
        rows.append((frame, a3, a2))
    rows.sort(key=lambda r: r[0])
    K = len(rows)
    j3 = np.full((K, 17, 3), np.nan)
    nv = np.zeros((K, 17), dtype=np.int16)
    j2: dict[str, np.ndarray] = {}
    pl: dict[str, np.ndarray] = {}
    for k, (frame, a3, a2) in enumerate(rows):
        for name, v in a3.items():
            j = COCO17_INDEX.get(name.lower())
            if j is None:
                continue
            try:
                j3[k, j] = (float(v["x"]), float(v["y"]), float(v["z"]))
                nv[k, j] = int(v.get("num_views_for_3d", 0) or 0)
            except (KeyError, TypeError, ValueError) as exc:
                raise DataError(path, f"frame {frame}, joint {name}: bad annotation3D entry {v!r}") from exc
        for cam, pts in a2.items():
            if cam not in j2:
                j2[cam] = np.full((K, 17, 2), np.nan)
                pl[cam] = np.full((K, 17), "", dtype=object)
            for name, v in pts.items():
                j = COCO17_INDEX.get(name.lower())
                if j is None:
                    continue
                try:
                    j2[cam][k, j] = (float(v["x"]), float(v["y"]))
                except (KeyError, TypeError, ValueError) as exc:
                    raise DataError(path, f"frame {frame}, camera {cam}, joint {name}: bad entry {v!r}") from exc
                pl[cam][k, j] = str(v.get("placement", ""))
    return BodyAnnotation(np.array([r[0] for r in rows], dtype=np.int64), j3, nv, j2, pl)


def _camera_first(data: dict) -> dict:
    """The camera-first layout of a ``camera_pose`` file. The public docs show a frame-first one,
    ``{frame: {camera: {camera_intrinsics, camera_extrinsics}}}``: static exo cameras then take their
    first frame's pose, moving cameras (Aria) keep one pose per frame."""
    frames = [k for k in data if k != "metadata"]
    if not frames or not all(str(k).lstrip("-").isdigit() for k in frames):
        return data
    out: dict = {"metadata": data.get("metadata", {})}
    for f in sorted(frames, key=int):
        for cam, v in (data[f] or {}).items():
            if not isinstance(v, dict):
                continue
            entry = out.setdefault(cam, {k: val for k, val in v.items() if k != "camera_extrinsics"})
            entry.setdefault("_ext", {})[str(int(f))] = v.get("camera_extrinsics")
    for cam, entry in out.items():
        if cam == "metadata":
            continue
        ext = entry.pop("_ext")
        first = next(iter(ext.values()))
        moving = cam.startswith("aria") or any(e != first for e in ext.values())
        entry["camera_extrinsics"] = ext if moving else first
    return out


def read_camera_pose(path: str | os.PathLike) -> dict:
    """``camera_pose/<take_uid>.json`` -> {cam: {"K": (3,3), "T_cam_world": (4,4), "D": (4,)}} for exo
    cameras, and ``aria01`` -> {"K", "T_cam_world": {frame: (4,4)}}."""
    path = Path(path)
    data = read_json(path)
    if not isinstance(data, dict):
        raise DataError(path, "expected a JSON object")
    data = _camera_first(data)
    out = {"metadata": data.get("metadata", {})}
    for cam, v in data.items():
        if cam == "metadata":
            continue
        try:
            K = np.asarray(v["camera_intrinsics"], dtype=np.float64)
            ext = v["camera_extrinsics"]
            if isinstance(ext, dict):
                T = {int(k): np.vstack([np.asarray(e, dtype=np.float64), [0, 0, 0, 1]]) for k, e in ext.items()}
            else:
                T = np.vstack([np.asarray(ext, dtype=np.float64), [0, 0, 0, 1]])
            entry = {"K": K, "T_cam_world": T}
            if "distortion_coeffs" in v:
                entry["D"] = np.asarray(v["distortion_coeffs"], dtype=np.float64)
        except (KeyError, TypeError, ValueError) as exc:
            raise DataError(path, f"camera {cam}: malformed entry ({exc})") from exc
        out[cam] = entry
    return out


# ------------------------------------------------------------------------------------------------ dataset
EXCLUDED_SCENARIOS = ("rock climbing",)


@dataclass(frozen=True)
class TakeInfo:
    """One ``takes.json`` entry (the fields motionkit uses; ``raw`` keeps everything)."""

    take_uid: str
    take_name: str
    root_dir: str
    capture_name: str
    capture_root_dir: str
    timesync_start_idx: int
    timesync_end_idx: int
    task_name: str
    split: str | None
    raw: dict

    @property
    def n_frames(self) -> int:
        """Frames in the take's frame-aligned videos: ``end - start - 1``."""
        return self.timesync_end_idx - self.timesync_start_idx - 1

    @property
    def duration_s(self) -> float:
        return self.n_frames / TAKE_FPS

    @property
    def excluded_scenario(self) -> bool:
        """A scenario that the benchmark protocol leaves out (rock climbing): ``batch`` skips it and
        ``eval`` does not score it."""
        return any(x in self.task_name.lower() for x in EXCLUDED_SCENARIOS)


class EgoExoDataset:
    """An Ego-Exo4D release (or a synthetic one in the same layout) rooted at ``root``."""

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root).expanduser()
        if not self.root.is_dir():
            raise DataError(self.root, "dataset root not found")
        self.skipped_entries: list[str] = []  # malformed takes.json entries (warned about, then skipped)

    @functools.cached_property
    def splits(self) -> dict[str, str]:
        """take_uid -> split (empty when ``annotations/splits.json`` is absent)."""
        p = self.root / "annotations" / "splits.json"
        if not p.is_file():
            return {}
        data = read_json(p)
        m = data.get("take_uid_to_split")
        if not isinstance(m, dict):
            raise DataError(p, "missing 'take_uid_to_split'")
        return dict(m)

    @functools.cached_property
    def _takes(self) -> list[TakeInfo]:
        p = self.root / "takes.json"
        data = read_json(p)
        if not isinstance(data, list):
            raise DataError(p, "expected a JSON list of takes")
        out = []
        for i, t in enumerate(data):
            try:
                cap = t.get("capture") or {}
                out.append(
                    TakeInfo(
                        take_uid=str(t["take_uid"]),
                        take_name=str(t["take_name"]),
                        root_dir=str(t.get("root_dir") or f"takes/{t['take_name']}"),
                        capture_name=str(cap.get("capture_name", "")),
                        capture_root_dir=str(cap.get("root_dir") or f"captures/{cap.get('capture_name', '')}"),
                        timesync_start_idx=int(t["timesync_start_idx"]),
                        timesync_end_idx=int(t["timesync_end_idx"]),
                        task_name=str(t.get("task_name") or ""),
                        split=None,
                        raw=t,
                    )
                )
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                name = t.get("take_name", t.get("take_uid", "?")) if isinstance(t, dict) else "?"
                msg = f"take entry {i} ({name}): missing or bad field {exc}; skipped"
                warnings.warn(str(DataError(p, msg)), stacklevel=2)
                self.skipped_entries.append(msg)
        if data and not out:
            raise DataError(p, f"no usable take entry: {self.skipped_entries[0]}")
        splits = self.splits
        return [TakeInfo(**{**t.__dict__, "split": splits.get(t.take_uid)}) for t in out]

    def split_names(self) -> list[str]:
        """The splits the takes belong to, sorted (``None`` for takes that no split names): what a user
        who asked for a split that has no takes can choose from."""
        return sorted({str(t.split) for t in self._takes})

    def takes(self, split: str | None = None) -> list[TakeInfo]:
        """All takes, or those of one split (``train`` / ``val`` / ``test``)."""
        return [t for t in self._takes if split is None or t.split == split]

    def take(self, take_id: str) -> Take:
        """A take by ``take_uid`` or ``take_name``."""
        for t in self._takes:
            if take_id in (t.take_uid, t.take_name):
                return Take(self, t)
        names = ", ".join(t.take_name for t in self._takes[:5])
        raise DataError(self.root / "takes.json", f"take {take_id!r} not found (known: {names}, ...)")


class Take:
    """One take: cameras, Aria trajectory, timesync, annotations. Everything is read on first use."""

    def __init__(self, dataset: EgoExoDataset, info: TakeInfo, *, timesync_offset: int = 1) -> None:
        if timesync_offset not in (0, 1):
            raise ValueError(f"timesync_offset must be 0 or 1, got {timesync_offset}")
        self.dataset = dataset
        self.info = info
        self.timesync_offset = timesync_offset

    def __repr__(self) -> str:
        return f"Take({self.info.take_name!r}, uid={self.info.take_uid!r}, frames={self.n_frames})"

    @property
    def uid(self) -> str:
        return self.info.take_uid

    @property
    def name(self) -> str:
        return self.info.take_name

    @property
    def n_frames(self) -> int:
        return self.info.n_frames

    @property
    def take_dir(self) -> Path:
        return self.dataset.root / self.info.root_dir

    @property
    def capture_dir(self) -> Path:
        return self.dataset.root / self.info.capture_root_dir

    def _trajectory_file(self, name: str) -> Path:
        """``trajectory/<name>``: the take's copy (trimmed to the take), else the capture's."""
        take_copy = self.take_dir / "trajectory" / name
        cap_copy = self.capture_dir / "trajectory" / name
        for p in (take_copy, cap_copy):
            if p.is_file():
                return p
        missing = f"{name} not found (nor the capture copy {cap_copy})"
        if not (self.take_dir / "trajectory").is_dir():
            raise DataError(self.take_dir / "trajectory", f"trajectory folder missing for this take: {missing}")
        raise DataError(take_copy, missing)

    # -- cameras ---------------------------------------------------------------------------------
    @functools.cached_property
    def calibration_path(self) -> Path:
        """The take's ``gopro_calibs.csv``, else the capture's."""
        return self._trajectory_file("gopro_calibs.csv")

    @functools.cached_property
    def camera_status(self) -> dict[str, str]:
        """camera -> ``OK`` or the reason it is not used (``CAM_NOT_CALIBRATED``: quality != 1;
        ``CAM_INVALID_CALIBRATION``: its row's pose or intrinsics are not usable numbers)."""
        rows = read_gopro_calibs(self.calibration_path)
        reason = {1: "OK", INVALID_CALIBRATION: "CAM_INVALID_CALIBRATION"}
        return {cam.name: reason.get(q, "CAM_NOT_CALIBRATED") for cam, q in rows}

    @functools.cached_property
    def rig(self) -> CameraRig:
        """Exo cameras with ``quality == 1`` and a usable calibration (others are skipped with a warning),
        sorted by name; a ``DataError`` saying why each was dropped when none is left."""
        rows = read_gopro_calibs(self.calibration_path)
        good = [c for c, q in rows if q == 1]
        bad = [c.name for c, q in rows if q not in (1, INVALID_CALIBRATION)]
        invalid = [f"{c.name} ({c.meta['invalid']})" for c, q in rows if q == INVALID_CALIBRATION]
        if bad:
            warnings.warn(f"{self.calibration_path}: skipping cameras with quality != 1: {bad}", stacklevel=3)
        if invalid:
            warnings.warn(f"{self.calibration_path}: skipping cameras with an unusable calibration: "
                          f"{'; '.join(invalid)}", stacklevel=3)  # fmt: skip
        if not good:
            why = [f"quality != 1: {', '.join(bad)}"] if bad else []
            why += [f"unusable calibration: {'; '.join(invalid)}"] if invalid else []
            raise DataError(self.calibration_path, f"no usable camera ({'; '.join(why) or 'no rows'})")
        return CameraRig(sorted(good, key=lambda c: c.name))

    def camera_active(self, frames: np.ndarray) -> np.ndarray:
        """``(M, V)`` bool: take ``frames (M,)`` inside each rig camera's ``start_frame_idx``..``end_frame_idx``
        window (the frames its static pose applies to; -1 = the whole video)."""
        f = np.asarray(frames)[:, None]
        start = np.array([int(c.meta.get("start_frame_idx", -1)) for c in self.rig])[None]
        end = np.array([int(c.meta.get("end_frame_idx", -1)) for c in self.rig])[None]
        return ((start < 0) | (f >= start)) & ((end < 0) | (f <= end))

    # -- Aria ------------------------------------------------------------------------------------
    @functools.cached_property
    def trajectory_path(self) -> Path:
        """The take's trimmed ``closed_loop_trajectory.csv``, else the capture's."""
        return self._trajectory_file("closed_loop_trajectory.csv")

    @functools.cached_property
    def trajectory(self) -> AriaTrajectory:
        """The Aria trajectory, checked to be in the calibration's world frame (same ``graph_uid``)."""
        p = self.trajectory_path
        traj = read_closed_loop_trajectory(p)
        graph = trajectory_graph_uid(p)
        calib = {c.meta.get("graph_uid") for c, _ in read_gopro_calibs(self.calibration_path)} - {None, ""}
        if graph and calib and graph not in calib:
            raise DataError(
                p,
                f"graph_uid {graph} differs from the calibration's ({', '.join(sorted(calib))} in "
                f"{self.calibration_path}): the trajectory and the cameras are in different world frames",
            )
        return traj

    @functools.cached_property
    def aria_device(self) -> str:
        """The capture's ego camera (``is_ego`` in ``takes.json``): ``aria01`` usually, but not always."""
        for cam in (self.info.raw.get("capture") or {}).get("cameras") or []:
            if isinstance(cam, dict) and cam.get("is_ego") and cam.get("cam_id"):
                return str(cam["cam_id"])
        return "aria01"

    @functools.cached_property
    def _timesync_ts(self) -> np.ndarray:
        return read_timesync_column(self.capture_dir / "timesync.csv", aria_timesync_column(self.aria_device))

    def frame_device_ns(self, frames: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Aria device time (ns) of take frames ``(N,)`` via timesync row ``start + offset + i``.

        NaN cells are interpolated linearly from the nearest valid rows when the gap is at most 5
        rows; otherwise the time is NaN. Returns ``(ts_ns (N,), reason (N,))`` with reason
        ``""`` or ``ARIA_TS_NAN`` / ``OUT_OF_RANGE``.
        """
        frames = np.asarray(frames)
        col = self._timesync_ts
        rows = self.info.timesync_start_idx + self.timesync_offset + frames
        inside = (rows >= 0) & (rows < len(col)) & (frames >= 0) & (frames < self.n_frames)
        ts = np.full(frames.shape, np.nan)
        ts[inside] = col[rows[inside]]
        reason = np.where(inside, "", "OUT_OF_RANGE").astype(object)
        nan = inside & ~np.isfinite(ts)
        good = np.flatnonzero(np.isfinite(col))
        if nan.any() and len(good):
            b = bracket(good, rows[nan])  # span: rows between the valid rows around the NaN cell
            fill = b.inside & (b.span - 1 <= MAX_TS_INTERP_ROWS) & (b.span > 0)
            ts[np.flatnonzero(nan)[fill]] = lerp(col[good], b)[fill]
        reason[nan & ~np.isfinite(ts)] = "ARIA_TS_NAN"
        return ts, reason

    def sample_device_ns(self, frame_pos: np.ndarray) -> np.ndarray:
        """Aria device time (ns) at fractional take frame positions ``frame_pos (N,)`` (a 20 fps sample
        sits half-way between two 30 fps frames every other time): linear between the device times of
        the frames around it (``frame_device_ns``); on a frame, its own; NaN where one needed is unknown."""
        pos = np.asarray(frame_pos, dtype=np.float64)
        f0 = np.floor(pos).astype(np.int64)
        f1 = np.minimum(f0 + 1, self.n_frames - 1)
        (t0, _), (t1, _) = self.frame_device_ns(f0), self.frame_device_ns(f1)
        return np.where(pos == f0, t0, t0 + (pos - f0) * (t1 - t0))

    def head_anchor(self, frames: np.ndarray, T_device_cpf: np.ndarray | None = None) -> HeadAnchor:
        """CPF head anchor at take frames (CAD ``T_device_cpf`` DVT-S unless given)."""
        ts, _ = self.frame_device_ns(np.asarray(frames))
        return self.trajectory.head_anchor_at(ts, cad_T_device_cpf() if T_device_cpf is None else T_device_cpf)

    # -- annotations -------------------------------------------------------------------------------
    def annotation_path(self, kind: str, sub: str) -> Path | None:
        """The take's file under ``annotations/ego_pose/<split>/<sub>/`` (``body/<kind>/`` for ``sub="body"``),
        or None."""
        base = self.dataset.root / "annotations" / "ego_pose"
        splits = [self.info.split] if self.info.split else ["train", "val", "test"]
        for s in splits:
            p = base / s / sub / kind / f"{self.uid}.json" if sub == "body" else base / s / sub / f"{self.uid}.json"
            if p.is_file():
                return p
        return None

    def body_annotation(self, kind: str = "annotation") -> BodyAnnotation | None:
        """Manual (``annotation``) or automatic body keypoints, or None when the take has none."""
        p = self.annotation_path(kind, "body")
        return None if p is None else read_body_annotation(p)

    def camera_pose(self) -> dict | None:
        p = self.annotation_path("", "camera_pose")
        return None if p is None else read_camera_pose(p)
