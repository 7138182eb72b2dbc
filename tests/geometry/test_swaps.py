import h5py
import numpy as np
import pytest

from motionkit.conventions import COCO17_FLIP, COCO17_LR_PAIRS
from motionkit.data.egoexo4d import EgoExoDataset
from motionkit.geometry.swaps import apply_lr_swaps, detect_lr_swaps, swap_bits

ARM = [COCO17_LR_PAIRS.index((7, 8)), COCO17_LR_PAIRS.index((9, 10))]


@pytest.fixture(scope="module")
def take(default_root):
    ds = EgoExoDataset(default_root)
    t = ds.take(ds.takes()[0].take_uid)
    with h5py.File(default_root / "gt" / f"{t.uid}.h5") as f:
        X = f["wearer/coco17_world"][()][::3]  # 10 fps is enough here
    return t.rig, X


def test_injected_swaps_are_found_and_undone(take):
    rig, X = take
    rng = np.random.default_rng(0)
    px = rig.project(X) + rng.normal(0, 4.0, (len(X), len(rig), 17, 2))
    conf = np.where(np.isfinite(px).all(-1), 0.9, 0.0)
    truth = np.zeros((len(X), len(rig), len(COCO17_LR_PAIRS)), bool)
    truth[10:40, 1, ARM] = True  # one arm's labels, in view 1
    truth[50:60, 2, :] = True  # the whole body, in view 2
    bad = apply_lr_swaps(px, truth)
    found = detect_lr_swaps(bad, conf, rig)
    # a swap is only visible when the two joints of the pair are apart in that view
    a = np.array([p[0] for p in COCO17_LR_PAIRS])
    b = np.array([p[1] for p in COCO17_LR_PAIRS])
    apart = np.linalg.norm(px[..., a, :] - px[..., b, :], axis=-1) > 40
    assert (truth & apart).sum() > 100
    assert found[truth & apart].mean() >= 0.9
    assert found[~truth].mean() <= 0.01
    agree = (found == truth).all(-1)  # where the detection is right, the labels are restored exactly
    assert agree.mean() > 0.95
    np.testing.assert_array_equal(apply_lr_swaps(bad, found)[agree], px[agree])


def test_swap_helpers():
    v = np.arange(17)[None, None, :, None] * np.ones((2, 1, 17, 2))
    s = np.zeros((2, 1, len(COCO17_LR_PAIRS)), bool)
    s[1] = True
    out = apply_lr_swaps(v, s)
    np.testing.assert_array_equal(out[0, 0, :, 0], np.arange(17))
    np.testing.assert_array_equal(out[1, 0, :, 0], COCO17_FLIP)
    np.testing.assert_array_equal(swap_bits(s)[:, 0], [0, 2 ** len(COCO17_LR_PAIRS) - 1])
