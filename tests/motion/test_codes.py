import dataclasses
import json

import numpy as np
import pytest

from motionkit.geometry.rotations import axis_rotation, matrix_to_rotvec
from motionkit.motion.codes import (
    extract_events,
    find_events,
    jumps,
    magnitude_class,
    quarters,
    steps_of,
    temporal_class,
    trajectory_set,
)
from motionkit.motion.trajectory import anchor_trajectory

FACING_X = np.deg2rad(90.0)  # y-up world; body +z -> world +x


def motion(T, fps, pos=None, yaw_deg=None, pitch_deg=None, roll_deg=None, heading0=FACING_X):
    """Build (transl, global_orient) in a y-up world; curves are functions of time in seconds."""
    t = np.arange(T) / fps
    p = np.zeros((T, 3)) if pos is None else np.array([pos(x) for x in t], dtype=float)
    yaw = np.zeros(T) if yaw_deg is None else np.deg2rad([yaw_deg(x) for x in t])
    pitch = np.zeros(T) if pitch_deg is None else np.deg2rad([pitch_deg(x) for x in t])
    roll = np.zeros(T) if roll_deg is None else np.deg2rad([roll_deg(x) for x in t])
    R = axis_rotation("y", heading0 + yaw) @ axis_rotation("x", pitch) @ axis_rotation("z", -roll)
    return p, matrix_to_rotvec(R)


def ramp(t, t0, t1):
    return float(np.clip((t - t0) / (t1 - t0), 0, 1))


LEFT_OF_X = np.array([0.0, 0.0, -1.0])  # the subject's left when facing +x (y up)


def cases(fps):
    f = 30.0  # curves are specified in 30 fps frames, converted to seconds
    return {
        "C1": (
            90 / f,
            dict(
                pos=lambda t: 0.03 * np.array([np.sin(7 * t), np.sin(5 * t), np.sin(3 * t)]),
                yaw_deg=lambda t: 3 * np.sin(4 * t),
            ),
            {},
        ),
        "C2": (
            90 / f,
            dict(pos=lambda t: LEFT_OF_X * 2.0 * ramp(t, 0, 59 / f)),
            {"displacement_x": [(+20, "very_long_left", "moderate", 1, 58)]},
        ),
        "C3": (
            90 / f,
            dict(pos=lambda t: np.array([0.6 * (ramp(t, 0, 29 / f) - ramp(t, 29 / f, 59 / f)), 0, 0])),
            {
                "displacement_z": [
                    (+6, "moderate_forward", "moderate", 2, 27),
                    (-6, "moderate_backward", "moderate", 32, 57),
                ]
            },
        ),
        "C4": (
            90 / f,
            dict(yaw_deg=lambda t: 90 * ramp(t, 15 / f, 45 / f)),
            {"rotation_yaw": [(+3, "moderate_turn_counterclockwise", "moderate", 19, 40)]},
        ),
        "C5": (
            90 / f,
            dict(pitch_deg=lambda t: 35 * (ramp(t, 5 / f, 25 / f) - ramp(t, 45 / f, 65 / f))),
            {
                "rotation_pitch": [
                    (+4, "significant_leaning_forward", None, None, None),
                    (-4, "significant_leaning_backward", None, None, None),
                ]
            },
        ),
        "C6": (
            50 / f,
            dict(pos=lambda t: np.array([0, 0.4 * np.sin(np.pi * np.clip((t - 10 / f) * f / 20, 0, 1)), 0])),
            {"displacement_y": [(+4, "short_up", "fast", 10, 17), (-4, "short_down", None, None, None)]},
        ),
        "C7": (
            130 / f,
            dict(yaw_deg=lambda t: 400 * ramp(t, 10 / f, 110 / f), heading0=np.deg2rad(-150.0)),
            {"rotation_yaw": [(+13, "significant_turn_counterclockwise", None, None, None)]},
        ),
    }


def test_finder_golden():
    s = lambda bins: steps_of(np.array(bins))  # noqa: E731
    assert find_events(s([0, 0, 0, 1, 2, 3, 4, 4, 4, 3, 2, 1, 0])) == [(3, 6, 4, 1.0), (9, 12, -4, -1.0)]
    assert find_events(s([0, 1, 2, 1, 2, 3, 4, 5, 4, 5, 6, 6, 5, 4, 6])) == [(1, 10, 6, 0.6), (12, 13, -2, -1.0)]
    assert find_events(s([0, 0, 1, 1, 1, 1, 1, 1, 1, 2])) == [(2, 9, 2, 0.25)]
    assert find_events(s([0, 1] * 10)) == []


def test_finder_properties():
    rng = np.random.default_rng(0)
    for _ in range(300):
        q = np.cumsum(rng.integers(-1, 2, rng.integers(2, 60)))
        ev = find_events(steps_of(q))
        ends = [e[1] for e in ev]
        starts = [e[0] for e in ev]
        assert all(abs(e[2]) >= 2 for e in ev)
        assert all(s > prev for s, prev in zip(starts[1:], ends[:-1], strict=True))  # ordered, non-overlapping
    assert find_events(steps_of(np.array([0, 0, 1, 1, 1]))) == []  # a net change of 1 is not an event


@pytest.mark.parametrize("fps", [30.0, 20.0])
@pytest.mark.parametrize("name", ["C1", "C2", "C3", "C4", "C5", "C6", "C7"])
def test_golden_event_table(name, fps):
    dur, kw, expected = cases(fps)[name]
    T = int(round(dur * fps))
    p, go = motion(T, fps, **kw)
    ev = extract_events(anchor_trajectory(p, go, fps=fps), fps)
    got = {}
    for e in ev.events:
        if e.spatial_category != "no_action":
            got.setdefault(e.code, []).append(e)
    assert set(got) == set(expected), {c: [(e.intensity, e.spatial_category) for e in v] for c, v in got.items()}
    for code, exp in expected.items():
        assert len(got[code]) == len(exp)
        for e, (inten, cat, tcat, s, end) in zip(got[code], exp, strict=True):
            assert (e.intensity, e.spatial_category) == (inten, cat)
            if tcat is not None:
                assert e.temporal_category == tcat
            if s is not None and fps == 30.0:
                assert abs(e.start_frame - s) <= 1 and abs(e.end_frame - end) <= 1


def test_c2_velocity_and_fields():
    p, go = motion(90, 30.0, pos=lambda t: LEFT_OF_X * 2.0 * ramp(t, 0, 59 / 30))
    es = extract_events(anchor_trajectory(p, go, fps=30.0), 30.0, motion_id="c2")
    (e,) = [e for e in es.events if e.code == "displacement_x"]
    assert e.velocity == pytest.approx(0.351, abs=1e-3) and e.unit == "0.1m" and e.direction == "left"
    assert e.qa_eligible and e.passes_threshold and e.ms_intensity == 20
    d = json.loads(es.to_json())
    assert (
        d["schema_version"] == 1 and d["params"]["min_event_frames"] == 5 and d["events"][0]["code"] == "displacement_x"
    )
    hm = es.to_humanmovevqa()  # the generator's reading: + = right, so 2 m to the left is -20
    q = hm["quantitative_values"]["displacement_x"][0]["quant"]
    assert q["intensity"] == -20 and q["spatial_category"] == "very_long_left" and q["velocity"] < 0
    assert (
        hm["qa_seed"]
        == extract_events(anchor_trajectory(p, go, fps=30.0), 30.0, motion_id="c2").to_humanmovevqa()["qa_seed"]
    )


def test_events_record_the_share_of_their_frames_whose_root_the_fit_trusts():
    """C2 (2 m to the left over frames 0..59 of 90): with the torso untrusted on frames 40..69 the event
    keeps its frames, intensity and eligibility, and records (end - 40 + 1) / (end - start + 1) of them
    untrusted; the generator's record carries the share beside its quant; a mask of the wrong length is
    refused."""
    p, go = motion(90, 30.0, pos=lambda t: LEFT_OF_X * 2.0 * ramp(t, 0, 59 / 30))
    tr = anchor_trajectory(p, go, fps=30.0)
    trusted = np.ones(90, bool)
    trusted[40:70] = False
    plain, es = extract_events(tr, 30.0), extract_events(tr, 30.0, root_trusted=trusted)
    (e0,) = [e for e in plain.events if e.code == "displacement_x"]
    (e,) = [e for e in es.events if e.code == "displacement_x"]
    assert e0.root_trusted_share is None and dataclasses.replace(e, root_trusted_share=None) == e0
    assert e.start_frame < 40 <= e.end_frame < 70
    assert e.root_trusted_share == pytest.approx(1 - (e.end_frame - 40 + 1) / (e.duration_frames + 1), abs=1e-4)
    (rec,) = es.to_humanmovevqa()["quantitative_values"]["displacement_x"]
    assert rec["root_trusted_share"] == e.root_trusted_share
    assert "root_trusted_share" not in plain.to_humanmovevqa()["quantitative_values"]["displacement_x"][0]
    with pytest.raises(ValueError, match="root_trusted has shape"):
        extract_events(tr, 30.0, root_trusted=trusted[:-1])


def test_categories_and_filters():
    assert [magnitude_class("displacement_x", i) for i in (1, -2, 4, -7, 9, 11)] == [
        "no_action",
        "very_short",
        "short",
        "moderate",
        "long",
        "very_long",
    ]
    assert [magnitude_class("rotation_yaw", i) for i in (0, 2, -3, 4)] == [
        "no_action",
        "slight",
        "moderate",
        "significant",
    ]
    assert [temporal_class(v) for v in (0.05, -0.1, 0.3, 0.8, 0.81)] == [
        "very_slow",
        "slow",
        "moderate",
        "fast",
        "very_fast",
    ]
    assert quarters(0, 9, 40, 20.0) == (1, [1])
    assert quarters(8, 25, 40, 20.0) == (1, [1, 2, 3])
    # a short (0.25 m) step: very_short, not QA-eligible by default, eligible without the filter
    p, go = motion(60, 30.0, pos=lambda t: np.array([0.25 * ramp(t, 0.2, 1.0), 0, 0]))
    (e,) = [e for e in extract_events(anchor_trajectory(p, go, fps=30.0), 30.0).events if e.code == "displacement_z"]
    assert e.magnitude_class == "very_short" and not e.qa_eligible
    es = extract_events(anchor_trajectory(p, go, fps=30.0), 30.0, filters={"drop_very_short": False})
    assert [x for x in es.events if x.code == "displacement_z"][0].qa_eligible
    assert trajectory_set(es.events) == []  # very_short steps are not trajectory events
    # with 5 cm units the same step is "short"
    es = extract_events(anchor_trajectory(p, go, fps=30.0), 30.0, preset="motionscript_5cm")
    assert [x for x in es.events if x.code == "displacement_z"][0].magnitude_class == "short"


def test_jump_needs_moderate_height():
    up_down = lambda h: lambda t: np.array([0, h * np.sin(np.pi * ramp(t, 0.2, 1.2)), 0])  # noqa: E731
    p, go = motion(60, 30.0, pos=up_down(0.7))
    assert len(jumps(extract_events(anchor_trajectory(p, go, fps=30.0), 30.0).events)) == 1
    p, go = motion(60, 30.0, pos=up_down(0.4))
    assert jumps(extract_events(anchor_trajectory(p, go, fps=30.0), 30.0).events) == []


def test_bad_input():
    p, go = motion(10, 30.0)
    with pytest.raises(ValueError, match="unknown preset"):
        extract_events(anchor_trajectory(p, go), 30.0, preset="nope")
    p[3] = np.nan
    with pytest.raises(ValueError, match="finite"):
        anchor_trajectory(p, go)
    with pytest.raises(ValueError, match=r"\(T, 3\)"):
        anchor_trajectory(np.zeros((5, 2)), go[:5])
