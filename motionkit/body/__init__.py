"""Body models: SMPL-X files (real, user supplied, or procedurally generated) and a fast forward."""
