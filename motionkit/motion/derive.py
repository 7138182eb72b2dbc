"""Everything derived from a fitted take: per valid run, the anchored trajectory, the spatial-code
events and the HumanML3D features, and, where the fit says which joints it trusts, what each of them
rests on. Works on arrays from a result file (z-up Ego-Exo4D world)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from motionkit.conventions import R_ZUP_TO_YUP, TORSO_COCO17
from motionkit.data.fitted_body import fitted_body, fitted_valid
from motionkit.data.store import TakeResult
from motionkit.geometry.interpolation import bracket, lerp, valid_runs
from motionkit.geometry.rotations import rotvec_to_matrix
from motionkit.motion.codes import EventSet, extract_events
from motionkit.motion.hml263 import joints_to_hml263_batch, smplx_joints_zup_to_hml
from motionkit.motion.trajectory import Trajectory, anchor_trajectory

MIN_RUN_FRAMES = 2
FEATURE_FPS = 20.0  # HumanML3D's features are defined at 20 fps


@dataclass
class DerivedMotion:
    runs: list[tuple[int, int]]
    trajectories: list[Trajectory]
    events: list[EventSet]
    features: list[np.ndarray]  # per run (T_feat - 1, 263), at FEATURE_FPS
    feature_time_s: list[np.ndarray]  # per run (T_feat - 1,): time of each feature row (s, fit grid time)
    source_fps: float = FEATURE_FPS  # rate of the fit the features were resampled from
    root_trusted: np.ndarray | None = None  # (N,) bool per fit sample (``root_trusted``); None: unknown
    feature_trusted: list[np.ndarray] | None = None  # per run (T_feat - 1, 17) bool (``feature_rows_trusted``)

    def to_result_arrays(self, n: int) -> dict[str, dict[str, np.ndarray]]:
        """Arrays for the result groups ``trajectory``, ``codes`` and ``features``."""
        pos = np.full((n, 3), np.nan)
        ang = np.full((n, 3), np.nan)
        run_id = np.full(n, -1, dtype=np.int32)
        for k, ((a, b), tr) in enumerate(zip(self.runs, self.trajectories, strict=True)):
            pos[a:b] = tr.pos_m
            ang[a:b] = np.stack([tr.yaw_deg, tr.pitch_deg, tr.roll_deg], 1)
            run_id[a:b] = k
        events = [es.to_dict() for es in self.events]
        for es in events:  # the trajectory arrays are stored once, as datasets
            es.pop("trajectory", None)
        out = {
            "trajectory": {
                "pos_m": pos,
                "yaw_pitch_roll_deg": ang,
                "run_id": run_id,
                "run_bounds": np.array(self.runs, dtype=np.int64).reshape(-1, 2),
                "heading0_deg": np.array([t.heading0_deg for t in self.trajectories]),
            },
            "codes": {"events_json": np.array(json.dumps(events))},
            "features": {
                "hml263": self.all_features(),
                "time_s": np.concatenate(self.feature_time_s) if self.feature_time_s else np.zeros(0),
                "run_bounds": np.array(self.runs, dtype=np.int64).reshape(-1, 2),
            },
        }
        if self.root_trusted is not None:
            out["trajectory"]["root_trusted"] = self.root_trusted
            out["features"]["joint_trusted"] = self.all_feature_trusted()
        return out

    def all_features(self) -> np.ndarray:
        """``(rows, 263)`` float32: the features of every run, concatenated."""
        return np.concatenate(self.features) if self.features else np.zeros((0, 263), np.float32)

    def all_feature_trusted(self) -> np.ndarray | None:
        """``(rows, 17)`` bool beside ``all_features``: the COCO landmarks the fit trusts at both samples
        a feature row is computed from; None when the fit gave no per-joint trust."""
        if self.feature_trusted is None:
            return None
        return np.concatenate(self.feature_trusted) if self.feature_trusted else np.zeros((0, 17), bool)

    def feature_attrs(self) -> dict:
        """Attributes of the result group ``features``: their rate and the fit rate they come from."""
        return {"fps": FEATURE_FPS, "resampled_from_fps": self.source_fps}


def derive_motion(
    joints_smplx_zup: np.ndarray,
    global_orient_zup: np.ndarray,
    valid: np.ndarray,
    fps: float,
    *,
    preset: str = "default",
    motion_id: str = "motion",
    variant: str = "reference",
    joint_trusted: np.ndarray | None = None,
) -> DerivedMotion:
    """Per valid run of a fitted take: trajectory, events and 263-d features.

    ``joints_smplx_zup (N, >=22, 3)`` SMPL-X joints (world, z up), ``global_orient_zup (N, 3)``
    axis-angle, ``valid (N,)``, ``fps`` of the samples. Trajectories and events use the samples as
    they are; the HumanML3D features are computed at ``FEATURE_FPS`` (20), resampled if needed.
    ``joint_trusted (N, 17)`` bool, optional: the fit's per-joint trust (result ``fit/joint_trusted``,
    COCO-17 order, false outside the valid frames); with it, each event records the share of its frames
    whose torso is trusted and each feature row the landmarks trusted at both of its samples
    (``DerivedMotion.root_trusted``, ``feature_trusted``). Trust never changes the trajectories, events
    or features themselves.
    """
    J = smplx_joints_zup_to_hml(np.nan_to_num(joints_smplx_zup))
    R = R_ZUP_TO_YUP @ rotvec_to_matrix(np.nan_to_num(global_orient_zup))
    runs = [(a, b) for a, b in valid_runs(valid) if b - a >= MIN_RUN_FRAMES]
    trusted = None if joint_trusted is None else np.asarray(joint_trusted, dtype=bool)
    root = None if trusted is None else root_trusted(trusted)
    trajs, evs = [], []
    for k, (a, b) in enumerate(runs):
        tr = anchor_trajectory(J[a:b, 0], R[a:b], fps=fps, joints=J[a:b])
        trajs.append(tr)
        evs.append(extract_events(tr, fps, preset=preset, motion_id=f"{motion_id}:run{k}",
                                  root_trusted=None if root is None else root[a:b]))  # fmt: skip
    resampled = [_at_feature_rate(J[a:b], np.arange(a, b) / fps) for a, b in runs]
    clips, times = [c for c, _ in resampled], [t for _, t in resampled]
    long = [i for i, c in enumerate(clips) if len(c) >= MIN_RUN_FRAMES]
    computed = joints_to_hml263_batch([clips[i] for i in long], variant=variant) if long else []
    feats = [np.zeros((0, 263), np.float32) for _ in clips]
    for i, f in zip(long, computed, strict=True):
        feats[i] = f
    feature_trusted = None
    if trusted is not None:
        feature_trusted = [feature_rows_trusted(trusted[a:b], np.arange(a, b) / fps) for a, b in runs]
    return DerivedMotion(runs, trajs, evs, feats, [t[:-1] for t in times], float(fps), root, feature_trusted)


def root_trusted(joint_trusted: np.ndarray) -> np.ndarray:
    """``(N,)`` bool: samples whose torso (both hips and both shoulders, ``TORSO_COCO17``) the fit trusts,
    from ``joint_trusted (N, 17)``. The root trajectory, its heading and so every spatial code rest on
    them."""
    return np.asarray(joint_trusted, dtype=bool)[:, TORSO_COCO17].all(-1)


def _at_feature_rate(clip: np.ndarray, time_s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A run of samples ``(T, ...)`` at times ``(T,)`` resampled (linearly) to ``FEATURE_FPS``, the rate
    HumanML3D's features are defined at, and the new times; unchanged when it is already at that rate."""
    if len(time_s) < 2 or abs(1.0 / np.median(np.diff(time_s)) - FEATURE_FPS) < 1e-6:
        return clip, time_s
    tq = np.arange(time_s[0], time_s[-1] + 1e-9, 1.0 / FEATURE_FPS)
    return lerp(clip, bracket(time_s, tq)), tq


def feature_rows_trusted(trusted: np.ndarray, time_s: np.ndarray) -> np.ndarray:
    """``(T' - 1, 17)`` bool: per HumanML3D feature row of a run, the landmarks trusted at both of the
    row's samples (a row holds positions at one sample and velocities to the next). ``trusted (T, 17)``
    at the run's samples ``time_s (T,)``, resampled as the joints are (``_at_feature_rate``): a resampled
    time is trusted where both fit samples it lies between are (or it falls on one that is)."""
    at = _at_feature_rate(np.asarray(trusted, dtype=np.float64), time_s)[0] > 1.0 - 1e-9
    return at[:-1] & at[1:]


def fit_arrays(result: TakeResult) -> dict:
    """The arrays of a fitted take in a result file that motion features need:
    ``joints_smplx (N, 55, 3)``, ``global_orient (N, 3)``, ``valid (N,)``, ``fps``, ``take_uid``,
    ``joint_trusted (N, 17)`` (None for fits without per-joint trust).

    Joints are recomputed with the body model when the file does not store them.
    """
    result.require_fit()
    joints = result["joints/smplx"] if "joints/smplx" in result.arrays else fitted_body(result)
    go = result["smplx/global_orient"]
    valid = fitted_valid(result)
    fps = result.fps
    return {
        "body_model": result.body_model,
        "joints_smplx": joints,
        "global_orient": go,
        "valid": valid,
        "fps": fps,
        "take_uid": str(result.attrs.get("take_uid", "motion")),
        "joint_trusted": result["fit/joint_trusted"].astype(bool) if "fit/joint_trusted" in result.arrays else None,
    }


def longest_run(derived: DerivedMotion) -> int | None:
    """Index of the longest valid run (None without runs)."""
    if not derived.runs:
        return None
    return max(range(len(derived.runs)), key=lambda i: derived.runs[i][1] - derived.runs[i][0])


def codes_document(arrays: dict, derived: DerivedMotion, preset: str) -> dict:
    """The ``<stem>.codes.json`` document of a take (``motionkit codes``): its runs and their event sets,
    with the take and the body model that made the fit (``arrays``: ``fit_arrays``)."""
    return {
        "take_uid": arrays["take_uid"],
        "body_model": arrays["body_model"],
        "preset": preset,
        "runs": [list(r) for r in derived.runs],
        "event_sets": [es.to_dict() for es in derived.events],
    }


def event_counts(derived: DerivedMotion) -> tuple[int, int, int | None]:
    """``(events with an action, QA-eligible events, QA-eligible events whose every frame has a trusted
    torso)`` over every run; the last is None when the fit gave no per-joint trust."""
    events = [e for es in derived.events for e in es.events]
    eligible = [e for e in events if e.qa_eligible]
    trusted = None if derived.root_trusted is None else sum(e.root_trusted_share == 1.0 for e in eligible)
    return sum(e.spatial_category != "no_action" for e in events), len(eligible), trusted


def features_document(arrays: dict, derived: DerivedMotion, variant: str) -> dict:
    """The ``<stem>.hml263.runs.json`` document beside a take's features (``motionkit features``): each
    run's fit-grid frames, its rows in the concatenated features and their time span."""
    rows, r0 = [], 0
    for (s, e), x, t in zip(derived.runs, derived.features, derived.feature_time_s, strict=True):
        span = [float(t[0]), float(t[-1])] if len(t) else []
        rows.append({"frames": [s, e], "rows": [r0, r0 + len(x)], "time_s": span})
        r0 += len(x)
    return {
        "take_uid": arrays["take_uid"],
        "fps": FEATURE_FPS,
        "fit_fps": arrays["fps"],
        "variant": variant,
        "body_model": arrays["body_model"],
        "runs": rows,
    }
