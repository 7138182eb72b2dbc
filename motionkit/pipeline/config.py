"""Options of one take's run (``motionkit fit``); their hash decides whether earlier outputs are reused."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from motionkit.conventions import DEFAULT_FIT_FPS
from motionkit.pipeline.weights import ObservationWeighting

ASSOCIATION_MODES = ("soma", "cylinder", "soma+cylinder")
KERNEL_MODES = ("auto", "torch", "fused")
# options that decide where and how the fit runs, not what it computes: left out of the config hash, so
# that a result fitted on a GPU is reused on a CPU and the other way round
EXECUTION_OPTIONS = ("device", "kernels")


@dataclass
class PipelineConfig:
    """Options of ``motionkit fit`` and ``motionkit batch`` that change results.

    ``fps``: fit grid rate; ``timesync_offset``: take frame ``i`` -> timesync row
    ``start + offset + i``; ``body_model``: SMPL-X file or folder (None: the synthetic model);
    ``device``: torch device of the fit (``auto``: CUDA when available); ``kernels``: ``auto`` |
    ``torch`` | ``fused`` (docs/kernels.md); ``detector``: ``auto`` | ``observations`` | ``annotation`` |
    ``rfdetr`` and the RF-DETR options; ``fit_iters``: Adam iterations of fitting stages A, B, C;
    ``association``: the wearer rule (docs/pipeline.md, "associate"); ``conf_power``, ``size_power``:
    how keypoint confidence and the person's size in the image weight the fit's observations
    (``ObservationWeighting``; docs/pipeline.md, "fit"); ``refine_cameras``: after the fit, move each
    camera onto the fitted landmarks and fit again (docs/pipeline.md, "fit"); ``cross_view``: check each
    view's wearer against the one the other views triangulate (``detect/crossview.py``).
    """

    fps: float = DEFAULT_FIT_FPS
    timesync_offset: int = 1
    body_model: str | None = None
    device: str = "auto"
    kernels: str = "auto"
    detector: str = "auto"  # auto | observations | annotation | rfdetr
    detector_variant: str = "nano"
    detector_weights: str | None = None
    keypoint_weights: str | None = None
    detector_threshold: float = 0.5
    downscaled_video: bool = False
    fit_iters: tuple[int, int, int] = (100, 200, 150)
    association: str = "soma"  # soma | cylinder | soma+cylinder (the cylinder rule where SOMA finds nobody)
    conf_power: float = ObservationWeighting.conf_power
    size_power: float = ObservationWeighting.size_power
    refine_cameras: bool = True
    cross_view: bool = True

    def __post_init__(self) -> None:
        if self.association not in ASSOCIATION_MODES:
            raise ValueError(f"association must be one of {', '.join(ASSOCIATION_MODES)}; got {self.association!r}")
        if self.kernels not in KERNEL_MODES:
            raise ValueError(f"kernels must be one of {', '.join(KERNEL_MODES)}; got {self.kernels!r}")
        _ = self.observation_weighting  # refuses negative powers

    @property
    def observation_weighting(self) -> ObservationWeighting:
        return ObservationWeighting(conf_power=self.conf_power, size_power=self.size_power)

    def to_dict(self) -> dict:
        return asdict(self)

    def result_dict(self) -> dict:
        """The options that change results (``to_dict`` without ``EXECUTION_OPTIONS``): what the config
        hash covers."""
        return {k: v for k, v in asdict(self).items() if k not in EXECUTION_OPTIONS}

    @classmethod
    def from_dict(cls, d: dict) -> PipelineConfig:
        """Inverse of ``to_dict`` (JSON turns tuples into lists)."""
        d = dict(d)
        if "fit_iters" in d:
            d["fit_iters"] = tuple(d["fit_iters"])
        return cls(**d)


FitConfig = PipelineConfig  # the name used before 0.2; kept working
