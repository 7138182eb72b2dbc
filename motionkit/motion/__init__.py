"""Motion features from fitted sequences: frames and resampling, trajectory, spatial codes, HumanML3D."""
