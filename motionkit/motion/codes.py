"""Spatial codes and motion events (docs/motion.md), as used to generate HumanMoveVQA
questions: six codes relative to frame 0, quantised into units, and MotionScript's single-path
event finder (threshold 1), deterministic (no noise)."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, field

import numpy as np

from motionkit.motion.trajectory import Trajectory

SCHEMA_VERSION = 1
CODES = ("displacement_x", "displacement_y", "displacement_z", "rotation_yaw", "rotation_pitch", "rotation_roll")
PRESETS = {
    "default": {"displacement_m": 0.10, "yaw_deg": 30.0, "lean_deg": 10.0},
    "motionscript_5cm": {"displacement_m": 0.05, "yaw_deg": 30.0, "lean_deg": 10.0},
    "paper_literal": {"displacement_m": 0.10, "yaw_deg": 1.0, "lean_deg": 1.0},
}
PRESETS["fine_translation"] = PRESETS["motionscript_5cm"]
DIRECTIONS = {
    "displacement_x": ("left", "right", "{c}_{d}"),
    "displacement_y": ("up", "down", "{c}_{d}"),
    "displacement_z": ("forward", "backward", "{c}_{d}"),
    "rotation_yaw": ("counterclockwise", "clockwise", "{c}_turn_{d}"),
    "rotation_pitch": ("forward", "backward", "{c}_leaning_{d}"),
    "rotation_roll": ("left", "right", "{c}_leaning_{d}"),
}
# motionkit's own reading of the codes: per code (sign applied to the signal, word for +, word for -, category
# pattern); other conventions (e.g. HumanMoveVQA's, motionkit.motion.humanmovevqa) flip signs and words
MOTIONKIT_CONVENTION = {code: (1.0, *words) for code, words in DIRECTIONS.items()}


def humanmovevqa_convention(frame: str) -> dict[str, tuple[float, str, str, str]]:
    """Per code ``(sign, word for +, word for -, category pattern)`` mapping motionkit's anchored
    trajectory (+x = left of the heading, +z = along the heading, yaw + = counterclockwise from above,
    roll + = leaning left) to the generator's reading; ``frame``: ``person`` or ``camera`` (whose
    heading is the camera's viewing direction, so forward = toward the camera is ``-z``)."""
    if frame not in ("person", "camera"):
        raise ValueError(f"frame must be 'person' or 'camera', not {frame!r}")
    z_sign = 1.0 if frame == "person" else -1.0
    return {
        "displacement_x": (-1.0, "right", "left", "{c}_{d}"),
        "displacement_y": (1.0, "up", "down", "{c}_{d}"),
        "displacement_z": (z_sign, "forward", "backward", "{c}_{d}"),
        "rotation_yaw": (-1.0, "clockwise", "counterclockwise", "{c}_turn_{d}"),
        "rotation_pitch": (1.0, "forward", "backward", "{c}_leaning_{d}"),
        "rotation_roll": (-1.0, "right", "left", "{c}_leaning_{d}"),
    }


QUANT_KEYS = ("start_frame", "end_frame", "duration_frames", "intensity", "velocity", "spatial_category",
              "temporal_category", "passes_threshold")  # fmt: skip
DEFAULT_FILTERS = {"require_passes_threshold": True, "min_duration": True, "drop_very_short": True, "drop_slight": True}


@dataclass
class Event:
    event_id: str
    code: str
    motion_index: int
    start_frame: int
    end_frame: int
    duration_frames: int
    start_time_s: float
    end_time_s: float
    intensity: int
    unit: str
    velocity: float
    direction: str
    magnitude_class: str
    spatial_category: str
    temporal_category: str
    passes_threshold: bool
    qa_eligible: bool
    start_quarter: int
    quarters_active: list[int]
    ms_start: int
    ms_intensity: int
    ms_velocity: float
    root_trusted_share: float | None = None  # share of frames start..end whose torso the fit trusts; None: unknown


def quantize(signal: np.ndarray, unit: float) -> np.ndarray:
    """Bins centred on integers: ``floor(value / unit + 0.5)`` (int64)."""
    return np.floor(np.asarray(signal, dtype=np.float64) / unit + 0.5).astype(np.int64)


def steps_of(q: np.ndarray) -> np.ndarray:
    """Sign-clamped step sequence: ``step_0 = 0``, ``step_t = sign(q_t - q_{t-1})``."""
    s = np.zeros(len(q), dtype=np.int64)
    s[1:] = np.sign(np.diff(q))
    return s


def _better(I, v, best) -> bool:
    return abs(I) > abs(best[2]) or (abs(I) == abs(best[2]) and abs(v) > abs(best[3]))


def find_events(s: np.ndarray, thr: int = 1) -> list[tuple[int, int, int, float]]:
    """MotionScript's single-path finder on a step sequence; returns ``(ms_start, ms_end, I, v)``."""
    s = [int(x) for x in s]
    n = len(s)
    events = []
    i = 0
    net = 0
    ups: list[int] = []
    downs: list[int] = []
    while i < n - 1:
        i += 1
        if s[i] == 1:
            ups.append(i)
            net += 1
        elif s[i] == -1:
            downs.append(i)
            net -= 1
        if abs(net) <= thr:
            continue
        d = 1 if net > 0 else -1
        same = ups if d > 0 else downs
        start = same[-(thr + 1)] if len(same) >= thr + 1 else same[0]
        I = s[start]
        best = (start, start, I, 1.0)
        guard = d
        j = start
        while j < n - 1:
            j += 1
            if s[j] == 0:
                continue  # pauses never end an event
            I += s[j]
            v = round(I / (j - start + 1), 2)
            if _better(I, v, best):
                best = (start, j, I, v)
            if s[j] == d:
                guard = max(-thr, min(thr, guard + d))
            else:
                guard += s[j]
                if abs(guard) >= thr:
                    break
        k, e, cur = best[0], best[1], best[2]
        while k < e:
            k += 1
            cur -= s[k - 1]
            v = round(cur / (e - k + 1), 2)
            if _better(cur, v, best):
                best = (k, e, cur, v)
        events.append(best)
        i = best[1]
        net = 0
        ups, downs = [], []
    return events


def magnitude_class(code: str, intensity: int) -> str:
    m = abs(intensity)
    if code.startswith("displacement"):
        if m <= 1:
            return "no_action"
        return (
            "very_short"
            if m <= 3
            else "short"
            if m <= 5
            else "moderate"
            if m <= 8
            else "long"
            if m <= 10
            else "very_long"
        )
    if m == 0:
        return "no_action"
    return "slight" if m <= 2 else "moderate" if m == 3 else "significant"


def temporal_class(velocity: float) -> str:
    v = abs(velocity)
    return (
        "very_slow"
        if v <= 0.05
        else "slow"
        if v <= 0.1
        else "moderate"
        if v <= 0.5
        else "fast"
        if v <= 0.8
        else "very_fast"
    )


def quarters(start_frame: int, end_frame: int, num_frames: int, fps: float) -> tuple[int, list[int]]:
    D = num_frames / fps
    b = [round(i * D / 4, 1) for i in range(5)]
    t0, t1 = start_frame / fps, (end_frame + 1) / fps
    active = [q + 1 for q in range(4) if t0 < b[q + 1] and t1 > b[q]]
    start_q = next((q + 1 for q in range(4) if b[q] <= t0 < b[q + 1]), 4)
    return start_q, active


def code_signals(traj: Trajectory) -> dict[str, np.ndarray]:
    return {
        "displacement_x": traj.pos_m[:, 0],
        "displacement_y": traj.pos_m[:, 1],
        "displacement_z": traj.pos_m[:, 2],
        "rotation_yaw": traj.yaw_deg,
        "rotation_pitch": traj.pitch_deg,
        "rotation_roll": traj.roll_deg,
    }


def _unit(code: str, units: dict) -> tuple[float, str]:
    if code.startswith("displacement"):
        return units["displacement_m"], f"{units['displacement_m']:g}m"
    u = units["yaw_deg"] if code == "rotation_yaw" else units["lean_deg"]
    return u, f"{u:g}deg"


@dataclass
class EventSet:
    """Events of one motion plus everything needed to reproduce them."""

    motion_id: str
    fps: float
    num_frames: int
    preset: str
    units: dict
    filters: dict
    thr: int
    min_event_frames: int
    trajectory: Trajectory
    events: list[Event] = field(default_factory=list)
    root_trusted: np.ndarray | None = None  # (num_frames,) bool: the fit trusts the torso (None: unknown)

    def to_dict(self) -> dict:
        tr = self.trajectory
        return {
            "schema_version": SCHEMA_VERSION,
            "motion_id": self.motion_id,
            "fps": self.fps,
            "num_frames": self.num_frames,
            "frame": {
                "type": tr.frame,
                "heading_source": tr.heading_source,
                "heading0_deg": tr.heading0_deg,
                "origin_world": tr.origin_world.tolist(),
                "camera": tr.camera,
            },
            "units": self.units,
            "params": {
                "thr": self.thr,
                "min_event_frames": self.min_event_frames,
                "smoothing": None,
                "preset": self.preset,
                "filters": self.filters,
            },
            "trajectory": tr.to_dict(),
            # the run's first frame sets the axes every event is read in: is its torso trusted?
            "anchor_root_trusted": None if self.root_trusted is None else bool(self.root_trusted[0]),
            "events": [asdict(e) for e in self.events],
        }

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def to_humanmovevqa(self) -> dict:
        """Input of the public HumanMoveVQA question generator for this motion: the events found again
        on the same trajectory in that generator's sign convention (``humanmovevqa_convention``), as
        ``quantitative_values[code]`` (the full track files: ``motionkit.motion.humanmovevqa``)."""
        es = extract_events(self.trajectory, self.fps, preset=self.preset, units=self.units, filters=self.filters,
                            thr=self.thr, motion_id=self.motion_id, root_trusted=self.root_trusted,
                            convention=humanmovevqa_convention(self.trajectory.frame))  # fmt: skip
        return {
            "motion_id": self.motion_id,
            "fps": self.fps,
            "num_frames": self.num_frames,
            "quantitative_values": quantitative_values(es),
            "qa_seed": qa_seed(self.motion_id),
        }


def quantitative_values(es: EventSet) -> dict[str, list]:
    """``{code: [{motion_index, quant: {start_frame, ..., passes_threshold}}]}`` as the HumanMoveVQA
    generator reads them: displacement intensities in the preset's units, rotation intensities (and
    velocities) in degrees (units x unit size; the categories stay those of the units); beside
    ``quant``, the event's ``root_trusted_share`` where the fit's trust is known."""
    qv: dict[str, list] = {c: [] for c in CODES}
    for e in es.events:
        quant = {k: getattr(e, k) for k in QUANT_KEYS}
        if e.code.startswith("rotation"):
            deg = es.units["yaw_deg"] if e.code == "rotation_yaw" else es.units["lean_deg"]
            quant["intensity"] = int(round(e.intensity * deg))
            quant["velocity"] = e.velocity * deg
        record = {"motion_index": e.motion_index, "quant": quant}
        if e.root_trusted_share is not None:  # motionkit's addition beside the generator's quant
            record["root_trusted_share"] = e.root_trusted_share
        qv[e.code].append(record)
    return qv


def qa_seed(motion_id: str) -> int:
    """Stable seed for QA sampling (SHA-256 of the motion id, never Python's salted hash)."""
    return int(hashlib.sha256(motion_id.encode()).hexdigest()[:8], 16)


def extract_events(
    traj: Trajectory,
    fps: float,
    *,
    preset: str = "default",
    units: dict | None = None,
    filters: dict | None = None,
    thr: int = 1,
    smoothing: int | None = None,
    motion_id: str = "motion",
    convention: dict | None = None,
    root_trusted: np.ndarray | None = None,
) -> EventSet:
    """Spatial-code events of an anchored trajectory (``anchor_trajectory``).

    ``preset``: ``default`` (0.1 m, 30 deg yaw, 10 deg lean), ``motionscript_5cm`` or
    ``paper_literal``; ``units`` overrides. ``filters`` toggles the QA filters
    (``DEFAULT_FILTERS``). ``smoothing``: optional odd moving-average window on the signals.
    ``convention``: per code ``(sign, word for +, word for -, category pattern)`` (default
    ``MOTIONKIT_CONVENTION``: the trajectory's own axes, +x = left); the signal is multiplied by the
    sign before quantisation, so intensities, velocities and words follow the convention.
    ``root_trusted (T,)`` bool, optional: the frames whose torso (hips and shoulders, on which the root's
    position and heading rest) the fit trusts (``root_trusted``); each event then records the share of
    its frames ``start..end`` that are (``root_trusted_share``), None without it. It never changes which
    events are found or their eligibility.
    """
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; presets: {', '.join(PRESETS)}")
    if len(traj.pos_m) < 2:
        raise ValueError("need at least 2 frames")
    u = dict(PRESETS[preset], **(units or {}))
    conv = MOTIONKIT_CONVENTION if convention is None else convention
    flt = dict(DEFAULT_FILTERS, **(filters or {}))
    min_frames = math.ceil(5 * fps / 30 - 1e-9)
    n = len(traj.pos_m)
    if root_trusted is not None:
        root_trusted = np.asarray(root_trusted, dtype=bool)
        if root_trusted.shape != (n,):
            raise ValueError(f"root_trusted has shape {root_trusted.shape}; the trajectory has {n} frames")
    events: list[Event] = []
    for code, sig in code_signals(traj).items():
        if not np.isfinite(sig).all():
            raise ValueError(f"{code}: signal has NaN (split the motion at invalid frames first)")
        unit, unit_name = _unit(code, u)
        sign, pos, neg, pattern = conv[code]
        x = sign * np.asarray(sig, dtype=np.float64)
        if smoothing:
            if smoothing % 2 == 0:
                raise ValueError("smoothing window must be odd")
            k = np.ones(smoothing) / smoothing
            x = np.convolve(np.pad(x, smoothing // 2, mode="edge"), k, mode="valid")
        q = quantize(x, unit)
        found = find_events(steps_of(q), thr)
        for idx, (ms_start, ms_end, ms_I, ms_v) in enumerate(found):
            start, end = ms_start - 1, ms_end
            dur = end - start
            inten = int(q[end] - q[start])
            vel = inten * fps / (30.0 * dur)
            mcls = magnitude_class(code, inten)
            direction = pos if inten > 0 else neg
            spatial = "no_action" if mcls == "no_action" else pattern.format(c=mcls, d=direction)
            passes = spatial != "no_action"
            elig = True
            if flt.get("require_passes_threshold") and not passes:
                elig = False
            if flt.get("min_duration") and dur < min_frames:
                elig = False
            if flt.get("drop_very_short") and mcls == "very_short":
                elig = False
            if flt.get("drop_slight") and mcls == "slight":
                elig = False
            sq, qa = quarters(start, end, n, fps)
            events.append(
                Event(
                    event_id=f"{code}:{idx:04d}",
                    code=code,
                    motion_index=idx,
                    start_frame=int(start),
                    end_frame=int(end),
                    duration_frames=int(dur),
                    start_time_s=round(start / fps, 4),
                    end_time_s=round(end / fps, 4),
                    intensity=inten,
                    unit=unit_name,
                    velocity=float(vel),
                    direction=direction,
                    magnitude_class=mcls,
                    spatial_category=spatial,
                    temporal_category=temporal_class(vel),
                    passes_threshold=passes,
                    qa_eligible=elig,
                    start_quarter=sq,
                    quarters_active=qa,
                    ms_start=int(ms_start),
                    ms_intensity=int(ms_I),
                    ms_velocity=float(ms_v),
                    root_trusted_share=(
                        None if root_trusted is None else round(float(root_trusted[start : end + 1].mean()), 4)
                    ),
                )
            )
    order = {c: i for i, c in enumerate(CODES)}
    events.sort(key=lambda e: (e.start_frame, order[e.code], e.motion_index))
    return EventSet(motion_id, fps, n, preset, u, flt, thr, min_frames, traj, events, root_trusted)


def trajectory_set(events: list[Event]) -> list[Event]:
    """Events used for trajectory questions: displacement x and z, excluding ``very_short``."""
    return [e for e in events if e.code in ("displacement_x", "displacement_z") and e.magnitude_class != "very_short"]


def jumps(events: list[Event]) -> list[tuple[Event, Event]]:
    """Consecutive displacement_y events up then down, both moderate or larger."""
    ys = sorted((e for e in events if e.code == "displacement_y"), key=lambda e: e.motion_index)
    big = ("moderate", "long", "very_long")
    return [
        (a, b)
        for a, b in zip(ys, ys[1:], strict=False)
        if a.intensity > 0 and b.intensity < 0 and a.magnitude_class in big and b.magnitude_class in big
    ]
