"""A forest of Monte-Carlo search trees over stored rollouts: ``MCTSForest`` (and its vertices, ``Tree``)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from typing import Any, cast

import torch
from tensordict import NestedKey, TensorDict, TensorDictBase, merge_tensordicts, unravel_key

from tdrl.data.map.tdstorage import TensorDictMap
from tdrl.data.map.tree_node import Tree, _default_node_format
from tdrl.data.replay_buffers import DEFAULT_DONE_KEYS, ListStorage

__all__ = ["MCTSForest", "Tree"]


def _key_list(value: Any, attr: str) -> list[NestedKey] | None:
    if value is None:
        return None
    if isinstance(value, (str, tuple)):
        return [value]
    if not isinstance(value, list):
        raise ValueError(f"MCTSForest: {attr} must be a nested key or a list of them, got {value!r}.")
    return [unravel_key(k) for k in value]


def _stack_row(new: TensorDictBase, old: TensorDictBase) -> TensorDictBase:
    # One node: append the new child (index, hash) to the known ones, drop repeats, keep index order.
    index = torch.cat([old.get("_index"), new.get("_index").reshape(1)])
    uniq, inverse = torch.unique(index, sorted=True, return_inverse=True)
    order = torch.arange(index.numel(), device=index.device)
    first = torch.full_like(uniq, index.numel()).scatter_reduce(0, inverse, order, "amin")
    out = old.empty()
    for key in old.keys(True, True):
        if key == "count":
            continue
        # TorchRL sorts every entry on its own, which pairs the sorted hashes with the wrong children.
        out.set(key, torch.cat([old.get(key), new.get(key).reshape(1)])[first])
    out.set("count", old.get("count") + 1)
    return out


class MCTSForest:
    """Stores rollouts and builds, from any stored observation, the search tree of what followed it.

    Every step ``(observation, action) -> next`` goes into ``data_map`` (keyed by the observation and action
    entries); ``node_map`` maps each observation to the data indices (and hashes) of the actions taken from
    it and counts its visits. :meth:`get_tree` walks these maps from a root observation.

    Keyword Args:
        data_map: the step storage. Defaults to one built by
            :meth:`TensorDictMap.from_tensordict_pair` at the first :meth:`extend`.
        node_map: the observation -> children map. Defaults to one built at the first :meth:`extend`.
        max_size: the capacity of the maps. Defaults to ``data_map.max_size``, else ``node_map.max_size``,
            else ``1000``.
        done_keys: defaults to ``["done", "truncated", "terminated"]``.
        reward_keys: defaults to ``["reward"]``.
        observation_keys: the entries that identify a node. Defaults to ``["observation"]``.
        action_keys: defaults to ``["action"]``.
        excluded_keys: entries of ``"next"`` that are not stored.
        consolidated: passed to the default data storage.

    Examples:
        >>> from tensordict import TensorDict
        >>> forest = MCTSForest()
        >>> r0 = TensorDict(action=torch.tensor([1, 2, 3]), observation=torch.tensor([0, 10, 20]),
        ...                 next=TensorDict(observation=torch.tensor([10, 20, 30]), batch_size=[3]), batch_size=[3])
        >>> r1 = TensorDict(action=torch.tensor([1, 4]), observation=torch.tensor([0, 10]),
        ...                 next=TensorDict(observation=torch.tensor([10, 40]), batch_size=[2]), batch_size=[2])
        >>> forest.extend(r0)
        >>> forest.extend(r1)
        >>> tree = forest.get_tree(r0[0])
        >>> len(forest), list(tree.valid_paths()), tree.node_data["observation"]
        (4, [(0,), (1,)], tensor(10))
        >>> print(forest.to_string(r0[0]))
        () {'observation': tensor(10)}
        (0,) {'observation': tensor(30)}
        (1,) {'observation': tensor(40)}
    """

    def __init__(
        self,
        *,
        data_map: TensorDictMap | None = None,
        node_map: TensorDictMap | None = None,
        max_size: int | None = None,
        done_keys: list[NestedKey] | None = None,
        reward_keys: list[NestedKey] | None = None,
        observation_keys: list[NestedKey] | None = None,
        action_keys: list[NestedKey] | None = None,
        excluded_keys: list[NestedKey] | None = None,
        consolidated: bool | None = None,
    ) -> None:
        self.data_map: TensorDictMap | None = data_map
        self.node_map: TensorDictMap | None = node_map
        self._done_keys: list[NestedKey] | None = None
        self._reward_keys: list[NestedKey] | None = None
        self._action_keys: list[NestedKey] | None = None
        self._observation_keys: list[NestedKey] | None = None
        self._excluded_keys: list[NestedKey] | None = None
        sizes = {name: m.max_size for name, m in (("data_map", data_map), ("node_map", node_map)) if m is not None}
        if max_size is not None:
            sizes = {"max_size": max_size, **sizes}
        if len(set(sizes.values())) > 1:
            raise ValueError(f"MCTSForest: conflicting sizes {sizes}.")
        self.max_size = next(iter(sizes.values()), None)
        self.done_keys = done_keys
        self.action_keys = action_keys
        self.reward_keys = reward_keys
        self.observation_keys = observation_keys
        self.excluded_keys = excluded_keys
        self.consolidated = consolidated

    # ---- keys --------------------------------------------------------------------------------
    @property
    def done_keys(self) -> list[NestedKey]:
        """The done entries (default ``["done", "truncated", "terminated"]``)."""
        if self._done_keys is None:
            keys: list[NestedKey] = list(DEFAULT_DONE_KEYS)
            self._done_keys = keys
            return keys
        return self._done_keys

    @done_keys.setter
    def done_keys(self, value: Any) -> None:
        self._done_keys = _key_list(value, "done_keys")

    @property
    def reward_keys(self) -> list[NestedKey]:
        """The reward entries (default ``["reward"]``)."""
        if self._reward_keys is None:
            keys: list[NestedKey] = ["reward"]
            self._reward_keys = keys
            return keys
        return self._reward_keys

    @reward_keys.setter
    def reward_keys(self, value: Any) -> None:
        self._reward_keys = _key_list(value, "reward_keys")

    @property
    def action_keys(self) -> list[NestedKey]:
        """The action entries (default ``["action"]``)."""
        if self._action_keys is None:
            keys: list[NestedKey] = ["action"]
            self._action_keys = keys
            return keys
        return self._action_keys

    @action_keys.setter
    def action_keys(self, value: Any) -> None:
        self._action_keys = _key_list(value, "action_keys")

    @property
    def observation_keys(self) -> list[NestedKey]:
        """The entries that identify a node (default ``["observation"]``)."""
        if self._observation_keys is None:
            keys: list[NestedKey] = ["observation"]
            self._observation_keys = keys
            return keys
        return self._observation_keys

    @observation_keys.setter
    def observation_keys(self, value: Any) -> None:
        self._observation_keys = _key_list(value, "observation_keys")

    @property
    def excluded_keys(self) -> list[NestedKey] | None:
        """Entries of the steps that are not stored."""
        return self._excluded_keys

    @excluded_keys.setter
    def excluded_keys(self, value: Any) -> None:
        self._excluded_keys = _key_list(value, "excluded_keys")

    def get_keys_from_env(self, env: Any) -> None:
        """Takes the reward, done, action and observation keys not set yet from ``env``."""
        for name in ("reward_keys", "done_keys", "action_keys", "observation_keys"):
            if getattr(self, f"_{name}") is None:
                setattr(self, name, list(getattr(env, name)))

    # ---- maps --------------------------------------------------------------------------------
    @classmethod
    def _write_fn_stack(cls, new: TensorDictBase, old: TensorDictBase | None = None) -> TensorDictBase:
        if old is None:
            result = cast(TensorDictBase, new.apply(lambda x: x.unsqueeze(-1), filter_empty=False))
            result.set("count", torch.ones(result.shape, dtype=torch.int, device=result.device))
            return result
        return TensorDict.lazy_stack([_stack_row(n, o) for n, o in zip(new.unbind(0), old.unbind(0))])

    def _make_data_map(self, source: TensorDictBase, dest: TensorDictBase) -> TensorDictMap:
        kwargs: dict[str, Any] = {} if self.max_size is None else {"max_size": self.max_size}
        try:
            data_map = TensorDictMap.from_tensordict_pair(
                source, dest, in_keys=[*self.observation_keys, *self.action_keys],
                consolidated=self.consolidated, **kwargs,
            )
        except KeyError as err:
            raise KeyError(
                f"MCTSForest: the steps lack some of the observation_keys {self.observation_keys} or action_keys "
                f"{self.action_keys} (keys: {list(source.keys(True, True))})."
            ) from err
        if self.max_size is None:
            self.max_size = data_map.max_size
        self.data_map = data_map
        return data_map

    def _make_node_map(self, source: TensorDictBase, dest: TensorDictBase, data_map: TensorDictMap) -> TensorDictMap:
        self.node_map = node_map = TensorDictMap.from_tensordict_pair(
            source, dest, in_keys=[*self.observation_keys],
            out_keys=[*data_map.query_module.out_keys, "count"],
            storage_constructor=ListStorage, collate_fn=TensorDict.lazy_stack, write_fn=self._write_fn_stack,
        )
        return node_map

    def _maps(self) -> tuple[TensorDictMap, TensorDictMap]:
        if self.data_map is None or self.node_map is None:
            raise RuntimeError("MCTSForest: the forest is empty; call extend first.")
        return self.data_map, self.node_map

    def _split(self, rollout: TensorDictBase) -> tuple[TensorDictBase, TensorDictBase]:
        if "next" not in rollout.keys():
            raise KeyError(f"MCTSForest: the rollout has no 'next' entry (keys: {list(rollout.keys())}).")
        source = rollout.exclude("next").copy()
        dest = rollout.select("next", *self.action_keys).copy()
        if self.excluded_keys is not None:
            dest = dest.exclude(*self.excluded_keys, inplace=True)
            dest.get("next").exclude(*self.excluded_keys, inplace=True)
        return source, dest

    def extend(self, rollout: TensorDictBase, *, return_node: bool = False) -> Tree | None:
        """Adds the steps of ``rollout`` (batch ``[T]``, TorchRL's ``"next"`` layout) to the forest.

        Steps already stored are not duplicated: a rollout that follows a stored one for a while and then
        takes another action makes the trees branch where the actions differ. With ``return_node=True``
        the tree rooted at the rollout is returned.
        """
        if rollout.ndim == 0:
            rollout = rollout.unsqueeze(0)
        source, dest = self._split(rollout)
        data_map = self._make_data_map(source, dest) if self.data_map is None else self.data_map
        data_map[source] = dest  # writes the step indices and hashes into source
        node_map = self._make_node_map(source, dest, data_map) if self.node_map is None else self.node_map
        node_map[source] = source.copy()
        # The tree of the rollout's first observation (TorchRL passes the whole batch, which get_tree rejects).
        return self.get_tree(rollout[0]) if return_node else None

    def add(self, step: TensorDictBase, *, return_node: bool = False) -> Tree | None:
        """Adds one step (0-dim, or a batch of steps); see :meth:`extend`."""
        return self.extend(step, return_node=return_node)

    def get_child(self, root: TensorDictBase) -> TensorDictBase:
        """The stored ``"next"`` data (and action) of the step(s) ``root``."""
        return self._maps()[0][root]

    # ---- trees -------------------------------------------------------------------------------
    def _local_root(self, root: TensorDictBase) -> TensorDictBase:
        device = getattr(self._maps()[0].storage, "device", None)
        if isinstance(device, (str, torch.device)) and device != "auto":
            return root.to(device) if root.device != torch.device(device) else root
        return root.clear_device_()

    def _make_local_tree(
        self, root: TensorDictBase, index: torch.Tensor | None = None, compact: bool = True
    ) -> tuple[Tree, torch.Tensor | None, torch.Tensor | None]:
        # Follows single-child nodes (all of them when compact, one step otherwise) down to a branching.
        data_map, node_map = self._maps()
        root = root.select(*node_map.in_keys)
        node_meta = None
        if index is None:
            if not bool(node_map.contains(root).all()):
                raise KeyError(f"MCTSForest: the root {root.to_dict()} is not a node of the forest.")
            node_meta = node_map[root]
            index = node_meta.get("_index")
        steps = []
        while index is not None and index.numel() <= 1:
            data = data_map.storage[index.squeeze()]
            steps.append(merge_tensordicts(data, root, callback_exist=lambda *x: None))
            nxt = data.get("next")
            if bool(node_map.contains(nxt)):
                root = nxt.select(*node_map.in_keys)
                node_meta = node_map[root]
                index = node_meta.get("_index")
                if not compact:
                    break
            else:
                root = self._local_root(steps[-1].get("next").select(*node_map.in_keys))
                index = None
        tree = Tree(
            rollout=torch.stack(steps, -1) if steps else None,
            count=torch.zeros((), dtype=torch.int32),
            wins=torch.zeros(()),
            node_data=root,
            index=index,
            hash=None,
            subtree=None,
        )
        return tree, index, None if node_meta is None or index is None else node_meta.get("_hash")

    def _make_tree_iter(
        self, root: TensorDictBase, index: torch.Tensor | None = None, max_depth: int | None = None,
        compact: bool = True,
    ) -> Tree:
        result, indices, hashes = self._make_local_tree(root, index=index, compact=compact)
        result.node_id = 0
        memo: dict[int, tuple[Tree, Any, Any]] = {}
        counter = 1
        queue: deque[tuple[Tree, Any, Any, int]] = deque()
        if indices is not None:
            queue.append((result, indices, hashes, 0))
        while queue:
            tree, indices, hashes, depth = queue.popleft()
            children = []
            for i, h in zip(indices, hashes.tolist()):
                child, child_indices, child_hashes = memo.get(h, (None, None, None))
                if child is None:
                    child, child_indices, child_hashes = self._make_local_tree(tree.node_data, index=i, compact=compact)
                    child.node_id = counter
                    child.hash = h
                    counter += 1
                    memo[h] = (child, child_indices, child_hashes)
                else:
                    # A vertex reached from several parents: keep one rollout per way in.
                    again = self._make_local_tree(tree.node_data, index=i, compact=compact)[0].rollout
                    prev = child.rollout
                    stacked = [prev, again] if prev.ndim == again.ndim else [*prev.unbind(0), again]
                    child.rollout = TensorDict.stack(stacked)
                children.append(child)
                if (max_depth is None or depth < max_depth) and child_indices is not None:
                    queue.append((child, child_indices, child_hashes, depth + 1))
            tree.subtree = TensorDict.lazy_stack(children)
        return result

    def get_tree(self, root: TensorDictBase, *, max_depth: int | None = None, compact: bool = True) -> Tree:
        """The tree of the stored steps that follow the observation of ``root``.

        Args:
            root: a tensordict with the :attr:`observation_keys` of a stored node.

        Keyword Args:
            max_depth: stop expanding below this depth. Defaults to no limit.
            compact: if ``True`` (default), chains of single-child nodes are merged into one vertex whose
                ``rollout`` holds all their steps; else each step is a vertex.
        """
        return self._make_tree_iter(root=root, max_depth=max_depth, compact=compact)

    @classmethod
    def valid_paths(cls, tree: Tree) -> Iterator[tuple[int, ...]]:
        """``tree.valid_paths()``."""
        yield from tree.valid_paths()

    def __len__(self) -> int:
        return 0 if self.data_map is None else len(self.data_map)

    def to_string(self, td_root: TensorDictBase, node_format_fn: Callable[[Tree], Any] = _default_node_format) -> str:
        """``self.get_tree(td_root).to_string(node_format_fn)``."""
        return self.get_tree(td_root).to_string(node_format_fn)
