"""``DataLoadingPrimer``: fills each env reset with the next records of a data loader.

The primer runs before the base env resets: it takes the next ``batch_size`` records (an endless pass
over the loader, restarted when exhausted) and writes them into the reset input, where e.g. ``ChatEnv``
reads its ``"query"``. With ``repeats=k`` every record is served ``k`` times in a row, so the ``k``
rollouts of a GRPO group share their prompt; ``group_repeats=True`` puts them in the same batch.
"""

from __future__ import annotations

import warnings
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Literal

import torch
from tensordict import TensorDict, TensorDictBase, is_leaf_nontensor, is_tensor_collection, lazy_stack

from tdrl.data import Composite, NonTensor, Unbounded
from tdrl.envs.transforms.init import TensorDictPrimer

__all__ = ["DataLoadingPrimer", "as_nested_tensor", "as_padded_tensor"]


def as_nested_tensor(list_of_tensordicts: list[TensorDictBase]) -> TensorDictBase:
    """Stacks tensordicts into one whose tensors are jagged nested tensors (ragged first dim).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = as_nested_tensor([TensorDict(x=torch.ones(2)), TensorDict(x=torch.ones(3))])
        >>> td["x"].is_nested, td.batch_size
        (True, torch.Size([2]))
    """
    first, rest = list_of_tensordicts[0], list_of_tensordicts[1:]
    batch_size = [len(list_of_tensordicts), *first.shape]

    def nest(*tensors: torch.Tensor) -> torch.Tensor:
        return torch.nested.as_nested_tensor(list(tensors), layout=torch.jagged)

    return first.apply(nest, *rest, batch_size=batch_size)


def as_padded_tensor(list_of_tensordicts: list[TensorDictBase], dim: int = 0, stack_dim: int = 0) -> TensorDictBase:
    """Stacks tensordicts, left-padding each tensor with zeros along ``dim`` to the longest one.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = as_padded_tensor([TensorDict(x=torch.tensor([1, 2])), TensorDict(x=torch.tensor([3]))])
        >>> td["x"]
        tensor([[1, 2],
                [0, 3]])
    """
    if dim < 0:
        raise ValueError(f"as_padded_tensor: dim must be >= 0, got {dim}")
    first, rest = list_of_tensordicts[0], list_of_tensordicts[1:]
    batch_size = list(first.shape)
    batch_size.insert(dim, len(list_of_tensordicts))

    def pad_and_stack(*tensors: torch.Tensor) -> torch.Tensor:
        longest = max(t.size(dim) for t in tensors)
        padded = []
        for t in tensors:
            shape = list(t.shape)
            shape[dim] = longest - t.size(dim)
            padded.append(torch.cat((t.new_zeros(shape), t), dim=dim))
        return torch.stack(padded, dim=stack_dim)

    return first.apply(pad_and_stack, *rest, batch_size=batch_size)


_STACK_METHODS = {"as_nested_tensor": as_nested_tensor, "as_padded_tensor": as_padded_tensor}


def _spec_like(value: Any, batch_size: torch.Size) -> Any:
    if isinstance(value, torch.Tensor) and not is_tensor_collection(value):
        return Unbounded(shape=(*batch_size, *([-1] * value.ndim)), dtype=value.dtype, device=value.device)
    return NonTensor(shape=batch_size, example_data=getattr(value, "data", value))


class DataLoadingPrimer(TensorDictPrimer):
    """Writes the next records of a data loader into every reset (a ``TensorDictPrimer`` fed by data).

    Args:
        dataloader: an iterable of batches (dicts of lists/tensors, or tensordicts).
        dataloader_factory: builds the loader (instead of ``dataloader``); called again by
            ``reset_dataloader``.
        primers: the specs of the loaded entries (inferred from the first batch when None).
        stack_method: how single records are stacked into a batch: ``tensordict.lazy_stack`` (default),
            ``"as_nested_tensor"``, ``"as_padded_tensor"`` or a callable taking a list of tensordicts.
        batch_size: records per reset (default: the loader's ``batch_size``; ``0``/``()``: one record).
        repeats: serve each record this many times in a row.
        device: where the loaded data is put.
        group_repeats: multiply the batch size by ``repeats`` so a group fills one batch.
        use_ray_service: not supported (a Ray-served loader); must be False.

    Examples:
        >>> from tensordict import TensorDict
        >>> primer = DataLoadingPrimer([{"query": ["a", "b"]}, {"query": ["c", "d"]}], batch_size=2, repeats=2)
        >>> [list(primer(TensorDict(batch_size=[2]))["query"]) for _ in range(3)]
        [['a', 'a'], ['b', 'b'], ['c', 'c']]
    """

    def __init__(
        self,
        dataloader: Iterable[Any] | None = None,
        *,
        dataloader_factory: Callable[[], Iterable[Any]] | None = None,
        primers: Composite | None = None,
        stack_method: Callable[[list], TensorDictBase] | Literal["as_nested_tensor", "as_padded_tensor"] | None = None,
        batch_size: int | torch.Size | tuple | None = None,
        repeats: int | None = None,
        device: torch.device | str | None = None,
        group_repeats: bool = False,
        use_ray_service: bool = False,
    ) -> None:
        if (dataloader is None) == (dataloader_factory is None):
            raise ValueError("DataLoadingPrimer needs exactly one of `dataloader` or `dataloader_factory`.")
        if use_ray_service:
            raise ValueError("DataLoadingPrimer(use_ray_service=True) is not available in tdrl (no Ray data service).")
        self.dataloader_factory = dataloader_factory
        self.dataloader = dataloader_factory() if dataloader is None else dataloader
        self.repeats = int(repeats or 0)
        self.batch_size = self._batch_size(batch_size, group_repeats)
        self.auto_batch_size = getattr(self.dataloader, "batch_size", 1) != 0
        if stack_method is None:
            stack_method = lazy_stack
        elif isinstance(stack_method, str):
            if stack_method not in _STACK_METHODS:
                raise ValueError(f"Unknown stack_method {stack_method!r}; expected one of {sorted(_STACK_METHODS)} or a callable")
            stack_method = _STACK_METHODS[stack_method]
        elif not callable(stack_method):
            raise ValueError(f"stack_method must be a callable or a name, got {stack_method!r}")
        self.stack_method = stack_method
        self._device = None if device is None else torch.device(device)
        self._queue: deque[TensorDictBase] = deque()
        self.endless_dataloader = self._endless_iter(self.dataloader)
        if primers is None:
            first = self._next_record()
            self._queue.appendleft(first)
            primers = Composite(
                {k: _spec_like(first.get(k), self.batch_size) for k in first.keys(True, True, is_leaf=is_leaf_nontensor)},
                shape=self.batch_size,
            )
        self.data_keys = list(primers.keys(True, True))
        super().__init__(primers=primers, call_before_env_reset=True, expand_specs=False)

    def _batch_size(self, batch_size: Any, group_repeats: bool) -> torch.Size:
        if batch_size is None:
            batch_size = getattr(self.dataloader, "batch_size", None) or ()
        if batch_size == 0:
            batch_size = ()
        batch_size = torch.Size((batch_size,) if isinstance(batch_size, int) else tuple(batch_size))
        if len(batch_size) > 1:
            raise ValueError(f"DataLoadingPrimer: batch_size must be 0-d or 1-d, got {tuple(batch_size)}")
        if self.repeats and group_repeats:
            batch_size = torch.Size([(batch_size[0] if batch_size else 1) * self.repeats])
        return batch_size

    @staticmethod
    def _endless_iter(loader: Iterable[Any]) -> Iterator[Any]:
        while True:
            empty = True
            for batch in loader:
                empty = False
                yield batch
            if empty:
                raise RuntimeError("DataLoadingPrimer: the data loader yielded no batch.")

    @property
    def device(self) -> torch.device | None:
        # Before Transform.__init__ (the first record is read while building the specs) there is no parent.
        if self._device is None and self.__dict__.get("_container") is not None and self.parent is not None:
            return self.parent.device
        return self._device

    @device.setter
    def device(self, value: torch.device | None) -> None:
        self._device = value

    # The loader is shared (not copied) by clones, which get their own fresh pass over it: a clone made to
    # build a later transform's parent env must not consume (or deep-copy) the data.
    _SHARED = ("dataloader", "dataloader_factory", "endless_dataloader")

    def __deepcopy__(self, memo: dict) -> DataLoadingPrimer:
        shared = {k: self.__dict__.pop(k) for k in self._SHARED}
        try:
            out = super().__deepcopy__(memo)
        finally:
            self.__dict__.update(shared)
        out.__dict__.update(dataloader=shared["dataloader"], dataloader_factory=shared["dataloader_factory"])
        out.__dict__["endless_dataloader"] = self._endless_iter(shared["dataloader"])
        return out

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        state.pop("endless_dataloader")  # a generator: rebuilt on unpickling (e.g. in a worker process)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.__dict__["endless_dataloader"] = self._endless_iter(self.dataloader)

    def reset_dataloader(self) -> DataLoadingPrimer:
        """Drops queued records and restarts the loader (rebuilt by ``dataloader_factory`` when given)."""
        self._queue.clear()
        if self.dataloader_factory is not None:
            self.dataloader = self.dataloader_factory()
        self.endless_dataloader = self._endless_iter(self.dataloader)
        return self

    def _as_tensordict(self, data: Any) -> TensorDictBase:
        if is_tensor_collection(data):
            return data
        if not isinstance(data, Mapping):
            raise TypeError(
                f"DataLoadingPrimer: the data loader must yield dicts (or tensordicts), got {type(data).__name__}; "
                "give the DataLoader a collate_fn returning a dict of lists."
            )
        lengths = {len(v) for v in data.values() if isinstance(v, (list, tuple, torch.Tensor)) and len(v)}
        if not self.auto_batch_size or not lengths:
            return TensorDict.from_dict(dict(data), batch_size=[]).unsqueeze(0)
        if len(lengths) > 1:
            raise ValueError(f"DataLoadingPrimer: a batch has entries of different lengths {sorted(lengths)}: {list(data)}")
        return TensorDict.from_dict(dict(data), batch_size=[lengths.pop()])

    def _next_record(self) -> TensorDictBase:
        """One record (batch ``[]``); each record of a loaded batch is queued ``max(1, repeats)`` times."""
        if not self._queue:
            batch = self._as_tensordict(next(self.endless_dataloader))
            if batch.batch_dims == 0:
                batch = batch.unsqueeze(0)
            self._queue.extend(rec for rec in batch.unbind(0) for _ in range(max(1, self.repeats)))
        record = self._queue.popleft()
        device = self.device
        return record if device is None or record.device == device else record.to(device)

    def _load_from_dataloader(self, reset: torch.Tensor | None = None) -> TensorDictBase:
        """The next batch: ``batch_size`` records stacked (or as many as ``reset`` selects)."""
        if reset is not None and reset.ndim > 0:
            if not reset.any():
                raise RuntimeError("DataLoadingPrimer: the `_reset` mask selects no env.")
            return self.stack_method([self._next_record() for _ in range(int(reset.sum()))])
        if not self.batch_size:
            return self._next_record()
        return self.stack_method([self._next_record() for _ in range(self.batch_size[0])])

    def _prime(self, tensordict: TensorDictBase, previous: TensorDictBase | None) -> TensorDictBase:
        reset = tensordict.get("_reset", None)
        if reset is not None:
            reset = reset.reshape(tensordict.batch_size) if reset.numel() == tensordict.numel() else reset
        if reset is None or bool(reset.all()) or not tensordict.batch_dims:
            data = self._load_from_dataloader()
            if tensordict.is_empty():
                return data if data.batch_size == tensordict.batch_size else data.expand(tensordict.batch_size)
            return tensordict.update(data)
        # Partial reset: fresh records for the reset envs only, the others keep theirs.
        fresh = iter(self._load_from_dataloader(reset).unbind(0))
        rows = [next(fresh).update(row.select("_reset", strict=False)) if r else row for row, r in
                zip(tensordict.unbind(0), reset.tolist(), strict=True)]
        return lazy_stack(rows)

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        # The loaded entries (e.g. the reference "answer") ride along every step; entries the env wrote
        # (strings included: they are non-tensor leaves) are kept.
        present = set(next_tensordict.keys(True, True, is_leaf=is_leaf_nontensor))
        for key in self.out_keys:
            if key not in present:
                value = tensordict.get(key, None)
                if value is not None:
                    next_tensordict.set(key, value)
        return next_tensordict

    def _reset_env_preprocess(self, tensordict: TensorDictBase | None) -> TensorDictBase | None:
        if tensordict is None:  # env.reset() with no input: a fresh batch of records
            parent = self.parent
            tensordict = TensorDict(batch_size=self.batch_size if parent is None else parent.batch_size)
        return self._prime(tensordict, None)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Outside an env: fills ``tensordict`` with the next batch."""
        return self._prime(tensordict, None)

    def set_container(self, container: Any) -> None:
        super().set_container(container)
        env = container
        while env is not None and not hasattr(env, "batch_size"):  # a Compose: walk up to the env
            env = env.container
        if self.batch_size and env is not None and env.batch_size != self.batch_size:
            warnings.warn(
                f"The parent env batch size {tuple(env.batch_size)} differs from the DataLoadingPrimer's "
                f"{tuple(self.batch_size)}.",
                stacklevel=2,
            )

    def transform_observation_spec(self, observation_spec: Any) -> Any:
        for key in self.out_keys:
            spec = self.primers[key].clone()
            if spec.shape[: len(observation_spec.shape)] != observation_spec.shape:
                spec = spec.expand(*observation_spec.shape, *spec.shape[len(self.batch_size):])
            observation_spec[key] = spec
        return observation_spec

    def transform_state_spec(self, state_spec: Any) -> Any:
        return state_spec  # the loaded entries are observations; ChatEnv declares its own query state

    def __repr__(self) -> str:
        return f"{type(self).__name__}(keys={self.data_keys}, batch_size={tuple(self.batch_size)}, repeats={self.repeats})"
