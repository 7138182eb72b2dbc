"""``python -m motionkit.kernels [cpu] [cuda]``: build the fused operators (``make cuda-check``)."""

from motionkit.kernels.build import main

raise SystemExit(main())
