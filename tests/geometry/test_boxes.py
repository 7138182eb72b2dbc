import numpy as np

from motionkit.geometry.boxes import box_iou


def test_box_iou_by_hand_and_broadcast_forms():
    a = np.array([0.0, 0.0, 10.0, 10.0])
    b = np.array([[5.0, 5.0, 15.0, 15.0], [0.0, 0.0, 10.0, 10.0], [20.0, 20.0, 30.0, 30.0], [0.0, 0.0, 10.0, 5.0]])
    np.testing.assert_allclose(box_iou(a, b), [25 / 175, 1.0, 0.0, 0.5])  # one against many
    np.testing.assert_allclose(box_iou(b, np.tile(a, (4, 1))), [25 / 175, 1.0, 0.0, 0.5])  # row by row
    m = box_iou(b[:, None], b[None])  # matrix
    assert m.shape == (4, 4)
    np.testing.assert_allclose(np.diag(m), 1.0)
    np.testing.assert_allclose(m, m.T)
    assert box_iou(np.zeros(4), np.zeros(4)) == 0.0  # degenerate boxes: 0, not NaN
