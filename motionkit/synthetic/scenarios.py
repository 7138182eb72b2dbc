"""Scenario presets of the synthetic world, modelled on Ego-Exo4D's scenarios (docs/synthetic.md).

A scenario sets the scene (camera placement, furniture that hides parts of the wearer, other people)
and the wearer's activity script; the difficulty preset (``clean | realistic | hard``) sets the
detector, annotation and calibration errors. The two combine: ``synth --scenario cooking --preset
realistic``.

Occluders are boxes standing on the floor of the world (z up, metres), stored as ``(K, 7)`` rows
``center_x, center_y, center_z, length, width, height, yaw``: ``length`` along the box's own x axis,
turned by ``yaw`` (rad, about world z, from world +x). They are placed from the wearer's starting position
``xy0 (2,)`` and heading ``heading0`` (rad from +x) so that the furniture stands where the activity
happens (a counter in front of the cook, a table in front of a seated patient).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

OCCLUDER_COLUMNS = ("center_x", "center_y", "center_z", "length", "width", "height", "yaw")


@dataclass(frozen=True)
class Scenario:
    """One scenario. ``None`` leaves a setting to the difficulty preset.

    ``task``: the Ego-Exo4D parent task it models (``takes.json``); ``cameras``: static exo GoPros;
    ``camera_radius_m`` / ``camera_height_m``: ring radius and height above the floor of the cameras;
    ``aim_spread_m``: how far from the middle of the scene each camera aims (court cameras cover
    different parts of the court); ``bystanders``: other people, drawn per take in this range;
    ``companion_near_m``: how close a companion comes; ``area_radius_m``: the disc the wearer moves in;
    ``activities``: activity name -> weight (``synthetic.motion``), None for the preset's set;
    ``posture``: ``stand``, ``sit`` or ``kneel`` held through the take (no walking unless standing);
    ``furniture``: the occluder layout (``OCCLUDER_LAYOUTS``); ``variants``: alternative settings, one
    drawn per take (``take_scenario``)."""

    name: str
    task: str
    cameras: int | None = None
    camera_radius_m: tuple[float, float] = (2.5, 5.0)
    camera_height_m: tuple[float, float] = (1.0, 2.0)
    aim_spread_m: float = 0.4
    bystanders: tuple[int, int] | None = None
    companion_near_m: float | None = None
    area_radius_m: float = 1.8
    activities: dict[str, float] | None = None
    posture: str = "stand"
    furniture: str = "none"
    variants: tuple[dict, ...] = ()
    tag: str = ""  # the word in the take name that tells the scenario (eval.compare.scenario_of)


def _box(center_xy: np.ndarray, heading: float, length: float, depth: float, z0: float, z1: float) -> np.ndarray:
    """The box ``(7,)`` (``OCCLUDER_COLUMNS``) with a ``length`` x ``depth`` footprint turned by
    ``heading`` and sides from height ``z0`` to ``z1``."""
    return np.r_[center_xy, 0.5 * (z0 + z1), length, depth, z1 - z0, heading]


def _ahead(xy0: np.ndarray, heading: float, dist: float, side: float = 0.0) -> np.ndarray:
    fwd = np.array([np.cos(heading), np.sin(heading)])
    left = np.array([-np.sin(heading), np.cos(heading)])
    return xy0 + dist * fwd + side * left


def _kitchen(rng, xy0, heading, floor_z, area) -> np.ndarray:
    """A 0.9 m counter in front of the cook and an island behind, both beyond the wearer's disc."""
    d = area + 0.45
    front = _box(_ahead(xy0, heading, d), heading + np.pi / 2, rng.uniform(2.2, 3.0), 0.6, floor_z, floor_z + 0.9)
    back = _box(_ahead(xy0, heading, -d - 0.1), heading + np.pi / 2, rng.uniform(1.6, 2.2), 0.9, floor_z, floor_z + 0.9)
    return np.stack([front, back])


def _table(rng, xy0, heading, floor_z, area) -> np.ndarray:
    """A 0.75 m table in front of a seated person (legs under it)."""
    return _box(_ahead(xy0, heading, 0.55), heading + np.pi / 2, rng.uniform(1.0, 1.4), 0.8, floor_z,
                floor_z + 0.75)[None]  # fmt: skip


def _patient(rng, xy0, heading, floor_z, area) -> np.ndarray:
    """A person lying on the floor in front of the kneeling wearer (CPR) and a kit beside them."""
    patient = _box(_ahead(xy0, heading, 0.5), heading + np.pi / 2, 1.75, 0.5, floor_z, floor_z + 0.3)
    kit = _box(_ahead(xy0, heading, 0.0, rng.choice([-1, 1]) * 0.6), heading, 0.45, 0.3, floor_z, floor_z + 0.35)
    return np.stack([patient, kit])


def _bike(rng, xy0, heading, floor_z, area) -> np.ndarray:
    """A bike on its stand beside the crouching mechanic: wheels and frame (0.1 m wide, 1.1 m tall)."""
    side = rng.choice([-1.0, 1.0])
    frame = _box(_ahead(xy0, heading, 0.55, 0.1 * side), heading + np.pi / 2, 1.75, 0.12, floor_z, floor_z + 1.1)
    stand = _box(_ahead(xy0, heading, 0.55, 0.1 * side), heading, 0.5, 0.5, floor_z, floor_z + 0.25)
    return np.stack([frame, stand])


def _instrument(rng, xy0, heading, floor_z, area) -> np.ndarray:
    """A guitar-sized instrument held in front of the seated player's torso and one arm."""
    return _box(_ahead(xy0, heading, 0.22, rng.choice([-1, 1]) * 0.08), heading, 0.12, 0.45, floor_z + 0.45,
                floor_z + 1.0)[None]  # fmt: skip


OCCLUDER_LAYOUTS = {
    "none": lambda rng, xy0, heading, floor_z, area: np.zeros((0, 7)),
    "kitchen": _kitchen,
    "table": _table,
    "patient": _patient,
    "bike": _bike,
    "instrument": _instrument,
}

SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario("generic", "Synthetic Walkabout"),
        Scenario(
            "cooking", "Cooking", bystanders=(0, 1), area_radius_m=0.6, furniture="kitchen",
            activities={"stop": 3, "reach": 3, "turn": 2, "lean": 2, "bend": 1, "walk": 1, "side_step": 1},
        ),
        Scenario(
            "health", "Health", camera_radius_m=(1.5, 3.0), bystanders=(1, 1), companion_near_m=0.9,
            area_radius_m=0.3,
            variants=(
                {"tag": "covid", "posture": "sit", "furniture": "table",
                 "activities": {"stop": 3, "reach": 3, "lean": 2, "turn": 1}},
                {"tag": "cpr", "posture": "kneel", "furniture": "patient",
                 "activities": {"compress": 4, "stop": 1, "reach": 1}},
            ),
        ),
        Scenario(
            "bike_repair", "Bike Repair", bystanders=(1, 1), companion_near_m=0.8, area_radius_m=0.5,
            posture="kneel", furniture="bike", activities={"stop": 2, "reach": 3, "lean": 2, "turn": 1},
        ),
        Scenario(
            "music", "Music", camera_radius_m=(2.0, 4.0), bystanders=(0, 0), area_radius_m=0.1, posture="sit",
            furniture="instrument", activities={"stop": 4, "reach": 2, "lean": 1},
        ),
        Scenario(
            "basketball", "Basketball", cameras=5, camera_radius_m=(8.0, 20.0), camera_height_m=(1.5, 3.5),
            aim_spread_m=4.0, bystanders=(4, 9), companion_near_m=0.8, area_radius_m=6.0,
            activities={"jog": 4, "walk": 2, "turn": 2, "jump": 2, "stop": 1, "side_step": 1},
        ),
        Scenario(
            "dance", "Dance", bystanders=(1, 2), companion_near_m=0.5, area_radius_m=1.5,
            activities={"spin": 3, "jump": 2, "side_step": 2, "walk": 1, "turn": 1, "reach": 1, "lean": 1},
        ),
        Scenario(
            "soccer", "Soccer", cameras=4, camera_radius_m=(10.0, 20.0), camera_height_m=(1.5, 3.0),
            aim_spread_m=3.0, bystanders=(2, 4), companion_near_m=1.0, area_radius_m=5.0,
            activities={"jog": 4, "kick": 3, "walk": 2, "turn": 1, "stop": 1},
        ),
    )
}  # fmt: skip
SCENARIO_NAMES = tuple(SCENARIOS)


def scenario(name: str) -> Scenario:
    """The scenario called ``name``; ``ValueError`` naming the choices otherwise."""
    if name not in SCENARIOS:
        raise ValueError(f"unknown scenario {name!r}; scenarios: {', '.join(SCENARIO_NAMES)}")
    return SCENARIOS[name]


def take_scenario(name: str, rng: np.random.Generator) -> Scenario:
    """The scenario of one take: ``scenario(name)`` with one of its variants (drawn with ``rng``) applied."""
    sc = scenario(name)
    if not sc.variants:
        return sc
    return dataclasses.replace(sc, **sc.variants[int(rng.integers(len(sc.variants)))], variants=())


def place_occluders(sc: Scenario, rng: np.random.Generator, xy0: np.ndarray, heading0: float,
                    floor_z: float) -> np.ndarray:  # fmt: skip
    """The scenario's furniture ``(K, 7)`` (``OCCLUDER_COLUMNS``) around the wearer's start."""
    return OCCLUDER_LAYOUTS[sc.furniture](rng, np.asarray(xy0, float), float(heading0), floor_z, sc.area_radius_m)


def _box_rotation(box: np.ndarray) -> np.ndarray:
    """``(3, 3)``: the box's own axes in the world (its yaw about z)."""
    c, sn = np.cos(box[6]), np.sin(box[6])
    return np.array([[c, -sn, 0.0], [sn, c, 0.0], [0.0, 0.0, 1.0]])


def _to_box_frame(box: np.ndarray, points: np.ndarray) -> np.ndarray:
    """World points ``(..., 3)`` in the frame of ``box (7,)``: origin at its centre, axes along its sides."""
    return (points - box[:3]) @ _box_rotation(box)


def _from_box_frame(box: np.ndarray, local: np.ndarray) -> np.ndarray:
    """Points ``(..., 3)`` in the frame of ``box (7,)`` -> world."""
    return local @ _box_rotation(box).T + box[:3]


def outside_footprint(xy: np.ndarray, box: np.ndarray, margin: float) -> np.ndarray:
    """``xy (2,)`` (world) moved to the nearest side of the footprint of ``box (7,)`` grown by ``margin``
    when inside it; unchanged otherwise."""
    local = _to_box_frame(box, np.r_[xy, box[2]])
    half = 0.5 * box[3:5] + margin
    gap = half - np.abs(local[:2])
    if (gap <= 0).any():
        return xy
    k = int(np.argmin(gap))
    local[k] = np.copysign(half[k], local[k])
    return _from_box_frame(box, local)[:2]


def segment_hits_boxes(origins: np.ndarray, points: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """Whether the segment from each camera centre to each point passes through a box (slab test).

    ``origins (V, 3)``, ``points (..., V, P, 3)`` world metres (broadcast), ``boxes (K, 7)``
    (``OCCLUDER_COLUMNS``) -> ``(..., V, P)`` bool. A point inside a box counts as hidden; the
    segment's last 2 cm are left out so that a point resting on a surface (a hand on the counter)
    stays visible."""
    o_world = origins[:, None, :]
    length = np.linalg.norm(points - o_world, axis=-1)
    out = np.zeros(length.shape, dtype=bool)
    t_end = np.clip(1.0 - 0.02 / np.maximum(length, 1e-9), 0.0, 1.0)
    for b in boxes:
        o = _to_box_frame(b, o_world)
        d = _to_box_frame(b, points) - o
        half = 0.5 * b[3:6]
        with np.errstate(divide="ignore", invalid="ignore"):
            t0 = (-half - o) / d
            t1 = (half - o) / d
            lo = np.nanmax(np.minimum(t0, t1), axis=-1)
            hi = np.nanmin(np.maximum(t0, t1), axis=-1)
        out |= (lo <= hi) & (hi >= 0.0) & (lo <= t_end)
    return out


def box_corners(box: np.ndarray) -> np.ndarray:
    """The 8 corners ``(8, 3)`` of a box ``(7,)`` (``OCCLUDER_COLUMNS``), world metres."""
    unit = np.array([[i, j, k] for i in (-0.5, 0.5) for j in (-0.5, 0.5) for k in (-0.5, 0.5)])
    return _from_box_frame(box, unit * box[3:6])
