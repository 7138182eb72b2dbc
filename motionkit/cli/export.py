"""``motionkit export``: fitted takes in other tools' formats."""

from __future__ import annotations

from pathlib import Path

import click

from motionkit.cli.common import clean_errors, result_files
from motionkit.common.errors import DataError
from motionkit.data.releases import smplx_npz
from motionkit.data.store import read_result

EXPORT_FORMATS = {"smplx-npz": smplx_npz.write_take}


@click.command("export")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--format",
    "fmt",
    required=True,
    type=click.Choice(sorted(EXPORT_FORMATS)),
    help="smplx-npz: SMPL-X parameters in the AMASS layout (poses, trans, betas, mocap_frame_rate), one "
    "<take_name>.npz per take, with the take, its frame positions, validity and landmark offsets under "
    "motionkit_* keys (docs/eval.md).",
)
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path), help="Folder.")
@clean_errors()
def export(path, fmt, out_dir) -> None:
    """Export fitted takes (a result file or a folder of them); each file is written atomically, and the
    same fit gives the same bytes."""
    written = 0
    for f in result_files(path):
        try:
            target = EXPORT_FORMATS[fmt](read_result(f), out_dir)
        except DataError as exc:
            click.echo(f"{f.name}: not exported: {exc}", err=True)
            continue
        written += 1
        click.echo(f"{f.name} -> {target}")
    if not written:
        raise click.ClickException(f"nothing exported from {path}")
