"""Reading downloaded pickles without running them.

EE4D-Motion's fits (``multiview_optim_2.pkl``, written by joblib) and SMPL / SMPL-X ``.pkl`` model files
are pickles, and unpickling a file can run any code its author chose. ``load_pickle`` admits only the
globals that data needs and refuses everything else with a ``DataError`` naming the file and the global
it asked for:

* numpy arrays, dtypes and scalars (and ``_codecs.encode``, which protocol-2 pickles of arrays use for
  their bytes); builtin containers and scalars need no global;
* ``scipy.sparse`` matrices (the ``J_regressor`` of some model files);
* chumpy arrays (``chumpy.*``, in the original SMPL model files): read as their values ``x``, numpy;
* joblib's array wrapper (``joblib.numpy_pickle.NumpyArrayWrapper``): the array bytes joblib writes after
  it are read here, without joblib (uncompressed files; a compressed one gets a clear error).

``load_npz`` opens ``.npz`` files with ``allow_pickle=False`` and falls back to the same rules only for
object arrays.
"""

from __future__ import annotations

import _compat_pickle
import io
import pickle
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse

from motionkit.common.errors import DataError

# (module, name) globals a data pickle may name; the numpy ones under both module names (numpy 1 and 2)
ALLOWED_GLOBALS = {
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "scalar"),
    ("numpy.core.numeric", "_frombuffer"),  # arrays in pickle protocol 5
    ("numpy._core.numeric", "_frombuffer"),
    ("_codecs", "encode"),
    ("collections", "OrderedDict"),
    ("builtins", "set"),
    ("builtins", "frozenset"),
    ("builtins", "complex"),
    ("builtins", "slice"),
    ("builtins", "object"),
    ("copyreg", "_reconstructor"),  # protocol 0/1 objects: rebuilds an instance of a class admitted here
}
SPARSE_CLASSES = ("csc_matrix", "csr_matrix", "coo_matrix", "csc_array", "csr_array", "coo_array")
JOBLIB_WRAPPER = ("joblib.numpy_pickle", "NumpyArrayWrapper")
COMPRESSED_PREFIXES = {b"\x1f\x8b": "gzip", b"ZF": "zlib", b"\x78\x01": "zlib", b"\x78\x5e": "zlib",
                       b"\x78\x9c": "zlib", b"\x78\xda": "zlib", b"BZ": "bz2", b"\xfd7zXZ": "xz",
                       b"\x04\x22\x4d\x18": "lz4"}  # fmt: skip


class RefusedGlobal(pickle.UnpicklingError):
    """The pickle asked for a global outside ``ALLOWED_GLOBALS``."""

    def __init__(self, module: str, name: str) -> None:
        super().__init__(f"refused to load global {module}.{name}: only numpy, scipy.sparse and chumpy data are read")
        self.module, self.name = module, name


class _ChumpyArray:
    """Stands in for a chumpy object while unpickling; ``_plain`` replaces it by its value ``x``."""

    def __init__(self, *args, **kwargs) -> None:
        self.state: Any = None

    def __setstate__(self, state) -> None:
        self.state = state


class _JoblibArray:
    """Stands in for ``NumpyArrayWrapper``: its state says which array follows in the file."""

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)


class _RestrictedUnpickler(pickle._Unpickler):  # the pure-Python unpickler: joblib's arrays need its BUILD hook
    dispatch = pickle._Unpickler.dispatch.copy()

    def __init__(self, file) -> None:
        super().__init__(file, encoding="latin1")
        self._raw = file

    def find_class(self, module: str, name: str):
        if self.proto < 3 and self.fix_imports:  # Python 2 names (__builtin__, copy_reg) as pickle maps them
            if (module, name) in _compat_pickle.NAME_MAPPING:
                module, name = _compat_pickle.NAME_MAPPING[(module, name)]
            elif module in _compat_pickle.IMPORT_MAPPING:
                module = _compat_pickle.IMPORT_MAPPING[module]
        if (module, name) in ALLOWED_GLOBALS:
            return super().find_class(module, name)
        if module.startswith("scipy.sparse") and name in SPARSE_CLASSES:
            return getattr(scipy.sparse, name)
        if module == "chumpy" or module.startswith("chumpy."):
            return _ChumpyArray
        if (module, name) == JOBLIB_WRAPPER:
            return _JoblibArray
        raise RefusedGlobal(module, name)

    def load_build(self) -> None:
        super().load_build()
        top = self.stack[-1]
        if isinstance(top, _JoblibArray):
            self.stack[-1] = self._read_joblib_array(top)

    dispatch[pickle.BUILD[0]] = load_build

    def _read_joblib_array(self, w: _JoblibArray) -> np.ndarray:
        """The array joblib wrote right after its wrapper: an alignment pad, then the raw bytes."""
        dtype = np.dtype(w.dtype)
        if dtype.hasobject:
            return _RestrictedUnpickler(self._raw).load()
        if getattr(w, "numpy_array_alignment_bytes", None) is not None:
            pad = self._raw.read(1)
            self._raw.read(int.from_bytes(pad, "little"))
        shape = tuple(int(x) for x in w.shape)
        count = int(np.prod(shape, dtype=np.int64))
        data = self._raw.read(count * dtype.itemsize)
        if len(data) != count * dtype.itemsize:
            raise pickle.UnpicklingError("truncated array data")
        array = np.frombuffer(data, dtype=dtype, count=count).copy()
        return array.reshape(shape[::-1]).T if w.order == "F" else array.reshape(shape)


def _plain(obj: Any) -> Any:
    """Chumpy stand-ins replaced by numpy arrays, recursively through containers."""
    if isinstance(obj, _ChumpyArray):
        state = obj.state if isinstance(obj.state, dict) else {}
        if "x" not in state:
            raise pickle.UnpicklingError("a chumpy object without a value 'x'")
        return np.asarray(_plain(state["x"]))
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(_plain(v) for v in obj)
    return obj


def _unpickle(fh, path: Path) -> Any:
    try:
        return _plain(_RestrictedUnpickler(fh).load())
    except RefusedGlobal as exc:
        raise DataError(path, f"{exc} (the file is a pickle that would run code; not loaded)") from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError, KeyError) as exc:
        raise DataError(path, f"not a readable data pickle ({type(exc).__name__}: {exc})") from None


def load_pickle(path: str | Path) -> Any:
    """The data in pickle (or uncompressed joblib) file ``path``, under the rules of the module docstring."""
    path = Path(path)
    if not path.is_file():
        raise DataError(path, "file not found")
    with open(path, "rb") as fh:
        head = fh.read(5)
        for prefix, kind in COMPRESSED_PREFIXES.items():
            if head.startswith(prefix):
                raise DataError(path, f"a {kind}-compressed joblib file: decompress it first (joblib.load, then "
                                      "joblib.dump without compression) or save it as .npz")  # fmt: skip
        fh.seek(0)
        return _unpickle(fh, path)


def load_npz(path: str | Path) -> dict[str, np.ndarray]:
    """The arrays of ``.npz`` file ``path``: read with ``allow_pickle=False``; an object array (a pickle
    inside the npz) is read under the rules of ``load_pickle``."""
    path = Path(path)
    if not path.is_file():
        raise DataError(path, "file not found")
    if not zipfile.is_zipfile(path):  # numpy would take it for a pickle and say so
        raise DataError(path, "not a readable .npz file (not a zip archive: cut short, or another format)")
    out = {}
    try:
        with np.load(path, allow_pickle=False) as z:
            for key in z.files:
                try:
                    out[key] = z[key]
                except ValueError:  # "Object arrays cannot be loaded when allow_pickle=False"
                    with zipfile.ZipFile(path) as zf, zf.open(f"{key}.npy") as member:
                        fh = io.BytesIO(member.read())
                    version = np.lib.format.read_magic(fh)
                    read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else (
                        np.lib.format.read_array_header_2_0)  # fmt: skip
                    shape, fortran, dtype = read_header(fh)
                    out[key] = np.asarray(_unpickle(fh, path), dtype=dtype).reshape(
                        shape, order="F" if fortran else "C"
                    )
    except (OSError, zipfile.BadZipFile, EOFError) as exc:
        raise DataError(path, f"not a readable .npz file ({exc})") from None
    return out
