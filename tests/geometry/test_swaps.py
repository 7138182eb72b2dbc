import numpy as np
import pytest

from motionkit.conventions import COCO17_FLIP, COCO17_LEFT, COCO17_LR_PAIRS, COCO17_RIGHT
from motionkit.geometry.swaps import (
    SwapConfig,
    apply_lr_swaps,
    cross_view_confirmed,
    cross_view_swaps,
    detect_lr_swaps,
    find_lr_swaps,
    label_links,
    swap_bits,
    swapped_pair_count,
    temporal_lr_swaps,
    vote_in_time,
)
from tests.helpers import wearer_landmarks

ARM = [COCO17_LR_PAIRS.index((7, 8)), COCO17_LR_PAIRS.index((9, 10))]
LEG = [COCO17_LR_PAIRS.index((13, 14)), COCO17_LR_PAIRS.index((15, 16))]


@pytest.fixture(scope="module")
def take(default_root):
    t, X = wearer_landmarks(default_root, step=3)  # 10 fps is enough here
    return t.rig, X


def _injected_swaps(rig, X, seed):
    """Noisy projections ``px``, their confidences, the injected swaps ``truth`` (one arm in view 1, the
    whole body in view 2) and the keypoints with them applied."""
    rng = np.random.default_rng(seed)
    px = rig.project(X) + rng.normal(0, 4.0, (len(X), len(rig), 17, 2))
    conf = np.where(np.isfinite(px).all(-1), 0.9, 0.0)
    truth = np.zeros((len(X), len(rig), len(COCO17_LR_PAIRS)), bool)
    truth[10:40, 1, ARM] = True  # one arm's labels, in view 1
    truth[50:60, 2, :] = True  # the whole body, in view 2
    return px, conf, truth, apply_lr_swaps(px, truth)


def test_injected_swaps_are_found_and_undone(take):
    px, conf, truth, bad = _injected_swaps(*take, seed=0)
    rig = take[0]
    found = detect_lr_swaps(bad, conf, rig)
    # a swap is only visible when the two joints of the pair are apart in that view
    apart = np.linalg.norm(px[..., COCO17_LEFT, :] - px[..., COCO17_RIGHT, :], axis=-1) > 40
    assert (truth & apart).sum() > 100
    assert found[truth & apart].mean() >= 0.9
    assert found[~truth].mean() <= 0.01
    agree = (found == truth).all(-1)  # where the detection is right, the labels are restored exactly
    assert agree.mean() > 0.95
    np.testing.assert_array_equal(apply_lr_swaps(bad, found)[agree], px[agree])


def test_a_swapped_view_does_not_make_the_clean_views_look_swapped(take):
    """One leg (knee and ankle) swapped in view 0 throughout: judged all at once (one round of
    ``cross_view_swaps``), the clean views' knees look swapped too where view 0 pulls their leave-one-out
    triangulation (measured: 16 % of their frames); corrected one view at a time, view 0 is found and
    the clean views keep their labels."""
    rig, X = take
    rng = np.random.default_rng(0)
    px = rig.project(X) + rng.normal(0, 4.0, (len(X), len(rig), 17, 2))
    conf = np.where(np.isfinite(px).all(-1), 0.9, 0.0)
    truth = np.zeros((len(X), len(rig), len(COCO17_LR_PAIRS)), bool)
    truth[:, 0, LEG] = True
    bad = apply_lr_swaps(px, truth)
    knee = LEG[0]
    at_once = cross_view_swaps(np.where((conf > 0)[..., None], bad, np.nan), conf, rig, SwapConfig())
    assert at_once[:, 1:, knee].mean() > 0.1  # the failure this guards against
    found = detect_lr_swaps(bad, conf, rig)
    assert found[:, 0, knee][_apart(px)[:, 0, knee]].all()
    assert not found[:, 1:].any()


def test_a_whole_body_flip_moves_the_pairs_it_cannot_test_too(take):
    """The ears are seen by view 2 only: no other view tests them, but when the rest of the body is
    flipped in view 2, so are they."""
    rig, X = take
    rng = np.random.default_rng(3)
    px = rig.project(X) + rng.normal(0, 4.0, (len(X), len(rig), 17, 2))
    conf = np.where(np.isfinite(px).all(-1), 0.9, 0.0)
    conf[:, [0, 1, 3], 3:5] = 0.0
    ears = COCO17_LR_PAIRS.index((3, 4))
    truth = np.zeros((len(X), len(rig), len(COCO17_LR_PAIRS)), bool)
    truth[50:60, 2] = True
    found = detect_lr_swaps(apply_lr_swaps(px, truth), conf, rig)
    body = (found[50:60, 2].sum(-1) * 2 > len(COCO17_LR_PAIRS)) & (conf[50:60, 2, 3:5] > 0).all(-1)
    assert body.sum() >= 5
    assert found[50:60, 2, ears][body].all()
    assert not found[:, 2, ears][~truth[:, 2, ears]].any()


def test_swap_helpers():
    v = np.arange(17)[None, None, :, None] * np.ones((2, 1, 17, 2))
    s = np.zeros((2, 1, len(COCO17_LR_PAIRS)), bool)
    s[1] = True
    out = apply_lr_swaps(v, s)
    np.testing.assert_array_equal(out[0, 0, :, 0], np.arange(17))
    np.testing.assert_array_equal(out[1, 0, :, 0], COCO17_FLIP)
    np.testing.assert_array_equal(swap_bits(s)[:, 0], [0, 2 ** len(COCO17_LR_PAIRS) - 1])
    np.testing.assert_array_equal(swapped_pair_count(swap_bits(s))[:, 0], [0, len(COCO17_LR_PAIRS)])
    assert swapped_pair_count(np.array([[0b10010010]]))[0, 0] == 3


@pytest.fixture(scope="module")
def take_15fps(default_root):
    t, X = wearer_landmarks(default_root, step=2)
    return t.rig, X


def _apart(px, min_px=40.0):
    return np.linalg.norm(px[..., COCO17_LEFT, :] - px[..., COCO17_RIGHT, :], axis=-1) > min_px


def test_short_runs_of_changed_labels_are_found_in_time(take_15fps):
    rig, X = take_15fps
    rng = np.random.default_rng(1)
    px = rig.project(X) + rng.normal(0, 4.0, (len(X), len(rig), 17, 2))
    height = np.nanmax(px[..., 1], -1) - np.nanmin(px[..., 1], -1)
    truth = np.zeros((len(X), len(rig), len(COCO17_LR_PAIRS)), bool)
    truth[20:25, 0, ARM] = True  # an arm for 5 frames
    truth[40:42, 2] = truth[47:49, 2] = True  # the whole body twice, 2 frames each, 5 right ones between
    truth[80:110, 1, ARM] = True  # longer than max_frames: left as it is
    bad = apply_lr_swaps(px, truth)
    linked = np.ones(len(X) - 1, bool)
    found = temporal_lr_swaps(bad, height, linked, max_frames=6)
    short = truth.copy()
    short[80:110] = False
    apart = _apart(px)
    assert (short & apart).sum() >= 25
    assert found[short & apart].all()  # pairs apart in the view: every changed frame is found
    assert not found[42:47, 2].any()  # the 5 right frames between the two flips stay
    assert not found[80:110].any()
    assert not found[~short].any()
    # a run that holds a verdict of the cross-view test is left alone
    keep = np.zeros_like(truth)
    keep[22, 0, ARM] = True
    assert not temporal_lr_swaps(bad, height, linked, 6, keep=keep)[20:25, 0, ARM].any()
    # a gap in time breaks the chain: a run that ends at it is not bounded by two changes
    gap = linked.copy()
    gap[24] = False
    assert not temporal_lr_swaps(bad, height, gap, 6)[20:25, 0, ARM].any()


def test_a_longer_flip_of_the_whole_body_is_found_in_time(take_15fps):
    """A detector that flips the whole body of a view flips every pair in the same frame: such a run
    is swapped back up to ``max_body_frames`` long, where one pair's run stops at ``max_frames``; both
    arms swapped together for as long are not a flip of the body (the hips and shoulders did not
    change), and without ``max_body_frames`` nothing that long is touched."""
    rig, X = take_15fps
    rng = np.random.default_rng(3)
    px = rig.project(X) + rng.normal(0, 4.0, (len(X), len(rig), 17, 2))
    height = np.nanmax(px[..., 1], -1) - np.nanmin(px[..., 1], -1)
    truth = np.zeros((len(X), len(rig), len(COCO17_LR_PAIRS)), bool)
    truth[30:42, 2] = True  # the whole body of view 2 for 12 frames (0.8 s at 15 fps)
    truth[60:72, 1, ARM] = True  # both arms of view 1 for as long
    bad = apply_lr_swaps(px, truth)
    linked = np.ones(len(X) - 1, bool)
    found = temporal_lr_swaps(bad, height, linked, 6, max_body_frames=22)
    apart = _apart(px)
    body = truth[..., 0] & (np.arange(len(rig)) == 2)
    assert body.sum() == 12 and (truth[body] & apart[body]).sum() >= 60
    assert found[body].all()  # every pair of every flipped frame, those too close to tell apart as well
    assert not found[~body].any()  # the arms' long run and every right frame stay as they are
    assert not temporal_lr_swaps(bad, height, linked, 6)[30:42].any()
    assert not temporal_lr_swaps(bad, height, linked, 6, max_body_frames=11)[30:42].any()


def test_find_lr_swaps_follows_a_pair_that_only_one_view_sees(take_15fps):
    rig, X = take_15fps
    rng = np.random.default_rng(2)
    px = rig.project(X) + rng.normal(0, 4.0, (len(X), len(rig), 17, 2))
    conf = np.where(np.isfinite(px).all(-1), 0.9, 0.0)
    conf[:, 1:, 9:11] = 0.0  # the wrists: view 0 only, nothing to triangulate them from
    truth = np.zeros((len(X), len(rig), len(COCO17_LR_PAIRS)), bool)
    truth[30:34, 0, ARM] = True
    bad = apply_lr_swaps(px, truth)
    height = np.nanmax(px[..., 1], -1) - np.nanmin(px[..., 1], -1)
    time_s = np.arange(len(X)) / 15.0
    wrist = COCO17_LR_PAIRS.index((9, 10))
    cross_view_only = detect_lr_swaps(bad, conf, rig)
    both = find_lr_swaps(bad, conf, rig, height, time_s)
    sel = truth[..., wrist] & _apart(px)[..., wrist]
    assert sel.sum() >= 3
    assert not cross_view_only[sel, wrist].any()
    assert both[sel, wrist].all()
    assert not find_lr_swaps(bad, conf, rig, height, time_s, SwapConfig(temporal=False))[sel, wrist].any()


def test_find_lr_swaps_turns_back_a_long_flip_of_a_body_that_two_views_see(take_15fps):
    """Two views see the wearer, one of them flipped whole for 0.8 s: the cross-view test cannot say
    which, the pair-by-pair test in time stops at 0.4 s, and ``swaps.temporal_body_max_s`` (1.5 s)
    swaps the flipped frames back."""
    rig, X = take_15fps
    rng = np.random.default_rng(4)
    px = rig.project(X) + rng.normal(0, 4.0, (len(X), len(rig), 17, 2))
    conf = np.where(np.isfinite(px).all(-1), 0.9, 0.0)
    conf[:, 2:] = 0.0  # views 0 and 1 only
    truth = np.zeros((len(X), len(rig), len(COCO17_LR_PAIRS)), bool)
    truth[30:42, 1] = True  # 12 frames at 15 fps
    bad = apply_lr_swaps(px, truth)
    height = np.nanmax(px[..., 1], -1) - np.nanmin(px[..., 1], -1)
    time_s = np.arange(len(X)) / 15.0
    found = find_lr_swaps(bad, conf, rig, height, time_s)
    assert found[30:42, 1].all() and not found[~truth].any()
    assert not find_lr_swaps(bad, conf, rig, height, time_s, SwapConfig(temporal_body_max_s=0.0))[30:42, 1].any()


def test_label_links_tell_steady_labels_from_changed_ones(take_15fps):
    """Between consecutive frames of a pair apart in the view, the labels are steady (they move less
    than half as far as crossed labels would) or changed (the reverse); the frames where a view's whole
    body flips and flips back are changes, the others steady."""
    rig, X = take_15fps
    rng = np.random.default_rng(5)
    px = rig.project(X) + rng.normal(0, 4.0, (len(X), len(rig), 17, 2))
    height = np.nanmax(px[..., 1], -1) - np.nanmin(px[..., 1], -1)
    truth = np.zeros((len(X), len(rig), len(COCO17_LR_PAIRS)), bool)
    truth[40:46, 2] = True
    link, change, steady = label_links(apply_lr_swaps(px, truth), height, np.ones(len(X) - 1, bool), SwapConfig())
    apart = _apart(px, 60.0)
    both_apart = apart[1:] & apart[:-1]
    assert both_apart[[39, 45], 2].sum() >= 6  # shoulders, elbows and wrists
    assert change[[39, 45], 2][both_apart[[39, 45], 2]].all()  # the flip and the flip back
    assert not steady[[39, 45], 2].any()
    others = both_apart.copy()
    others[[39, 45], 2] = False
    assert others.sum() > 1000
    assert steady[others].mean() > 0.97 and not change[others].any()
    assert not (steady & change).any() and not (steady & ~link).any()


def test_verdicts_that_a_detectors_steady_labels_outvote_are_taken_back():
    """Along a stretch of frames that steady labels join, the cross-view verdicts stand only where they
    are at least as many as the stretch's frames whose labels the other views confirm, and, with
    ``untested_vote``, its other frames counted at that weight."""
    F, P = 12, 4
    steady = np.ones((F - 1, 1, P), bool)
    confirmed = np.ones((F, 1, P), bool)
    verdicts = np.zeros((F, 1, P), bool)
    verdicts[4:6, 0, 0] = True  # pair 0: 2 verdicts against 10 frames confirmed
    verdicts[4:6, 0, 1] = True  # pair 1: the same verdicts, but only one other frame confirmed
    confirmed[:, 0, 1] = False
    confirmed[6, 0, 1] = True
    verdicts[4:7, 0, 2] = True  # pair 2: the detector's labels changed into and out of frames 4-6
    steady[[3, 6], 0, 2] = False
    verdicts[4:6, 0, 3] = True  # pair 3: never steady (too close to tell): every frame stands alone
    steady[:, 0, 3] = False
    out = vote_in_time(verdicts, steady, confirmed, 0.0)
    assert not out[:, 0, 0].any()
    np.testing.assert_array_equal(out[:, 0, 1:], verdicts[:, 0, 1:])
    # stretches do not run across views or pairs: the same verdicts in a second view, tested nowhere else
    two = np.concatenate([verdicts, verdicts], 1)
    both = np.concatenate([confirmed, np.zeros_like(confirmed)], 1)
    both[6, 1] = True
    out2 = vote_in_time(two, np.concatenate([steady, steady], 1), both, 0.0)
    np.testing.assert_array_equal(out2[:, 0], out[:, 0])
    np.testing.assert_array_equal(out2[:, 1], verdicts[:, 0])
    # the unconfirmed frames of pair 1 (9 without a verdict) at a quarter each: 1 + 2.25 outvote its 2
    quarter = vote_in_time(verdicts, steady, confirmed, 0.25)
    assert not quarter[:, 0, :2].any()
    np.testing.assert_array_equal(quarter[:, 0, 2:], verdicts[:, 0, 2:])
    assert vote_in_time(verdicts, steady, confirmed, 0.1)[:, 0, 1].sum() == 2  # 1 + 0.9 do not


def test_the_other_views_confirm_right_labels_and_never_swapped_ones(take):
    px, conf, truth, bad = _injected_swaps(*take, seed=6)
    confirmed = cross_view_confirmed(np.where((conf > 0)[..., None], bad, np.nan), conf, take[0], SwapConfig())
    apart = _apart(px)
    assert (truth & apart).sum() >= 100
    assert not confirmed[truth & apart].any()
    assert confirmed[~truth & apart].mean() > 0.93  # 95 %: the rest too close to the others' noise to tell


def test_two_views_wrong_at_once_no_longer_get_the_right_one_swapped(take_15fps):
    """Three views, two of which swap one arm the same way for 4 frames: to the cross-view test the right
    view looks swapped (the other two triangulate the swapped arm), and it is swapped. The right view's
    detector labels that arm steadily through those frames and the other views confirm it around them,
    so the vote in time takes the verdict back, and the test in time then swaps the two wrong views back."""
    rig, X = take_15fps
    rng = np.random.default_rng(0)
    px = rig.project(X) + rng.normal(0, 4.0, (len(X), len(rig), 17, 2))
    conf = np.where(np.isfinite(px).all(-1), 0.9, 0.0)
    conf[:, 3:] = 0.0  # views 0, 1 and 2 only
    truth = np.zeros((len(X), len(rig), len(COCO17_LR_PAIRS)), bool)
    truth[30:34, 0, ARM] = truth[30:34, 1, ARM] = True
    bad = apply_lr_swaps(px, truth)
    height = np.nanmax(px[..., 1], -1) - np.nanmin(px[..., 1], -1)
    time_s = np.arange(len(X)) / 15.0
    assert _apart(px)[30:34, :3][..., ARM].all()
    cross_view = detect_lr_swaps(bad, conf, rig)
    assert cross_view[30:34, 2, ARM].all() and not cross_view[30:34, :2, ARM].any()
    found = find_lr_swaps(bad, conf, rig, height, time_s)
    np.testing.assert_array_equal(found[..., ARM], truth[..., ARM])
    assert find_lr_swaps(bad, conf, rig, height, time_s, SwapConfig(temporal_vote=False))[30:34, 2, ARM].all()
