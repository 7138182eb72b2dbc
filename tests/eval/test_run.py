import h5py
import pytest

from motionkit.data.egoexo4d import EgoExoDataset
from motionkit.eval.run import evaluate
from tests.helpers import gt_result


def test_a_damaged_fit_is_left_out_of_eval_with_a_warning(default_root, tmp_path):
    ds = EgoExoDataset(default_root)
    (val,), (train,) = ds.takes("val"), ds.takes("train")
    for info in (val, train):
        gt_result(default_root, info.take_uid, tmp_path, pose_noise_rad=0.03)
    damaged = tmp_path / f"{train.take_uid}.h5"
    with h5py.File(damaged, "r+") as f:
        del f["smplx/transl"]
    with pytest.warns(UserWarning, match=rf"{train.take_uid}\.h5: .*incomplete fit, no smplx/transl; left out"):
        report, offsets = evaluate(default_root, tmp_path, split="val", offsets_from="train")
    assert report["unreadable_fits"] == [str(damaged)] and offsets is None  # the train take gave the offsets
    assert [row["take_uid"] for row in report["per_take"]] == [val.take_uid]  # the val take is still scored
