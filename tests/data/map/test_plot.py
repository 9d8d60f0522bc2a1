"""Tests of ``tdrl.data.map._plot`` (``Tree.plot``): the layout, and the figures built with a stand-in plotly."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from tdrl.data import MCTSForest
from tdrl.data.map._plot import tree_layout

sys.path.insert(0, str(Path(__file__).parent))
from _forest_scenarios import build  # noqa: E402


def _tree():
    forest, root = build(MCTSForest, "docstring")
    return forest.get_tree(root)


def test_layout_levels_and_edges():
    tree = _tree()
    lay = tree_layout(tree)
    paths = list(tree.vertices(key_type="path"))
    assert len(lay["x"]) == len(paths) == len(lay["labels"])
    assert lay["y"] == [-len(p) for p in paths]
    assert len(lay["edges"]) == len(paths) - 1
    assert lay["labels"][0] == str((0, None))
    custom = tree_layout(tree, make_labels=lambda t, path: f"{path}")
    assert custom["labels"][1] == "(0,)"


class _Recorder:
    def __init__(self, *args, **kwargs):
        self.args, self.kwargs, self.traces, self.shown = args, kwargs, [], False

    def add_trace(self, trace):
        self.traces.append(trace)

    def show(self):
        self.shown = True


@pytest.fixture
def fake_plotly(monkeypatch):
    go = types.ModuleType("plotly.graph_objects")
    go.Figure = _Recorder
    go.Scatter = _Recorder
    go.Treemap = _Recorder
    plotly = types.ModuleType("plotly")
    plotly.graph_objects = go
    monkeypatch.setitem(sys.modules, "plotly", plotly)
    monkeypatch.setitem(sys.modules, "plotly.graph_objects", go)
    return go


def test_plot_tree_and_box_with_stand_in(fake_plotly):
    tree = _tree()
    fig = tree.plot()
    assert fig.shown and len(fig.traces) == 2
    assert fig.traces[1].kwargs["text"] == tree_layout(tree)["labels"]
    box = tree.plot(figure="box", info=["hash"])
    treemap = box.args[0]
    assert len(treemap.kwargs["labels"]) == len(treemap.kwargs["parents"]) == 9
    assert treemap.kwargs["labels"][0] == "hash=None"


def test_plot_errors(monkeypatch):
    tree = _tree()
    with pytest.raises(ValueError, match="backend"):
        tree.plot(backend="matplotlib")
    monkeypatch.setitem(sys.modules, "plotly", None)
    monkeypatch.setitem(sys.modules, "plotly.graph_objects", None)
    with pytest.raises(ImportError, match=r"tdrl\[plot\]"):
        tree.plot()
