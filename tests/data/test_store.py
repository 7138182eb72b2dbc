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


def _fitted(M: int = 5) -> TakeResult:
    r = _result()
    rng = np.random.default_rng(0)
    go = rng.normal(size=(M, 3))
    go[3] = np.nan  # a sample without a fit: NaN throughout
    fitted = np.isfinite(go).all(-1, keepdims=True)
    pose, transl = (np.where(fitted, rng.normal(size=(M, n)), np.nan) for n in (63, 3))
    r.put("smplx", {"global_orient": go, "body_pose": pose, "transl": transl, "betas": np.zeros(10)})
    r.arrays["valid"] = np.isfinite(go).all(-1)
    return r


def test_a_missing_dataset_names_the_file_and_the_dataset(tmp_path):
    r = read_result(write_result(tmp_path / "u1.h5", _result()))
    with pytest.raises(DataError, match=r"u1\.h5: result of take u1 has no dataset 'smplx/transl'") as err:
        r["smplx/transl"]
    assert isinstance(err.value, KeyError)  # what a dict lookup raised before
    assert str(err.value).startswith(str(tmp_path / "u1.h5"))


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda a: a.pop("smplx/body_pose"), "incomplete fit, no smplx/body_pose"),
        (lambda a: a.update({"smplx/body_pose": a["smplx/body_pose"][:, :60]}), r"smplx/body_pose has shape \(5, 60\)"),
        (lambda a: a.update({"smplx/betas": np.zeros(16)}), r"smplx/betas has shape \(16,\); expected \(10,\)"),
        (lambda a: a["smplx/betas"].__setitem__(2, np.nan), "smplx/betas is not finite"),
        (
            lambda a: a["smplx/transl"].__setitem__((1, 0), np.inf),
            r"1 sample\(s\) with a finite smplx/global_orient "
            r"but a non-finite body_pose or transl \(the first: sample 1\)",
        ),
        (lambda a: a.update({"valid": a["valid"][:4]}), r"valid has shape \(4,\); expected \(5,\)"),
    ],
)
def test_a_damaged_fit_is_refused_when_read(tmp_path, damage, message):
    good = _fitted()
    read_result(write_result(tmp_path / "u1.h5", good))  # a fit with an unfitted (NaN) sample passes
    damage(good.arrays)
    path = write_result(tmp_path / "u1.h5", good)
    with pytest.raises(DataError, match=message) as err:
        read_result(path)
    assert err.value.path == str(path)


def test_a_result_without_a_fit_says_so_and_why_the_run_failed(tmp_path):
    r = _result()
    r.attrs.update(status="failed", message="no wearer found", stages='["load", "anchor"]')
    path = write_result(tmp_path / "u1.h5", r)
    read = read_result(path)
    assert not read.has_fit and read_result(write_result(tmp_path / "u2.h5", _fitted())).has_fit
    with pytest.raises(DataError, match=r"u1\.h5: result of take u1 has no fit \(stages: load, anchor; "
                                        r"the run failed: no wearer found\)"):  # fmt: skip
        read.require_fit()
