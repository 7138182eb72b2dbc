"""The empirical timesync check finds the offset the dataset was made with, and flags a wrong one."""

from __future__ import annotations

import json

import numpy as np
import pytest

from motionkit.data.egoexo4d import EgoExoDataset
from motionkit.pipeline import PipelineConfig, run_fit


@pytest.mark.parametrize(("offset", "want_shift"), [(1, 0), (0, 1)])
def test_timesync_check(default_root, tmp_path, offset, want_shift):
    uid = EgoExoDataset(default_root).takes()[0].take_uid
    cfg = PipelineConfig(timesync_offset=offset)
    with_warning = pytest.warns(UserWarning, match="timesync offset") if want_shift else _no_warning()
    with with_warning:
        out = run_fit(default_root, uid, tmp_path, cfg, until="associate", progress=False, plot=False)
    check = json.loads(out.result.group_attrs["association"]["timesync_check"])
    assert check["best_shift"] == want_shift and check["suspect"] is bool(want_shift)
    med = {int(k): v for k, v in check["median_px"].items()}
    assert med[want_shift] == min(med.values()) and check["n_pairs"] > 500
    assert np.isfinite(list(med.values())).all()


class _no_warning:
    def __enter__(self):
        import warnings

        self._w = warnings.catch_warnings(record=True)
        self.records = self._w.__enter__()
        warnings.simplefilter("always")

    def __exit__(self, *exc):
        self._w.__exit__(*exc)
        assert not [r for r in self.records if "timesync offset" in str(r.message)]
