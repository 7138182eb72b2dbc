"""One take, stage by stage: ``run_fit`` is what ``motionkit fit`` (and every batch task) calls."""

from motionkit.pipeline.config import FitConfig, PipelineConfig
from motionkit.pipeline.runner import FitOutcome, is_complete, reusable_result, run_fit, run_fits
from motionkit.pipeline.stages import STAGES, StageContext, build_fit_inputs, selected_views

__all__ = [
    "STAGES",
    "FitConfig",
    "FitOutcome",
    "PipelineConfig",
    "StageContext",
    "build_fit_inputs",
    "is_complete",
    "reusable_result",
    "run_fit",
    "run_fits",
    "selected_views",
]
