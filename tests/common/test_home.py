from pathlib import Path

from motionkit.common.home import HOME_ENV_VAR, motionkit_home


def test_home_is_the_variable_or_the_default_cache(monkeypatch, tmp_path):
    monkeypatch.setenv(HOME_ENV_VAR, str(tmp_path))
    assert motionkit_home() == tmp_path
    default = Path("~/.cache/motionkit").expanduser()
    monkeypatch.setenv(HOME_ENV_VAR, "")  # set but empty: not the working directory
    assert motionkit_home() == default
    monkeypatch.delenv(HOME_ENV_VAR)
    assert motionkit_home() == default
