"""``motionkit export``: fitted takes in other tools' formats; ``motionkit render``: overlay videos."""

from __future__ import annotations

from pathlib import Path

import click

from motionkit.cli.common import clean_errors, error_in, result_files
from motionkit.common.errors import DataError
from motionkit.data import bvh, gltf
from motionkit.data.releases import smplx_npz
from motionkit.data.store import read_result
from motionkit.render import render_take
from motionkit.viewer import serve, write_recording

EXPORT_FORMATS = {
    "smplx-npz": lambda result, out, up, fps: smplx_npz.write_take(result, out),
    "bvh": lambda result, out, up, fps: bvh.write_take(result, out, up=up, fps=fps),
    "glb": lambda result, out, up, fps: gltf.write_take(result, out, fps=fps),
}


@click.command("export")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--format",
    "fmt",
    required=True,
    type=click.Choice(sorted(EXPORT_FORMATS)),
    help="smplx-npz: SMPL-X parameters in the AMASS layout (poses, trans, betas, mocap_frame_rate), one "
    "<take_name>.npz per take, with the take, its frame positions, validity and landmark offsets under "
    "motionkit_* keys (docs/eval.md). bvh: the body's 22-joint tree with rest offsets from the fitted shape, "
    "in cm, ZXY rotation channels, gaps filled and listed in <take_name>.bvh.json. glb: binary glTF with the "
    "skinned body mesh (shape blend, pose correctives as morph targets), its animation, the cameras and the "
    "Aria trajectory, in metres, y up (docs/exports.md).",
)
@click.option("--up", default="y", show_default=True, type=click.Choice(["y", "z"]),
              help="bvh: y up (Blender, Maya, Unity) or z up (the Ego-Exo4D world).")  # fmt: skip
@click.option(
    "--fps", default=None, type=click.FloatRange(min=1.0), help="bvh, glb: resample to this rate (default: the fit's)."
)
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path), help="Folder.")
@clean_errors()
def export(path, fmt, out_dir, up, fps) -> None:
    """Export fitted takes (a result file or a folder of them); each file is written atomically, and the
    same fit gives the same bytes."""
    written = 0
    for f in result_files(path):
        try:
            target = EXPORT_FORMATS[fmt](read_result(f), out_dir, up, fps)
        except DataError as exc:
            click.echo(f"not exported: {error_in(f, exc)}", err=True)
            continue
        written += 1
        click.echo(f"{f.name} -> {target}")
    if not written:
        raise click.ClickException(f"nothing exported from {path}")


@click.command("render")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option("--camera", required=True, help="A camera of the take (camNN), or 'all' to tile every camera.")
@click.option(
    "--out",
    "out",
    default=None,
    type=click.Path(path_type=Path),
    help="MP4 to write (default: <result>.<camera>.mp4 beside the result; a folder for several results).",
)
@click.option(
    "--root",
    default=None,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Dataset whose videos to draw on (default: the one the fit was made from; grey frames without).",
)
@click.option("--width", default=960, show_default=True, type=click.IntRange(min=64), help="Pixels across one camera.")
@clean_errors()
def render(path, camera, out, root, width) -> None:
    """Draw the fitted body through the real (KB3 fisheye) cameras onto the take's exo videos: one frame per
    fit sample, with the take frame, the fit's validity and the view's reprojection error written on it."""
    files = result_files(path)
    for f in files:
        result = read_result(f)
        if out is None:
            target = f.with_suffix(f".{camera}.mp4")
        elif len(files) > 1 or out.is_dir():
            target = out / f"{f.stem}.{camera}.mp4"
        else:
            target = out
        try:
            click.echo(f"{f.name} -> {render_take(result, camera, target, root=root, width=width)}")
        except DataError as exc:
            raise click.ClickException(error_in(f, exc)) from None


@click.command("view")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--port", default=8080, show_default=True, type=click.IntRange(1, 65535), help="Port of the web viewer.")
@click.option(
    "--out",
    default=None,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write a standalone HTML page that plays the take (no Python process needed to open it) instead of serving.",
)
@click.option("--root", default=None, type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Dataset of the take (videos, annotations; default: the one the fit was made from).")  # fmt: skip
@click.option("--colour-by-error", is_flag=True, help="Colour the body by each frame's reprojection error.")
@clean_errors(RuntimeError)
def view(path, port, out, root, colour_by_error) -> None:
    """Look at a fitted take in 3D in the browser (viser): the body mesh over time with a timeline slider
    and play, the camera frusta with a video frame, the Aria trajectory, the annotations, a toggle for each
    layer. Needs the optional extra: pip install 'motionkit[viz]'."""
    result = read_result(path)
    try:
        if out is not None:
            click.echo(f"{path.name} -> {write_recording(result, out, root=root, colour_by_error=colour_by_error)}")
            return
        _server, viewer = serve(result, port=port, root=root, colour_by_error=colour_by_error)
    except DataError as exc:
        raise click.ClickException(error_in(path, exc)) from None
    click.echo(f"motionkit view: http://localhost:{port} (Ctrl-C to stop)")
    try:
        viewer.run()
    except KeyboardInterrupt:
        pass
