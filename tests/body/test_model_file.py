import numpy as np
import pytest
import torch

from motionkit.body.model_file import REQUIRED_KEYS, load_model_file, resolve_model_path
from motionkit.body.synthetic_model import generate_synthetic_arrays, generate_synthetic_smplx
from motionkit.common.errors import DataError
from motionkit.conventions import SMPLX_JOINT_NAMES, SMPLX_NUM_VERTICES, SMPLX_PARENTS, SMPLX_VERTEX_KEYPOINTS

smplx = pytest.importorskip("smplx")
J = {n: i for i, n in enumerate(SMPLX_JOINT_NAMES)}
VK = dict(SMPLX_VERTEX_KEYPOINTS)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("models")
    generate_synthetic_smplx(d / "smplx" / "SMPLX_NEUTRAL.npz")
    return d


def test_smplx_create_loads_synthetic_model(model_dir):
    p = model_dir / "smplx" / "SMPLX_NEUTRAL.npz"
    assert p.stat().st_size < 2_000_000
    with np.load(p) as z:
        assert set(REQUIRED_KEYS) <= set(z.files) and bool(z["motionkit_synthetic"])
        assert z["v_template"].shape == (SMPLX_NUM_VERTICES, 3)
    for m in (smplx.create(str(model_dir), model_type="smplx"), smplx.create(str(p), model_type="smplx")):
        out = m(return_verts=True)
        assert out.vertices.shape == (1, SMPLX_NUM_VERTICES, 3) and out.joints.shape == (1, 127, 3)
        np.testing.assert_array_equal(m.parents.numpy(), SMPLX_PARENTS)


def test_landmarks_are_anatomically_plausible(model_dir):
    m = smplx.create(str(model_dir), model_type="smplx")
    with torch.no_grad():
        j = m().joints[0].numpy()
    v = m.v_template.numpy()
    head, neck = j[J["head"]], j[J["neck"]]
    nose, leye, reye, lear, rear = (v[VK[k]] for k in ("nose", "left_eye", "right_eye", "left_ear", "right_ear"))
    # SMPL-X canonical: y up, facing +z, +x = the body's left
    assert nose[2] > head[2] + 0.06 and nose[1] > neck[1]
    assert leye[0] > 0.015 and reye[0] < -0.015 and abs(leye[0] + reye[0]) < 1e-6
    assert leye[1] > nose[1] and leye[2] > head[2] + 0.04
    assert lear[0] > 0.06 and rear[0] < -0.06 and abs(lear[2] - head[2]) < 0.04
    for s in ("left", "right"):
        ankle, foot = j[J[f"{s}_ankle"]], j[J[f"{s}_foot"]]
        assert v[VK[f"{s}_heel"]][2] < ankle[2] - 0.03 and v[VK[f"{s}_heel"]][1] < ankle[1]
        assert v[VK[f"{s}_big_toe"]][2] > foot[2] and v[VK[f"{s}_small_toe"]][2] > ankle[2] + 0.1
        sgn = 1 if s == "left" else -1
        wrist = j[J[f"{s}_wrist"]]
        for f in ("thumb", "index", "middle", "ring", "pinky"):
            assert sgn * (v[VK[f"{s}_{f}"]][0] - wrist[0]) > 0.05
    height = v[:, 1].max() - v[:, 1].min()
    assert 1.6 < height < 1.9


def test_shape_components_change_bone_lengths(model_dir):
    m = smplx.create(str(model_dir), model_type="smplx")

    def bones(b):
        with torch.no_grad():
            j = m(betas=torch.as_tensor(b, dtype=torch.float32)[None]).joints[0].numpy()
        return {
            "femur": np.linalg.norm(j[J["left_hip"]] - j[J["left_knee"]]),
            "shin": np.linalg.norm(j[J["left_knee"]] - j[J["left_ankle"]]),
            "upper_arm": np.linalg.norm(j[J["left_shoulder"]] - j[J["left_elbow"]]),
            "shoulders": np.linalg.norm(j[J["left_shoulder"]] - j[J["right_shoulder"]]),
            "hips": np.linalg.norm(j[J["left_hip"]] - j[J["right_hip"]]),
        }

    base = bones(np.zeros(10))
    ratios = []
    for k in range(10):
        b = np.zeros(10)
        b[k] = 2.0
        new = bones(b)
        ratios.append([new[n] / base[n] for n in base])
    ratios = np.array(ratios)
    assert (np.abs(ratios - 1) > 0.05).any(1).sum() >= 5  # at least five components change bones
    # and not merely by one global scale: the changed proportions differ between components
    assert np.linalg.matrix_rank(ratios - 1, tol=1e-3) >= 4


def test_load_model_file_identity_and_resolution(model_dir, monkeypatch):
    mf = load_model_file(model_dir)
    assert mf.synthetic and mf.identity["kind"] == "synthetic" and len(mf.sha256) == 64
    monkeypatch.setenv("MOTIONKIT_BODY_MODEL", str(model_dir / "smplx" / "SMPLX_NEUTRAL.npz"))
    assert resolve_model_path() == model_dir / "smplx" / "SMPLX_NEUTRAL.npz"
    assert load_model_file().sha256 == mf.sha256


def test_real_format_without_synthetic_key_is_smplx(tmp_path):
    arrays = generate_synthetic_arrays(seed=1)
    del arrays["motionkit_synthetic"]
    p = tmp_path / "SMPLX_NEUTRAL.npz"
    np.savez_compressed(p, **arrays)
    mf = load_model_file(p)
    assert not mf.synthetic and mf.identity["kind"] == "smplx"


@pytest.mark.parametrize(
    "breakit,match",
    [
        (lambda a: a.pop("posedirs"), "missing keys"),
        (lambda a: a.__setitem__("kintree_table", a["kintree_table"][:, ::-1].copy()), "kinematic tree"),
        (lambda a: a.__setitem__("J_regressor", a["J_regressor"][:10]), "J_regressor"),
    ],
)
def test_invalid_model_files(tmp_path, breakit, match):
    arrays = generate_synthetic_arrays(seed=1)
    breakit(arrays)
    p = tmp_path / "SMPLX_NEUTRAL.npz"
    np.savez(p, **arrays)
    with pytest.raises(DataError, match=match):
        load_model_file(p)


def test_missing_model_path(tmp_path):
    with pytest.raises(DataError, match="not found"):
        load_model_file(tmp_path / "nope.npz")
    with pytest.raises(DataError, match="no SMPLX_NEUTRAL"):
        load_model_file(tmp_path)


def test_model_file_is_read_once_until_it_changes(tmp_path):
    """A batch worker fits many takes with one model: the file is read once per process, again only after
    it changed; the arrays it hands out cannot be modified by one caller under another's feet."""
    path = tmp_path / "SMPLX_NEUTRAL.npz"
    generate_synthetic_smplx(path)
    first = load_model_file(path)
    assert load_model_file(path) is first
    with pytest.raises(ValueError, match="read-only"):
        first.v_template[0, 0] = 1.0
    arrays = dict(np.load(path))
    arrays["v_template"] = arrays["v_template"] + 0.01
    np.savez(path, **arrays)
    changed = load_model_file(path)
    assert changed is not first and changed.sha256 != first.sha256
    np.testing.assert_allclose(changed.v_template, first.v_template + 0.01, atol=1e-6)
