"""``motionkit`` command line: one module per command group (``data``, ``fit``, ``motion``, ``eval``, ``export``), each
command parsing its options, calling the library and printing; errors in the data become one clean
line (``common.clean_errors``). Commands are imported when used (``common.LazyGroup``)."""

import warnings

import click

from motionkit import __version__
from motionkit.cli.common import LazyGroup
from motionkit.common.errors import one_line_warning

# every command: where it lives and the one line `motionkit --help` shows for it
COMMANDS = {
    "synth": ("motionkit.cli.data:synth", "Write synthetic takes in the Ego-Exo4D layout, with ground truth."),
    "synth-report": ("motionkit.cli.data:synth_report", "The realised difficulty of a synthetic dataset."),
    "takes": ("motionkit.cli.data:takes", "List the takes of a dataset."),
    "fit": ("motionkit.cli.fit:fit", "Fit one take, stage by stage, into <out>/<take_uid>.h5."),
    "batch": ("motionkit.cli.fit:batch", "Fit many takes on a process pool, Ray or Slurm."),
    "status": ("motionkit.cli.fit:status", "What a batch has done so far: outcomes, seconds, memory, coverage."),
    "doctor": ("motionkit.cli.fit:doctor", "Where fits run here: torch, CUDA, GPUs, the fused operators."),
    "codes": ("motionkit.cli.motion:codes", "Spatial-code events of fitted takes, or HumanMoveVQA tracks."),
    "features": ("motionkit.cli.motion:features", "HumanML3D 263-d features of fitted takes."),
    "eval": ("motionkit.cli.eval:eval_cmd", "Score fits against the manual 3D body annotations."),
    "export": ("motionkit.cli.export:export", "Export fitted takes (SMPL-X in the AMASS layout, BVH, glTF)."),
    "render": ("motionkit.cli.export:render", "Overlay videos: the fitted body drawn onto the take's exo videos."),
    "view": ("motionkit.cli.export:view", "A fitted take in 3D in the browser (viser; motionkit[viz])."),
    "plot-association": ("motionkit.cli.eval:plot_association_cmd", "Draw one frame's detections and wearer."),
}


@click.group(cls=LazyGroup, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="motionkit")
def main() -> None:
    """motionkit: multi-view SMPL-X motion refitting for Ego-Exo4D-style takes, and motion features.

    \b
    Quick start:
      motionkit fit --take demo --fps 20     # run on the embedded synthetic demo take
      motionkit synth --root data/synth       # write synthetic takes in the Ego-Exo4D layout
      motionkit takes --root /data/egoexo4d   # list the takes of a dataset

    Data lives under $MOTIONKIT_HOME (default ~/.cache/motionkit). The body model is the
    SMPL-X file given by --body-model or $MOTIONKIT_BODY_MODEL; without one, a procedurally
    generated synthetic body is used and every output says so.
    """
    warnings.formatwarning = one_line_warning


__all__ = ["COMMANDS", "main"]
