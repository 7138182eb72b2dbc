"""The ground floor every layer may use: errors for bad input, atomic file writes, ``$MOTIONKIT_HOME``, and
medians over rows that skip NaN (``nanstats``)."""

from motionkit.common.errors import DataError
from motionkit.common.files import atomic_path, save_npz_atomic, write_json_atomic, write_text_atomic
from motionkit.common.home import motionkit_home

__all__ = ["DataError", "atomic_path", "motionkit_home", "save_npz_atomic", "write_json_atomic", "write_text_atomic"]
