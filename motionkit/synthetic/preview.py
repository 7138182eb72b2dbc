"""A picture of a synthetic take's scene from one of its cameras (docs/synthetic.md shows one per
scenario), drawn as the ``--videos`` frames are, without writing the take."""

from __future__ import annotations

import numpy as np

from motionkit.body.mesh import body_parts
from motionkit.body.model_file import load_model_file
from motionkit.conventions import TAKE_FPS
from motionkit.synthetic.video import background, render_frame
from motionkit.synthetic.writer import SynthConfig, make_take_scene, people_meshes


def scene_picture(cfg: SynthConfig, index: int = 0, time_s: float = 2.0, camera: int = 0,
                  width: int = 640) -> np.ndarray:  # fmt: skip
    """``(H, W, 3)`` uint8 BGR: take ``index`` of ``cfg`` at ``time_s`` seen by its camera ``camera``
    (true cameras, furniture and people), ``width`` pixels wide."""
    world, tp, tv = make_take_scene(cfg, index, load_model_file(cfg.body_model), int(round(cfg.duration * TAKE_FPS)))
    cam = world.rig[camera]
    cam = cam.scaled(width / cam.width)
    frame = min(int(round(time_s * TAKE_FPS)), len(tv.joints_people[0]) - 1)
    bg = background(cam.width, cam.height, cfg.seed)
    meshes = people_meshes(tp)
    verts = [m.vertices(frame) for m in meshes]
    return render_frame(cam, verts, body_parts(tp.mesh_model), bg, occluders=tp.occluders)
