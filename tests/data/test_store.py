import h5py
import numpy as np
import pytest

from motionkit.common.errors import DataError
from motionkit.data.store import SCHEMA_VERSION, TakeResult, provenance, read_result, write_result


def _result():
    r = TakeResult(
        provenance(
            take_uid="u1",
            take_name="t1",
            dataset_root="/d",
            body_model={"kind": "synthetic", "synthetic": True},
            config={"fps": 20.0},
            timesync_offset=1,
            cpf_source="cad_assumed",
        )
    )
    r.put("grid", {"time_s": np.arange(5) / 20.0, "frame_index": np.arange(5)}, fps=20.0)
    r.put("aria", {"reason": np.array(["", "NO_ARIA_POSE", "", "", ""]), "position": np.zeros((5, 3))})
    return r


def test_roundtrip(tmp_path):
    p = write_result(tmp_path / "u1.h5", _result())
    r = read_result(p)
    assert r.attrs["schema_version"] == SCHEMA_VERSION and r.attrs["take_uid"] == "u1"
    assert r.body_model["synthetic"] is True and r.config == {"fps": 20.0}
    np.testing.assert_array_equal(r["grid/time_s"], np.arange(5) / 20.0)
    assert list(r["aria/reason"]) == ["", "NO_ARIA_POSE", "", "", ""]
    assert r.group_attrs["grid"]["fps"] == 20.0
    assert set(r.group("grid")) == {"time_s", "frame_index"}


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "u1.h5"
    write_result(target, _result())
    before = target.read_bytes()
    bad = _result()
    bad.arrays["zz/when"] = np.array(["2020-01-01"], dtype="datetime64[D]")  # h5py cannot store this
    with pytest.raises(TypeError):
        write_result(target, bad)
    assert target.read_bytes() == before  # the old complete file is untouched
    assert [p.name for p in tmp_path.iterdir()] == ["u1.h5"]  # no temp file left


def test_not_a_result_file(tmp_path):
    p = tmp_path / "x.h5"
    with h5py.File(p, "w") as f:
        f["a"] = 1
    with pytest.raises(DataError, match="not a motionkit result"):
        read_result(p)
    with pytest.raises(DataError, match="not found"):
        read_result(tmp_path / "missing.h5")
