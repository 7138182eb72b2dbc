"""Other methods' releases, read to one record per take (docs/eval.md, "Formats"): ``SampledJoints``.

Each module parses one format and nothing else: ``ee4d_motion`` (EE4D-Motion's ``multiview_optim_2.pkl``),
``egoexo4d_hm`` (Ego-Exo4D Human Meshes' ``points_triangulated_world_results_merged.npz``),
``coco17_json`` (the Ego-Exo4D body-pose prediction JSON), ``smplx_npz`` (SMPL-X parameters in the AMASS
layout, motionkit's export among them) and ``motionkit_fits`` (motionkit's own result files).
``read_release(fmt, path, take_uid, take_name, body_model)`` dispatches on the format name.
"""

from __future__ import annotations

from pathlib import Path

from motionkit.common.errors import DataError
from motionkit.data.releases import coco17_json, ee4d_motion, egoexo4d_hm, motionkit_fits, smplx_npz
from motionkit.data.releases.record import SampledJoints, take_folder

FORMATS = ("motionkit", "ee4d-motion", "egoexo4d-hm", "coco17-json", "smplx-npz")
_FOLDER_READERS = {"motionkit": motionkit_fits, "ee4d-motion": ee4d_motion, "egoexo4d-hm": egoexo4d_hm,
                   "smplx-npz": smplx_npz}  # fmt: skip

__all__ = ["FORMATS", "SampledJoints", "read_release", "release_entries", "take_folder"]


def release_entries(fmt: str, path: Path) -> list[str]:
    """The take names or uids a release holds (its folders, files or JSON keys), to tell the ones that
    match no take of the dataset."""
    path = Path(path)
    if fmt == "coco17-json":
        return sorted(coco17_json.read_file(path))
    if not path.is_dir():
        return []
    if fmt in ("ee4d-motion", "egoexo4d-hm"):
        return sorted(p.name for p in path.iterdir() if p.is_dir())
    suffix = ".h5" if fmt == "motionkit" else ".npz"
    return sorted(p.stem for p in path.glob(f"*{suffix}") if not p.name.startswith("."))


def read_release(fmt: str, path: Path, take_uid: str, take_name: str, body_model: str | None = None,
                 cache: dict | None = None) -> SampledJoints | None:  # fmt: skip
    """One take of a release of format ``fmt`` (``FORMATS``) at ``path`` (a folder; for ``coco17-json``
    the file, parsed once into ``cache``), or None when the release does not have the take.
    ``body_model``: the SMPL-X file for SMPL-X sources."""
    path = Path(path)
    if fmt == "coco17-json":
        if cache is None:
            cache = {}
        if "data" not in cache:
            cache["data"] = coco17_json.read_file(path)
        return coco17_json.read_take(cache["data"], path, take_uid, take_name)
    if fmt not in _FOLDER_READERS:
        raise ValueError(f"unknown release format {fmt!r}; formats: {', '.join(FORMATS)}")
    if not path.is_dir():
        raise DataError(path, f"{fmt} release folder not found")
    return _FOLDER_READERS[fmt].read_take(path, take_uid, take_name, body_model)
