"""Where motionkit keeps its own files: ``$MOTIONKIT_HOME`` (default ``~/.cache/motionkit``)."""

from __future__ import annotations

import os
from pathlib import Path

HOME_ENV_VAR = "MOTIONKIT_HOME"


def motionkit_home() -> Path:
    """``$MOTIONKIT_HOME`` (default ``~/.cache/motionkit``): demo data, caches, generated body models."""
    return Path(os.environ.get(HOME_ENV_VAR, "~/.cache/motionkit")).expanduser()
