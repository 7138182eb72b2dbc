import cv2
import numpy as np
import pytest

from motionkit.common.errors import DataError
from motionkit.detect.frames import BEYOND_END, FRAME_OK, iter_frames, read_frames


@pytest.mark.parametrize("decoder", ["pyav", "opencv"])
def test_read_selected_frames_as_rgb(tmp_path, decoder):
    p = tmp_path / "cam01.mp4"
    w = cv2.VideoWriter(str(p), cv2.VideoWriter_fourcc(*"mp4v"), 30, (64, 48))
    for i in range(60):
        img = np.zeros((48, 64, 3), np.uint8)
        img[..., 2] = 255  # pure red in BGR
        img[:, :, 1] = i * 4  # the frame number, encoded in green
        w.write(img)
    w.release()
    got = {}
    for b in iter_frames(p, [50, 3, 10, 11], batch_size=3, decoder=decoder):  # decoded in increasing order, in batches
        assert len(b.indices) == len(b.frames) <= 3 and (b.status == FRAME_OK).all()
        for f, rgb in zip(b.indices, b.frames, strict=True):
            got[int(f)] = rgb
    assert sorted(got) == [3, 10, 11, 50]
    for f, rgb in got.items():
        assert rgb.shape == (48, 64, 3) and rgb[..., 0].mean() > 200  # red channel first: RGB
        assert abs(rgb[..., 1].mean() - 4 * f) < 6
    # past the container's end: a status, not a failure; frames before it still come
    fb = read_frames(p, [59, 60, 61, 2], decoder=decoder)
    assert fb.status.tolist() == [FRAME_OK, BEYOND_END, BEYOND_END, FRAME_OK]
    assert fb.frames[1] is None and abs(fb.frames[3][..., 1].mean() - 8) < 6
    with pytest.raises(DataError, match="video not found"):
        read_frames(tmp_path / "nope.mp4", [0], decoder=decoder)
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(b"not a video at all" * 100)
    with pytest.raises(DataError, match="cannot open video"):
        list(iter_frames(bad, [0], decoder=decoder))
