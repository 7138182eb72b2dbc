"""The HumanML3D skeleton constants shared by the numpy reference and the Numba path: kinematic chains,
raw offsets, the target skeleton (000021 frame 0) and its bone lengths, face and foot joints."""

from __future__ import annotations

import numpy as np

from motionkit.conventions import HML_NUM_JOINTS, SMPLX_PARENTS

KINEMATIC_CHAIN = ([0, 2, 5, 8, 11], [0, 1, 4, 7, 10], [0, 3, 6, 9, 12, 15], [9, 14, 17, 19, 21], [9, 13, 16, 18, 20])
RAW_OFFSETS = np.array(
    [[0, 0, 0], [1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, -1, 0], [0, 1, 0], [0, -1, 0], [0, -1, 0],
     [0, 1, 0], [0, 0, 1], [0, 0, 1], [0, 1, 0], [1, 0, 0], [-1, 0, 0], [0, 0, 1], [0, -1, 0], [0, -1, 0],
     [0, -1, 0], [0, -1, 0], [0, -1, 0], [0, -1, 0]], dtype=np.float64,
)  # fmt: skip
PARENTS22 = SMPLX_PARENTS[:HML_NUM_JOINTS]
# Target skeleton: HumanML3D joints/000021.npy frame 0, joints 0..21 (Y up, metres).
TARGET_SKELETON = np.array(
    [[-0.0327787958, 0.9845883250, 0.8220340014], [-0.0507800654, 0.8998078704, 0.7662444711],
     [-0.0296239071, 0.8932549357, 0.8830472231], [-0.0827392191, 1.1062910557, 0.8236476779],
     [-0.0464401171, 0.5086480975, 0.7224903703], [-0.0505319238, 0.5060234070, 0.9261917472],
     [-0.0562241897, 1.2467718124, 0.8155515194], [-0.1211945862, 0.0844669342, 0.7609673738],
     [-0.1052060127, 0.0855605006, 0.8888561726], [-0.0522028804, 1.3039767742, 0.8170124292],
     [-0.0001954176, 0.0287044048, 0.7079759836], [0.0291357227, 0.0271999836, 0.9183927178],
     [-0.0697568208, 1.5225663185, 0.8224256635], [-0.0701685399, 1.4177966118, 0.7420131564],
     [-0.0589840747, 1.4234843254, 0.8959465623], [-0.0015960969, 1.5913610458, 0.7872335911],
     [-0.1037094444, 1.4016003609, 0.6157794595], [-0.0556030422, 1.4214637280, 1.0188678503],
     [-0.1346554607, 1.1467429399, 0.6082410812], [-0.0977834612, 1.1646476984, 1.0573854446],
     [-0.0540639497, 0.8948581219, 0.5795830488], [-0.0091827475, 0.9147475958, 1.1077156067]],
)  # fmt: skip
FACE_JOINTS = (2, 1, 17, 16)  # r_hip, l_hip, sdr_r, sdr_l as the reference names them
FID_L, FID_R = (7, 10), (8, 11)
FEET_THRESHOLD = 0.002
SMOOTH_SIGMA = 20
VARIANTS = ("reference", "corrected")


def target_bone_lengths(skeleton: np.ndarray = TARGET_SKELETON) -> np.ndarray:
    """``(22,)`` bone length parent -> joint of the target skeleton (0 for the root), float32 as in the reference."""
    L = np.zeros(HML_NUM_JOINTS)
    L[1:] = np.linalg.norm(skeleton[1:HML_NUM_JOINTS] - skeleton[PARENTS22[1:]], axis=-1)
    return L.astype(np.float32).astype(np.float64)


TARGET_LENGTHS = target_bone_lengths()
