"""Procedural body motion for synthetic takes: a wearer who walks, turns, stops, leans, crouches and
steps sideways or back, and bystanders who walk around (close to the wearer, or across the line
between the wearer and a camera).

Motion is integrated on a control grid (``CONTROL_HZ``) in the Ego-Exo4D world (z up), turned into
SMPL-X parameters, and grounded so that the lowest foot point touches the floor.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from scipy.ndimage import gaussian_filter1d

from motionkit.body.model import BodyModel
from motionkit.conventions import R_YUP_TO_ZUP, SMPLX_FOOT_KEYPOINTS, SMPLX_JOINT_NAMES
from motionkit.geometry.rotations import axis_rotation, matrix_to_rotvec
from motionkit.synthetic.scenarios import outside_footprint

CONTROL_HZ = 120.0  # a multiple of 30 so that every take frame is a control sample
J = {n: i for i, n in enumerate(SMPLX_JOINT_NAMES)}
FOOT_POINTS = (J["left_ankle"], J["right_ankle"], *SMPLX_FOOT_KEYPOINTS)


@dataclass
class Controls:
    """Per-sample control signals ``(N,)`` (positions ``(N, 2)``) on the control grid."""

    t: np.ndarray  # seconds (take time)
    xy: np.ndarray  # pelvis ground position, world metres
    heading: np.ndarray  # facing direction angle in the world xy plane (rad, from +x)
    gait_phase: np.ndarray  # rad
    walk_amp: np.ndarray  # 0..1
    crouch: np.ndarray  # 0..1
    pitch: np.ndarray  # spine forward lean (rad)
    roll: np.ndarray  # spine sideways lean (rad, + = to the left)
    head_yaw: np.ndarray  # rad
    labels: list[tuple[float, float, str]]  # (start_s, end_s, activity)
    lift: np.ndarray | None = None  # pelvis raised above the grounded height (m): jumps
    reach: np.ndarray | None = None  # 0..1: the right arm reaches forward and up
    kick: np.ndarray | None = None  # 0..1: the right leg swings forward


@dataclass
class BodySequence:
    """SMPL-X parameters and joints of one person on a time grid (world, z up)."""

    t: np.ndarray  # (N,) seconds
    betas: np.ndarray  # (10,)
    global_orient: np.ndarray  # (N, 3) axis-angle
    body_pose: np.ndarray  # (N, 21, 3) axis-angle
    transl: np.ndarray  # (N, 3)
    joints: np.ndarray  # (N, 76, 3): 55 joints + 21 vertex keypoints
    T_world_head: np.ndarray  # (N, 4, 4) global transform of the head joint
    global_rotations: np.ndarray  # (N, 55, 3, 3) float32 world rotation of every joint
    labels: list[tuple[float, float, str]]


def _wrap(a):
    return (a + np.pi) % (2 * np.pi) - np.pi


def _steer(pos, heading, target, dt, max_rate):
    want = np.arctan2(target[1] - pos[1], target[0] - pos[0])
    d = _wrap(want - heading)
    return heading + np.clip(d, -max_rate * dt, max_rate * dt), abs(d)


BASIC_ACTIVITIES = ("walk", "turn", "stop", "lean", "crouch", "side_step", "back_step")
EXTENDED_ACTIVITIES = BASIC_ACTIVITIES + ("jog", "bend", "sit", "jump", "reach")


# activities that only scenarios use (synthetic.scenarios): their durations are drawn apart from the
# others so that the activity scripts of the generic scene do not change with them
SCENARIO_DURATIONS_S = {"spin": (0.9, 1.5), "kick": (0.8, 1.2), "compress": (4.0, 8.0)}
POSTURES = {"stand": (0.0, 0.0), "sit": (1.0, -0.3), "kneel": (1.0, 0.3)}  # held (crouch, pitch)
MOVING = ("walk", "jog", "side_step", "back_step")


def wearer_controls(
    rng: np.random.Generator,
    t: np.ndarray,
    center: np.ndarray,
    radius: float,
    activities=BASIC_ACTIVITIES,
    posture: str = "stand",
) -> Controls:
    """A varied activity script for the camera wearer inside a disc (``center``, ``radius``), drawn
    from ``activities``: a tuple drawn uniformly with extra walking (``BASIC_ACTIVITIES``, or
    ``EXTENDED_ACTIVITIES`` with jogging, bending, sitting down and standing up, jumping and
    reaching), or a dict name -> weight (scenarios; also ``spin``, ``kick`` and ``compress``: chest
    compressions). ``posture`` (``POSTURES``): ``sit`` or ``kneel`` is held through the take and
    nobody walks."""
    n = len(t)
    dt = 1.0 / CONTROL_HZ
    xy = np.zeros((n, 2))
    heading = np.zeros(n)
    speed_fwd = np.zeros(n)
    speed_side = np.zeros(n)
    crouch = np.zeros(n)
    pitch = np.zeros(n)
    roll = np.zeros(n)
    labels = []
    pos = center + rng.uniform(-0.3, 0.3, 2)
    h = rng.uniform(-np.pi, np.pi)
    i = 0
    weighted = isinstance(activities, dict)
    if weighted:
        acts = list(activities)
        p_act = np.array([activities[a] for a in acts], float)
        p_act /= p_act.sum()
    else:
        acts = [*activities, "walk", "walk"]
    lift = np.zeros(n)
    reach = np.zeros(n)
    kick = np.zeros(n)
    held_crouch, held_pitch = POSTURES[posture]
    first = True
    while i < n:
        if weighted:
            act = "walk" if first and posture == "stand" else acts[rng.choice(len(acts), p=p_act)]
        else:
            act = "walk" if first else acts[rng.integers(len(acts))]
        first = False
        if act in SCENARIO_DURATIONS_S:
            dur = rng.uniform(*SCENARIO_DURATIONS_S[act])
            spin_by = rng.choice([-1, 1]) * 2 * np.pi
        else:
            dur = {
                "walk": rng.uniform(2.5, 4.5),
                "turn": rng.uniform(1.2, 2.2),
                "stop": rng.uniform(0.8, 1.6),
                "lean": rng.uniform(2.0, 3.0),
                "crouch": rng.uniform(2.2, 3.2),
                "side_step": rng.uniform(1.2, 1.8),
                "back_step": rng.uniform(1.0, 1.6),
                "jog": rng.uniform(2.0, 3.5),
                "bend": rng.uniform(2.0, 3.0),
                "sit": rng.uniform(3.0, 4.5),
                "jump": rng.uniform(1.0, 1.6),
                "reach": rng.uniform(1.8, 2.6),
            }[act]
        m = min(n - i, int(round(dur * CONTROL_HZ)))
        labels.append((t[i], t[min(i + m, n - 1)], act))
        target = center + rng.uniform(-1, 1, 2) * radius * 0.8
        turn_by = rng.choice([-1, 1]) * rng.uniform(np.pi / 2, np.pi)
        side = rng.choice([-1, 1])
        lean_pitch = rng.uniform(0.3, 0.6)
        lean_roll = rng.choice([-1, 1]) * rng.uniform(0.0, 0.25)
        bend_pitch = rng.uniform(0.9, 1.3)
        jump_h = rng.uniform(0.15, 0.3)
        for k in range(m):
            u = k / max(m - 1, 1)
            bell = np.sin(np.pi * u) ** 2
            if act == "walk":
                h, _ = _steer(pos, h, target, dt, np.deg2rad(100))
                v = 1.2 * min(1.0, np.linalg.norm(target - pos) / 0.5)
                speed_fwd[i] = v
            elif act == "turn":
                h += turn_by / m
            elif act == "lean":
                pitch[i] = lean_pitch * bell
                roll[i] = lean_roll * bell
            elif act == "crouch":
                crouch[i] = min(1.0, 1.6 * bell)
            elif act == "side_step":
                # step toward the centre side if near the edge
                to_c = center - pos
                sd = (
                    side
                    if np.linalg.norm(to_c) < 0.7 * radius
                    else (np.sign(np.cos(h) * to_c[1] - np.sin(h) * to_c[0]) or 1.0)
                )
                speed_side[i] = 0.5 * sd * np.sin(np.pi * u)
            elif act == "back_step":
                speed_fwd[i] = -0.45 * np.sin(np.pi * u) if np.linalg.norm(pos - center) < 0.8 * radius else 0.0
            elif act == "jog":
                h, _ = _steer(pos, h, target, dt, np.deg2rad(120))
                speed_fwd[i] = 2.6 * min(1.0, np.linalg.norm(target - pos) / 0.8)
            elif act == "bend":  # bend down to the floor and back up
                pitch[i] = bend_pitch * bell
                crouch[i] = 0.25 * bell
            elif act == "sit":  # sit down (deep, thighs level), stay, stand up
                crouch[i] = min(1.0, 1.8 * bell)
                pitch[i] = 0.3 * bell
            elif act == "jump":  # a crouch, one hop, a landing crouch
                lift[i] = jump_h * max(0.0, np.sin(2 * np.pi * u))
                crouch[i] = 0.45 * max(0.0, -np.sin(2 * np.pi * u))
            elif act == "reach":
                reach[i] = bell
            elif act == "spin":
                h += spin_by / m
            elif act == "kick":  # the right leg swings forward and back
                kick[i] = bell
            elif act == "compress":  # chest compressions at ~1.8 Hz, arms forward
                pitch[i] = 0.15 * (0.5 - 0.5 * np.cos(2 * np.pi * 1.8 * k / CONTROL_HZ)) * min(1.0, 3 * bell)
                reach[i] = 0.6 * min(1.0, 3 * bell)
            if posture != "stand" and act in MOVING:
                speed_fwd[i] = speed_side[i] = 0.0
            crouch[i] = max(crouch[i], held_crouch)
            pitch[i] += held_pitch
            fwd = np.array([np.cos(h), np.sin(h)])
            left = np.array([-np.sin(h), np.cos(h)])
            pos = pos + dt * (speed_fwd[i] * fwd + speed_side[i] * left)
            xy[i] = pos
            heading[i] = h
            i += 1
    c = _finish_controls(t, xy, heading, speed_fwd, speed_side, crouch, pitch, roll, rng, labels)
    sig = 0.05 * CONTROL_HZ  # jumps, reaches and kicks are quicker than the other controls
    c.lift = gaussian_filter1d(lift, sig, mode="nearest") if lift.any() else None
    c.reach = gaussian_filter1d(reach, sig, mode="nearest") if reach.any() else None
    c.kick = gaussian_filter1d(kick, sig, mode="nearest") if kick.any() else None
    return c


def _finish_controls(t, xy, heading, speed_fwd, speed_side, crouch, pitch, roll, rng, labels) -> Controls:
    sig = 0.12 * CONTROL_HZ  # smooth all controls over ~0.12 s so that segments blend
    heading = gaussian_filter1d(np.unwrap(heading), sig, mode="nearest")
    xy = gaussian_filter1d(xy, sig, axis=0, mode="nearest")
    speed = np.hypot(speed_fwd, speed_side)
    walk_amp = gaussian_filter1d(np.clip(speed / 1.2, 0, 1), sig, mode="nearest")
    stride = 1.3  # metres per gait cycle
    phase = np.cumsum(2 * np.pi * np.maximum(speed, 0.25 * (speed > 0.05)) / stride / CONTROL_HZ)
    phase = gaussian_filter1d(phase, 2, mode="nearest")
    head_yaw = (
        0.35 * np.sin(2 * np.pi * 0.17 * t + rng.uniform(0, 6)) * np.sin(2 * np.pi * 0.05 * t + rng.uniform(0, 6))
    )
    return Controls(
        t,
        xy,
        heading,
        phase,
        walk_amp,
        gaussian_filter1d(crouch, sig, mode="nearest"),
        gaussian_filter1d(pitch, sig, mode="nearest"),
        gaussian_filter1d(roll, sig, mode="nearest"),
        head_yaw,
        labels,
    )


def follower_controls(
    rng: np.random.Generator,
    t: np.ndarray,
    target_fn,
    avoid_xy: np.ndarray,
    max_speed=1.3,
    min_dist: float = 0.7,
    boxes: np.ndarray | None = None,
) -> Controls:
    """A bystander who walks toward ``target_fn(i, pos) -> (2,)``, keeps >= ``min_dist`` metres
    (pelvis to pelvis) from ``avoid_xy (N, 2)`` and stays 0.3 m clear of the footprints of ``boxes
    (K, 7)`` (furniture, ``scenarios.OCCLUDER_COLUMNS``)."""
    n = len(t)
    dt = 1.0 / CONTROL_HZ
    xy = np.zeros((n, 2))
    heading = np.zeros(n)
    speed = np.zeros(n)
    pos = target_fn(0, None) + rng.uniform(-0.2, 0.2, 2)
    h = rng.uniform(-np.pi, np.pi)
    for i in range(n):
        tgt = target_fn(i, pos)
        d = tgt - pos
        dist = np.linalg.norm(d)
        v = min(max_speed, 1.5 * dist) if dist > 0.25 else 0.0
        if v > 0:
            h, err = _steer(pos, h, tgt, dt, np.deg2rad(150))
            v *= max(0.0, np.cos(min(err, np.pi / 2)))
        step = v * dt * np.array([np.cos(h), np.sin(h)])
        new = pos + step
        away = new - avoid_xy[i]
        dn = np.linalg.norm(away)
        if dn < min_dist:  # never walk through the wearer
            new = avoid_xy[i] + away / max(dn, 1e-6) * min_dist
        for b in boxes if boxes is not None else ():
            new = outside_footprint(new, b, margin=0.3)
        speed[i] = np.linalg.norm(new - pos) / dt
        pos = new
        xy[i] = pos
        heading[i] = h
    zeros = np.zeros(n)
    return _finish_controls(t, xy, heading, speed, zeros, zeros, zeros, zeros, rng, [(t[0], t[-1], "walk_around")])


def controls_to_pose(c: Controls) -> tuple[np.ndarray, np.ndarray]:
    """Controls -> (global_orient (N, 3, 3) world, body_pose (N, 21, 3, 3))."""
    n = len(c.t)
    R = np.tile(np.eye(3), (n, 22, 1, 1))
    ph, a = c.gait_phase, c.walk_amp
    cr = c.crouch
    rx = lambda ang: axis_rotation("x", ang)  # noqa: E731
    ry = lambda ang: axis_rotation("y", ang)  # noqa: E731
    rz = lambda ang: axis_rotation("z", ang)  # noqa: E731
    swing = a * 0.42 * np.sin(ph)
    knee_l = a * 0.65 * np.maximum(0, np.sin(ph + 0.9)) ** 1.5 + 0.05 * a
    knee_r = a * 0.65 * np.maximum(0, np.sin(ph + 0.9 + np.pi)) ** 1.5 + 0.05 * a
    R[:, J["left_hip"]] = rx(-swing - 1.25 * cr) @ rz(-0.03 * np.ones(n))
    kick = np.zeros(n) if c.kick is None else c.kick
    R[:, J["right_hip"]] = rx(swing - 1.25 * cr - 1.1 * kick) @ rz(0.03 * np.ones(n))
    R[:, J["left_knee"]] = rx(knee_l + 2.1 * cr)
    R[:, J["right_knee"]] = rx(knee_r + 2.1 * cr)
    R[:, J["left_ankle"]] = rx(-0.2 * knee_l + 0.15 * swing - 0.85 * cr)
    R[:, J["right_ankle"]] = rx(-0.2 * knee_r - 0.15 * swing - 0.85 * cr)
    spine_pitch = c.pitch + 0.35 * cr + 0.04 * a
    for s in ("spine1", "spine2", "spine3"):
        R[:, J[s]] = rx(spine_pitch / 3) @ rz(-c.roll / 3) @ ry(0.05 * a * np.sin(ph) / 3)
    R[:, J["neck"]] = rx(-0.3 * spine_pitch) @ ry(0.4 * c.head_yaw)
    R[:, J["head"]] = rx(-0.2 * spine_pitch + 0.1) @ ry(0.6 * c.head_yaw)
    arm = 0.35 * a * np.sin(ph)
    R[:, J["left_shoulder"]] = rx(arm) @ rz(-np.deg2rad(72) * np.ones(n))
    reach = np.zeros(n) if c.reach is None else c.reach
    R[:, J["right_shoulder"]] = rx(-arm - 0.5 * reach) @ rz(np.deg2rad(72) * (1 - reach)) @ ry(1.3 * reach)
    R[:, J["left_elbow"]] = ry(-(0.35 + 0.25 * a + 0.3 * cr + 0.1 * np.maximum(0, -np.sin(ph))))
    R[:, J["right_elbow"]] = ry((0.35 + 0.25 * a + 0.3 * cr + 0.1 * np.maximum(0, np.sin(ph))) * (1 - 0.8 * reach))
    yaw = c.heading + np.pi / 2  # body +z faces (cos h, sin h) after Rx(+90)
    R[:, 0] = rz(yaw) @ R_YUP_TO_ZUP @ rx(0.25 * cr)
    return R[:, 0], R[:, 1:]


def simulate_body(body: BodyModel, betas: np.ndarray, c: Controls, floor_z: float) -> BodySequence:
    """Forward kinematics of the controls, grounded on the floor ``floor_z`` (world z)."""
    go, bp = controls_to_pose(c)
    dt = body.J_template.dtype
    bt = torch.as_tensor(betas, dtype=dt)
    with torch.no_grad():
        j0 = body.rest_joints(bt)[0].numpy()
        joints, GR = body(bt, torch.as_tensor(go, dtype=dt), torch.as_tensor(bp, dtype=dt), return_transforms=True)
    joints = joints.numpy()
    # place the pelvis over the ground position, then lift so that the lowest foot point is on the floor
    transl = np.zeros((len(c.t), 3))
    transl[:, :2] = c.xy - j0[:2]
    foot_z = joints[:, list(FOOT_POINTS), 2].min(axis=1)
    transl[:, 2] = floor_z + 0.005 - foot_z
    transl[:, 2] = gaussian_filter1d(transl[:, 2], 1.0, mode="nearest")
    if c.lift is not None:
        transl[:, 2] += c.lift
    joints = joints + transl[:, None, :]
    GR = GR.numpy()
    T_head = np.tile(np.eye(4), (len(c.t), 1, 1))
    T_head[:, :3, :3] = GR[:, J["head"]]
    T_head[:, :3, 3] = joints[:, J["head"]]
    return BodySequence(
        t=c.t,
        betas=np.asarray(betas, float),
        global_orient=matrix_to_rotvec(go),
        body_pose=matrix_to_rotvec(bp),
        transl=transl,
        joints=joints,
        T_world_head=T_head,
        global_rotations=GR.astype(np.float32),
        labels=c.labels,
    )
