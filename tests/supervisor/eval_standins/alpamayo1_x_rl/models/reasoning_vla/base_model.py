"""Stand-in RLWrapperReasoningVLA: its behaviour comes from standin_model.json in the model folder."""

import gc
import json
import math
import os
import weakref

from _record import record
from torch import Tensor

_alive = weakref.WeakSet()  # the models not yet freed: a second load should find none


class RLWrapperReasoningVLA:
    tokenizer = "tokenizer"

    @classmethod
    def from_pretrained(cls, path, **kwargs):
        gc.collect()
        record("RLWrapperReasoningVLA.from_pretrained", path, **kwargs)
        record("models alive at load", len(_alive))
        if not os.path.isdir(path):
            raise OSError(f"{path} does not appear to have a file named config.json")
        conf_path = os.path.join(path, "standin_model.json")
        conf = {"offset": 0.25}
        if os.path.exists(conf_path):
            with open(conf_path, encoding="utf-8") as handle:
                conf = json.load(handle)
        if conf.get("fail_load"):
            raise RuntimeError(conf["fail_load"])
        model = cls()
        _alive.add(model)
        model.conf = conf
        model.clip = -1
        return model

    def cuda(self):
        record("model.cuda")
        return self

    def eval(self):
        record("model.eval")
        return self

    def sample_trajectories_from_data(self, data, **kwargs):
        record("model.sample_trajectories_from_data", sorted(data), **kwargs)
        self.clip += 1
        history = data["ego_history_xyz"].data[0][0]
        step = history[-1][0] - history[-2][0]
        n = kwargs["num_traj_samples"]
        offset = self.conf.get("offset", 0.0)
        samples = []
        for k in range(n):
            points = [[history[-1][0] + step * (t + 1), offset * (k + 1), 0.0] for t in range(64)]
            samples.append(points)
        nan_at = self.conf.get("nan_at")
        if nan_at and nan_at[0] == self.clip:
            samples[nan_at[1]][nan_at[2]][1] = math.nan
        cot = self.conf.get("cot", "")
        extra = {"cot": Tensor([[[cot] * n]])}
        return Tensor([[samples]]), Tensor([[[]]]), Tensor([[]]), extra
