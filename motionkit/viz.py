"""Plots people would rather look at than read. Matplotlib, Agg backend, PNG files."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from motionkit.common.files import atomic_path  # noqa: E402
from motionkit.conventions import COCO17_LIMBS  # noqa: E402
from motionkit.data.fitted_body import fitted_rig  # noqa: E402
from motionkit.geometry.interpolation import valid_runs  # noqa: E402
from motionkit.motion.codes import CODES, EventSet  # noqa: E402
from motionkit.motion.trajectory import Trajectory  # noqa: E402


def save_figure(fig, path: str | Path) -> Path:
    """Write ``fig`` as a PNG atomically and close it."""
    path = Path(path)
    with atomic_path(path, suffix=".png") as tmp:
        fig.savefig(tmp, dpi=110, bbox_inches="tight", format="png")
    plt.close(fig)
    return path


def plot_trajectory_events(traj: Trajectory, events: EventSet, path: str | Path, title: str = "") -> Path:
    """Top-down trajectory (anchored frame, x = initial left, z = initial forward) with event
    markers, and a timeline of the QA-eligible and other events per code; where the event set knows
    the fit's trust (``EventSet.root_trusted``), the stretches whose torso is untrusted are drawn red on
    the path and shaded on the timeline."""
    fig, (ax, tl) = plt.subplots(1, 2, figsize=(13, 5.5), gridspec_kw={"width_ratios": [1, 1.4]})
    p = traj.pos_m
    ax.plot(p[:, 0], p[:, 2], "-", color="0.3", lw=1.5)
    untrusted = [] if events.root_trusted is None else valid_runs(~np.asarray(events.root_trusted, bool))
    for k, (a, b) in enumerate(untrusted):
        seg = p[max(a - 1, 0) : b + 1]
        ax.plot(seg[:, 0], seg[:, 2], "-", color="red", lw=2.5, alpha=0.7, label=None if k else "torso untrusted")
    ax.plot(p[0, 0], p[0, 2], "o", color="green", ms=8, label="start")
    ax.plot(p[-1, 0], p[-1, 2], "s", color="red", ms=7, label="end")
    colors = {c: f"C{i}" for i, c in enumerate(CODES)}
    for e in events.events:
        if e.spatial_category == "no_action":
            continue
        ax.plot(p[e.start_frame, 0], p[e.start_frame, 2], "^", color=colors[e.code], ms=6, alpha=0.8)
    ax.set_xlabel("x: initial left (m)")
    ax.set_ylabel("z: initial forward (m)")
    ax.invert_xaxis()  # seen from above with forward up: the subject's left is on the left
    ax.set_aspect("equal", adjustable="datalim")
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    ax.set_title("trajectory (top-down, anchored at frame 0)")
    fps = events.fps
    for k, (a, b) in enumerate(untrusted):
        tl.axvspan(a / fps, b / fps, color="red", alpha=0.12, lw=0, label=None if k else "torso untrusted")
    if untrusted:
        tl.legend(loc="lower right", fontsize=8)
    for row, code in enumerate(CODES):
        for e in events.events:
            if e.code != code or e.spatial_category == "no_action":
                continue
            t0, t1 = e.start_frame / fps, e.end_frame / fps
            tl.barh(
                row, t1 - t0, left=t0, color=colors[code], alpha=0.9 if e.qa_eligible else 0.35, edgecolor="k", lw=0.5
            )
            tl.text((t0 + t1) / 2, row, f"{e.intensity:+d}", ha="center", va="center", fontsize=7)
    tl.set_yticks(range(len(CODES)), CODES)
    tl.set_xlim(0, events.num_frames / fps)
    tl.set_xlabel("time (s)")
    tl.invert_yaxis()
    tl.grid(axis="x", alpha=0.3)
    tl.set_title("events per code (faded: not QA-eligible; numbers: intensity in units)")
    if title:
        fig.suptitle(title)
    return save_figure(fig, path)


def empty_plot(path: str | Path, message: str) -> Path:
    fig, ax = plt.subplots(figsize=(6, 2))
    ax.axis("off")
    ax.text(0.5, 0.5, message, ha="center", va="center")
    return save_figure(fig, path)


def plot_association(result, obs, m: int, path: str | Path) -> Path:
    """One processed frame: every view's detections (grey), the projected Aria anchor (red star) and
    the selected wearer box (green) with its reason."""

    names = json.loads(result.group_attrs["association"]["camera_names"])
    sizes = result["cameras/size"]
    frame = int(result["association/frame_index"][m])
    V = len(names)
    cols = min(V, 2)
    rows = (V + cols - 1) // cols
    fig, axs = plt.subplots(rows, cols, figsize=(7 * cols, 4.2 * rows), squeeze=False)
    for v, ax in enumerate(axs.flat):
        if v >= V:
            ax.axis("off")
            continue
        w, h = sizes[v]
        ax.set_xlim(0, w)
        ax.set_ylim(h, 0)
        ax.set_aspect("equal")
        ax.set_facecolor("0.95")
        if names[v] in obs.camera_names:
            sel = (obs.frame_index == frame) & (obs.camera == obs.camera_names.index(names[v]))
            for b, k in zip(obs.box[sel], obs.keypoints[sel], strict=True):
                ax.add_patch(plt.Rectangle(b[:2], b[2] - b[0], b[3] - b[1], fill=False, color="0.5", lw=1))
                ax.plot(k[:, 0], k[:, 1], ".", color="0.5", ms=3)
        box = result["association/box"][m, v]
        reason = result["association/reason"][m, v]
        if np.isfinite(box).all():
            ax.add_patch(plt.Rectangle(box[:2], box[2] - box[0], box[3] - box[1], fill=False, color="green", lw=2.5))
            kp = result["association/keypoints"][m, v]
            ax.plot(kp[:, 0], kp[:, 1], "o", color="green", ms=3)
        a = result["association/anchor_px"][m, v]
        if np.isfinite(a).all():
            ax.plot(a[0], a[1], "*", color="red", ms=14, label="Aria head anchor")
        ax.set_title(f"{names[v]}: {reason} (tau {result['association/tau_px'][v]:.0f} px)", fontsize=10)
        ax.tick_params(labelsize=7)
    fig.suptitle(f"{result.attrs.get('take_name', '')} frame {frame} (30 fps): grey = detections, green = wearer")
    return save_figure(fig, path)


def person_window(points: np.ndarray, width: int, height: int, margin: float = 0.25, min_size: float = 64.0):
    """The view window around a person: ``points (..., 2)`` pixels (NaN ignored) -> ``(x0, x1, y0, y1)``,
    a square around the points' box, ``margin`` of the box's longer side beyond it on each side (at least
    ``min_size`` pixels across), kept inside the ``width x height`` image; the whole image when no point
    is finite or inside it."""
    p = points.reshape(-1, 2)
    p = p[np.isfinite(p).all(1) & (p[:, 0] >= 0) & (p[:, 0] < width) & (p[:, 1] >= 0) & (p[:, 1] < height)]
    if not len(p):
        return 0.0, float(width), 0.0, float(height)
    lo, hi = p.min(0), p.max(0)
    half = max(float((hi - lo).max()) * (0.5 + margin), min_size / 2)
    mid = (lo + hi) / 2
    x0, y0 = np.maximum(mid - half, 0.0)
    x1, y1 = np.minimum(mid + half, [width, height])
    return float(x0), float(x1), float(y0), float(y1)


def plot_fit_views(result, path: str | Path, n_frames: int = 3) -> Path:
    """The fitted COCO-17 skeleton reprojected into every view (green) over the observed keypoints
    (orange) for a few frames, through the cameras the fit used (``fit/T_cam_world``); each panel is
    cropped to the person (``person_window``)."""

    rig = fitted_rig(result)
    names = rig.names
    valid = np.flatnonzero(result["valid"])
    if len(valid) == 0:
        return empty_plot(path, "no valid frame")
    picks = valid[np.linspace(0, len(valid) - 1, n_frames + 2).astype(int)[1:-1]]
    V = len(rig)
    fig, axs = plt.subplots(n_frames, V, figsize=(3.6 * V, 2.4 * n_frames), squeeze=False)
    J = result["joints/coco17"]
    proj = rig.project(J[picks])  # (n, V, 17, 2)
    for i, m in enumerate(picks):
        for v in range(V):
            ax = axs[i, v]
            ob = result["association/keypoints"][m, v]
            x0, x1, y0, y1 = person_window(np.concatenate([proj[i, v], ob]), rig[v].width, rig[v].height)
            ax.set_xlim(x0, x1)
            ax.set_ylim(y1, y0)
            ax.set_aspect("equal")
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_facecolor("0.93")
            ax.plot(ob[:, 0], ob[:, 1], "o", color="tab:orange", ms=2.5)
            for a, b in COCO17_LIMBS:
                ax.plot(proj[i, v, [a, b], 0], proj[i, v, [a, b], 1], "-", color="tab:green", lw=1.2)
            if i == 0:
                ax.set_title(names[v], fontsize=9)
            if v == 0:
                ax.set_ylabel(f"t = {result['time_s'][m]:.2f} s", fontsize=8)
    fig.suptitle("fitted skeleton (green) over the selected 2D keypoints (orange), each view cropped to the person")
    return save_figure(fig, path)


def plot_topdown(result, path: str | Path) -> Path:
    """Top-down (world x-y) view of the fitted root trajectory, the Aria head anchor and the cameras."""

    fig, ax = plt.subplots(figsize=(6.5, 6.5))
    pel = result["joints/smplx"][:, 0]
    ok = np.isfinite(pel).all(-1)
    sc = ax.scatter(pel[ok, 0], pel[ok, 1], c=result["time_s"][ok], s=4, cmap="viridis", label="pelvis (fit)")
    cpf = result["aria/position"]
    ax.plot(cpf[:, 0], cpf[:, 1], "-", color="tab:red", lw=0.8, alpha=0.6, label="Aria head anchor")
    for T, name in zip(
        result["cameras/T_world_cam"], __import__("json").loads(result.group_attrs["cameras"]["names"]), strict=True
    ):
        c, z = T[:3, 3], T[:3, 2]
        ax.plot(c[0], c[1], "k^", ms=8)
        ax.arrow(c[0], c[1], 0.6 * z[0], 0.6 * z[1], head_width=0.12, color="k")
        ax.text(c[0], c[1], f" {name}", fontsize=8)
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("world x (m)")
    ax.set_ylabel("world y (m)")
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    fig.colorbar(sc, ax=ax, label="time (s)", shrink=0.7)
    ax.set_title(f"{result.attrs.get('take_name', '')}: root trajectory and cameras (top-down)")
    return save_figure(fig, path)
