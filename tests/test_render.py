"""Overlay videos: the fitted body's silhouette through the real cameras against the true wearer's."""

from __future__ import annotations

import json
import shutil

import cv2
import h5py
import numpy as np
import pytest
import torch
from click.testing import CliRunner

from motionkit.body.mesh import posed_vertices
from motionkit.body.model import BodyModel
from motionkit.body.model_file import load_model_file
from motionkit.cli import main
from motionkit.conventions import SMPLX_VERTEX_KEYPOINTS
from motionkit.data.fitted_body import fitted_rig
from motionkit.data.store import read_result
from motionkit.geometry.camera import Camera
from motionkit.render import INVALID_GREY, FittedMesh, render_take, silhouette
from motionkit.synthetic.video import PERSON_COLOURS


def test_silhouette_of_a_square_facing_the_camera():
    cam = Camera("c", 200, 100, np.r_[100.0, 100.0, 100.0, 50.0, np.zeros(4)], np.eye(4))
    z = 2.0  # a 0.4 m square 2 m ahead: 20 px across at f = 100
    v = np.array([[-0.2, -0.2, z], [0.2, -0.2, z], [0.2, 0.2, z], [-0.2, 0.2, z]])
    mask = silhouette(cam, v, np.array([[0, 1, 2], [0, 2, 3]]))
    assert abs(mask.sum() - 400) <= 45  # 20 x 20 px, give or take the edge pixels
    ys, xs = np.nonzero(mask)
    assert abs(xs.mean() - 100) < 1 and abs(ys.mean() - 50) < 1
    assert not silhouette(cam, v * [1, 1, -1], np.array([[0, 1, 2], [0, 2, 3]])).any()  # behind the camera


def test_mesh_agrees_with_the_body_models_vertex_keypoints():
    model = load_model_file(None)
    bm = BodyModel(model, dtype=torch.float64)
    rng = np.random.default_rng(1)
    betas, go, bp = rng.normal(0, 1, 10), rng.normal(0, 0.5, (2, 1, 3)), rng.normal(0, 0.3, (2, 21, 3))
    out, rot = bm(torch.as_tensor(betas), torch.as_tensor(go[:, 0]), torch.as_tensor(bp), return_transforms=True)
    verts = posed_vertices(model, betas, out[:, :55].numpy(), rot.numpy())
    ids = [dict(SMPLX_VERTEX_KEYPOINTS)[n] for n in bm.vertex_keypoint_names]
    np.testing.assert_allclose(verts[:, ids], out[:, 55:].numpy(), atol=1e-9)


def _true_wearer(root, uid: str, frames: np.ndarray, rig) -> dict:
    """The true wearer's mesh at take ``frames`` (``vertices (M, V, 3)``; the clean preset makes people with
    the fitter's model) and the true cameras of ``rig`` (``cams``: name -> ``Camera``), from the gt file."""
    model = load_model_file(None)
    with h5py.File(root / "ds" / "gt" / f"{uid}.h5") as f:
        s = f["wearer/smplx"]
        bm = BodyModel(model, dtype=torch.float64)
        j, rot = bm(torch.as_tensor(s["betas"][()]), torch.as_tensor(s["global_orient"][()][frames]),
                    torch.as_tensor(s["body_pose"][()][frames].reshape(-1, 21, 3)),
                    torch.as_tensor(s["transl"][()][frames]), return_transforms=True)  # fmt: skip
        verts = posed_vertices(model, s["betas"][()], j[:, :55].numpy(), rot.numpy())
        names = json.loads(f.attrs["camera_names"])
        T, params = f["cameras/T_world_cam"][()], f["cameras/params"][()]
    cams = {c.name: Camera(c.name, c.width, c.height, params[names.index(c.name)], T[names.index(c.name)]) for c in rig}
    return {"vertices": verts, "cams": cams}


def test_rendered_body_overlaps_the_true_wearer(fitted_with_videos):
    root, uid, path = fitted_with_videos
    result = read_result(path)
    mesh = FittedMesh.of(result)
    rig = fitted_rig(result)
    frames = result["grid/frame_index"]
    valid = result["valid"].astype(bool)
    true_mesh = _true_wearer(root, uid, frames, rig)
    true_verts = true_mesh["vertices"]
    assert valid[::8].all()
    for cam in rig:
        true_cam = true_mesh["cams"][cam.name]
        fit_cam = cam
        iou = []
        for m in np.flatnonzero(valid)[::8]:
            a, b = silhouette(fit_cam, mesh.vertices(m), mesh.faces), silhouette(true_cam, true_verts[m], mesh.faces)
            if b.sum() > 200:  # the wearer in view
                iou.append((a & b).sum() / (a | b).sum())
        # measured: mean 0.839-0.868 per camera, min 0.796 (cam03) on a clean 2-s take (0.846-0.873 and
        # 0.808 before v0.20.0's ankles' floor: the term meets the first step of each second pass round,
        # where a fresh Adam drops the whole body by 12-17 cm, and moves this take's fit by 0.1 mm of
        # PA-MPJPE); the fitted girth, which keypoints do not see, is what limits it
        assert len(iou) >= 3 and np.mean(iou) >= 0.83 and min(iou) >= 0.77, (cam.name, np.round(iou, 3))


def _wearer_pixels(img: np.ndarray, tol: int = 45) -> np.ndarray:
    """``(H, W)`` bool: the pixels of a BGR video frame within ``tol`` of one of the wearer's colours."""
    near = [(np.abs(img.astype(int) - np.array(c)) <= tol).all(-1) for c in PERSON_COLOURS[0]]
    return np.logical_or.reduce(near)


def test_rendered_body_overlaps_the_wearer_in_the_video(fitted_with_videos):
    """The fit's silhouette through the fitted camera against the wearer's pixels in the take's video, on valid
    samples where the wearer is unoccluded (the video's wearer pixels match the true mesh's silhouette)."""
    root, uid, path = fitted_with_videos
    result = read_result(path)
    mesh, rig = FittedMesh.of(result), fitted_rig(result)
    valid, frames = result["valid"].astype(bool), result["grid/frame_index"]
    true_mesh = _true_wearer(root, uid, frames, rig)
    take_dir = root / "ds" / "takes" / result.attrs["take_name"]
    for cam in rig:
        cap = cv2.VideoCapture(str(take_dir / "frame_aligned_videos" / f"{cam.name}.mp4"))
        video_cam = cam.scaled(int(cap.get(cv2.CAP_PROP_FRAME_WIDTH)) / cam.width)
        true_cam = true_mesh["cams"][cam.name].scaled(video_cam.width / cam.width)
        iou, drawn = [], []
        for m in np.flatnonzero(valid)[::4]:
            cap.set(cv2.CAP_PROP_POS_FRAMES, int(frames[m]))
            ok, img = cap.read()
            assert ok
            seen = _wearer_pixels(img)
            truth = silhouette(true_cam, true_mesh["vertices"][m], mesh.faces)
            if truth.sum() < 200:
                continue
            drawn.append((seen & truth).sum() / (seen | truth).sum())
            if drawn[-1] >= 0.85:  # unoccluded: the video shows the whole wearer
                fit = silhouette(video_cam, mesh.vertices(m), mesh.faces)
                iou.append((fit & seen).sum() / (fit | seen).sum())
        # the videos draw the true mesh (part hulls, codec edges: measured 0.90-0.96 where unoccluded)
        assert np.sort(drawn)[-3] >= 0.9, (cam.name, np.round(drawn, 3))
        # measured: mean 0.84-0.87 per camera, min 0.80
        assert len(iou) >= 3 and np.mean(iou) >= 0.82 and min(iou) >= 0.78, (cam.name, np.round(iou, 3))


def test_render_writes_the_overlay_on_the_video(fitted_with_videos):
    root, uid, path = fitted_with_videos
    result = read_result(path)
    out = render_take(result, "cam02", root / "cam02.mp4", width=480)
    cap = cv2.VideoCapture(str(out))
    assert int(cap.get(cv2.CAP_PROP_FRAME_COUNT)) == len(result["time_s"])
    assert cap.get(cv2.CAP_PROP_FPS) == pytest.approx(result.fps)
    m = 20
    cap.set(cv2.CAP_PROP_POS_FRAMES, m)
    ok, img = cap.read()
    assert ok and img.shape[1] == 480
    take_dir = root / "ds" / "takes" / result.attrs["take_name"]
    src = cv2.VideoCapture(str(take_dir / "frame_aligned_videos" / "cam02.mp4"))
    src.set(cv2.CAP_PROP_POS_FRAMES, int(result["grid/frame_index"][m]))
    ok, raw = src.read()
    raw = cv2.resize(raw, (img.shape[1], img.shape[0]), interpolation=cv2.INTER_AREA)
    cam = fitted_rig(result)[fitted_rig(result).names.index("cam02")]
    mask = silhouette(cam.scaled(480 / cam.width), FittedMesh.of(result).vertices(m), load_model_file(None).faces)
    inside = np.abs(img.astype(int) - raw.astype(int)).sum(-1)[cv2.erode(mask.astype(np.uint8), np.ones((5, 5))) > 0]
    far = np.abs(img.astype(int) - raw.astype(int)).sum(-1)[cv2.dilate(mask.astype(np.uint8), np.ones((41, 41))) == 0]
    assert mask.sum() > 100 and np.median(inside) > 60  # the body is drawn where the fit puts it ...
    assert np.median(far[200:]) < 12  # ... and the video is left as it was elsewhere (codec noise)


def test_cli_renders_and_names_bad_input(fitted_with_videos, tmp_path):
    root, _uid, path = fitted_with_videos
    out = CliRunner().invoke(main, ["render", str(path), "--camera", "all", "--out", str(tmp_path / "all.mp4"),
                                    "--width", "160"])  # fmt: skip
    assert out.exit_code == 0, out.output
    cap = cv2.VideoCapture(str(tmp_path / "all.mp4"))
    assert int(cap.get(cv2.CAP_PROP_FRAME_WIDTH)) == 2 * 160  # four cameras: two rows of two
    out = CliRunner().invoke(main, ["render", str(path), "--camera", "cam09", "--out", str(tmp_path / "x.mp4")])
    assert out.exit_code != 0 and "cam09" in out.output and "cam01" in out.output and "Traceback" not in out.output
    bad = tmp_path / "broken.h5"
    bad.write_bytes(b"not an HDF5 file")
    out = CliRunner().invoke(main, ["render", str(bad), "--camera", "cam01"])
    assert out.exit_code != 0 and "broken.h5" in out.output and "Traceback" not in out.output
    assert not (tmp_path / "x.mp4").exists()


def test_a_video_that_does_not_open_is_drawn_on_grey_with_a_warning(fitted_with_videos, tmp_path):
    root, _uid, path = fitted_with_videos
    shutil.copytree(root / "ds", tmp_path / "ds")
    result = read_result(path)
    video = tmp_path / "ds" / "takes" / result.attrs["take_name"] / "frame_aligned_videos" / "cam01.mp4"
    video.write_bytes(video.read_bytes()[:2000])  # a cut-off download: no index, nothing decodes
    with pytest.warns(UserWarning, match=r"cam01\.mp4: cannot open video .*: cam01 drawn on grey"):
        out = render_take(result, "cam01", tmp_path / "cam01.mp4", root=tmp_path / "ds", width=160)
    ok, img = cv2.VideoCapture(str(out)).read()
    assert ok and abs(int(np.median(img[:20, :20])) - INVALID_GREY) <= 3  # grey, written text aside
