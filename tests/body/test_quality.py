import dataclasses

import numpy as np
import pytest

from motionkit.body.quality import (
    TrustConfig,
    aria_held_gaps,
    dropped_views,
    eye_anchor_distance,
    eyes_off_anchor,
    flag_shares,
    head_held_by_aria,
    joint_trusted,
    neck_twist_deg,
    neck_twisted,
    observation_support,
    quality_flags,
    stricter_trust,
    trust_by_part,
    valid_frames,
    view_pair_sine,
    views_needed,
    weighted_views,
)
from motionkit.conventions import COCO17_BODY, COCO17_LIMB_LANDMARKS

NAMES = ("nose", "right_eye", "left_eye", "right_ear", "left_ear")


def _body(M, fps, speed):
    """(M, 60, 3): every joint moving along x at ``speed (M,)`` m/s; the eyes at the CPF."""
    x = np.concatenate([[0.0], np.cumsum(speed[1:] / fps)])
    J = np.zeros((M, 60, 3)) + np.arange(60)[None, :, None] * 0.01
    J[..., 0] += x[:, None]
    return J


def test_flags_follow_their_rules():
    fps, M = 20.0, 200
    speed = np.r_[np.zeros(80), np.full(120, 1.0)]  # still for 4 s, then walking at 1 m/s
    J = _body(M, fps, speed)
    cpf = 0.5 * (J[:, 55 + 1] + J[:, 55 + 2])
    cpf[150:] += [0.0, 0.0, 0.5]  # the Aria anchor 0.5 m away at the end
    valid = np.ones(M, bool)
    valid[185:188] = False  # a 2-frame run after: shorter than 2 s
    n_views = np.full(M, 4)
    n_views[10:20] = 2
    reproj = np.full((M, 4), 10.0)
    reproj[30:35, :3] = 80.0  # three of four views far off: the median is too
    reproj[40:45, 0] = 80.0  # one view far off: the median is fine
    eye_anchor_m = eye_anchor_distance(J, cpf, NAMES)
    np.testing.assert_allclose(eye_anchor_m, np.r_[np.zeros(150), np.full(M - 150, 0.5)], atol=1e-12)
    f = quality_flags(J, valid, n_views, fps, eye_anchor_m, reproj)
    np.testing.assert_array_equal(np.flatnonzero(f["FEW_CAMS"]), np.arange(10, 20))
    assert f["STATIC"][:50].all() and not f["STATIC"][100:].any()  # the 1.5-s window reaches 0.75 s around
    np.testing.assert_array_equal(np.flatnonzero(f["HIGH_REPROJ"]), np.arange(30, 35))
    # the anchor 0.5 m off from frame 150 on, valid or not (such frames are made invalid: eyes_off_anchor)
    np.testing.assert_array_equal(np.flatnonzero(f["EYE_ARIA_FAR"]), np.arange(150, M))
    np.testing.assert_array_equal(f["EYE_ARIA_FAR"], eyes_off_anchor(eye_anchor_m, 0.30))
    assert eyes_off_anchor(eye_anchor_m, 0.6).sum() == 0  # 0.5 m off: within 0.6 m
    unknown = eye_anchor_m.copy()
    unknown[160:] = np.nan  # no anchor there: not off it
    np.testing.assert_array_equal(np.flatnonzero(eyes_off_anchor(unknown, 0.30)), np.arange(150, 160))
    assert f["SHORT_SEGMENT"][188:].all() and not f["SHORT_SEGMENT"][:185].any()
    assert not f["FAST_JOINT"].any() and not f["HIGH_ACCEL"][5:75].any()
    assert not f["LR_SWAPS"].any()  # no swap counts given


def test_lr_swaps_marks_valid_frames_with_two_views_of_corrected_sides():
    """``LR_SWAPS``: a valid frame in which two or more of the used views had two or more of their
    left/right pairs swapped back by the association; one such view, or two views with one pair each, or
    an invalid frame, is not marked."""
    fps, M = 20.0, 8
    swapped = np.zeros((M, 4), int)
    swapped[1, :2] = 2  # two views, two pairs each: marked
    swapped[2, 0] = 8  # one view flipped whole: not
    swapped[3, :2] = 1  # two views, one pair each: not
    swapped[4, :3] = [8, 3, 0]  # marked
    swapped[5, :2] = 2  # as frame 1, but not valid
    valid = np.ones(M, bool)
    valid[5] = False
    J = _body(M, fps, np.ones(M))
    f = quality_flags(J, valid, np.full(M, 4), fps, np.zeros(M), swapped_pairs=swapped)
    np.testing.assert_array_equal(np.flatnonzero(f["LR_SWAPS"]), [1, 4])


def test_the_aria_holds_the_head_where_the_eyes_are_near_its_anchor_and_it_turns_as_the_aria_does():
    eyes = np.array([0.02, 0.10, 0.1001, np.nan, 0.05, 0.05, 0.05, 0.09, 0.11, 0.02])  # metres from the anchor
    turn = np.array([0.01, 0.01, 0.01, 0.01, 0.05, 0.0501, np.nan, 0.05, 0.01, 0.06])  # head_turn_residual (m)
    np.testing.assert_array_equal(head_held_by_aria(eyes, turn, TrustConfig()), [1, 1, 0, 0, 1, 0, 0, 1, 0, 0])
    looser = TrustConfig(max_face_anchor_m=0.2, max_face_turn_m=0.1)
    np.testing.assert_array_equal(head_held_by_aria(eyes, turn, looser), [1, 1, 1, 0, 1, 1, 0, 1, 1, 1])


def test_valid_frames_bridge_short_gaps_only():
    n = np.r_[np.full(10, 3), np.zeros(5), np.full(10, 3), np.zeros(20), np.full(5, 2)]
    v = valid_frames(n, 20.0, TrustConfig(max_gap_s=0.5, min_seen_run_s=0.0))  # 0.25-s gap bridged, 1-s gap not
    assert v[:25].all() and not v[25:45].any() and v[45:].all()


def test_a_gap_is_bridged_only_where_the_body_moves_little_across_it():
    """Two 0.3-s gaps (6 frames at 20 fps) seen by one view: the wearer walks through the first at
    1 m/s (0.35 m between the frames on either side of it) and runs through the second at 3 m/s
    (1.05 m): the first is bridged, the second is not at the 0.8-m limit; without positions both are."""
    n = np.r_[np.full(10, 3), np.ones(6), np.full(10, 3), np.ones(6), np.full(10, 3)]
    speed = np.r_[np.full(16, 1.0), np.full(26, 3.0)]  # m/s, along x
    x = np.r_[0.0, np.cumsum(speed[:-1]) / 20.0]
    pos = np.c_[x, np.zeros((len(x), 2))]
    assert valid_frames(n, 20.0, TrustConfig(max_gap_s=0.4, min_seen_run_s=0.1)).all()
    v = valid_frames(n, 20.0, TrustConfig(max_gap_s=0.4, min_seen_run_s=0.1, max_gap_travel_m=0.8), positions=pos)
    assert v[:26].all() and not v[26:32].any() and v[32:].all()
    assert np.isclose(np.linalg.norm(pos[16] - pos[9]), 0.35) and np.isclose(np.linalg.norm(pos[32] - pos[25]), 1.05)


def test_a_gap_the_aria_holds_is_bridged_where_the_body_stays_in_place():
    """Valid runs around three 1-s gaps (20 frames at 20 fps) and a 2.5-s one, at a 2-s limit: a
    kneeling wearer (pelvis within 0.2 m of where it was before the gap) whose head the Aria holds
    throughout (bridged); the same with one frame the Aria does not hold (not); a wearer walking 0.5 m
    away and back (not, though he ends where he started); the 2.5-s gap (not). The take's first and
    last frames, outside any gap, stay invalid."""
    fps, cfg = 20.0, TrustConfig(max_aria_gap_s=2.0, max_aria_gap_travel_m=0.3)
    valid = np.r_[0, np.ones(10), np.zeros(20), np.ones(10), np.zeros(20), np.ones(10), np.zeros(20), np.ones(10),
                  np.zeros(50), np.ones(10), 0].astype(bool)  # fmt: skip
    pos = np.zeros((len(valid), 3))
    pos[11:31, 0] = 0.2 * np.sin(np.linspace(0, np.pi, 20))  # kneeling: within 0.2 m
    pos[71:91, 0] = 0.5 * np.sin(np.linspace(0, np.pi, 20))  # walks 0.5 m away and back
    held = np.ones(len(valid), bool)
    held[50] = False  # the second gap, frames 41-60
    v = aria_held_gaps(valid, held, pos, fps, cfg)
    assert v[11:31].all() and not v[41:61].any() and not v[71:91].any() and not v[101:151].any()
    np.testing.assert_array_equal(v[valid], True)
    assert not v[0] and not v[-1]
    held[:] = True
    v = aria_held_gaps(valid, held, pos, fps, cfg)
    assert v[41:61].all() and not v[71:91].any()
    assert aria_held_gaps(valid, held, pos, fps, TrustConfig(max_aria_gap_s=2.0, max_aria_gap_travel_m=0.6)).sum() == (
        v.sum() + 20
    )  # the walk is within 0.6 m
    np.testing.assert_array_equal(aria_held_gaps(valid, held, pos, fps, TrustConfig(max_aria_gap_s=0.0)), valid)
    assert aria_held_gaps(valid, held, pos, fps, TrustConfig(max_aria_gap_s=2.5)).sum() == v.sum() + 50
    assert not aria_held_gaps(valid, held, np.full_like(pos, np.nan), fps, cfg)[11:31].any()  # unknown: not bridged


def test_a_lone_frame_of_two_views_does_not_bridge_a_stretch_of_one():
    """One view for 0.5 s, interrupted by two single frames that two views support: with runs of at least
    0.1 s required, the stretch is a 0.5-s gap, too long to bridge; a run of two frames still counts."""
    n = np.r_[np.full(10, 3), 1, 1, 1, 2, 1, 1, 1, 2, 1, 1, np.full(10, 3)]
    no_run_length = TrustConfig(max_gap_s=0.4, min_seen_run_s=0.0)
    assert valid_frames(n, 20.0, no_run_length).all()  # gaps of 3, 3 and 2 frames, bridged
    v = valid_frames(n, 20.0, TrustConfig(max_gap_s=0.4, min_seen_run_s=0.1))
    assert v[:10].all() and not v[10:20].any() and v[20:].all()
    n[13:15] = 2  # a run of two frames (0.1 s): it counts, the gaps of 3 and 5 frames are bridged
    assert valid_frames(n, 20.0, TrustConfig(max_gap_s=0.4, min_seen_run_s=0.1)).all()


def test_frames_two_views_see_with_fewer_landmarks_are_valid_but_bridge_no_gap():
    """Two strong runs 0.55 s apart (too far to bridge); between them a run of 4 frames that two views
    see with 7 supported landmarks each (``n_seen_views``) and a lone such frame. The run is valid; the
    lone frame is not; neither anchors a bridge to the strong runs (the gaps stay unseen)."""
    n_views = np.r_[np.full(10, 3), np.ones(11), np.full(10, 3)]
    n_seen = n_views.copy()
    n_seen[13:17] = 2  # a run of 0.2 s
    n_seen[19] = 2  # a lone frame
    expected = np.r_[np.ones(10, bool), np.zeros(11, bool), np.ones(10, bool)]
    cfg = TrustConfig(max_gap_s=0.4, min_seen_run_s=0.1)
    np.testing.assert_array_equal(valid_frames(n_views, 20.0, cfg), expected)
    expected[13:17] = True
    np.testing.assert_array_equal(valid_frames(n_views, 20.0, cfg, n_seen), expected)


def test_a_short_glimpse_of_fewer_landmarks_needs_a_frame_two_supporting_views_see():
    """A run that two views see with fewer landmarks (``n_seen_views``) and no two supporting views in any
    of its frames is valid from ``min_partial_run_s`` (0.2 s, 4 samples at 20 fps) on; shorter, only
    where one of its frames two supporting views see (it then continues a body the fit saw whole) or
    where the fitted pelvis moves slower than ``max_partial_speed_m_s`` (0.5 m/s) throughout."""
    cfg = TrustConfig(max_gap_s=0.4, min_seen_run_s=0.1, min_partial_run_s=0.2)
    n_views = np.ones(30, int)
    n_seen = n_views.copy()
    n_seen[5:8] = 2  # a glimpse of 3 frames
    n_seen[15:19] = 2  # a run of 4
    v = valid_frames(n_views, 20.0, cfg, n_seen)
    np.testing.assert_array_equal(np.flatnonzero(v), np.arange(15, 19))
    n_views[5:7] = 2  # two supporting views in two of the glimpse's frames: a strong run of 0.1 s ...
    v = valid_frames(n_views, 20.0, cfg, n_seen)
    np.testing.assert_array_equal(np.flatnonzero(v), np.r_[5:8, 15:19])  # ... carried over its third frame
    short = valid_frames(np.ones(30, int), 20.0, dataclasses.replace(cfg, min_partial_run_s=0.1), n_seen)
    np.testing.assert_array_equal(np.flatnonzero(short), np.r_[5:8, 15:19])  # 0.1 s: the run length alone
    # with the pelvis given, a glimpse of a body that stays still is valid, of a runner not
    n_views = np.ones(30, int)
    for speed, glimpse_valid in ((0.3, True), (2.0, False)):
        pelvis = np.zeros((30, 3))
        pelvis[:, 0] = speed * np.arange(30) / 20.0
        v = valid_frames(n_views, 20.0, cfg, n_seen, positions=pelvis)
        np.testing.assert_array_equal(np.flatnonzero(v), np.r_[5:8, 15:19] if glimpse_valid else np.arange(15, 19))


def test_observation_support_counts_seeing_views_with_the_weaker_landmark_threshold():
    cfg = TrustConfig(support_weight=0.02, view_landmarks=8, seen_view_landmarks=7)
    w = np.zeros((2, 3, 17))
    w[0, 0, :8] = w[0, 1, :7] = w[0, 2, :6] = 0.5
    w[1, :, :7] = 0.01  # below the support weight: no landmark counts
    support = observation_support(w, np.ones_like(w), cfg)
    np.testing.assert_array_equal(support.n_views, [1, 0])
    np.testing.assert_array_equal(support.n_seeing, [2, 0])
    np.testing.assert_array_equal(support.cameras, [[True, False, False], [False, False, False]])


def test_support_counts_views_whose_weight_is_kept():
    cfg = TrustConfig(support_weight=0.02, view_landmarks=8)
    w = np.zeros((3, 4, 17))
    w[0, :3] = 0.5  # three views see everything
    w[1, 0] = 0.5
    w[1, 1, :8] = 0.5  # a second view sees 8 landmarks: it still supports the frame
    w[1, 2, :7] = 0.5  # a third sees 7: it does not
    w[2, :, :] = 0.01  # weights of guessed keypoints: too small to support anything
    support = observation_support(w, np.ones_like(w), cfg)
    sup = support.joint
    assert sup.dtype == np.int16
    np.testing.assert_array_equal(sup[0], np.full(17, 3))
    np.testing.assert_array_equal(sup[1], np.r_[np.full(7, 3), 2, np.ones(9)])
    np.testing.assert_array_equal(sup[2], np.zeros(17))
    np.testing.assert_array_equal(support.n_views, [3, 2, 0])
    np.testing.assert_array_equal(support.cameras[1], [True, True, False, False])


def test_a_keypoint_the_detector_scored_low_supports_nothing_whatever_its_weight():
    """Two views see all 17 landmarks with weight; in the second frame the detector scored eight of the
    second view's keypoints 0.35 (guesses at hidden joints), in the third it gave none (NaN): the view
    supports only the landmarks scored at least ``support_confidence``, and the frame while they number
    8 or more."""
    cfg = TrustConfig(support_weight=0.02, support_confidence=0.4, view_landmarks=8)
    w = np.full((3, 2, 17), 0.3)
    conf = np.full((3, 2, 17), 0.9)
    conf[1, 1, :8] = 0.35
    conf[2, 1] = np.nan
    support = observation_support(w, conf, cfg)
    np.testing.assert_array_equal(support.joint, [np.full(17, 2), np.r_[np.ones(8), np.full(9, 2)], np.ones(17)])
    np.testing.assert_array_equal(support.n_views, [2, 2, 1])
    conf[1, 1, 8:10] = 0.39  # two more below: 7 supported landmarks left, the view no longer supports the frame
    assert observation_support(w, conf, cfg).n_views[1] == 1
    assert observation_support(w, conf, TrustConfig(support_confidence=0.3)).n_views[1] == 2


def test_a_joint_is_trusted_where_two_views_support_it_in_the_frame_or_steadily():
    fps, M = 20.0, 60
    support = np.full((M, 17), 3)
    support[10, 13] = 1  # one frame's observation dropped: the fit is smooth there, still trusted
    support[30:45, 15:] = 1  # the ankles hidden for 0.75 s: not trusted ...
    support[37, 15:] = 2  # ... but in the one frame where two views see them
    valid = np.ones(M, bool)
    valid[50:] = False
    t = joint_trusted(support, valid, fps, TrustConfig(support_window_s=0.25))
    assert t[10, 13] and not t[50:].any()
    hidden = np.r_[32:37, 38:43]
    assert not t[hidden, 15:].any() and t[37, 15:].all() and t[32:43, :15].all()
    assert t[:28].all() and t[47:50].all()
    turned = np.zeros(M, bool)
    turned[5:8] = True  # the fitted eyes far from the Aria anchor there: the face is not trusted, the rest is
    face = joint_trusted(support, valid, fps, TrustConfig(support_window_s=0.25), turned)
    assert not face[5:8, :5].any() and face[5:8, 5:].all()
    np.testing.assert_array_equal(face[~turned], t[~turned])
    support[20:25, :5] = 0  # no view supports the face there, but the Aria holds it (eyes at its anchor) ...
    at_aria = np.ones(M, bool)
    at_aria[[5, 6, 7, 24]] = False  # ... except where the eyes are far from it, or its orientation is unknown
    cfg = TrustConfig(support_window_s=0.25)
    aria = joint_trusted(support, valid, fps, cfg, turned, at_aria)
    assert aria[20:24, :5].all() and not aria[24, :5].any() and not aria[5:8, :5].any() and not aria[50:].any()
    views = joint_trusted(support, valid, fps, cfg, turned)
    assert not views[20:25, :5].any()  # without the Aria: the views' rule
    np.testing.assert_array_equal(aria[:, 5:], views[:, 5:])  # the body's trust does not change
    off = joint_trusted(support, valid, fps, TrustConfig(support_window_s=0.25, face_from_aria=False), turned, at_aria)
    np.testing.assert_array_equal(off, views)  # the option off: the Aria adds no frame
    f = quality_flags(_body(M, fps, np.ones(M)), valid, np.full(M, 3), fps, np.zeros(M),
                      trusted=np.where(np.arange(M)[:, None] < 20, t, t & (np.arange(17) < 8)))  # fmt: skip
    np.testing.assert_array_equal(np.flatnonzero(f["OCCLUDED"]), np.arange(20, 50))  # 3 of 12 body landmarks
    for k, flagged in ((2, False), (3, True)):  # both ankles untrusted: not flagged; a knee as well: flagged
        legs = np.isin(np.arange(17), COCO17_BODY[-k:])  # the last k body landmarks
        f = quality_flags(_body(M, fps, np.ones(M)), valid, np.full(M, 3), fps, np.zeros(M),
                          trusted=np.broadcast_to(~legs, (M, 17)))  # fmt: skip
        assert f["OCCLUDED"][:50].all() == flagged and not f["OCCLUDED"][50:].any()


def test_the_limbs_can_be_asked_for_more_views_than_the_rest():
    """``limb_trust_views = 3``: elbows, wrists, knees and ankles need three supporting views (with the
    0.5-s carry), the face and torso keep two; ``stricter_trust`` gives a stored mask the same answer
    from its support, and leaves it as it was under the config it was made with."""
    fps, M = 20.0, 40
    support = np.full((M, 17), 2)
    support[:, 9] = 3  # the left wrist seen by three views throughout
    support[10:30, 15] = 3  # the left ankle by three for a second, but for one frame ...
    support[20, 15] = 2  # ... which the median over the window carries
    valid = np.ones(M, bool)
    base = joint_trusted(support, valid, fps, TrustConfig())
    assert base.all()  # two views everywhere: all trusted
    strict_cfg = TrustConfig(limb_trust_views=3)
    np.testing.assert_array_equal(views_needed(strict_cfg), [2] * 7 + [3] * 4 + [2] * 2 + [3] * 4)
    strict = joint_trusted(support, valid, fps, strict_cfg)
    limbs = np.isin(np.arange(17), COCO17_LIMB_LANDMARKS)
    assert strict[:, ~limbs].all()  # the face and torso keep the two-view rule
    assert strict[:, 9].all() and not strict[:, [7, 8, 10, 13, 14, 16]].any()
    assert strict[10:30, 15].all() and not strict[:5, 15].any() and not strict[35:, 15].any()
    three = joint_trusted(support, valid, fps, TrustConfig(trust_views=3))
    assert three[:, 9].all() and three[10:30, 15].all() and not three[:, :9].any()
    support[5:9, :5] = 0  # no view sees the face there (the Aria may hold it: its trust stays)
    face_held = np.zeros(M, bool)
    face_held[5:9] = True
    stored = joint_trusted(support, valid, fps, TrustConfig(), head_held=face_held)
    again = stricter_trust(stored, support, fps, strict_cfg)  # judged again from the stored support
    np.testing.assert_array_equal(again, joint_trusted(support, valid, fps, strict_cfg, head_held=face_held))
    np.testing.assert_array_equal(stricter_trust(stored, support, fps, TrustConfig()), stored)
    fewer = joint_trusted(support, valid, fps, TrustConfig(trust_views=3, limb_trust_views=2))
    np.testing.assert_array_equal(fewer, three)  # fewer limb views than the rest: the rest's rule holds for all


def _cameras_at(degrees, distance=4.0):
    """(V, 3) camera centres on a horizontal circle of ``distance`` m round the origin, at ``degrees``."""
    a = np.radians(np.asarray(degrees, dtype=np.float64))
    return np.stack([distance * np.cos(a), distance * np.sin(a), np.full_like(a, 1.5)], -1)


def test_view_pair_sine_is_the_widest_angle_between_two_supporting_views():
    """Cameras on a circle round landmarks at the origin (eye height, so the rays are horizontal): the
    largest sine over the pairs of views that support a landmark, within the support window."""
    fps, M = 20.0, 30
    centres = _cameras_at([0.0, 10.0, 100.0, 170.0])
    landmarks = np.zeros((M, 17, 3))
    landmarks[..., 2] = 1.5
    views = np.zeros((M, 4, 17), bool)
    views[:, [0, 1], 5] = True  # 10 degrees apart
    views[:, [0, 3], 6] = True  # 170 degrees apart: as narrow as 10, the rays all but coincide
    views[:, [0, 1, 2], 7] = True  # a third view at 100 degrees: 90 from the second
    views[:, 0, 8] = True  # one view only
    views[:, 0, 9] = True
    views[12, 2, 9] = True  # a second view in one frame: carried over the 0.5-s window
    cfg = TrustConfig()
    sine = view_pair_sine(views, landmarks, centres, fps, cfg)
    np.testing.assert_allclose(sine[:, 5], np.sin(np.radians(10.0)), atol=1e-9)
    np.testing.assert_allclose(sine[:, 6], np.sin(np.radians(10.0)), atol=1e-9)
    np.testing.assert_allclose(sine[:, 7], 1.0, atol=1e-9)
    assert not sine[:, 8].any() and not sine[:, :5].any()
    near = np.abs(np.arange(M) - 12) <= 5  # 11 samples: the window of 0.5 s at 20 fps, centred
    np.testing.assert_allclose(sine[near, 9], np.sin(np.radians(100.0)), atol=1e-9)
    assert not sine[~near, 9].any()
    support = views.sum(1)
    support[:, :5] = 2
    valid = np.ones(M, bool)
    trusted = joint_trusted(support, valid, fps, cfg, pair_sine=sine)
    assert not trusted[:, [5, 6]].any() and trusted[:, 7].all() and trusted[:, :5].all()  # the face: no angle rule
    np.testing.assert_array_equal(np.flatnonzero(trusted[:, 9]), [12])  # the count rule: two views in that frame only
    wide = joint_trusted(support, valid, fps, TrustConfig(min_view_angle_deg=9.0), pair_sine=sine)
    assert wide[:, [5, 6, 7]].all()  # 10 degrees is enough at 9
    np.testing.assert_array_equal(joint_trusted(support, valid, fps, TrustConfig(min_view_angle_deg=0.0),
                                                pair_sine=sine), joint_trusted(support, valid, fps, cfg))  # fmt: skip


def _turned_head(twist_deg: np.ndarray) -> np.ndarray:
    """``(M, 17, 3)`` an upright body (spine along +z, shoulders and hips along x) whose ears are turned by
    ``twist_deg (M,)`` about the spine from the shoulders' line, and whose head leans forward 0.1 m."""
    M = len(twist_deg)
    X = np.zeros((M, 17, 3))
    X[:, [5, 6]] = [[-0.2, 0.0, 1.45], [0.2, 0.0, 1.45]]  # shoulders (left at -x, as the ears below)
    X[:, [11, 12]] = [[-0.1, 0.0, 0.95], [0.1, 0.0, 0.95]]  # hips
    a = np.radians(twist_deg)
    ear = 0.08 * np.stack([np.cos(a), np.sin(a), np.full(M, 0.3)], -1)  # tilted out of the plane: projected away
    X[:, 3] = [0.0, 0.1, 1.6] - ear
    X[:, 4] = [0.0, 0.1, 1.6] + ear
    return X


def test_neck_twist_is_the_ears_turn_from_the_shoulders_about_the_spine_in_any_pose():
    """Ears turned by known angles about an upright spine, then the whole body rotated and moved at random
    (lying, bent, anywhere): the twist is the angle about the spine, whatever the pose in the world."""
    twist = np.array([0.0, 10.0, 45.0, 89.0, 91.0, 135.0, 180.0, -60.0])
    X = _turned_head(twist)
    np.testing.assert_allclose(neck_twist_deg(X), np.abs(twist), atol=1e-9)
    rng = np.random.default_rng(3)
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    moved = X @ (q * np.sign(np.linalg.det(q))).T + rng.normal(size=3)  # a proper rotation and a shift
    np.testing.assert_allclose(neck_twist_deg(moved), np.abs(twist), atol=1e-9)
    np.testing.assert_array_equal(neck_twisted(moved, 90.0), [0, 0, 0, 0, 1, 1, 1, 0])
    np.testing.assert_array_equal(neck_twisted(moved, 30.0), [0, 0, 1, 1, 1, 1, 1, 1])
    assert not neck_twisted(moved, 0.0).any()  # 0: the rule is off
    moved[2, 3] = np.nan  # an ear unknown: no twist, not twisted
    assert np.isnan(neck_twist_deg(moved)[2]) and not neck_twisted(moved, 30.0)[2]


def test_trust_by_part_and_flag_shares_count_valid_frames_only():
    """Four frames, the last invalid: the legs trusted in one of the three valid frames (1/3), the face
    in none, the arms in all; OCCLUDED on the second valid frame and STATIC on the first: ``any``
    leaves STATIC out; what an invalid frame holds does not count."""
    valid = np.array([True, True, True, False])
    trusted = np.zeros((4, 17), bool)
    trusted[:3, [5, 6, 7, 8, 9, 10, 11, 12]] = True
    trusted[0, 13:17] = True
    trusted[3] = True
    shares = trust_by_part(trusted, valid)
    assert shares == {"torso": 1.0, "arms": 1.0, "legs": pytest.approx(1 / 3), "face": 0.0}
    flags = {"OCCLUDED": np.array([False, True, False, True]), "STATIC": np.array([True, False, False, True])}
    assert flag_shares(flags, valid) == {"OCCLUDED": pytest.approx(1 / 3), "STATIC": pytest.approx(1 / 3),
                                         "any": pytest.approx(1 / 3)}  # fmt: skip
    assert trust_by_part(trusted, np.zeros(4, bool))["legs"] is None


def test_dropped_views_are_the_views_that_lose_every_weighted_observation():
    """3 frames x 3 views. Frame 0: view 0 loses all its observations (dropped), view 1 loses one of two
    (kept), view 2 was never given any (not dropped). Frame 1: nothing lost. Frame 2: view 2 loses its
    one weighted observation; a NaN final weight counts as none."""
    given = np.zeros((3, 3, 17))
    given[0, 0, :10] = 1.0
    given[0, 1, :2] = 0.5
    given[1, :2, :] = 1.0
    given[2, 2, 4] = 0.2
    final = given.copy()
    final[0, 0] = 0.0
    final[0, 1, 0] = 0.0
    final[2, 2, 4] = np.nan
    expected = np.zeros((3, 3), bool)
    expected[0, 0] = expected[2, 2] = True
    np.testing.assert_array_equal(dropped_views(given, final), expected)
    # the views given weight: frame 0 views 0 and 1, frame 1 views 0 and 1, frame 2 view 2
    np.testing.assert_array_equal(weighted_views(given), [[1, 1, 0], [1, 1, 0], [0, 0, 1]])
    np.testing.assert_array_equal(weighted_views(final), weighted_views(given) & ~expected)
