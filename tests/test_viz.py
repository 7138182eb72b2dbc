"""Preview helpers: the per-view window crops to the person."""

from __future__ import annotations

import numpy as np

from motionkit.viz import person_window


def test_window_holds_the_person_with_margin_inside_the_image():
    pts = np.array([[1000.0, 600.0], [1100.0, 900.0], [np.nan, np.nan], [5000.0, 10.0]])  # last: outside
    x0, x1, y0, y1 = person_window(pts, 3840, 2160, margin=0.25)
    # box 1000..1100 x 600..900: a square of 1.5 x 300 px around its centre (1050, 750)
    assert (x0, x1, y0, y1) == (825.0, 1275.0, 525.0, 975.0)


def test_window_is_clipped_to_the_image_and_has_a_minimum_size():
    x0, x1, y0, y1 = person_window(np.array([[2.0, 3.0]]), 640, 480, min_size=64.0)
    assert (x0, x1, y0, y1) == (0.0, 34.0, 0.0, 35.0)


def test_no_visible_point_gives_the_whole_image():
    assert person_window(np.full((17, 2), np.nan), 640, 480) == (0.0, 640.0, 0.0, 480.0)
