"""Synthetic videos: a failed write leaves nothing behind; the frame stamp reads back."""

import cv2
import numpy as np
import pytest

from motionkit.synthetic.video import read_frame_stamp, stamp_frame_index, write_video


def test_written_frames_read_back_and_a_failed_write_leaves_no_file(tmp_path):
    frames = [stamp_frame_index(np.full((64, 320, 3), 90, np.uint8), i) for i in (0, 5, 1023)]
    write_video(tmp_path / "ok.mp4", frames)
    cap = cv2.VideoCapture(str(tmp_path / "ok.mp4"))
    stamps = []
    while True:
        ok, img = cap.read()
        if not ok:
            break
        stamps.append(read_frame_stamp(img))
    assert stamps == [0, 5, 1023]

    def broken():
        yield frames[0]
        raise RuntimeError("decoder gave up")

    with pytest.raises(RuntimeError, match="decoder gave up"):
        write_video(tmp_path / "bad.mp4", broken())
    with pytest.raises(ValueError, match="no frames"):
        write_video(tmp_path / "empty.mp4", [])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ok.mp4"]
