"""The embedded demo dataset: a synthetic take in the Ego-Exo4D layout under ``$MOTIONKIT_HOME``."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from motionkit.common.home import motionkit_home
from motionkit.synthetic.writer import SynthConfig, write_synthetic_dataset

DEMO_CONFIG = SynthConfig(takes=3, seed=2026, duration=20.0, preset="realistic")
DEMO_VERSION = "4"  # bumped whenever the generator changes what the demo takes hold


def demo_root() -> Path:
    return motionkit_home() / "demo" / f"egoexo4d_synthetic_v{DEMO_VERSION}"


def ensure_demo_dataset(progress: bool = True) -> Path:
    """Generate the demo dataset on first use (atomically: a half-written demo is never left)."""
    root = demo_root()
    if (root / "takes.json").is_file():
        return root
    root.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".demo-", dir=root.parent))
    try:
        if progress:
            print(f"motionkit: generating the synthetic demo dataset in {root} (first use only)")
        write_synthetic_dataset(tmp, DEMO_CONFIG, progress=progress)
        try:
            os.rename(tmp, root)
        except OSError:  # another process won the race
            if not (root / "takes.json").is_file():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return root
