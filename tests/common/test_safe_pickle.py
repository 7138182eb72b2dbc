"""Downloaded pickles are read without running them: data in, code refused."""

from __future__ import annotations

import os
import pickle
import sys
import types
from collections import OrderedDict

import numpy as np
import pytest
import scipy.sparse

from motionkit.common.errors import DataError
from motionkit.common.safe_pickle import load_npz, load_pickle


class _RunsACommand:
    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


class _Evaluates:
    def __reduce__(self):
        return (eval, ("__import__('os').getcwd()",))


@pytest.mark.parametrize("protocol", [0, 2, 5])
def test_a_pickle_that_would_run_a_command_is_refused_and_runs_nothing(tmp_path, protocol):
    marker = tmp_path / "ran"
    path = tmp_path / "fits.pkl"
    path.write_bytes(pickle.dumps({"final_smpl_params": _RunsACommand(str(marker))}, protocol=protocol))
    with pytest.raises(DataError, match=r"fits\.pkl.*refused to load global (posix|os|nt)\.system"):
        load_pickle(path)
    assert not marker.exists()
    path.write_bytes(pickle.dumps([_Evaluates()], protocol=protocol))
    with pytest.raises(DataError, match="refused to load global builtins.eval"):
        load_pickle(path)


@pytest.mark.parametrize("protocol", [0, 2, 4, 5])
def test_numpy_data_sparse_matrices_and_containers_load(tmp_path, protocol):
    data = OrderedDict(
        a=np.arange(12.0).reshape(3, 4),
        f=np.asfortranarray(np.ones((2, 3), np.float32)),
        i=np.int64(7),
        s={"nested": [np.zeros(2), (1, 2.5, "x", None, True)]},
        sparse=scipy.sparse.csc_matrix(np.eye(3)),
    )
    path = tmp_path / "model.pkl"
    path.write_bytes(pickle.dumps(data, protocol=protocol))
    got = load_pickle(path)
    np.testing.assert_array_equal(got["a"], data["a"])
    np.testing.assert_array_equal(got["f"], data["f"])
    assert got["i"] == 7 and got["s"]["nested"][1] == (1, 2.5, "x", None, True)
    np.testing.assert_array_equal(got["sparse"].toarray(), np.eye(3))


def test_chumpy_arrays_become_numpy(tmp_path, monkeypatch):
    """The original SMPL files hold chumpy objects: their value ``x`` is read, chumpy is not needed."""
    ch = types.ModuleType("chumpy.ch")

    class Ch:
        def __init__(self, x):
            self.x = x

    Ch.__module__, Ch.__qualname__ = "chumpy.ch", "Ch"
    ch.Ch = Ch
    monkeypatch.setitem(sys.modules, "chumpy", types.ModuleType("chumpy"))
    monkeypatch.setitem(sys.modules, "chumpy.ch", ch)
    path = tmp_path / "SMPL_NEUTRAL.pkl"
    for protocol in (0, 2):
        path.write_bytes(pickle.dumps({"v_template": Ch(np.ones((4, 3))), "f": np.zeros((2, 3))}, protocol=protocol))
        got = load_pickle(path)
        assert isinstance(got["v_template"], np.ndarray) and got["v_template"].shape == (4, 3)


def test_joblib_files_are_read_without_joblib_and_compressed_ones_say_how_to_fix(tmp_path):
    joblib = pytest.importorskip("joblib")
    fits = {0: {"final_smpl_params": {"global_orient": np.arange(6.0), "body_pose": np.ones((21, 6)),
                                      "betas": np.asfortranarray(np.arange(10.0).reshape(2, 5))}},
            3: {"final_smpl_params": {"transl": np.array([1.0, 2.0, 3.0], np.float32)}}}  # fmt: skip
    path = tmp_path / "multiview_optim_2.pkl"
    joblib.dump(fits, path)
    got = load_pickle(path)
    for k, params in fits.items():
        for name, value in params["final_smpl_params"].items():
            np.testing.assert_array_equal(got[k]["final_smpl_params"][name], value)
    joblib.dump(fits, path, compress=3)
    with pytest.raises(DataError, match="compressed joblib file"):
        load_pickle(path)


def test_truncated_or_foreign_files_give_clear_errors(tmp_path):
    path = tmp_path / "cut.pkl"
    path.write_bytes(pickle.dumps({"a": np.arange(100.0)}, protocol=4)[:60])
    with pytest.raises(DataError, match=r"cut\.pkl: not a readable data pickle"):
        load_pickle(path)
    with pytest.raises(DataError, match="file not found"):
        load_pickle(tmp_path / "missing.pkl")
    good = tmp_path / "good.npz"
    np.savez(good, v=np.ones(1000))
    for name, data in (("cut.npz", good.read_bytes()[:300]), ("text.npz", b"not numpy at all\n")):
        (tmp_path / name).write_bytes(data)
        with pytest.raises(DataError, match=rf"{name}: not a readable \.npz file \(not a zip archive"):
            load_npz(tmp_path / name)  # numpy alone says "contains pickled (object) data"


def test_npz_files_load_without_pickles_and_object_arrays_under_the_same_rules(tmp_path):
    path = tmp_path / "model.npz"
    np.savez(path, v=np.ones((3, 3)), names=np.array(["a", "bc"]), obj=np.array([{"k": 1}, None], dtype=object))
    got = load_npz(path)
    np.testing.assert_array_equal(got["v"], 1.0)
    assert list(got["names"]) == ["a", "bc"] and got["obj"][0] == {"k": 1}
    np.savez(path, evil=np.array([_RunsACommand(str(tmp_path / "ran"))], dtype=object))
    with pytest.raises(DataError, match="refused to load global"):
        load_npz(path)
    assert not (tmp_path / "ran").exists()
