"""Stand-in torch: the names evaluate_program.py's RecipeBackend uses, over nested lists."""

import contextlib
import copy

from _record import record

bfloat16 = "bfloat16"


class Tensor:
    """Nested lists with the notebook's slicing ([0, 0, :, :, :2]), flatten, float, cpu, tolist."""

    def __init__(self, data):
        self.data = data

    def __getitem__(self, index):
        if not isinstance(index, tuple):
            index = (index,)
        return Tensor(_index(self.data, index))

    def flatten(self, start, end):
        record("Tensor.flatten", start, end)
        return self

    def float(self):
        return self

    def cpu(self):
        return self

    def tolist(self):
        return copy.deepcopy(self.data)

    def __deepcopy__(self, memo):
        return Tensor(copy.deepcopy(self.data, memo))


def _index(data, index):
    if not index:
        return data
    first, rest = index[0], index[1:]
    if isinstance(first, slice):
        return [_index(d, rest) for d in data[first]]
    return _index(data[first], rest)


def tensor(data):
    return Tensor(data)


def manual_seed(seed):
    record("torch.manual_seed", seed)


@contextlib.contextmanager
def no_grad():
    record("torch.no_grad")
    yield


@contextlib.contextmanager
def autocast(device, dtype=None):
    record("torch.autocast", device, dtype=dtype)
    yield


class cuda:  # torch's name
    @staticmethod
    def manual_seed_all(seed):
        record("torch.cuda.manual_seed_all", seed)

    @staticmethod
    def empty_cache():
        record("torch.cuda.empty_cache")

    @staticmethod
    def is_available():
        return True
