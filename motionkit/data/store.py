"""The result store: one HDF5 file per take, ``<out>/<take_uid>.h5``.

Schema (``schema_version`` 1)
-----------------------------
Root attributes (provenance):

==========================  ======================================================================
``format``                  ``"motionkit-result"``
``schema_version``          1
``motionkit_version``       package version that wrote the file
``created_utc``             ISO time
``take_uid``, ``take_name``  input take
``dataset_root``            dataset root the take was read from
``body_model``              JSON identity of the body model (``kind``: ``synthetic`` or ``smplx``,
                            ``sha256`` of the file); ``body_model_synthetic`` (bool) repeats the flag
``config``, ``config_hash``  the run configuration as JSON and its SHA-256 (first 16 hex digits)
``stages``                  JSON list of the stages whose outputs the file holds, in order
``status``, ``message``     ``"ok"`` or ``"failed"``, with the reason when failed
``timesync_offset``         0 or 1 (docs/conventions.md, "Time"); ``cpf_source``
==========================  ======================================================================

Groups hold each stage's arrays; every group, array and attribute is documented in
``docs/result_file.md``. Files are written atomically (temp file + rename), so a result file is
either complete or absent.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from motionkit import __version__
from motionkit.common.errors import DataError
from motionkit.common.files import atomic_path
from motionkit.data.h5files import open_motionkit_h5

FORMAT = "motionkit-result"
SCHEMA_VERSION = 1


def config_hash(config: dict) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:16]


class MissingDataset(DataError, KeyError):
    """A result lacks a dataset that its reader needs (a ``DataError`` naming the file, and a ``KeyError``)."""

    __str__ = DataError.__str__  # the message, not KeyError's quoted repr of it


@dataclass
class TakeResult:
    """In-memory form of a result file: root ``attrs``, ``arrays`` keyed ``"group/name"``, per-group
    attributes ``group_attrs`` and the ``path`` it was read from (None for a result built in memory)."""

    attrs: dict[str, Any] = field(default_factory=dict)
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    group_attrs: dict[str, dict[str, Any]] = field(default_factory=dict)
    path: Path | None = None

    def __getitem__(self, key: str) -> np.ndarray:
        try:
            return self.arrays[key]
        except KeyError:
            raise MissingDataset(
                self.path,
                f"{self.label} has no dataset {key!r} (stages: {', '.join(self.stages) or 'none'}; "
                "docs/result_file.md)",
            ) from None

    def __contains__(self, key: str) -> bool:
        return key in self.arrays or key in self.group_attrs

    def group(self, name: str) -> dict[str, np.ndarray]:
        pre = name.rstrip("/") + "/"
        return {k[len(pre) :]: v for k, v in self.arrays.items() if k.startswith(pre)}

    def put(self, group: str, arrays: dict[str, Any] | None = None, **attrs) -> None:
        for k, v in (arrays or {}).items():
            self.arrays[f"{group}/{k}"] = np.asarray(v)
        if attrs:
            self.group_attrs.setdefault(group, {}).update(attrs)

    @property
    def stages(self) -> list[str]:
        return json.loads(self.attrs.get("stages", "[]"))

    @property
    def config(self) -> dict:
        return json.loads(self.attrs.get("config", "{}"))

    @property
    def body_model(self) -> dict:
        return json.loads(self.attrs.get("body_model", "{}"))

    @property
    def fps(self) -> float:
        """Frame rate of the fit grid (attribute ``fps`` of group ``grid``, written by the ``load`` stage)."""
        fps = self.group_attrs.get("grid", {}).get("fps")
        if fps is None:
            raise DataError(self.path, f"{self.label} has no fit grid (no stage 'load')")
        return float(fps)

    @property
    def label(self) -> str:
        """How errors about this result name it: ``result of take <take_uid>`` (its file is the error's path)."""
        return f"result of take {self.attrs.get('take_uid')}"

    @property
    def has_fit(self) -> bool:
        """Whether the result holds a fitted sequence (group ``smplx``)."""
        return "smplx/global_orient" in self.arrays

    def require_fit(self) -> None:
        """``DataError`` naming the file where the result holds no fit: the stages it holds, and why the run
        failed where it did."""
        if self.has_fit:
            return
        why = f"; the run failed: {self.attrs.get('message')}" if self.attrs.get("status") == "failed" else ""
        raise DataError(self.path, f"{self.label} has no fit (stages: {', '.join(self.stages) or 'none'}{why})")


def _h5_attr(v: Any):
    if isinstance(v, dict | list | tuple) and not isinstance(v, np.ndarray):
        return json.dumps(v, default=str)
    if v is None:
        return "null"
    return v


def provenance(
    *,
    take_uid: str,
    take_name: str,
    dataset_root: str,
    body_model: dict,
    config: dict,
    timesync_offset: int,
    cpf_source: str,
) -> dict:
    """Root attributes every result file carries."""
    return {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "motionkit_version": __version__,
        "created_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "take_uid": take_uid,
        "take_name": take_name,
        "dataset_root": str(dataset_root),
        "body_model": json.dumps(body_model, sort_keys=True),
        "body_model_synthetic": bool(body_model.get("synthetic", False)),
        "config": json.dumps(config, sort_keys=True, default=str),
        "config_hash": config_hash(config),
        "stages": "[]",
        "status": "ok",
        "message": "",
        "timesync_offset": int(timesync_offset),
        "cpf_source": cpf_source,
    }


def write_result(path: str | os.PathLike, result: TakeResult) -> Path:
    """Write ``result`` to ``path`` atomically."""
    path = Path(path)
    with atomic_path(path, suffix=".h5") as tmp, h5py.File(tmp, "w") as f:
        for k, v in result.attrs.items():
            f.attrs[k] = _h5_attr(v)
        for key, arr in result.arrays.items():
            arr = np.asarray(arr)
            if arr.dtype.kind in "OU":
                f.create_dataset(key, data=arr.astype(object).astype(str).astype(h5py.string_dtype()))
            else:
                kw = {"compression": "gzip", "compression_opts": 4} if arr.size > 4096 else {}
                f.create_dataset(key, data=arr, **kw)
        for g, attrs in result.group_attrs.items():
            grp = f.require_group(g)
            for k, v in attrs.items():
                grp.attrs[k] = _h5_attr(v)
    return path


def read_result(path: str | os.PathLike) -> TakeResult:
    """Read a result file written by ``write_result``; ``DataError`` naming the file where its fit's
    arrays are incomplete or inconsistent (``check_fit_arrays``)."""
    path = Path(path)
    with open_motionkit_h5(path, FORMAT, "result file") as f:
        attrs = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in f.attrs.items()}
        res = TakeResult(attrs=attrs, path=path)

        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):
                data = obj[()]
                if obj.dtype.kind == "O" or h5py.check_string_dtype(obj.dtype):
                    data = np.asarray(obj.asstr()[()], dtype=object)
                res.arrays[name] = data
            elif isinstance(obj, h5py.Group) and len(obj.attrs):
                res.group_attrs[name] = {
                    k: (v.item() if isinstance(v, np.generic) else v) for k, v in obj.attrs.items()
                }

        f.visititems(visit)
    check_fit_arrays(res)
    return res


SMPLX_FRAME_SHAPES = {"smplx/global_orient": (3,), "smplx/body_pose": (63,), "smplx/transl": (3,)}
PER_SAMPLE = {"valid": (), "grid/frame_pos": (), "joints/smplx": (55, 3), "joints/coco17": (17, 3),
              "fit/joint_trusted": (17,), "fit/joint_support": (17,)}  # fmt: skip


def check_fit_arrays(result: TakeResult) -> None:
    """``DataError`` naming ``result.path`` where the fit's arrays (docs/result_file.md, group ``smplx``) are
    incomplete or inconsistent: some of ``smplx/global_orient (M, 3)``, ``body_pose (M, 63)``, ``transl (M, 3)``
    and ``betas (10,)`` missing or of another shape; non-finite betas; a sample with a finite orientation
    (fitted) but a non-finite pose or translation; per-sample arrays (``valid``, ``joints/*``,
    ``fit/joint_trusted``, ...) of another length than the fit's ``M`` samples. A result without a fit passes."""
    names = (*SMPLX_FRAME_SHAPES, "smplx/betas")
    present = [k for k in names if k in result.arrays]
    if not present:
        return
    where = result.label
    missing = [k for k in names if k not in result.arrays]
    if missing:
        raise DataError(result.path, f"{where}: incomplete fit, no {', '.join(missing)}")
    M = len(result["smplx/global_orient"])
    expected = {k: (M, *tail) for k, tail in SMPLX_FRAME_SHAPES.items()} | {"smplx/betas": (10,)}
    expected |= {k: (M, *tail) for k, tail in PER_SAMPLE.items() if k in result.arrays}
    for k, shape in expected.items():
        if result[k].shape != shape:
            raise DataError(result.path, f"{where}: {k} has shape {result[k].shape}; expected {shape} "
                                         f"(M = {M} fitted samples)")  # fmt: skip
    if not np.isfinite(result["smplx/betas"]).all():
        raise DataError(result.path, f"{where}: smplx/betas is not finite")
    fitted = np.isfinite(result["smplx/global_orient"]).all(-1)
    broken = fitted & ~(np.isfinite(result["smplx/body_pose"]).all(-1) & np.isfinite(result["smplx/transl"]).all(-1))
    if broken.any():
        raise DataError(
            result.path,
            f"{where}: {int(broken.sum())} sample(s) with a finite smplx/global_orient but a "
            f"non-finite body_pose or transl (the first: sample {int(np.argmax(broken))})",
        )


def result_path(out_dir: str | os.PathLike, take_uid: str) -> Path:
    return Path(out_dir) / f"{take_uid}.h5"
