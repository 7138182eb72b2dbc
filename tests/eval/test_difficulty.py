from motionkit.eval.difficulty import format_difficulty, pooled_weight_checks


def test_pooled_weight_checks_count_every_observation_once():
    a = {"weight_check_counts": {"far_obs_keeping_weight": [1, 10], "swapped_camera_frames_handled": [9, 10]}}
    b = {"weight_check_counts": {"far_obs_keeping_weight": [0, 90], "swapped_camera_frames_handled": [21, 30]}}
    pooled = pooled_weight_checks([a, b, {"take_uid": "no fit"}])
    # per-take shares 10 % and 0 % (median 5 %); pooled 1 of 100
    assert pooled["far_obs_keeping_weight"] == {"share": 0.01, "count": 1, "of": 100}
    assert pooled["swapped_camera_frames_handled"] == {"share": 0.75, "count": 30, "of": 40}
    assert pooled_weight_checks([{"take_uid": "no fit"}]) == {}
    text = format_difficulty({"takes": [], "median": {}, "pooled": pooled})
    assert "swapped_camera_frames_handled 75.0% (30/40)" in text
