"""RF-DETR plumbing on real model objects built without downloaded weights (random initialisation), and
finding checkpoints as rfdetr publishes them."""

import hashlib
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("rfdetr")

from motionkit.common.errors import DataError  # noqa: E402
from motionkit.detect.rfdetr_backend import RFDETRDetector, RFDETRKeypoints, resolve_weights  # noqa: E402


@pytest.fixture(scope="module")
def frames():
    rng = np.random.default_rng(0)
    return [rng.integers(0, 255, (360, 640, 3), dtype=np.uint8) for _ in range(3)]


@pytest.fixture(scope="module")
def detector():
    return RFDETRDetector("nano", threshold=0.0, allow_random_init=True, batch_size=2, person_class=-1)


def test_detector_plumbing(detector, frames):
    out = detector.detect(frames)
    assert len(out) == 3
    # with person_class=-1 nothing passes the class filter; the model itself returns boxes
    assert all(len(b) == 0 and b.shape == (0, 4) for b, _ in out)
    raw = detector.model.predict(frames[0], threshold=0.0)
    assert len(raw.xyxy) > 0
    det1 = RFDETRDetector("nano", threshold=0.0, allow_random_init=True, batch_size=1)
    det1.model = detector.model  # same weights: batching must not change results
    det1.person_class = int(raw.class_id[0])
    a = det1.detect(frames)
    det1.batch_size = 3
    b = det1.detect(frames)
    for (ba, sa), (bb, sb) in zip(a, b, strict=True):
        np.testing.assert_allclose(ba, bb, atol=1e-3)
        np.testing.assert_allclose(sa, sb, atol=1e-5)
    boxes = np.concatenate([x for x, _ in a])
    assert len(boxes) and (boxes[:, 2] >= boxes[:, 0]).all()
    # boxes come back in source-image pixels (the 640 x 360 frame, not the model's square input)
    assert boxes[:, [0, 2]].max() <= 640 + 1 and boxes[:, [1, 3]].max() <= 360 + 1


def test_rejects_non_rgb_frames(detector):
    with pytest.raises(ValueError, match="RGB uint8"):
        detector.detect([np.zeros((10, 10), np.uint8)])


def test_missing_checkpoint_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("RF_HOME", str(tmp_path))
    with pytest.raises(DataError, match="not one of rfdetr's published checkpoints"):
        resolve_weights(str(tmp_path / "missing.pth"), "nano")
    with pytest.raises(DataError, match="rf-detr-nano.pth"):
        RFDETRDetector("nano")
    with pytest.raises(ValueError, match="unknown RF-DETR variant"):
        RFDETRDetector("huge", allow_random_init=True)


def test_keypoint_model_plumbing(frames):
    kp = RFDETRKeypoints(threshold=0.0, allow_random_init=True, min_iou=0.0)
    boxes = [np.array([[10.0, 10.0, 200.0, 300.0]]), np.zeros((0, 4))]
    out = kp.estimate(frames[:2], boxes)
    assert out[0][0].shape == (1, 17, 2) and out[0][1].shape == (1, 17)
    assert out[1][0].shape == (0, 17, 2)
    assert np.isfinite(out[0][0]).all()


def test_keypoint_batches_do_not_change_results(frames):
    kp = RFDETRKeypoints(threshold=0.0, allow_random_init=True, min_iou=0.0, batch_size=1)
    boxes = [np.array([[10.0, 10.0, 200.0, 300.0]]), np.zeros((0, 4)), np.array([[0, 0, 640, 360], [50, 20, 90, 200]])]
    one = kp.estimate(frames, boxes)
    kp.batch_size = 3  # the frames with boxes (0 and 2) in one model call
    both = kp.estimate(frames, boxes)
    for (ka, ca), (kb, cb) in zip(one, both, strict=True):
        np.testing.assert_allclose(ka, kb, atol=1e-3)
        np.testing.assert_allclose(ca, cb, atol=1e-5)
    assert both[2][0].shape == (2, 17, 2) and np.isfinite(both[2][0]).all()
    with pytest.raises(ValueError, match="2 frames but 3"):
        kp.estimate(frames[:2], boxes)


def test_precision_is_checked_and_applied():
    with pytest.raises(ValueError, match="unknown precision"):
        RFDETRDetector("nano", allow_random_init=True, precision="int8")
    det = RFDETRDetector("nano", allow_random_init=True, precision="bfloat16")  # CPU-capable reduced precision
    out = det.model.predict(np.zeros((64, 64, 3), np.uint8), threshold=0.0, include_source_image=False)
    import torch

    assert det.model._optimized_dtype == torch.bfloat16 and len(out.xyxy) > 0


def test_published_checkpoint_names_come_from_rfdetr_and_are_found_in_its_cache(tmp_path, monkeypatch):
    """A user who let rfdetr fetch its weights has them under rfdetr's published names in its cache."""
    import rfdetr

    from motionkit.detect.rfdetr_backend import checkpoint_identity, checkpoints_report, published_checkpoint

    monkeypatch.setenv("RF_HOME", str(tmp_path))
    kp = published_checkpoint("keypoints")
    assert (
        kp
        == rfdetr.RFDETRKeypointPreview.get_model_config(object.__new__(rfdetr.RFDETRKeypointPreview)).pretrain_weights
    )
    assert kp == "rf-detr-keypoint-preview-xlarge.pth"  # rfdetr 1.11's published keypoint checkpoint
    (tmp_path / kp).write_bytes(b"weights")
    (tmp_path / published_checkpoint("nano")).write_bytes(b"nano")
    assert resolve_weights(None, "keypoints") == (tmp_path / kp).resolve()
    assert resolve_weights(None, "nano").name == "rf-detr-nano.pth"
    assert checkpoint_identity(tmp_path / kp) == {"file": kp, "sha256": hashlib.sha256(b"weights").hexdigest()}
    rep = checkpoints_report()
    assert rep["cache"] == str(tmp_path) and rep["checkpoints"]["keypoints"] == {"file": kp, "found": True}
    assert rep["checkpoints"]["small"]["found"] is False


def test_without_weights_the_error_names_both_ways_out_and_allow_download_fetches(tmp_path, monkeypatch):
    import rfdetr.assets.model_weights as mw

    from motionkit.detect.rfdetr_backend import published_checkpoint

    monkeypatch.setenv("RF_HOME", str(tmp_path))
    with pytest.raises(DataError, match=r"--keypoint-weights with a local checkpoint, or --allow-download"):
        resolve_weights(None, "keypoints")
    with pytest.raises(DataError, match=r"--detector-weights .* --allow-download"):
        resolve_weights(None, "small")
    fetched = []

    def fake_download(name, redownload=False, validate_md5=True):  # no network here: write what rfdetr would
        fetched.append(name)
        Path(name).write_bytes(b"downloaded")

    monkeypatch.setattr(mw, "download_pretrain_weights", fake_download)
    got = resolve_weights(None, "keypoints", allow_download=True)
    assert fetched == [published_checkpoint("keypoints")] and got == (tmp_path / fetched[0]).resolve()
    assert got.read_bytes() == b"downloaded"
