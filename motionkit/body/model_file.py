"""SMPL-X model files: find and load a user-supplied model, or generate a synthetic one.

Real SMPL-X files are licensed and cannot ship. The real loading path takes a user-supplied file or
folder (``--body-model`` or ``$MOTIONKIT_BODY_MODEL``); without one, motionkit generates a
procedural humanoid in the exact SMPL-X npz format (``generate_synthetic_smplx``) and marks every
output made with it as synthetic.
"""

from __future__ import annotations

import functools
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from motionkit.body.synthetic_model import generate_synthetic_smplx
from motionkit.common.errors import DataError
from motionkit.common.home import motionkit_home
from motionkit.common.safe_pickle import load_npz, load_pickle
from motionkit.conventions import SMPLX_NUM_JOINTS, SMPLX_PARENTS, SMPLX_VERTEX_KEYPOINTS

REQUIRED_KEYS = (
    "v_template",
    "f",
    "shapedirs",
    "posedirs",
    "J_regressor",
    "weights",
    "kintree_table",
    "hands_componentsl",
    "hands_componentsr",
    "hands_meanl",
    "hands_meanr",
    "lmk_faces_idx",
    "lmk_bary_coords",
)
SYNTHETIC_KEY = "motionkit_synthetic"
ENV_VAR = "MOTIONKIT_BODY_MODEL"
SYNTHETIC_VERSION = 1


@dataclass(frozen=True)
class BodyModelFile:
    """The arrays of an SMPL-X model that motionkit uses, plus the model's identity.

    ``v_template (V, 3)`` metres in the SMPL-X canonical frame (y up, facing +z, +x left),
    ``shapedirs (V, 3, 10)``, ``posedirs (V, 3, 486)``, ``J_regressor (55, V)``, ``weights (V, 55)``,
    ``parents (55,)``, ``faces (F, 3)``.
    """

    path: str
    v_template: np.ndarray
    shapedirs: np.ndarray
    posedirs: np.ndarray
    J_regressor: np.ndarray
    weights: np.ndarray
    parents: np.ndarray
    faces: np.ndarray
    synthetic: bool
    sha256: str

    @property
    def identity(self) -> dict:
        """What every output records about the body model that made it."""
        return {
            "kind": "synthetic" if self.synthetic else "smplx",
            "synthetic": self.synthetic,
            "file": os.path.basename(self.path),
            "sha256": self.sha256,
            "note": (
                "procedurally generated demo body, NOT the licensed SMPL-X model"
                if self.synthetic
                else "user-supplied SMPL-X model file"
            ),
        }


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def resolve_model_path(path: str | os.PathLike | None = None, gender: str = "neutral") -> Path:
    """Find the SMPL-X file for ``path`` (a file, or a folder as ``smplx.create`` takes it).

    Without ``path``, ``$MOTIONKIT_BODY_MODEL`` is used; without that, the synthetic model under
    ``$MOTIONKIT_HOME`` (generated on first use).
    """
    if path is None:
        path = os.environ.get(ENV_VAR) or None
    if path is None:
        return default_synthetic_model_path()
    p = Path(path).expanduser()
    if p.is_dir():
        stem = f"SMPLX_{gender.upper()}"
        for cand in (p / "smplx" / f"{stem}.npz", p / f"{stem}.npz", p / "smplx" / f"{stem}.pkl", p / f"{stem}.pkl"):
            if cand.is_file():
                return cand
        raise DataError(p, f"no {stem}.npz or .pkl found here or in its smplx/ subfolder")
    if not p.is_file():
        raise DataError(p, "body model file not found (set --body-model or $MOTIONKIT_BODY_MODEL)")
    return p


def load_model_file(path: str | os.PathLike | None = None, gender: str = "neutral") -> BodyModelFile:
    """Load and validate an SMPL-X model (npz or pkl). See ``resolve_model_path`` for ``path``.

    Kept per process (a batch worker fits many takes with one model): a file is read again only when its
    size or modification time changed. The arrays are read-only."""
    p = resolve_model_path(path, gender)
    st = p.stat()
    return _load_model_file(p, st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=4)
def _load_model_file(p: Path, mtime_ns: int, size: int) -> BodyModelFile:
    """``load_model_file`` of ``p`` as it is at ``mtime_ns`` and ``size`` (the cache key)."""
    try:
        data = dict(load_pickle(p)) if p.suffix == ".pkl" else load_npz(p)
    except DataError:
        raise
    except Exception as exc:  # noqa: BLE001 - any unreadable file is a data error
        raise DataError(p, f"cannot read body model: {exc}") from exc
    missing = [k for k in REQUIRED_KEYS if k not in data]
    if missing:
        raise DataError(p, f"not an SMPL-X model: missing keys {missing}")

    def arr(key, dtype=np.float64):
        a = data[key]
        if hasattr(a, "toarray"):  # scipy sparse J_regressor in some pkl files
            a = a.toarray()
        return np.asarray(a, dtype=dtype)

    v = arr("v_template")
    V = v.shape[0]
    if v.ndim != 2 or v.shape[1] != 3 or V <= max(i for _, i in SMPLX_VERTEX_KEYPOINTS):
        raise DataError(p, f"v_template must be (V, 3) with V > 9929; got {v.shape}")
    Jr = arr("J_regressor")
    if Jr.shape != (SMPLX_NUM_JOINTS, V):
        raise DataError(p, f"J_regressor must be (55, {V}); got {Jr.shape}")
    shapedirs = arr("shapedirs", np.float32)
    if shapedirs.ndim != 3 or shapedirs.shape[:2] != (V, 3) or shapedirs.shape[2] < 10:
        raise DataError(p, f"shapedirs must be (V, 3, >=10); got {shapedirs.shape}")
    posedirs = arr("posedirs", np.float32)
    if posedirs.shape != (V, 3, 486):
        raise DataError(p, f"posedirs must be ({V}, 3, 486); got {posedirs.shape}")
    weights = arr("weights")
    if weights.shape != (V, SMPLX_NUM_JOINTS):
        raise DataError(p, f"weights must be ({V}, 55); got {weights.shape}")
    kin = np.asarray(data["kintree_table"]).astype(np.int64)
    if kin.shape != (2, SMPLX_NUM_JOINTS):
        raise DataError(p, f"kintree_table must be (2, 55); got {kin.shape}")
    parents = kin[0].copy()
    parents[0] = -1
    if not np.array_equal(parents, SMPLX_PARENTS):
        raise DataError(p, "kintree_table does not match the SMPL-X kinematic tree")
    synthetic = bool(np.asarray(data.get(SYNTHETIC_KEY, False)).item()) if SYNTHETIC_KEY in data else False
    model = BodyModelFile(
        path=str(p),
        v_template=v,
        shapedirs=shapedirs[:, :, :10].astype(np.float64),
        posedirs=posedirs.astype(np.float64),
        J_regressor=Jr,
        weights=weights,
        parents=parents,
        faces=np.asarray(data["f"], dtype=np.int64),
        synthetic=synthetic,
        sha256=_sha256(p),
    )
    for value in vars(model).values():
        if isinstance(value, np.ndarray):
            value.setflags(write=False)
    return model


def default_synthetic_model_path() -> Path:
    """Path of the synthetic model under ``$MOTIONKIT_HOME``, generated on first use."""
    p = motionkit_home() / "body_models" / "smplx" / "SMPLX_NEUTRAL.npz"
    if not p.is_file():
        generate_synthetic_smplx(p)
    return p
