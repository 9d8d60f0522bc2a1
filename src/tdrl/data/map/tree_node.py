"""One vertex of a Monte-Carlo search tree and its subtrees: ``Tree`` (built by ``MCTSForest`` in ``tree.py``)."""

from __future__ import annotations

import weakref
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any, Literal, cast

import torch
from tensordict import TensorDict, TensorDictBase

from tdrl._utils.tensorclass import NoCastTensorClass
from tdrl.data.map._plot import plot_tree
from tdrl.data.tensor_specs import Composite

__all__ = ["Tree"]


def _default_node_format(tree: Tree) -> Any:
    return tree.node_data.to_dict()


class Tree(NoCastTensorClass):
    """One vertex of a Monte-Carlo search tree, with the stack of its subtrees.

    A vertex is where the stored rollouts branch: ``node_data`` holds the entries (observations) that
    identify it, ``rollout`` the steps (in TorchRL's ``"next"`` layout) that lead to it from its parent, and
    ``subtree`` a lazy stack of one :class:`Tree` per distinct action taken from it. ``hash`` is the hash of
    the (observation, action) pair that starts ``rollout`` (``None`` for a root); ``node_id`` numbers the
    vertices of a tree in breadth-first order. Trees come from :meth:`MCTSForest.get_tree`.

    Examples:
        >>> from tensordict import TensorDict
        >>> from tdrl.data import MCTSForest
        >>> forest = MCTSForest()
        >>> forest.extend(TensorDict(observation=torch.tensor([0, 1]), action=torch.tensor([5, 6]),
        ...                          next=TensorDict(observation=torch.tensor([1, 2]), batch_size=[2]),
        ...                          batch_size=[2]))
        >>> forest.extend(TensorDict(observation=torch.tensor([0]), action=torch.tensor([7]),
        ...                          next=TensorDict(observation=torch.tensor([3]), batch_size=[1]),
        ...                          batch_size=[1]))
        >>> tree = forest.get_tree(TensorDict(observation=torch.tensor(0)))
        >>> tree.num_children, list(tree.valid_paths()), tree.subtree[0].rollout["action"]
        (2, [(0,), (1,)], tensor([5, 6]))
    """

    # Typed Any for the checker (a tensorclass field may hold a tensor, a tensordict, a Python value or None):
    count: Any = None  # int | Tensor: visits
    wins: Any = None  # int | Tensor
    index: Any = None  # Tensor | None: data-map indices of the children
    hash: Any = None  # int | None
    node_id: Any = None  # int | None
    rollout: Any = None  # TensorDict | None, batch [..., T]
    node_data: Any = None  # TensorDict | None
    subtree: Any = None  # Tree (a lazy stack) | None
    _parent: Any = None  # weakref.ref | list[weakref.ref] | None
    specs: Any = None  # Composite | None

    @classmethod
    def make_node(
        cls,
        data: TensorDictBase,
        *,
        device: torch.device | None = None,
        batch_size: torch.Size | None = None,
        specs: Composite | None = None,
    ) -> Tree:
        """A vertex from a step or rollout ``data`` (with a ``"next"`` entry: one child at its last next step).

        Examples:
            >>> from tensordict import TensorDict
            >>> node = Tree.make_node(TensorDict(observation=torch.zeros(3)))
            >>> node.num_children, node.rollout is None
            (0, True)
        """
        rollout = subtree = None
        if "next" in data.keys():
            rollout = data if data.ndim else data.unsqueeze(0)
            subtree = TensorDict.lazy_stack([cls.make_node(data.get("next")[..., -1])])
        return cls(
            count=torch.zeros(()),
            wins=torch.zeros(()),
            node_data=data.exclude("action", "next"),
            rollout=rollout,
            subtree=subtree,
            specs=specs,
            device=data.device if device is None else device,
            batch_size=batch_size,
        )

    # ---- specs -------------------------------------------------------------------------------
    def _spec(self, *key: str) -> Any:
        if self.specs is None:
            raise ValueError(f"Tree: no specs were set, so {key[-1]} is unknown.")
        return self.specs[key]

    @property
    def full_observation_spec(self) -> Any:
        """``specs["output_spec", "full_observation_spec"]``."""
        return self._spec("output_spec", "full_observation_spec")

    @property
    def full_reward_spec(self) -> Any:
        """``specs["output_spec", "full_reward_spec"]``."""
        return self._spec("output_spec", "full_reward_spec")

    @property
    def full_done_spec(self) -> Any:
        """``specs["output_spec", "full_done_spec"]``."""
        return self._spec("output_spec", "full_done_spec")

    @property
    def full_state_spec(self) -> Any:
        """``specs["input_spec", "full_state_spec"]``."""
        return self._spec("input_spec", "full_state_spec")

    @property
    def full_action_spec(self) -> Any:
        """``specs["input_spec", "full_action_spec"]``."""
        return self._spec("input_spec", "full_action_spec")

    # ---- data views --------------------------------------------------------------------------
    @property
    def selected_actions(self) -> torch.Tensor | TensorDictBase | None:
        """The first action of each child's rollout (``None`` without children)."""
        if self.subtree is None:
            return None
        return self.subtree.rollout[..., 0]["action"]

    @property
    def prev_action(self) -> torch.Tensor | TensorDictBase | None:
        """The last action of ``rollout``: the one that produced ``node_data`` (``None`` for a root)."""
        return None if self.rollout is None else self.rollout[..., -1]["action"]

    @property
    def branching_action(self) -> torch.Tensor | TensorDictBase | None:
        """The first action of ``rollout``: the one taken at the parent (``None`` for a root)."""
        return None if self.rollout is None else self.rollout[..., 0]["action"]

    @property
    def node_observation(self) -> torch.Tensor | TensorDictBase:
        """``node_data["observation"]``."""
        return self.node_data["observation"]

    @property
    def node_observations(self) -> torch.Tensor | TensorDictBase:
        """``node_data.select("observation")``."""
        return self.node_data.select("observation")

    @property
    def visits(self) -> int | torch.Tensor:
        """The visit count (an alias of ``count``)."""
        return self.count

    @visits.setter
    def visits(self, count: int | torch.Tensor) -> None:
        self.count = count

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "subtree" and value is not None:
            # The children keep weak references to every tensordict they were attached to (re-branching trees).
            ref = weakref.ref(self._tensordict)
            parents = value._parent
            if parents is None:
                value._parent = ref
            elif isinstance(parents, list):
                parents.append(ref)
            else:
                value._parent = [parents, ref]
        super().__setattr__(name, value)

    @property
    def parent(self) -> Tree | None:
        """The parent vertex (a stack of them if several share this child), or ``None`` if out of scope."""
        found: list[TensorDictBase] = []
        pending: list[Any] = [self._parent]
        while pending:
            ref = pending.pop(0)
            if ref is None:
                continue
            if isinstance(ref, list):
                pending.extend(ref)
                continue
            parent = ref()
            if parent is not None and all(parent is not p for p in found):
                found.append(parent)
        if not found:
            return None
        if len(found) == 1:
            return self._from_tensordict(found[0])
        return TensorDict.lazy_stack([self._from_tensordict(p) for p in found])

    @property
    def num_children(self) -> int:
        """The number of subtrees."""
        return len(self.subtree) if self.subtree is not None else 0

    @property
    def is_terminal(self) -> bool | torch.Tensor:
        """The ``("next", "done")`` flag of the last step of ``rollout`` (``False`` without a rollout)."""
        if self.rollout is None:
            return False
        return self.rollout[..., -1]["next", "done"].squeeze(-1)

    def fully_expanded(self, env: Any) -> bool:
        """Whether there is one child per possible action of ``env`` (``env.cardinality(node_data)``)."""
        if hasattr(env, "cardinality"):
            cardinality = env.cardinality(self.node_data)
        else:
            cardinality = env.full_action_spec.cardinality()
        return cardinality == self.num_children

    # ---- traversal ---------------------------------------------------------------------------
    def _children(self) -> list[Tree]:
        return [self.subtree[i] for i in range(self.num_children)]

    def _find(self, attr: str, value: Any) -> Tree:
        queue: deque[Tree] = deque([self])
        while queue:
            tree = queue.popleft()
            if getattr(tree, attr) == value:
                return tree
            queue.extend(tree._children())
        raise ValueError(f"Tree: no vertex with {attr} {value} in this tree.")

    def get_vertex_by_id(self, id: int) -> Tree:
        """The vertex whose ``node_id`` is ``id`` (breadth-first search); ``ValueError`` if there is none."""
        return self._find("node_id", id)

    def get_vertex_by_hash(self, hash: int) -> Tree:
        """The vertex whose ``hash`` is ``hash`` (breadth-first search); ``ValueError`` if there is none."""
        return self._find("hash", hash)

    def __contains__(self, other: Tree) -> bool:
        return any(vertex.hash == other.hash for vertex in self.vertices().values())

    def vertices(self, *, key_type: Literal["id", "hash", "path"] = "hash") -> dict[Any, Tree]:
        """The vertices of the tree, keyed by ``node_id`` (``"id"``), ``hash`` or path from the root.

        With ``"path"``, a vertex reached by several paths appears once per path.
        """
        if key_type not in ("id", "hash", "path"):
            raise ValueError(f"Tree.vertices: key_type must be 'hash', 'id' or 'path', got {key_type!r}.")
        seen: set[Any] = set()
        result: dict[Any, Tree] = {}
        queue: deque[tuple[Tree, tuple[int, ...]]] = deque([(self, ())])
        while queue:
            tree, path = queue.popleft()
            h = tree.hash
            if key_type != "path":
                if h in seen:
                    continue
                seen.add(h)
            # TorchRL keys the "hash" map by node_id; the hash is what the key type names.
            key = path if key_type == "path" else tree.node_id if key_type == "id" else h
            result[key] = tree
            queue.extend((child, path + (i,)) for i, child in enumerate(tree._children()))
        return result

    def num_vertices(self, *, count_repeat: bool = False) -> int:
        """The number of distinct vertices (``count_repeat=True``: counted once per path reaching them)."""
        if count_repeat:
            return len(self.vertices(key_type="path"))
        return len({v.node_id for v in self.vertices(key_type="hash").values()})

    def edges(self) -> list[tuple[int, int]]:
        """``(parent node_id, child node_id)`` pairs, breadth-first."""
        result = []
        queue: deque[Tree] = deque([self])
        while queue:
            tree = queue.popleft()
            for child in tree._children():
                result.append((tree.node_id, child.node_id))
                queue.append(child)
        return result

    def valid_paths(self) -> Iterator[tuple[int, ...]]:
        """Yields the path (tuple of child positions) from this vertex to each leaf, breadth-first."""
        queue: deque[tuple[Tree, tuple[int, ...]]] = deque([(self, ())])
        while queue:
            tree, path = queue.popleft()
            children = tree._children()
            if not children:
                yield path
            queue.extend((child, path + (i,)) for i, child in enumerate(children))

    def max_length(self) -> int:
        """The length of the longest path to a leaf (``0`` for a single vertex)."""
        return max((len(p) for p in self.valid_paths()), default=0)

    def rollout_from_path(self, path: tuple[int, ...]) -> TensorDictBase | None:
        """The rollouts of the vertices along ``path`` (this one's included), concatenated on the last dim."""
        tree, pieces = self, []
        if tree.rollout is not None:
            pieces.append(tree.rollout)
        for i in path:
            tree = tree.subtree[i]
            if tree.rollout is not None:
                pieces.append(tree.rollout)
        return cast(TensorDictBase, torch.cat(pieces, dim=-1)) if pieces else None  # tensordict's cat

    @staticmethod
    def _label(info: list[Any], tree: Tree, root: bool = False) -> str:
        labels = []
        for key in info:
            if key == "hash":
                h = tree.hash
                labels.append(f"hash={h.item() if isinstance(h, torch.Tensor) else h}")
            elif root:
                labels.append(f"{key}=None")
            else:
                labels.append(f"{key}={tree.rollout[key].float().mean().item()}")
        return ", ".join(labels)

    def plot(
        self,
        backend: str = "plotly",
        figure: str = "tree",
        info: list[str] | None = None,
        make_labels: Callable[..., Any] | None = None,
    ) -> Any:
        """Draws the tree with plotly (``figure="tree"``: a layered graph; ``"box"``: a treemap).

        Needs the ``plot`` extra (``pip install tdrl[plot]``: plotly, and igraph for ``"tree"``). Returns the
        plotly figure after showing it.
        """
        return plot_tree(self, backend=backend, figure=figure, info=info, make_labels=make_labels)

    def to_string(self, node_format_fn: Callable[[Tree], Any] = _default_node_format) -> str:
        """One line per vertex with a rollout, depth-first: its path and ``node_format_fn(vertex)``.

        Lines are indented by depth (one space per level below the first).
        """
        lines = []
        stack: list[tuple[Tree, tuple[int, ...]]] = [(self, ())]
        while stack:
            tree, path = stack.pop()
            stack.extend(reversed([(child, path + (i,)) for i, child in enumerate(tree._children())]))
            if tree.rollout is not None:
                lines.append(f"{' ' * (len(path) - 1)}{path} {node_format_fn(tree)}")
        return "\n".join(lines)
