"""A DistributedSampler that can start mid-epoch, for exact resumes.

The shard and order of every epoch depend only on (seed, epoch, rank, world
size), so a resumed run skips the batches it already trained on by index,
without loading them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from typing import TypeVar

from torch.utils.data import DataLoader
from torch.utils.data import Dataset
from torch.utils.data import DistributedSampler
from torch.utils.data import Sampler

T_co = TypeVar("T_co", covariant=True)


class ResumableSampler(DistributedSampler[T_co]):
    """``DistributedSampler`` plus ``skip(n)``: the next epoch starts at its n-th index."""

    def __init__(self, dataset: Dataset[Any], *, num_replicas: int, rank: int,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False) -> None:
        super().__init__(dataset, num_replicas=num_replicas, rank=rank, shuffle=shuffle,
                         seed=seed, drop_last=drop_last)
        self._start = 0

    def skip(self, count: int) -> None:
        """Leave out the first ``count`` indices of this rank's current epoch (once)."""
        self._start = max(0, min(count, self.num_samples))

    def __iter__(self) -> Iterator[T_co]:
        start, self._start = self._start, 0
        indices = list(super().__iter__())
        return iter(indices[start:])

    def __len__(self) -> int:
        return self.num_samples - self._start


def find_sampler(loader: DataLoader[Any]) -> Sampler[Any] | None:
    """The index sampler inside ``loader`` (also behind a BatchSampler)."""
    batch_sampler = getattr(loader, "batch_sampler", None)
    inner = getattr(batch_sampler, "sampler", None)
    if isinstance(inner, Sampler):
        return inner
    sampler = getattr(loader, "sampler", None)
    return sampler if isinstance(sampler, Sampler) else None


def steps_per_epoch(loader: DataLoader[Any]) -> int | None:
    try:
        return len(loader)
    except TypeError:  # an IterableDataset without __len__
        return None
