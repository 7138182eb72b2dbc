"""glb export read back by independent tools: the Khronos glTF validator (npm ``gltf-validator``, run
with node; skipped where node or npm is absent) and ``pygltflib``, whose accessors are skinned here
(written in this test, not motionkit's) and compared with the body model's full mesh."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from scipy.spatial.transform import Rotation

from motionkit.body.model_file import load_model_file
from motionkit.cli import main
from motionkit.conventions import COCO17_NAMES, R_ZUP_TO_YUP, TAKE_FPS
from motionkit.data.egoexo4d import EgoExoDataset
from motionkit.data.gltf import write_take
from motionkit.data.store import read_result
from tests.helpers import gt_result

pygltflib = pytest.importorskip("pygltflib")
VALIDATOR_VERSION = "2.0.0-dev.3.10"
DTYPES = {5126: np.float32, 5123: np.uint16, 5125: np.uint32}
WIDTH = {"SCALAR": 1, "VEC3": 3, "VEC4": 4, "MAT4": 16}


def _accessor(gltf, blob: bytes, i: int) -> np.ndarray:
    a = gltf.accessors[i]
    v = gltf.bufferViews[a.bufferView]
    n = a.count * WIDTH[a.type]
    arr = np.frombuffer(blob, DTYPES[a.componentType], n, (v.byteOffset or 0) + (a.byteOffset or 0))
    return arr.reshape(a.count, WIDTH[a.type]).astype(np.float64)


def _trs(t=None, q=None) -> np.ndarray:
    M = np.eye(4)
    if q is not None:
        M[:3, :3] = Rotation.from_quat(q).as_matrix()
    if t is not None:
        M[:3, 3] = t
    return M


def _skinned_vertices(gltf, blob: bytes, frame: int) -> np.ndarray:
    """The body mesh at one animation keyframe, by the glTF 2.0 rules: morph targets, then
    ``sum_s w_s * (global_j @ inverseBind_j)`` over every JOINTS_n/WEIGHTS_n set."""
    nodes = gltf.nodes
    local = {i: {"t": n.translation, "q": n.rotation} for i, n in enumerate(nodes)}
    mesh_node = next(i for i, n in enumerate(nodes) if n.skin is not None)
    morph = None
    anim = gltf.animations[0]
    skin = gltf.skins[nodes[mesh_node].skin]
    for ch in anim.channels:
        if ch.target.node != mesh_node and ch.target.node not in skin.joints:
            continue  # the annotation points
        out = _accessor(gltf, blob, anim.samplers[ch.sampler].output)
        if ch.target.path == "weights":
            morph = out.reshape(-1, len(gltf.meshes[0].primitives[0].targets))[frame]
        else:
            local[ch.target.node]["t" if ch.target.path == "translation" else "q"] = out[frame]
    parent = {c: i for i, n in enumerate(nodes) for c in (n.children or [])}

    def world(i: int) -> np.ndarray:
        M = _trs(local[i]["t"], local[i]["q"])
        return world(parent[i]) @ M if i in parent else M

    ibm = _accessor(gltf, blob, skin.inverseBindMatrices).reshape(-1, 4, 4).transpose(0, 2, 1)
    joint_mats = np.stack([world(j) for j in skin.joints]) @ ibm
    prim = gltf.meshes[nodes[mesh_node].mesh].primitives[0]
    attrs = prim.attributes
    v = _accessor(gltf, blob, attrs.POSITION)
    for w, target in zip(morph, prim.targets, strict=True):
        v = v + w * _accessor(gltf, blob, target["POSITION"])
    M = np.zeros((len(v), 4, 4))
    for s in range(4):
        ji, wi = getattr(attrs, f"JOINTS_{s}", None), getattr(attrs, f"WEIGHTS_{s}", None)
        if ji is None:
            break
        J, W = _accessor(gltf, blob, ji).astype(int), _accessor(gltf, blob, wi)
        M += np.einsum("vk,vkab->vab", W, joint_mats[J])
    return (M[:, :3, :3] @ v[..., None])[..., 0] + M[:, :3, 3]


def _model_vertices(model, betas, go, bp, transl) -> np.ndarray:
    """SMPL-X's full mesh (shape blend, pose correctives, linear blend skinning), z up."""
    v = model.v_template + model.shapedirs @ betas
    J = model.J_regressor @ v
    R = np.concatenate([Rotation.from_rotvec(go).as_matrix()[None], Rotation.from_rotvec(bp).as_matrix(),
                        np.tile(np.eye(3), (33, 1, 1))])  # fmt: skip
    v = v + model.posedirs @ (R[1:] - np.eye(3)).reshape(-1)
    G = np.zeros((55, 4, 4))
    for j, p in enumerate(model.parents):
        L = _trs(J[j] - (J[p] if p >= 0 else 0))
        L[:3, :3] = R[j]
        G[j] = G[p] @ L if p >= 0 else L
    G[:, :3, 3] -= (G[:, :3, :3] @ J[..., None])[..., 0]
    A = np.einsum("vj,jab->vab", model.weights, G)
    return (A[:, :3, :3] @ v[..., None])[..., 0] + A[:, :3, 3] + transl


@pytest.fixture(scope="module")
def exported(synth_root, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("glb")
    uid = EgoExoDataset(synth_root).takes()[0].take_uid
    r = read_result(gt_result(synth_root, uid, tmp / "fits", pose_noise_rad=0.1, drop=slice(20, 26)))
    return r, write_take(r, tmp / "out")


def test_skinned_mesh_equals_the_body_models_vertices_at_three_frames(exported):
    r, path = exported
    gltf = pygltflib.GLTF2.load(str(path))
    blob = gltf.binary_blob()
    model = load_model_file()
    valid = np.flatnonzero(r["valid"].astype(bool))
    for t in (valid[0], valid[len(valid) // 2], valid[-1]):
        pose = r["smplx/global_orient"][t], r["smplx/body_pose"][t].reshape(21, 3), r["smplx/transl"][t]
        want = _model_vertices(model, r["smplx/betas"], *pose) @ R_ZUP_TO_YUP.T
        err = np.linalg.norm(_skinned_vertices(gltf, blob, t) - want, axis=-1)
        # float32 storage gives ~0.2 um; dropping the pose correctives (morph targets) would give 4-9 mm
        assert err.max() < 1e-6, (t, err.max())


def test_file_contents_side_car_and_rerun_bytes(exported, tmp_path):
    r, path = exported
    gltf = pygltflib.GLTF2.load(str(path))
    side = json.loads(path.with_suffix(".glb.json").read_text())
    assert side["filled_frames"] == list(range(20, 26)) and side["frames"] == len(r["valid"])
    assert gltf.asset.extras["valid_runs"] == side["valid_runs"]
    assert [c.name for c in gltf.cameras] == side["cameras"] and len(side["cameras"]) >= 2
    assert any(m.name == "aria_trajectory" for m in gltf.meshes)
    assert len(side["annotation_keypoints"]) == 17
    again = write_take(r, tmp_path)
    assert hashlib.sha256(again.read_bytes()).digest() == hashlib.sha256(path.read_bytes()).digest()


def test_camera_node_looks_along_the_cameras_optical_axis(exported, synth_root):
    r, path = exported
    gltf = pygltflib.GLTF2.load(str(path))
    rig = EgoExoDataset(synth_root).take(str(r.attrs["take_uid"])).rig
    for cam in rig:
        node = next(n for n in gltf.nodes if n.name == cam.name)
        forward = Rotation.from_quat(node.rotation).apply([0.0, 0.0, -1.0])  # glTF cameras look down -z
        assert np.allclose(forward, cam.T_world_cam[:3, 2], atol=1e-6)
        assert np.allclose(node.translation, cam.center, atol=1e-6)


def test_annotation_keypoints_sit_at_the_annotated_positions(exported, synth_root):
    r, path = exported
    gltf = pygltflib.GLTF2.load(str(path))
    blob = gltf.binary_blob()
    ann = EgoExoDataset(synth_root).take(str(r.attrs["take_uid"])).body_annotation()
    anim = gltf.animations[0]
    first = float(r["grid/frame_pos"][0])
    checked = 0
    for ch in anim.channels:
        node = gltf.nodes[ch.target.node].name
        if not node.startswith("annotation_") or ch.target.path != "translation":
            continue
        k = COCO17_NAMES.index(node.removeprefix("annotation_"))
        keys = _accessor(gltf, blob, anim.samplers[ch.sampler].input)[:, 0]
        xyz = _accessor(gltf, blob, anim.samplers[ch.sampler].output)
        frames = np.rint(keys * TAKE_FPS + first).astype(int)
        want = ann.joints3d[np.searchsorted(ann.frames, frames), k]
        ok = np.isfinite(want).all(-1)
        assert np.abs(xyz[ok] - want[ok]).max() < 1e-6  # float32 storage of world metres (~1e-7)
        checked += ok.sum()
    assert checked > 100


def test_cli_exports_glb_and_names_a_malformed_file(exported, tmp_path):
    r, path = exported
    out = CliRunner().invoke(main, ["export", str(path.parent.parent / "fits"), "--format", "glb", "--out",
                                    str(tmp_path / "cli")])  # fmt: skip
    assert out.exit_code == 0, out.output
    assert (tmp_path / "cli" / path.name).read_bytes() == path.read_bytes()
    bad = tmp_path / "bad" / "broken.h5"
    bad.parent.mkdir()
    bad.write_bytes(b"not an HDF5 file")
    out = CliRunner().invoke(main, ["export", str(bad), "--format", "glb", "--out", str(tmp_path / "x")])
    assert out.exit_code != 0 and "broken.h5" in out.output and "Traceback" not in out.output


@pytest.fixture(scope="session")
def gltf_validator(tmp_path_factory) -> Path:
    """The Khronos validator installed with npm into a per-user cache (nothing system-wide)."""
    if not (shutil.which("node") and shutil.which("npm")):
        pytest.skip("node/npm not installed")
    prefix = Path.home() / ".cache" / "motionkit-tests" / f"gltf-validator-{VALIDATOR_VERSION}"
    if not (prefix / "node_modules" / "gltf-validator").is_dir():
        done = subprocess.run(["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund",
                               f"gltf-validator@{VALIDATOR_VERSION}"], capture_output=True, timeout=300)  # fmt: skip
        if done.returncode:
            pytest.skip(f"npm could not install gltf-validator: {done.stderr.decode()[-300:]}")
    script = prefix / "validate.js"
    script.write_text(
        "const v = require('gltf-validator');\n"
        "v.validateBytes(new Uint8Array(require('fs').readFileSync(process.argv[2])))"
        ".then(r => console.log(JSON.stringify(r.issues))).catch(e => { console.error(e); process.exit(2); });\n"
    )
    return script


def test_khronos_validator_reports_no_errors_or_warnings(exported, gltf_validator):
    _, path = exported
    done = subprocess.run(["node", str(gltf_validator), str(path)], capture_output=True, text=True, timeout=120,
                          cwd=gltf_validator.parent)  # fmt: skip
    assert done.returncode == 0, done.stderr
    issues = json.loads(done.stdout)
    assert issues["numErrors"] == 0 and issues["numWarnings"] == 0, issues["messages"]


def test_resampled_and_without_the_dataset(exported, tmp_path):
    r = dataclasses.replace(exported[0], attrs={**exported[0].attrs, "dataset_root": str(tmp_path / "moved")})
    with pytest.warns(UserWarning, match="the dataset it was fitted from is not here"):
        path = write_take(r, tmp_path, fps=10.0)
    gltf = pygltflib.GLTF2.load(str(path))
    blob = gltf.binary_blob()
    times = _accessor(gltf, blob, gltf.animations[0].samplers[0].input)[:, 0]
    assert len(times) == (len(r["valid"]) - 1) // 2 + 1 and np.allclose(np.diff(times), 0.1, atol=1e-6)
    assert not gltf.cameras and [m.name for m in gltf.meshes] == ["body"]
    assert json.loads(path.with_suffix(".glb.json").read_text())["fps"] == 10.0
