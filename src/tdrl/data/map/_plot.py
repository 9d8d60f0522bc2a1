"""Plotly drawings of a :class:`~tdrl.data.map.Tree` (optional ``plot`` extra: ``pip install tdrl[plot]``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["plot_tree", "tree_layout"]


def _plotly() -> Any:
    try:
        import plotly.graph_objects as go
    except ImportError as err:
        raise ImportError("Tree.plot needs plotly: install the 'plot' extra (pip install tdrl[plot]).") from err
    return go


def tree_layout(tree: Any, make_labels: Callable[..., Any] | None = None) -> dict[str, list[Any]]:
    """Node positions (x: rank within its depth, y: depth, root at the top), labels and edges of a tree.

    Each path from the root is one drawn node, so a vertex shared by two paths is drawn twice.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tdrl.data import MCTSForest
        >>> forest = MCTSForest()
        >>> forest.extend(TensorDict(observation=torch.tensor([0, 0]), action=torch.tensor([1, 2]),
        ...                          next=TensorDict(observation=torch.tensor([1, 2]), batch_size=[2]),
        ...                          batch_size=[2]))
        >>> lay = tree_layout(forest.get_tree(TensorDict(observation=torch.tensor(0))))
        >>> lay["x"], lay["y"], lay["edges"]
        ([0.0, -0.5, 0.5], [0, -1, -1], [(0, 1), (0, 2)])
    """
    if make_labels is None:

        def make_labels(t: Any, path: tuple[int, ...], *args: Any, **kwargs: Any) -> str:
            return str((t.node_id, t.hash))

    vertices = tree.vertices(key_type="path")
    paths = list(vertices)
    position = {path: i for i, path in enumerate(paths)}
    by_depth: dict[int, list[tuple[int, ...]]] = {}
    for path in paths:
        by_depth.setdefault(len(path), []).append(path)
    x: dict[tuple[int, ...], float] = {}
    for row in by_depth.values():
        for rank, path in enumerate(row):
            x[path] = rank - (len(row) - 1) / 2
    return {
        "x": [x[p] for p in paths],
        "y": [-len(p) for p in paths],
        "labels": [make_labels(vertices[p], p) for p in paths],
        "edges": [(position[p[:-1]], position[p]) for p in paths if p],
    }


def _box(tree: Any, info: list[Any] | None, go: Any) -> Any:
    info = ["hash", ("next", "reward")] if info is None else info
    labels = [tree._label(info, tree, root=True)]
    parents = [""]
    stack = [(tree, labels[0])]
    while stack:
        node, parent_label = stack.pop()
        for i in range(node.num_children):
            child = node.subtree[i]
            labels.append(node._label(info, child))
            parents.append(parent_label)
            stack.append((child, labels[-1]))
    return go.Figure(go.Treemap(labels=labels, parents=parents))


def _graph(tree: Any, make_labels: Callable[..., Any] | None, go: Any) -> Any:
    lay = tree_layout(tree, make_labels)
    xe: list[Any] = []
    ye: list[Any] = []
    for a, b in lay["edges"]:
        xe += [lay["x"][a], lay["x"][b], None]
        ye += [lay["y"][a], lay["y"][b], None]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=xe, y=ye, mode="lines", line={"color": "rgb(210,210,210)", "width": 5},
                             hoverinfo="none"))
    fig.add_trace(go.Scatter(x=lay["x"], y=lay["y"], mode="markers+text", text=lay["labels"], hoverinfo="text",
                             textposition="middle right", marker={"symbol": "circle-dot", "size": 40}))
    return fig


def plot_tree(
    tree: Any,
    *,
    backend: str = "plotly",
    figure: str = "tree",
    info: list[Any] | None = None,
    make_labels: Callable[..., Any] | None = None,
) -> Any:
    """Builds, shows and returns a plotly figure of ``tree`` (see :meth:`Tree.plot`)."""
    if backend != "plotly" or figure not in ("tree", "box"):
        raise ValueError(
            f"Tree.plot: unknown backend {backend!r} / figure {figure!r}; expected backend='plotly' and "
            "figure 'tree' or 'box'."
        )
    go = _plotly()
    fig = _box(tree, info, go) if figure == "box" else _graph(tree, make_labels, go)
    fig.show()
    return fig
