"""The Python API in a few lines: fit the demo take, then read the motion features it produced.

.venv/bin/python examples/python_api.py
"""

from __future__ import annotations

import json

import numpy as np

from motionkit.data.egoexo4d import EgoExoDataset
from motionkit.motion.hml263 import hml263_to_joints
from motionkit.pipeline import PipelineConfig, run_take
from motionkit.synthetic.demo import ensure_demo_dataset


def main() -> None:
    root = ensure_demo_dataset()
    take = EgoExoDataset(root).takes()[0]
    outcome = run_take(root, take.take_uid, "out/example", PipelineConfig(fps=20.0), log=print)
    r = outcome.result
    print(f"fitted {int(r['valid'].sum())} of {len(r['valid'])} frames; body model: {r.body_model['kind']}")
    feats = r["features/hml263"]
    print(f"HumanML3D features {feats.shape}; recovered joints {hml263_to_joints(feats).shape}")
    events = json.loads(str(r["codes/events_json"]))
    qa = [e for es in events for e in es["events"] if e["qa_eligible"]]
    for e in qa[:5]:
        span = f"{e['start_frame']:>3}-{e['end_frame']:<3}"
        print(f"  {e['code']:<16} frames {span} {e['spatial_category']} ({e['temporal_category']})")
    print(f"PA-MPJPE against the annotations: {float(np.asarray(r['eval/pa_mpjpe_mm'])):.1f} mm")


if __name__ == "__main__":
    main()
