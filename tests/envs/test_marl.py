from __future__ import annotations

import pytest

from tdrl.envs.utils import MarlGroupMapType, check_marl_grouping


def test_group_maps():
    names = ["a", "b", "c"]
    assert MarlGroupMapType.ALL_IN_ONE_GROUP.get_group_map(names) == {"agents": names}
    assert MarlGroupMapType.ONE_GROUP_PER_AGENT.get_group_map(names) == {"a": ["a"], "b": ["b"], "c": ["c"]}
    assert MarlGroupMapType.ALL_IN_ONE_GROUP.value == 1 and MarlGroupMapType.ONE_GROUP_PER_AGENT.value == 2
    for kind in MarlGroupMapType:
        check_marl_grouping(kind.get_group_map(names), names)


@pytest.mark.parametrize(
    ("group_map", "names", "match"),
    [
        ({"g": ["a"]}, [], "no agents"),
        ({"g": ["a"]}, ["a", "a"], "unique"),
        ({"g": ["a"], "h": ["a"], "i": ["a"]}, ["a", "b"], "more groups than agents"),
        ({"g": []}, ["a"], "'g' is empty"),
        ({"g": ["z"]}, ["a"], "'z'.*not an agent"),
        ({"g": ["a"], "h": ["a", "b"]}, ["a", "b"], "more than one group"),
        ({"g": ["a"]}, ["a", "b"], "'b' is in no group"),
    ],
)
def test_invalid_group_maps(group_map, names, match):
    with pytest.raises(ValueError, match=match):
        check_marl_grouping(group_map, names)
