import h5py
import numpy as np

from motionkit.data.egoexo4d import EgoExoDataset
from motionkit.detect.sources import annotation_observations


def test_annotation_keypoints_match_raw_projections(synth_root):
    """annotation2D (undistorted pixels) converted to raw pixels lands on the raw projection of the
    annotated 3D joints within 1 px."""
    ds = EgoExoDataset(synth_root)
    for info in ds.takes():
        take = ds.take(info.take_uid)
        rig = take.rig
        obs = annotation_observations(take, rig)
        with h5py.File(synth_root / "gt" / f"{take.uid}.h5") as g:
            c17 = g["wearer/coco17_world"][()][obs.frame_index]
        pix = rig.project(c17)[np.arange(len(obs)), obs.camera]
        m = np.isfinite(obs.keypoints[..., 0])
        assert m.sum() > 500
        err = np.linalg.norm(obs.keypoints[m] - pix[m], axis=-1)
        assert err.max() < 1.0
        assert (obs.keypoint_conf[m] == 1).all() and (obs.keypoint_conf[~m] == 0).all()
