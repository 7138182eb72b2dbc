import json

import pytest

from motionkit.body.model_file import ENV_VAR, default_synthetic_model_path, load_model_file
from motionkit.body.synthetic_model import generate_synthetic_smplx
from motionkit.common.errors import DataError
from motionkit.data.egoexo4d import EgoExoDataset
from motionkit.data.fitted_body import fit_model_path, take_of_result
from motionkit.data.store import TakeResult, read_result
from tests.helpers import gt_result


def _made_with(path) -> TakeResult:
    """A result that records the body model file ``path`` as the one that made it."""
    identity = load_model_file(path).identity
    return TakeResult(attrs={"take_uid": "u1", "config": json.dumps({"body_model": str(path)}),
                             "body_model": json.dumps(identity)})  # fmt: skip


def test_the_fits_own_model_is_found_where_it_was_or_through_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    made_with = generate_synthetic_smplx(tmp_path / "cluster" / "SMPLX_NEUTRAL.npz", seed=1)
    result = _made_with(made_with)
    assert fit_model_path(result) == str(made_with)
    here = tmp_path / "laptop" / "SMPLX_NEUTRAL.npz"
    here.parent.mkdir()
    made_with.rename(here)  # the fit is looked at on another machine
    with pytest.raises(DataError, match=rf"made this fit \(SMPLX_NEUTRAL\.npz, sha256 .*\) is not on this machine "
                                        rf"\(tried: {default_synthetic_model_path()}\); set \${ENV_VAR}"):  # fmt: skip
        fit_model_path(result)  # the default synthetic body is another model: not used in its place
    monkeypatch.setenv(ENV_VAR, str(here))
    assert fit_model_path(result) == str(here)
    other = generate_synthetic_smplx(tmp_path / "other.npz", seed=2)
    monkeypatch.setenv(ENV_VAR, str(other))
    with pytest.raises(DataError, match=f"tried: {default_synthetic_model_path()}, {other}"):
        fit_model_path(result)


def test_a_synthetic_fit_gets_the_synthetic_model_whatever_the_environment_names(tmp_path, monkeypatch):
    result = _made_with(default_synthetic_model_path())
    result.attrs["config"] = json.dumps({"body_model": None})  # as the demo's fits record it
    monkeypatch.setenv(ENV_VAR, str(generate_synthetic_smplx(tmp_path / "real.npz", seed=3)))
    assert fit_model_path(result) == str(default_synthetic_model_path())


def test_the_take_of_a_result_is_found_or_its_absence_said(synth_root, default_root, tmp_path):
    uid = EgoExoDataset(synth_root).takes()[0].take_uid
    result = read_result(gt_result(synth_root, uid, tmp_path))
    assert take_of_result(result).uid == uid  # the dataset the fit was made from
    with pytest.raises(DataError, match=rf"takes\.json: take '{uid}' not found"):
        take_of_result(result, default_root)  # a dataset the user names must hold the take
    with pytest.raises(DataError, match="dataset folder not found"):
        take_of_result(result, tmp_path / "nowhere")
    result.attrs["dataset_root"] = str(tmp_path / "moved")
    with pytest.warns(
        UserWarning,
        match=rf"{uid}\.h5: the dataset it was fitted from is not here .*; going on without its videos and annotations",
    ):
        assert take_of_result(result) is None  # videos and annotations are extras: grey frames, no keypoints
