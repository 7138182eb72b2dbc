"""Several refits side by side on the same takes (``motionkit eval --compare``; docs/eval.md).

Two protocols over methods read by ``data.releases`` (one ``SampledJoints`` per method and take):

* **the SOMA protocol**: the takes common to the annotations and every method (``intersect``), per-joint
  offsets estimated per method on the ``offsets_from`` split, take-averaged PA-MPJPE uncorrected and
  corrected (``table9``), coverage of takes and of the 30 fps video time at each method's native rate
  (``table10``), and the share of segments covered at 20 fps (``figure37``). Every method's offset frames
  are derived the same way from its own skeleton (``skeleton_frames``: the bone into the joint and the
  hip or shoulder axis), since joints-only sources carry no joint rotations;
* **the official Ego-Exo4D body-pose protocol** (``official``): no alignment, world frame; a take's
  annotated frames split into clips at gaps of more than 3 frames, clips shorter than 120 frames
  dropped; MPJPE summed over every (frame, joint) with an annotation and divided by their count, in cm;
  MPJVE over consecutive scored frames less than 10 frames apart, in m/s; per scenario and overall.
"""

from __future__ import annotations

import csv
import json
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from motionkit.common.errors import DataError
from motionkit.conventions import TAKE_FPS
from motionkit.data.egoexo4d import EgoExoDataset
from motionkit.data.releases import FORMATS, SampledJoints, read_release, release_entries
from motionkit.eval.protocol import (
    SEGMENT_FPS,
    SEGMENT_S,
    EvalConfig,
    FitSamples,
    estimate_offsets,
    match_to_annotation,
    score_take,
    segment_coverage,
    soma_windows,
    summarize,
    video_time_coverage,
)

COVERAGE_THRESHOLDS = tuple(np.round(np.arange(0.0, 1.0001, 0.05), 2))
OFFICIAL_MIN_CLIP = 120  # frames (4 s at 30 fps)
OFFICIAL_CLIP_GAP = 3  # frames: a larger step starts a new clip
OFFICIAL_VELOCITY_GAP = 10  # frames: velocities only between scored frames closer than this
# scenario of a take by its name, as the official evaluation names them; anything else is "other"
SCENARIOS = {
    "basketball": ("basketball",),
    "bike": ("bike",),
    "cooking": ("cooking",),
    "dance": ("dance",),
    "soccer": ("soccer",),
    "health": ("cpr", "covid"),
    "bouldering": ("bouldering",),
    "music": ("piano", "violin", "guitar", "music"),
}

# each COCO keypoint's frame: the bone into it, (base, tip), each a keypoint or the midpoint of a pair
_HEAD, _TORSO = ((5, 6), 0), ((11, 12), (5, 6))
_BONES = {0: _HEAD, 1: _HEAD, 2: _HEAD, 3: _HEAD, 4: _HEAD, 5: _TORSO, 6: _TORSO, 7: (5, 7), 8: (6, 8), 9: (7, 9),
          10: (8, 10), 11: _TORSO, 12: _TORSO, 13: (11, 13), 14: (12, 14), 15: (13, 15), 16: (14, 16)}  # fmt: skip
_LR_AXIS = {c: ((5, 6) if c <= 10 else (11, 12)) for c in range(17)}


@dataclass(frozen=True)
class Method:
    """A method to score: its name in the tables, its release format (``data.releases.FORMATS``) and path."""

    name: str
    fmt: str
    path: Path

    @classmethod
    def parse(cls, text: str) -> Method:
        """``NAME=FORMAT:PATH`` (``--compare``)."""
        name, sep, rest = text.partition("=")
        fmt, sep2, path = rest.partition(":")
        if not (sep and sep2 and name and path):
            raise ValueError(f"--compare takes NAME=FORMAT:PATH; got {text!r}")
        if fmt not in FORMATS:
            raise ValueError(f"--compare {text!r}: unknown format {fmt!r}; formats: {', '.join(FORMATS)}")
        return cls(name, fmt, Path(path))


def _point(J: np.ndarray, spec) -> np.ndarray:
    """A keypoint ``int`` or the midpoint of a pair ``(a, b)`` of ``J (N, 17, 3)``."""
    return J[:, spec] if isinstance(spec, int) else 0.5 * (J[:, spec[0]] + J[:, spec[1]])


def skeleton_frames(joints: np.ndarray) -> np.ndarray:
    """``(N, 17, 3, 3)`` offset frames from a COCO-17 skeleton ``(N, 17, 3)`` alone: x along the bone into
    the keypoint (the torso from mid-hip to mid-shoulder for shoulders and hips, mid-shoulder to nose for
    the face), z across it from the hip (legs, hips) or shoulder (arms, shoulders, face) axis, y = z x x;
    NaN where the skeleton cannot tell."""
    J = np.asarray(joints, dtype=np.float64)
    out = np.full((len(J), 17, 3, 3), np.nan)
    for c, (base, tip) in _BONES.items():
        x = _point(J, tip) - _point(J, base)
        left, right = _LR_AXIS[c]
        lr = J[:, left] - J[:, right]
        with np.errstate(invalid="ignore", divide="ignore"):
            x = x / np.linalg.norm(x, axis=-1, keepdims=True)
            z = np.cross(x, lr)
            z = z / np.linalg.norm(z, axis=-1, keepdims=True)
        out[:, c] = np.stack([x, np.cross(z, x), z], axis=-1)
    return out


def scenario_of(take_name: str) -> str:
    name = take_name.lower()
    return next((s for s, keys in SCENARIOS.items() if any(k in name for k in keys)), "other")


def read_segments(path: Path) -> dict[str, list[tuple[float, float]]]:
    """``take_uid -> [(start_s, end_s), ...]`` from a CSV (header ``take_uid,start_s,end_s``) or a JSON list
    of objects with those keys."""
    path = Path(path)
    if not path.is_file():
        raise DataError(path, "segments file not found")
    try:
        if path.suffix.lower() == ".json":
            rows = json.loads(path.read_text())
        else:
            with open(path, newline="") as fh:
                rows = list(csv.DictReader(fh))
        out: dict[str, list[tuple[float, float]]] = {}
        for r in rows:
            a, b = float(r["start_s"]), float(r["end_s"])
            if not b > a:
                raise ValueError(f"segment {r} ends before it starts")
            out.setdefault(str(r["take_uid"]), []).append((a, b))
    except (KeyError, TypeError, ValueError, json.JSONDecodeError) as exc:
        raise DataError(path, f"segments must be rows of take_uid, start_s, end_s ({exc})") from None
    return out


def official_clip_frames(
    frames: np.ndarray, min_clip: int = OFFICIAL_MIN_CLIP, gap: int = OFFICIAL_CLIP_GAP
) -> np.ndarray:
    """The annotated frames the official evaluation keeps: sorted frames cut into clips where the step
    exceeds ``gap``; a clip counts when ``last - first + gap >= min_clip``."""
    f = np.sort(np.asarray(frames, dtype=np.int64))
    if not len(f):
        return f
    cuts = np.flatnonzero(np.diff(f) > gap) + 1
    keep = [c for c in np.split(f, cuts) if c[-1] - c[0] + gap >= min_clip]
    return np.concatenate(keep) if keep else f[:0]


def official_sums(frames: np.ndarray, pred: np.ndarray, gt: np.ndarray) -> dict[str, float]:
    """MPJPE and MPJVE sums and counts over the kept ``frames (K,)`` of a take: ``pred``, ``gt (K, 17, 3)``
    (metres; NaN gt joints are not annotated, NaN pred joints are not predicted and not counted)."""
    err = np.linalg.norm(pred - gt, axis=-1)  # (K, 17)
    ok = np.isfinite(err)
    sums = {"pe": float(err[ok].sum()), "pe_n": int(ok.sum()), "ve": 0.0, "ve_n": 0,
            "missed": int((np.isfinite(gt[..., 0]) & ~np.isfinite(pred[..., 0])).sum())}  # fmt: skip
    if len(frames) > 1:
        dt = np.diff(frames)
        near = dt < OFFICIAL_VELOCITY_GAP
        verr = np.linalg.norm((gt[1:] - gt[:-1]) - (pred[1:] - pred[:-1]), axis=-1) * (TAKE_FPS / dt)[:, None]
        vok = np.isfinite(verr) & near[:, None]
        sums["ve"], sums["ve_n"] = float(verr[vok].sum()), int(vok.sum())
    return sums


def _official_report(rows: list[tuple[str, dict]]) -> dict:
    """Per scenario and overall: MPJPE (cm) and MPJVE (m/s) from per-take sums ``(scenario, sums)``."""

    def finish(group):
        pe, pe_n = sum(s["pe"] for s in group), sum(s["pe_n"] for s in group)
        ve, ve_n = sum(s["ve"] for s in group), sum(s["ve_n"] for s in group)
        return {"mpjpe_cm": 100 * pe / pe_n if pe_n else None, "mpjve": ve / ve_n if ve_n else None,
                "n_joint_observations": pe_n, "n_velocity_observations": ve_n,
                "n_not_predicted": sum(s["missed"] for s in group)}  # fmt: skip

    per = {}
    for scen in sorted({s for s, _ in rows}):
        per[scen] = finish([x for s, x in rows if s == scen])
    overall = finish([x for _, x in rows])
    return {**{k: overall[k] for k in ("mpjpe_cm", "mpjve", "n_joint_observations")}, "overall": overall,
            "per_scenario": per}  # fmt: skip


@dataclass
class _Take:
    uid: str
    name: str
    split: str
    n_frames: int
    ann: object


def compare(
    root: str | Path,
    methods: list[Method],
    *,
    split: str = "val",
    offsets_from: str | None = "train",
    cfg: EvalConfig | None = None,
    body_model: str | None = None,
    intersect: bool = True,
    segments: dict[str, list[tuple[float, float]]] | None = None,
) -> dict:
    """The comparison report (``eval.json``): ``methods`` (name -> split -> report, as a single
    method's), ``table9``, ``table10``, ``figure37``, ``official``, ``takes`` (the intersection's counts).
    See the module docstring."""
    if len({m.name for m in methods}) != len(methods):
        raise ValueError(f"method names must differ: {[m.name for m in methods]}")
    cfg = cfg or EvalConfig()
    ds = EgoExoDataset(root)
    splits = [split] + ([offsets_from] if offsets_from and offsets_from != split else [])
    takes: dict[str, list[_Take]] = {}
    for s in splits:
        takes[s] = []
        for info in ds.takes(s):
            if info.excluded_scenario:
                continue
            ann = ds.take(info.take_uid).body_annotation("annotation")
            if ann is not None and len(ann.frames):
                takes[s].append(_Take(info.take_uid, info.take_name, s, info.n_frames, ann))
    samples: dict[str, dict[str, SampledJoints]] = {m.name: {} for m in methods}
    unreadable: dict[str, list[str]] = {m.name: [] for m in methods}
    for m in methods:
        cache: dict = {}
        for s in splits:
            for t in takes[s]:
                try:
                    got = read_release(m.fmt, m.path, t.uid, t.name, body_model, cache)
                except DataError as exc:  # one take's damaged file: the method's other takes still count
                    if exc.path is None or Path(exc.path) == Path(m.path):
                        raise
                    warnings.warn(f"{m.name}: {exc}; left out", stacklevel=2)
                    unreadable[m.name].append(exc.path)
                    continue
                if got is not None:
                    samples[m.name][t.uid] = got
        if not samples[m.name]:
            raise DataError(m.path, f"{m.name} ({m.fmt}): no take of the annotated {'/'.join(splits)} takes")
    known = {x for info in ds.takes() for x in (info.take_uid, info.take_name)}
    unmatched = {m.name: [e for e in release_entries(m.fmt, m.path) if e not in known] for m in methods}
    for name, entries in unmatched.items():
        if entries:
            what = f"{len(entries)} entr{'y' if len(entries) == 1 else 'ies'}"
            warnings.warn(f"{name}: {what} match no take of {ds.root / 'takes.json'} and are skipped: "
                          f"{', '.join(entries[:5])}", stacklevel=2)  # fmt: skip
    counts, chosen = {"unmatched": unmatched, "unreadable": unreadable}, {}
    for s in splits:
        have = [t for t in takes[s] if all(t.uid in samples[m.name] for m in methods)]
        if intersect and takes[s] and not have and s == split:
            raise DataError(methods[0].path, f"the methods share no annotated {s} take: nothing to compare "
                                             "(--no-intersect scores each on its own takes)")  # fmt: skip
        chosen[s] = have if intersect else takes[s]
        if s != split and not chosen[s]:  # the offsets' split: the scores stand without them
            warnings.warn(f"the methods share no annotated {s} take to estimate offsets from: no corrected figures",
                          stacklevel=2)  # fmt: skip
        counts[s] = {"annotated": len(takes[s]), "intersection": len(have),
                     **{m.name: sum(t.uid in samples[m.name] for t in takes[s]) for m in methods}}  # fmt: skip

    reports: dict[str, dict] = {m.name: {} for m in methods}
    official: dict[str, dict] = {m.name: {} for m in methods}
    seg_native: dict[str, list[float]] = {m.name: [] for m in methods}
    seg_interp: dict[str, list[float]] = {m.name: [] for m in methods}
    for m in methods:
        matches = {}
        for s in splits:
            for t in chosen[s]:
                sj = samples[m.name].get(t.uid)
                if sj is None:
                    continue
                fit = FitSamples(sj.time_s, sj.joints, sj.valid, skeleton_frames(sj.joints))
                matches[t.uid] = (t, sj, match_to_annotation(fit, t.ann.frames, t.ann.joints3d, t.ann.num_views, cfg,
                                                            sj.native_fps))  # fmt: skip
        offsets = None
        if offsets_from:
            train = [mt for (t, _, mt) in matches.values() if t.split == offsets_from]
            if train:
                offsets = estimate_offsets(train, cfg.offset_frame)
            elif chosen[offsets_from]:
                warnings.warn(f"{m.name}: no {offsets_from} take to estimate offsets: no corrected figures",
                              stacklevel=2)  # fmt: skip
        for s in splits:
            scores, rows = [], []
            for t in chosen[s]:
                if t.uid not in matches:
                    continue
                _, sj, mt = matches[t.uid]
                cov = video_time_coverage(sj.time_s, sj.valid, t.n_frames, sj.native_fps)
                scores.append(score_take(t.uid, mt, cfg, offsets, cov))
                kept = official_clip_frames(t.ann.frames)
                idx = np.searchsorted(mt.frames, kept)
                rows.append((scenario_of(t.name), official_sums(kept, mt.pred[idx], mt.gt[idx])))
                if s == split:
                    segs = (segments or {}).get(t.uid) or soma_windows(t.n_frames / TAKE_FPS)
                    seg_native[m.name] += segment_coverage(sj.time_s, sj.valid, segs, sj.native_fps, SEGMENT_FPS,
                                                           "native").tolist()  # fmt: skip
                    seg_interp[m.name] += segment_coverage(sj.time_s, sj.valid, segs, sj.native_fps, SEGMENT_FPS,
                                                           "interpolated").tolist()  # fmt: skip
            rep = summarize(scores, cfg, s, m.name)
            rep["native_fps"] = float(np.median([samples[m.name][t.uid].native_fps for t in chosen[s]
                                                 if t.uid in samples[m.name]] or [np.nan]))  # fmt: skip
            rep["source"] = {"format": m.fmt, "path": str(m.path)}
            rep["offsets"] = {"from_split": offsets_from if offsets is not None else None,
                              "frame": f"skeleton ({cfg.offset_frame})",
                              "values_m": None if offsets is None else offsets.tolist()}  # fmt: skip
            reports[m.name][s] = rep
            official[m.name][s] = _official_report(rows)
    return {
        "protocol": {**cfg.to_dict(), "offset_frames": "from each method's own skeleton (skeleton_frames)",
                     "intersect": intersect, "mapping": "SMPL-X sources: conventions.SMPLX_TO_COCO17 "
                     "(face: vertex keypoints; limbs: joint centres); Human Meshes: BODY_25 -> COCO-17"},
        "takes": counts,
        "methods": reports,
        "table9": _table9(methods, reports, split, offsets_from),
        "table10": {s: {m.name: {"takes": reports[m.name][s]["coverage"]["takes"],
                                 "video_time": reports[m.name][s]["coverage"]["video_time"],
                                 "native_fps": reports[m.name][s]["native_fps"]} for m in methods}
                    for s in splits},
        "figure37": {"thresholds": list(COVERAGE_THRESHOLDS), "segment_fps": SEGMENT_FPS,
                     "segments": "--segments file" if segments else f"{SEGMENT_S} s windows",
                     **{m.name: {"native": _at_least(seg_native[m.name]), "interpolated": _at_least(seg_interp[m.name]),
                                 "n_segments": len(seg_native[m.name])} for m in methods}},
        "official": official,
    }  # fmt: skip


def _at_least(shares: list[float]) -> list[float | None]:
    """Share of segments with at least x of their target points covered, for each threshold x."""
    a = np.asarray(shares)
    return [float(np.mean(a >= x - 1e-9)) if len(a) else None for x in COVERAGE_THRESHOLDS]


def _table9(methods: list[Method], reports: dict, split: str, offsets_from: str | None) -> dict:
    """Rows: methods (then the difference of the first method and the first compared one); columns:
    split x uncorrected / corrected take-averaged PA-MPJPE (mm)."""
    cols = [split] + ([offsets_from] if offsets_from and offsets_from != split else [])
    rows = {}
    for m in methods:
        rows[m.name] = {s: {k: reports[m.name][s]["pa_mpjpe"][k]["take_mean"] for k in ("uncorrected", "corrected")}
                        for s in cols}  # fmt: skip
    out = {"columns": cols, "rows": rows}
    if len(methods) >= 2:
        a, b = methods[0].name, methods[1].name

        def diff(x, y):
            return None if x is None or y is None else x - y

        out["delta"] = {"of": a, "minus": b, **{s: {k: diff(rows[a][s][k], rows[b][s][k])
                                                     for k in ("uncorrected", "corrected")} for s in cols}}  # fmt: skip
    return out
