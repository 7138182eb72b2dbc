"""Where motionkit keeps its own files: ``$MOTIONKIT_HOME`` (default ``~/.cache/motionkit``)."""

from __future__ import annotations

import os
from pathlib import Path

HOME_ENV_VAR = "MOTIONKIT_HOME"


def motionkit_home() -> Path:
    """``$MOTIONKIT_HOME`` (default ``~/.cache/motionkit``, also when it is set but empty: an empty path
    would put the caches in the working directory): demo data, caches, generated body models."""
    return Path(os.environ.get(HOME_ENV_VAR) or "~/.cache/motionkit").expanduser()
