"""``motionkit export``: fitted takes in other tools' formats."""

from __future__ import annotations

from pathlib import Path

import click

from motionkit.cli.common import clean_errors, result_files
from motionkit.common.errors import DataError
from motionkit.data import bvh, gltf
from motionkit.data.releases import smplx_npz
from motionkit.data.store import read_result

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
            click.echo(f"{f.name}: not exported: {exc}", err=True)
            continue
        written += 1
        click.echo(f"{f.name} -> {target}")
    if not written:
        raise click.ClickException(f"nothing exported from {path}")
