import json

import pytest

from motionkit.body.model_file import ENV_VAR, default_synthetic_model_path, load_model_file
from motionkit.body.synthetic_model import generate_synthetic_smplx
from motionkit.common.errors import DataError
from motionkit.data.fitted_body import fit_model_path
from motionkit.data.store import TakeResult


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
