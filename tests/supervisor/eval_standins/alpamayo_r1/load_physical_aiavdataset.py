"""Stand-in clip loader: 16 history and 64 future steps at 0.1 s of a car driving straight at 5 m/s
(R §13: the notebook's defaults), four cameras of four frames (placeholders)."""

from _record import record
from torch import Tensor

HISTORY, FUTURE, DT, SPEED = 16, 64, 0.1, 5.0


def load_physical_aiavdataset(clip_id, avdi=None):
    record("load_physical_aiavdataset", clip_id, avdi=type(avdi).__name__)
    history = [[SPEED * DT * (t - HISTORY + 1), 0.0, 0.0] for t in range(HISTORY)]
    future = [[SPEED * DT * (t + 1), 0.0, 0.0] for t in range(FUTURE)]
    return {
        "image_frames": Tensor([[f"{clip_id}/cam{c}/frame{f}" for f in range(4)] for c in range(4)]),
        "ego_history_xyz": Tensor([[history]]),
        "ego_history_rot": Tensor([[[[1.0, 0.0, 0.0, 0.0]] * HISTORY]]),
        "ego_future_xyz": Tensor([[future]]),
    }
