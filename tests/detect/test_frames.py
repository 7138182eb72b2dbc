import cv2
import numpy as np
import pytest

from motionkit.common.errors import DataError
from motionkit.detect.frames import read_frames


def test_read_selected_frames_as_rgb(tmp_path):
    p = tmp_path / "cam01.mp4"
    w = cv2.VideoWriter(str(p), cv2.VideoWriter_fourcc(*"mp4v"), 30, (64, 48))
    for i in range(60):
        img = np.zeros((48, 64, 3), np.uint8)
        img[..., 2] = 255  # pure red in BGR
        img[:, :, 1] = i * 4  # the frame number, encoded in green
        w.write(img)
    w.release()
    got = {}
    for idx, batch in read_frames(p, [3, 10, 11, 50], batch_size=3):
        assert len(idx) == len(batch) <= 3
        for f, rgb in zip(idx, batch, strict=True):
            got[int(f)] = rgb
    assert sorted(got) == [3, 10, 11, 50]
    for f, rgb in got.items():
        assert rgb.shape == (48, 64, 3) and rgb[..., 0].mean() > 200  # red channel first: RGB
        assert abs(rgb[..., 1].mean() - 4 * f) < 6
    with pytest.raises(DataError, match="has 60 frames"):
        list(read_frames(p, [61]))
    with pytest.raises(DataError, match="video not found"):
        list(read_frames(tmp_path / "nope.mp4", [0]))
