import numpy as np

from motionkit.eval.synthetic_report import format_difficulty, pooled_checks, selection_checks


def test_pooled_checks_count_every_observation_once():
    a = {"weight_check_counts": {"far_obs_keeping_weight": [1, 10], "swapped_camera_frames_handled": [9, 10]}}
    b = {"weight_check_counts": {"far_obs_keeping_weight": [0, 90], "swapped_camera_frames_handled": [21, 30]}}
    pooled = pooled_checks([a, b, {"take_uid": "no fit"}])
    # per-take shares 10 % and 0 % (median 5 %); pooled 1 of 100
    assert pooled["far_obs_keeping_weight"] == {"share": 0.01, "count": 1, "of": 100}
    assert pooled["swapped_camera_frames_handled"] == {"share": 0.75, "count": 30, "of": 40}
    assert pooled_checks([{"take_uid": "no fit"}]) == {}
    text = format_difficulty({"takes": [], "median": {}, "pooled": pooled})
    assert "swapped_camera_frames_handled 75.0% (30/40)" in text


def test_selection_checks_count_misses_bystanders_and_junk():
    # 3 grid frames x 2 views; observation rows 0-2 are the wearer, 3 a bystander, 4 a junk box
    person_id = np.array([0, 0, 0, 1, -1])
    det_index = np.array([[0, -1], [3, 1], [4, 2]])  # frame 1 view 0: bystander, frame 2 view 0: junk
    visible = np.array([[True, True], [True, True], [False, True]])
    detected = np.array([[True, False], [True, True], [False, True]])  # view 1 frame 0: detector miss
    out = selection_checks({"association/det_index": det_index}, visible, detected, person_id)
    assert out["selection_counts"] == {
        "wearer_selected_where_visible": [3, 5],
        "wearer_selected_where_detected": [3, 4],
        "selections_not_the_wearer": [2, 5],
    }
    pooled = pooled_checks([out, out, {"weight_check_counts": {"far_obs_keeping_weight": [1, 10]}}])
    assert pooled["wearer_selected_where_detected"] == {"share": 0.75, "count": 6, "of": 8}
    assert pooled["far_obs_keeping_weight"]["of"] == 10
