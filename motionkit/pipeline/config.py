"""Options of one take's run (``motionkit fit``); their hash decides whether earlier outputs are reused."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from motionkit.conventions import DEFAULT_FIT_FPS

ASSOCIATION_MODES = ("soma", "cylinder", "soma+cylinder")


@dataclass
class PipelineConfig:
    """Options of ``motionkit fit`` and ``motionkit batch`` that change results.

    ``fps``: fit grid rate; ``timesync_offset``: take frame ``i`` -> timesync row
    ``start + offset + i``; ``body_model``: SMPL-X file or folder (None: the synthetic model);
    ``device``: torch device of the fit; ``detector``: ``auto`` | ``observations`` | ``annotation`` |
    ``rfdetr`` and the RF-DETR options; ``fit_iters``: Adam iterations of fitting stages A, B, C;
    ``association``: the wearer rule (docs/pipeline.md, "associate").
    """

    fps: float = DEFAULT_FIT_FPS
    timesync_offset: int = 1
    body_model: str | None = None
    device: str = "cpu"
    detector: str = "auto"  # auto | observations | annotation | rfdetr
    detector_variant: str = "nano"
    detector_weights: str | None = None
    keypoint_weights: str | None = None
    detector_threshold: float = 0.5
    downscaled_video: bool = False
    fit_iters: tuple[int, int, int] = (100, 200, 150)
    association: str = "soma"  # soma | cylinder | soma+cylinder (the cylinder rule where SOMA finds nobody)

    def __post_init__(self) -> None:
        if self.association not in ASSOCIATION_MODES:
            raise ValueError(f"association must be one of {', '.join(ASSOCIATION_MODES)}; got {self.association!r}")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> PipelineConfig:
        """Inverse of ``to_dict`` (JSON turns tuples into lists)."""
        d = dict(d)
        if "fit_iters" in d:
            d["fit_iters"] = tuple(d["fit_iters"])
        return cls(**d)


FitConfig = PipelineConfig  # the name used before 0.2; kept working
