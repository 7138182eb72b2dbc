"""HumanMoveVQA motion tracks (docs/motion.md, "HumanMoveVQA tracks"): the spatial-code events of every
valid run of a fitted take, in the input format of the public HumanMoveVQA question generator
(``<motion_id>_spatial_caption.json``), with signs and words as that generator reads them.

The generator reads directions from ``spatial_category`` in most question families and from the
sign of ``intensity`` in the trajectory families (it sums intensities into positions). The export's
convention makes both agree in every record:

* ``displacement_x``: + = right; ``displacement_y``: + = up; ``displacement_z``: + = forward, which the
  generator words "away from starting position";
* ``rotation_yaw``: + = clockwise seen from above (turning right); ``rotation_pitch``: + = leaning
  forward; ``rotation_roll``: + = leaning right; rotations are the body's own (subject's point of view)
  in both frames.

Frames (first-frame normalised: origin at the run's first root position, angles relative to it):
``person``: right and forward of the wearer's heading at the run's first frame; ``camera``: right as
seen in that exocentric camera's video, forward = toward that camera (the labelling of the
HumanMoveVQA data), up = world up.

Units, stated in every file: displacement intensities count the preset's displacement units (default
0.1 m, which the HumanMoveVQA captioning wrapper labels "1 unit = 10cm"); rotation intensities are in
degrees, as that wrapper labels them (the event's change in the preset's rotation units - 30 degrees of
yaw, 10 degrees of lean by default - times the unit). Degrees also make the generator's families agree:
its existence questions need a cumulative |intensity| of 5, which 2-4 units of 30 degrees never reach
while the dominant-direction questions already count them. Velocities are intensity per 1/30 s.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from motionkit import __version__
from motionkit.common.errors import DataError
from motionkit.common.files import write_json_atomic, write_text_atomic
from motionkit.conventions import R_ZUP_TO_YUP, TAKE_FPS
from motionkit.data.store import TakeResult, read_result
from motionkit.geometry.interpolation import valid_runs
from motionkit.geometry.rotations import rotvec_to_matrix
from motionkit.motion.codes import CODES, EventSet, extract_events, qa_seed, quantitative_values
from motionkit.motion.codes import humanmovevqa_convention as convention
from motionkit.motion.derive import MIN_RUN_FRAMES, fit_arrays, root_trusted
from motionkit.motion.hml263 import smplx_joints_zup_to_hml
from motionkit.motion.trajectory import anchor_trajectory

FORMAT = "motionkit.humanmovevqa_track"
FORMAT_VERSION = 1
FRAMES = ("person", "camera")


READING = {
    "displacement_x": "+ = right" + " (as seen in the camera's video in the camera frame)",
    "displacement_y": "+ = up",
    "displacement_z": "+ = forward = away from the starting position in the generator's wording "
    "(person frame: the wearer's initial forward; camera frame: toward the camera)",
    "rotation_yaw": "+ = clockwise seen from above (turning right)",
    "rotation_pitch": "+ = leaning forward (the subject's own)",
    "rotation_roll": "+ = leaning right (the subject's own)",
}


def track_events(transl_yup: np.ndarray, R_yup: np.ndarray, fps: float, *, frame: str = "person",
                 camera_R_world: np.ndarray | None = None, joints_yup: np.ndarray | None = None,
                 preset: str = "default", motion_id: str = "motion",
                 root_trusted: np.ndarray | None = None) -> EventSet:  # fmt: skip
    """Events of one run in the HumanMoveVQA convention.

    ``transl_yup (T, 3)`` root positions (metres) and ``R_yup (T, 3, 3)`` root orientations in a y-up
    world; ``camera_R_world (3, 3)`` the camera-to-world rotation (y-up world) for ``frame="camera"``;
    ``joints_yup (T, >=18, 3)`` optional, for a degenerate heading; ``root_trusted (T,)`` optional, the
    frames whose torso the fit trusts (``codes.extract_events``).
    """
    tr = anchor_trajectory(transl_yup, R_yup, fps=fps, frame=frame, joints=joints_yup, camera_R_world=camera_R_world)
    return extract_events(tr, fps, preset=preset, motion_id=motion_id, convention=convention(frame),
                          root_trusted=root_trusted)  # fmt: skip


def track_document(es: EventSet, *, frame: str, camera: str | None, video: dict,
                   source: dict) -> dict:  # fmt: skip
    """The generator's input document of one run (``quantitative_values`` per code, ``motion_id``,
    ``fps``, ``num_frames``, ``descriptor``) plus what makes it reproducible and pairable with a video:
    the frame and camera, the units, the sign convention, the track-to-video frame mapping, the source."""
    qv = quantitative_values(es)
    units_label = f"{es.units['displacement_m'] * 100:g} cm"
    tr = es.trajectory
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "motion_id": es.motion_id,
        "descriptor": "",
        "fps": es.fps,
        "num_frames": es.num_frames,
        "motioncode_types": list(CODES),
        "quantitative_values": qv,
        "normalize_first_frame": True,
        "frame": {
            "type": frame,
            "camera": camera,
            "heading_source": tr.heading_source,
            "heading0_deg": round(tr.heading0_deg, 6),
        },  # fmt: skip
        "units": {
            "preset": es.preset,
            "displacement_m": es.units["displacement_m"],
            "displacement_label": units_label,
            "displacement_intensity": f"units of {units_label}",
            "rotation_intensity": "degrees",
            "yaw_deg": es.units["yaw_deg"],
            "lean_deg": es.units["lean_deg"],
            "velocity": "intensity per 1/30 s",
        },
        "sign_convention": READING,
        "qa_seed": qa_seed(es.motion_id),
        "video": video,
        "source": source,
    }


@dataclass
class TakeExport:
    """The documents of one take (one per valid run), or why there are none."""

    take_uid: str
    take_name: str
    documents: list[dict]
    skipped: str = ""  # reason when the take has no valid run


def export_take(result: TakeResult, *, frame: str = "person", camera: str | None = None,
                preset: str = "default") -> TakeExport:  # fmt: skip
    """HumanMoveVQA documents of every valid run (>= 2 frames) of a fitted take.

    ``frame="camera"`` needs ``camera`` (a name from the result's ``cameras`` attrs). Raises
    ``DataError`` for a result without a fit or an unknown camera.
    """
    if frame not in FRAMES:
        raise ValueError(f"frame must be one of {FRAMES}, not {frame!r}")
    a = fit_arrays(result)
    take_uid, take_name = a["take_uid"], str(result.attrs.get("take_name", a["take_uid"]))
    names = json.loads(result.group_attrs.get("cameras", {}).get("names", "[]"))
    cam_R = None
    if frame == "camera":
        if camera is None:
            raise DataError(None, f"take {take_name}: --frame camera needs --camera (one of {', '.join(names)})")
        if camera not in names:
            raise DataError(None, f"take {take_name}: no camera {camera!r} in the result (cameras: {', '.join(names)})")
        cam_R = R_ZUP_TO_YUP @ result["cameras/T_world_cam"][names.index(camera)][:3, :3]
    elif camera is not None:
        raise ValueError("--camera is only used with --frame camera")
    J = smplx_joints_zup_to_hml(np.nan_to_num(a["joints_smplx"]))
    R = R_ZUP_TO_YUP @ rotvec_to_matrix(np.nan_to_num(a["global_orient"]))
    fps = a["fps"]
    runs = [(s, e) for s, e in valid_runs(a["valid"]) if e - s >= MIN_RUN_FRAMES]
    if not runs:
        return TakeExport(take_uid, take_name, [], f"no valid run (valid frames: {int(np.sum(a['valid']))})")
    if "grid/frame_index" in result.arrays:
        take_frame = result["grid/frame_index"].astype(int)
    else:  # results of older versions: the nearest take frame of each grid time
        take_frame = np.rint(result["time_s"] * TAKE_FPS).astype(int)
    active = result["cameras/active"][:, names.index(camera)] if camera and "cameras/active" in result.arrays else None
    root = None if a["joint_trusted"] is None else root_trusted(a["joint_trusted"])
    docs = []
    for k, (s, e) in enumerate(runs):
        motion_id = f"{take_name}_{camera}_run{k}" if camera else f"{take_name}_run{k}"
        trusted = None if root is None else root[s:e]
        es = track_events(J[s:e, 0], R[s:e], fps, frame=frame, camera_R_world=cam_R, joints_yup=J[s:e],
                          preset=preset, motion_id=motion_id, root_trusted=trusted)  # fmt: skip
        video = {
            "take_uid": take_uid,
            "take_name": take_name,
            "camera": camera,
            "video_fps": TAKE_FPS,
            "track_fps": fps,
            "video_frame": take_frame[s:e].tolist(),  # frame_aligned_videos: video frame = take frame
            "rule": "track frame k is take/video frame round((t0 + k / track_fps) * video_fps), t0 = the run's "
            "first grid time",
        }
        if active is not None:
            video["camera_active"] = active[s:e].astype(bool).tolist()
        if trusted is not None:  # per track frame: the fit trusts the torso the codes rest on
            video["root_trusted"] = trusted.tolist()
        source = {
            "motionkit_version": __version__,
            "body_model": a["body_model"],
            "run": k,
            "grid_frames": [int(s), int(e)],
            "result_config_hash": result.attrs.get("config_hash", ""),
        }
        docs.append(track_document(es, frame=frame, camera=camera, video=video, source=source))
    return TakeExport(take_uid, take_name, docs)


def track_filename(motion_id: str) -> str:
    """``<motion_id>_spatial_caption.json``, the generator's naming."""
    return f"{motion_id}_spatial_caption.json"


def document_text(doc: dict) -> str:
    """The file content of a document: fixed key order and formatting (the same fit gives the same bytes)."""
    return json.dumps(doc, indent=2) + "\n"


def sign_word_agreement(doc: dict) -> list[str]:
    """Records whose intensity or velocity sign disagrees with their ``spatial_category`` word under the
    export's convention (empty when consistent); used by the tests and by ``codes --format``."""
    bad = []
    conv = convention(doc["frame"]["type"])
    for code, segs in doc["quantitative_values"].items():
        _, pos, neg, pattern = conv[code]
        for seg in segs:
            q = seg["quant"]
            if q["spatial_category"] == "no_action":
                continue
            word = pos if q["intensity"] > 0 else neg
            suffix = pattern.format(c="", d=word)
            if not q["spatial_category"].endswith(suffix) or (q["velocity"] > 0) != (q["intensity"] > 0):
                bad.append(f"{code}#{seg['motion_index']}: {q['spatial_category']} with intensity {q['intensity']}")
    return bad


def write_documents(export: TakeExport, out_dir: Path) -> list[Path]:
    """Write the take's documents atomically into ``out_dir``; returns their paths."""
    paths = []
    for doc in export.documents:
        p = Path(out_dir) / track_filename(doc["motion_id"])
        write_text_atomic(p, document_text(doc))
        paths.append(p)
    return paths


@dataclass
class FolderExport:
    """``export_results``'s outcome: ``index`` (written to ``index.json``: every take with its files or
    why none was written), ``written`` files in all, and one line per take for the terminal (``lines``,
    ``(text, is_problem)``)."""

    index: dict
    written: int
    lines: list[tuple[str, bool]]


def export_results(files: list[Path], out_dir: Path, *, preset: str = "default", frame: str = "person",
                   camera: str | None = None) -> FolderExport:  # fmt: skip
    """Export the result files ``files`` as HumanMoveVQA tracks into ``out_dir`` (``export_take`` and
    ``write_documents`` per take) and write ``out_dir/index.json`` atomically. A take that cannot be
    exported is recorded with the reason and skipped; a record whose sign and word disagree is a bug,
    never data: ``RuntimeError`` before anything of that take is written."""
    if camera is not None and frame != "camera":
        raise ValueError("--camera needs --frame camera")
    if frame == "camera" and camera is None:
        raise ValueError("--frame camera needs --camera (e.g. --camera cam01)")
    index = {"frame": frame, "camera": camera, "preset": preset, "takes": []}
    written, lines = 0, []
    for f in files:
        entry = {"result": f.name}
        try:
            ex = export_take(read_result(f), frame=frame, camera=camera, preset=preset)
        except (DataError, ValueError) as exc:
            entry.update(take_uid=None, files=[], skipped=str(exc))
            lines.append((f"{f.name}: not exported: {exc}", True))
            index["takes"].append(entry)
            continue
        for doc in ex.documents:
            bad = sign_word_agreement(doc)
            if bad:
                raise RuntimeError(f"{doc['motion_id']}: sign and word disagree: {'; '.join(bad[:3])}")
        paths = write_documents(ex, out_dir)
        written += len(paths)
        entry.update(take_uid=ex.take_uid, take_name=ex.take_name, files=[p.name for p in paths], skipped=ex.skipped)
        index["takes"].append(entry)
        if ex.skipped:
            lines.append((f"{ex.take_name}: not exported: {ex.skipped}", True))
        else:
            n_ev = sum(len(v) for d in ex.documents for v in d["quantitative_values"].values())
            lines.append((f"{ex.take_name}: {len(paths)} track(s), {n_ev} events -> {out_dir}", False))
    write_json_atomic(Path(out_dir) / "index.json", index, indent=2)
    return FolderExport(index, written, lines)
