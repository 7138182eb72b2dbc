"""One take, stage by stage: ``run_take`` is what ``motionkit fit`` (and every batch task) calls."""

from motionkit.pipeline.config import PipelineConfig
from motionkit.pipeline.fit_inputs import build_fit_inputs, selected_views
from motionkit.pipeline.runner import (
    TakeRun,
    is_complete,
    reusable_result,
    run_fit,
    run_fits,
    run_take,
    run_takes,
    trusted_share,
)
from motionkit.pipeline.stages import STAGES, StageContext

__all__ = [
    "STAGES",
    "PipelineConfig",
    "StageContext",
    "TakeRun",
    "build_fit_inputs",
    "is_complete",
    "reusable_result",
    "run_fit",
    "run_fits",
    "run_take",
    "run_takes",
    "selected_views",
    "trusted_share",
]
