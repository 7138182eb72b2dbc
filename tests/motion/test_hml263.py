import os
import warnings
from pathlib import Path

import numpy as np
import pytest

from motionkit.motion.hml263 import (
    hml263_to_joints,
    hml_positions,
    joints_to_hml263,
    joints_to_hml263_batch,
    normalize,
    smplx_joints_zup_to_hml,
)
from motionkit.motion.hml263_skeleton import TARGET_SKELETON, target_bone_lengths

REF = (
    Path(os.environ.get("MOTIONKIT_SHARED", Path(__file__).resolve().parents[3] / "shared")) / "reference" / "humanml3d"
)
needs_ref = pytest.mark.skipif(
    not (REF / "012314_joints.npy").is_file(), reason=f"HumanML3D check pair not found in {REF}"
)


@pytest.fixture(scope="module")
def pair():
    return np.load(REF / "012314_joints.npy"), np.load(REF / "012314_features.npy")


@needs_ref
def test_embedded_target_skeleton_matches_reference_file():
    t = np.load(REF / "target_skeleton_000021_frame0.npy")
    np.testing.assert_allclose(TARGET_SKELETON, t[:22], atol=1e-9)
    assert target_bone_lengths()[5] + target_bone_lengths()[8] == pytest.approx(0.81583154, abs=1e-7)


@needs_ref
@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_official_check_pair_forward(pair, backend):
    joints, feats = pair
    ours = joints_to_hml263(joints, backend=backend)
    assert ours.shape == (169, 263) and ours.dtype == np.float32
    # rows 0-84 only: the published clip was cut from a longer source segment (171 frames), and quirk Q3's
    # 80-frame heading smoothing reaches past the cut in the last rows (docs/motion.md); measured 7.7e-6
    assert np.abs(ours[:85, :259] - feats[:85, :259]).max() <= 2e-5
    np.testing.assert_array_equal(ours[:85, 259:], feats[:85, 259:])
    assert ours[0, 0] == pytest.approx(0.106, abs=1e-3)  # Q2: the spurious rot_vel[0]


@needs_ref
def test_official_check_pair_inverse(pair):
    joints, feats = pair
    rec = hml263_to_joints(feats)
    assert rec.shape == (170, 22, 3)
    assert np.abs(rec - joints).max() <= 1e-5


def synthetic_walk(T=120, turn_deg=0.0, fps=20.0):
    """A walking skeleton in a y-up world: the target skeleton moved along +z with a yaw ramp."""
    from scipy.spatial.transform import Rotation

    base = TARGET_SKELETON - TARGET_SKELETON[0] * [1, 0, 1]
    out = np.empty((T, 22, 3))
    for t in range(T):
        R = Rotation.from_euler("y", np.deg2rad(turn_deg) * t / (T - 1)).as_matrix()
        swing = 0.2 * np.sin(2 * np.pi * t / fps)
        pose = base.copy()
        pose[[4, 7, 10], 2] += swing
        pose[[5, 8, 11], 2] -= swing
        out[t] = pose @ R.T + [0.0, 0.0, 1.2 * t / fps]
    return out


def test_roundtrip_on_synthetic_clips():
    for turn in (0.0, 90.0):
        j = synthetic_walk(turn_deg=turn)
        rec = hml263_to_joints(joints_to_hml263(j))
        # recover_from_ric gives back the normalised joints the features describe (all but the last frame)
        assert np.abs(rec - hml_positions(j)[:-1]).max() <= 1e-5


def test_360_turn_reproduces_q4_flip():
    j = synthetic_walk(T=200, turn_deg=360.0)
    ref = joints_to_hml263(j)
    cor = joints_to_hml263(j, variant="corrected")
    # reference: rot_vel changes sign where the smoothed heading crosses +-180 deg; corrected does not
    assert (np.sign(ref[5:-5, 0]) != np.sign(np.median(ref[5:-5, 0]))).any()
    assert (np.sign(cor[5:-5, 0]) == np.sign(np.median(cor[5:-5, 0]))).all()


def test_short_clips_and_q9_warning():
    j = synthetic_walk(T=4)
    assert joints_to_hml263(j[:2]).shape == (1, 263)
    assert joints_to_hml263(j).shape == (3, 263)
    with pytest.warns(UserWarning, match="Q9"):
        out3 = joints_to_hml263(j[:3])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cor3 = joints_to_hml263(j[:3], variant="corrected")
    assert out3.shape == cor3.shape == (2, 263)
    assert np.abs(out3[:, 67:193] - cor3[:, 67:193]).max() > 1e-3  # Q9 corrupts cont6d


def test_backends_and_batch_agree():
    rng = np.random.default_rng(0)
    clips = [
        synthetic_walk(T=int(T), turn_deg=float(a))
        for T, a in zip(rng.integers(5, 150, 12), rng.uniform(-200, 200, 12), strict=True)
    ]
    clips.append(synthetic_walk(T=3))
    with pytest.warns(UserWarning, match="Q9"):
        batch = joints_to_hml263_batch(clips)
    for c, b in zip(clips, batch, strict=True):
        assert b.shape == (len(c) - 1, 263)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            np.testing.assert_allclose(b, joints_to_hml263(c, backend="numpy"), atol=1e-5)
    for variant in ("reference", "corrected"):
        a = joints_to_hml263(clips[0], variant=variant, backend="numba")
        b = joints_to_hml263(clips[0], variant=variant, backend="numpy")
        np.testing.assert_allclose(a, b, atol=1e-6)


def test_proper_rotation_invariance_and_zup_conversion():
    j = synthetic_walk()
    zup = j @ np.array([[1.0, 0, 0], [0, 0, -1], [0, 1, 0]]).T  # y-up -> z-up (inverse of R_ZUP_TO_YUP)
    back = smplx_joints_zup_to_hml(zup)
    np.testing.assert_allclose(back, j, atol=1e-12)
    from scipy.spatial.transform import Rotation

    R = Rotation.from_euler("y", 1.234).as_matrix()
    np.testing.assert_allclose(joints_to_hml263(j @ R.T + [3, 0, -2]), joints_to_hml263(j), atol=2e-5)


def test_bad_input_and_corrected_normalisation():
    with pytest.raises(ValueError, match=r"\(T, 22, 3\)"):
        joints_to_hml263(np.zeros((10, 24, 3)))
    with pytest.raises(ValueError, match="at least 2 frames"):
        joints_to_hml263(np.zeros((1, 22, 3)))
    j = synthetic_walk(T=10)
    j[4, 3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        joints_to_hml263(j)
    with pytest.raises(ValueError, match=r"\(\.\.\., N, 263\)"):
        hml263_to_joints(np.zeros((5, 262)))
    with pytest.raises(ValueError, match="must not be normalised"):
        normalize(np.zeros((2, 263)), np.zeros(263), np.ones(263), variant="corrected")
