"""A procedurally generated humanoid in the SMPL-X npz format (no licensed data involved).

The body is built from tapered tubes along the bones of the SMPL-X kinematic tree (real kintree,
55 joints, 10,475 vertices). The vertices behind smplx's vertex keypoints (nose, eyes, ears, toes,
heels, fingertips) sit on those landmarks. Each joint is regressed from six interior vertices
placed symmetrically around it, so ``J_regressor @ v`` is the joint exactly, and the ten shape
components change bone lengths (stature, legs, torso, arms, shoulder and hip width, neck, head,
girth, hands and feet), so that shape estimation is exercised. Pose correctives are small and
non-zero on a few vertices so that code paths using ``posedirs`` are tested.

Canonical frame: y up, facing +z, +x = the body's left; metres; soles at y = -1.30.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from motionkit.common.files import save_npz_atomic
from motionkit.conventions import SMPLX_JOINT_NAMES, SMPLX_NUM_VERTICES, SMPLX_PARENTS, SMPLX_VERTEX_KEYPOINTS

J_IDX = {n: i for i, n in enumerate(SMPLX_JOINT_NAMES)}


def _rest_joints() -> np.ndarray:
    """(55, 3) rest joints of the template body (metres, y up, facing +z, +x left)."""
    left = {
        "hip": (0.085, -0.45, 0.0), "knee": (0.10, -0.84, 0.01), "ankle": (0.09, -1.22, -0.03),
        "foot": (0.11, -1.285, 0.09), "collar": (0.075, 0.08, -0.01), "shoulder": (0.18, 0.11, -0.02),
        "elbow": (0.44, 0.10, -0.03), "wrist": (0.70, 0.10, -0.02), "eye_smplhf": (0.032, 0.33, 0.06),
        "index1": (0.79, 0.095, 0.03), "index2": (0.825, 0.095, 0.03), "index3": (0.85, 0.095, 0.03),
        "middle1": (0.795, 0.095, 0.005), "middle2": (0.835, 0.095, 0.005), "middle3": (0.862, 0.095, 0.005),
        "pinky1": (0.775, 0.095, -0.04), "pinky2": (0.80, 0.095, -0.04), "pinky3": (0.82, 0.095, -0.04),
        "ring1": (0.785, 0.095, -0.018), "ring2": (0.82, 0.095, -0.018), "ring3": (0.845, 0.095, -0.018),
        "thumb1": (0.725, 0.085, 0.03), "thumb2": (0.75, 0.075, 0.05), "thumb3": (0.77, 0.07, 0.065),
    }  # fmt: skip
    mid = {
        "pelvis": (0.0, -0.36, 0.0), "spine1": (0.0, -0.24, -0.01), "spine2": (0.0, -0.11, 0.0),
        "spine3": (0.0, -0.04, 0.01), "neck": (0.0, 0.17, -0.02), "head": (0.0, 0.25, 0.01),
        "jaw": (0.0, 0.22, 0.04),
    }  # fmt: skip
    J = np.zeros((55, 3))
    for name, i in J_IDX.items():
        if name in mid:
            J[i] = mid[name]
            continue
        side, base = name.split("_", 1)
        if base.endswith("smplhf"):
            base = "eye_smplhf"
        x, y, z = left[base]
        J[i] = (x if side == "left" else -x, y, z)
    return J


# Parts: (name, start point, end point, skinning joint, radii (start, end) as (rx, rz) ellipse
# half-axes perpendicular to the tube, rings, sectors). Start/end are joints or fixed offsets.
def _parts(J: np.ndarray) -> list[dict]:
    j = J_IDX
    parts = [
        dict(name="pelvis", a=J[j["pelvis"]] + (0, -0.14, 0), b=J[j["spine1"]], w=j["pelvis"], r0=(0.165, 0.11), r1=(0.16, 0.11), nu=14, nt=32),
        dict(name="spine1", a=J[j["spine1"]], b=J[j["spine2"]], w=j["spine1"], r0=(0.16, 0.11), r1=(0.165, 0.115), nu=10, nt=32),
        dict(name="spine2", a=J[j["spine2"]], b=J[j["spine3"]], w=j["spine2"], r0=(0.165, 0.115), r1=(0.175, 0.12), nu=6, nt=32),
        dict(name="spine3", a=J[j["spine3"]], b=J[j["neck"]] + (0, -0.02, 0), w=j["spine3"], r0=(0.175, 0.12), r1=(0.15, 0.10), nu=14, nt=32),
        dict(name="neck", a=J[j["neck"]] + (0, -0.03, 0), b=J[j["head"]], w=j["neck"], r0=(0.06, 0.055), r1=(0.055, 0.05), nu=8, nt=16),
        dict(name="head", a=J[j["head"]] + (0, -0.01, 0.02), b=J[j["head"]] + (0, 0.18, 0.02), w=j["head"], r0=(0.06, 0.07), r1=(0.03, 0.03), nu=24, nt=32, bulge=0.085),
    ]  # fmt: skip
    for s in ("left", "right"):
        parts += [
            dict(name=f"{s}_thigh", a=J[j[f"{s}_hip"]], b=J[j[f"{s}_knee"]], w=j[f"{s}_hip"], r0=(0.08, 0.085), r1=(0.055, 0.055), nu=20, nt=20),
            dict(name=f"{s}_shin", a=J[j[f"{s}_knee"]], b=J[j[f"{s}_ankle"]], w=j[f"{s}_knee"], r0=(0.052, 0.055), r1=(0.038, 0.04), nu=20, nt=16),
            dict(name=f"{s}_heel", a=J[j[f"{s}_ankle"]] + (0, -0.03, -0.06), b=J[j[f"{s}_foot"]], w=j[f"{s}_ankle"], r0=(0.035, 0.035), r1=(0.045, 0.03), nu=10, nt=12),
            dict(name=f"{s}_toes", a=J[j[f"{s}_foot"]], b=J[j[f"{s}_foot"]] + (0, -0.005, 0.07), w=j[f"{s}_foot"], r0=(0.045, 0.025), r1=(0.035, 0.015), nu=6, nt=12),
            dict(name=f"{s}_collar", a=J[j[f"{s}_collar"]], b=J[j[f"{s}_shoulder"]], w=j[f"{s}_collar"], r0=(0.05, 0.05), r1=(0.055, 0.05), nu=8, nt=14),
            dict(name=f"{s}_upperarm", a=J[j[f"{s}_shoulder"]], b=J[j[f"{s}_elbow"]], w=j[f"{s}_shoulder"], r0=(0.05, 0.05), r1=(0.038, 0.038), nu=18, nt=14),
            dict(name=f"{s}_forearm", a=J[j[f"{s}_elbow"]], b=J[j[f"{s}_wrist"]], w=j[f"{s}_elbow"], r0=(0.037, 0.037), r1=(0.027, 0.03), nu=18, nt=14),
            dict(name=f"{s}_palm", a=J[j[f"{s}_wrist"]], b=(J[j[f"{s}_middle1"]] + J[j[f"{s}_index1"]]) / 2, w=j[f"{s}_wrist"], r0=(0.015, 0.03), r1=(0.012, 0.045), nu=8, nt=12),
        ]  # fmt: skip
        for f in ("index", "middle", "pinky", "ring", "thumb"):
            for k in (1, 2, 3):
                a = J[j[f"{s}_{f}{k}"]]
                b = J[j[f"{s}_{f}{k + 1}"]] if k < 3 else a + 0.9 * (a - J[j[f"{s}_{f}{k - 1}"]])
                parts.append(
                    dict(
                        name=f"{s}_{f}{k}",
                        a=a,
                        b=b,
                        w=j[f"{s}_{f}{k}"],
                        r0=(0.009, 0.009),
                        r1=(0.008, 0.008),
                        nu=4,
                        nt=8,
                    )
                )
    return parts


def _landmarks(J: np.ndarray) -> dict[str, tuple[np.ndarray, int]]:
    """Landmark vertex positions (rest) and their skinning joint."""
    j = J_IDX
    h = J[j["head"]]
    lm = {
        "nose": (h + (0.0, 0.065, 0.112), j["head"]),
        "left_eye": (h + (0.032, 0.085, 0.085), j["head"]),
        "right_eye": (h + (-0.032, 0.085, 0.085), j["head"]),
        "left_ear": (h + (0.083, 0.065, 0.005), j["head"]),
        "right_ear": (h + (-0.083, 0.065, 0.005), j["head"]),
    }
    for s, sx in (("left", 1.0), ("right", -1.0)):
        ft = J[j[f"{s}_foot"]]
        lm[f"{s}_big_toe"] = (ft + (-0.025 * sx, -0.02, 0.075), j[f"{s}_foot"])
        lm[f"{s}_small_toe"] = (ft + (0.035 * sx, -0.02, 0.05), j[f"{s}_foot"])
        lm[f"{s}_heel"] = (J[j[f"{s}_ankle"]] + (0.0, -0.075, -0.075), j[f"{s}_ankle"])
        for f in ("thumb", "index", "middle", "ring", "pinky"):
            a, b = J[j[f"{s}_{f}3"]], J[j[f"{s}_{f}2"]]
            lm[f"{s}_{f}"] = (a + 0.9 * (a - b), j[f"{s}_{f}3"])
    return lm


def _frame(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two unit vectors spanning the plane normal to ``d``, the first as close to x or z as possible."""
    d = d / np.linalg.norm(d)
    ref = np.array([0.0, 0.0, 1.0]) if abs(d[2]) < 0.9 else np.array([1.0, 0.0, 0.0])
    e1 = np.cross(ref, d)
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(d, e1)
    return e1, e2


# Shape components: per-bone length factors (by child joint name pattern) and radius factors.
def _shape_components(J: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Returns bone scale ``(10, 55)`` (relative bone-length change per unit beta, indexed by child
    joint) and part radius scale ``(10, n_part_groups)`` encoded as a dict later."""
    names = SMPLX_JOINT_NAMES
    bone = np.zeros((10, 55))

    def sel(pred):
        return np.array([bool(pred(n)) for n in names])

    hand = sel(lambda n: any(f in n for f in ("index", "middle", "ring", "pinky", "thumb")))
    bone[0] = 0.055  # stature: every bone
    bone[0, 0] = 0.0
    bone[2, sel(lambda n: n.endswith(("knee", "ankle")))] = 0.06  # legs
    bone[3, sel(lambda n: n.startswith("spine"))] = 0.07  # torso
    bone[4, sel(lambda n: n.endswith(("elbow", "wrist")))] = 0.06  # arms
    bone[5, sel(lambda n: n.endswith("shoulder"))] = 0.12  # shoulder width
    bone[5, sel(lambda n: n.endswith("collar"))] = 0.08
    bone[6, sel(lambda n: n.endswith("hip"))] = 0.12  # hip width
    bone[7, sel(lambda n: n in ("neck", "head"))] = 0.10  # neck
    bone[9, hand | sel(lambda n: n.endswith("foot"))] = 0.07  # hands and feet
    return bone, np.array([0.03, 0.12, 0.0, 0.0, 0.0, 0.02, 0.03, 0.0, 0.07, 0.02])


def _joint_shape_dirs(J: np.ndarray, bone: np.ndarray) -> np.ndarray:
    """(55, 3, 10): joint displacement per unit beta (bones scaled, root fixed)."""
    dJ = np.zeros((55, 3, 10))
    for i in range(1, 55):
        p = SMPLX_PARENTS[i]
        dJ[i] = dJ[p] + (J[i] - J[p])[:, None] * bone[:, i][None, :]
    return dJ


class _Mesh:
    """A body mesh being built: vertices with their shape displacement ``(3, 10)`` per unit beta and
    skinning weights ``(55,)``, triangles, and the vertex range of each part."""

    def __init__(self) -> None:
        self.verts, self.dverts, self.weights, self.faces, self.tags = [], [], [], [], []

    def add(self, pos, dpos, w) -> int:
        self.verts.append(pos)
        self.dverts.append(dpos)
        self.weights.append(w)
        return len(self.verts) - 1


def _skin(wj: int, u: float) -> np.ndarray:
    """Skinning weights of a point a fraction ``u`` along joint ``wj``'s part: the first 15 % blends
    with the parent joint."""
    w = np.zeros(55)
    p = SMPLX_PARENTS[wj]
    if u < 0.15 and p >= 0:
        a = 0.5 + u / 0.3
        w[wj], w[p] = a, 1.0 - a
    else:
        w[wj] = 1.0
    return w


def _add_tubes(mesh: _Mesh, J: np.ndarray, dJ: np.ndarray, girth: np.ndarray, head_comp: np.ndarray) -> None:
    """Every body part as a tube (the head an ellipsoid) of rings around its axis."""
    for part in _parts(J):
        a, b = np.asarray(part["a"], float), np.asarray(part["b"], float)
        # shape displacement of the endpoints: a joint moves with its shape direction; a point that
        # is not a joint rides rigidly on the part's skinning joint, scaled like the radii
        rscale = girth + (head_comp if part["name"] == "head" else 0.0)

        def end_dir(pt, w=part["w"], rscale=rscale):
            jn = int(np.argmin(np.linalg.norm(J - pt, axis=1)))
            if np.linalg.norm(J[jn] - pt) < 1e-9:
                return dJ[jn]
            return dJ[w] + (pt - J[w])[:, None] * rscale[None, :]

        da, db = end_dir(a), end_dir(b)
        d = b - a
        e1, e2 = _frame(d)
        nu, nt = part["nu"], part["nt"]
        base = len(mesh.verts)
        for iu in range(nu):
            u = iu / (nu - 1)
            rx = (1 - u) * part["r0"][0] + u * part["r1"][0]
            rz = (1 - u) * part["r0"][1] + u * part["r1"][1]
            if "bulge" in part:  # head: ellipsoid profile
                s = np.sin(np.pi * (0.15 + 0.85 * u))
                rx = rz = part["bulge"] * s + 0.005
            for it in range(nt):
                ang = 2 * np.pi * it / nt
                off = rx * np.cos(ang) * e1 + rz * np.sin(ang) * e2
                pos = a + u * d + off
                dpos = (1 - u) * da + u * db + off[:, None] * rscale[None, :]
                mesh.add(pos, dpos, _skin(part["w"], u))
        for iu in range(nu - 1):
            for it in range(nt):
                v00 = base + iu * nt + it
                v01 = base + iu * nt + (it + 1) % nt
                v10 = v00 + nt
                v11 = v01 + nt
                mesh.faces += [(v00, v10, v11), (v00, v11, v01)]
        mesh.tags.append((part["name"], base, len(mesh.verts)))


def _add_joint_support(mesh: _Mesh, J: np.ndarray, dJ: np.ndarray, girth: np.ndarray) -> list[list[int]]:
    """Six interior vertices around every joint (the joint regressor averages them); their ids per joint."""
    rows = []
    eps = 0.01
    for i in range(55):
        ids = []
        for axis in range(3):
            for sgn in (-1.0, 1.0):
                off = np.zeros(3)
                off[axis] = sgn * eps
                ids.append(mesh.add(J[i] + off, dJ[i] + off[:, None] * girth[None, :], _skin(i, 1.0)))
        rows.append(ids)
    return rows


def _permutation(n_vertices: int, landmark_vertices: dict[str, int]) -> np.ndarray:
    """``new_of_old (V,)``: the landmark vertices land on smplx's vertex ids, the others fill the rest in order."""
    target = dict(SMPLX_VERTEX_KEYPOINTS)
    new_of_old = np.full(n_vertices, -1)
    for name, old in landmark_vertices.items():
        new_of_old[old] = target[name]
    free_new = np.setdiff1d(np.arange(n_vertices), list(target.values()))
    new_of_old[np.flatnonzero(new_of_old < 0)] = free_new
    return new_of_old


def generate_synthetic_arrays(seed: int = 0) -> dict[str, np.ndarray]:
    """All arrays of the synthetic SMPL-X npz (deterministic for a seed)."""
    rng = np.random.default_rng(seed)
    J = _rest_joints()
    bone, girth = _shape_components(J)
    dJ = _joint_shape_dirs(J, bone)
    head_comp = np.zeros(10)
    head_comp[8] = 0.07  # head size component scales head radii and face landmarks
    mesh = _Mesh()
    _add_tubes(mesh, J, dJ, girth, head_comp)
    reg_rows = _add_joint_support(mesh, J, dJ, girth)
    lm_src = {}
    for name, (pos, wj) in _landmarks(J).items():
        dpos = dJ[wj] + (pos - J[wj])[:, None] * (girth + (head_comp if wj == J_IDX["head"] else 0))[None, :]
        lm_src[name] = mesh.add(pos, dpos, _skin(wj, 1.0))
    # pad to the SMPL-X vertex count with interior torso points (not in any face)
    n_needed = SMPLX_NUM_VERTICES - len(mesh.verts)
    if n_needed < 0:
        raise RuntimeError(f"synthetic body has too many vertices: {len(mesh.verts)}")
    for _ in range(n_needed):
        k = int(rng.integers(1, 4))
        jj = [J_IDX["spine1"], J_IDX["spine2"], J_IDX["spine3"]][k - 1]
        off = rng.normal(scale=0.03, size=3)
        mesh.add(J[jj] + off, dJ[jj] + off[:, None] * girth[None, :], _skin(jj, 1.0))

    V = SMPLX_NUM_VERTICES
    new_of_old = _permutation(V, lm_src)
    old_of_new = np.argsort(new_of_old)
    v_template = np.asarray(mesh.verts)[old_of_new]
    weights = np.asarray(mesh.weights)[old_of_new]
    faces = new_of_old[np.asarray(mesh.faces, dtype=np.int64)]
    J_regressor = np.zeros((55, V))
    for i, ids in enumerate(reg_rows):
        J_regressor[i, new_of_old[ids]] = 1.0 / len(ids)
    shapedirs = np.zeros((V, 3, 400), dtype=np.float32)  # 300 shape + 100 expression, as released
    shapedirs[:, :, :10] = np.asarray(mesh.dverts)[old_of_new]
    # small pose correctives on the face landmarks and a few random vertices
    posedirs = np.zeros((V, 3, 486), dtype=np.float32)
    pc_ids = np.concatenate([[vid for _, vid in SMPLX_VERTEX_KEYPOINTS], rng.choice(V, 16, replace=False)])
    posedirs[pc_ids, :, :63] = rng.normal(scale=0.002, size=(len(pc_ids), 3, 63)).astype(np.float32)
    head_faces = np.flatnonzero(np.all(np.isin(faces, np.flatnonzero(weights[:, J_IDX["head"]] > 0.99)), axis=1))
    lmk_faces_idx = head_faces[np.linspace(0, len(head_faces) - 1, 51).astype(int)]
    kintree = np.stack([SMPLX_PARENTS, np.arange(55)]).astype(np.int64)
    kintree[0, 0] = 4294967295  # as in the released files (uint32 -1)
    return {
        "v_template": v_template,
        "f": faces.astype(np.int32),
        "shapedirs": shapedirs,
        "posedirs": posedirs,
        "J_regressor": J_regressor,
        "weights": weights,
        "kintree_table": kintree,
        "hands_componentsl": np.eye(45),
        "hands_componentsr": np.eye(45),
        "hands_meanl": np.zeros(45),
        "hands_meanr": np.zeros(45),
        "lmk_faces_idx": lmk_faces_idx.astype(np.int64),
        "lmk_bary_coords": np.full((51, 3), 1.0 / 3.0),
        "joint2num": np.array(list(SMPLX_JOINT_NAMES)),
        "motionkit_synthetic": np.array(True),
        "motionkit_generator": np.array(f"motionkit.body.synthetic_model v1 seed {seed}"),
    }


def generate_synthetic_smplx(path: str | os.PathLike, seed: int = 0) -> Path:
    """Write a synthetic SMPL-X model npz to ``path`` (atomically). ``smplx.create`` loads it."""
    return save_npz_atomic(path, generate_synthetic_arrays(seed))
