"""Multi-agent grouping: how agents are split into the groups whose data share one tensordict entry."""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence

__all__ = ["MarlGroupMapType", "check_marl_grouping"]


class MarlGroupMapType(enum.Enum):
    """The usual group maps: every agent in one ``"agents"`` group, or one group per agent.

    Examples:
        >>> MarlGroupMapType.ALL_IN_ONE_GROUP.get_group_map(["a", "b"])
        {'agents': ['a', 'b']}
        >>> MarlGroupMapType.ONE_GROUP_PER_AGENT.get_group_map(["a", "b"])
        {'a': ['a'], 'b': ['b']}
    """

    ALL_IN_ONE_GROUP = 1
    ONE_GROUP_PER_AGENT = 2

    def get_group_map(self, agent_names: Sequence[str]) -> dict[str, list[str]]:
        """The ``{group: [agent names]}`` map of this kind for ``agent_names``."""
        if self is MarlGroupMapType.ALL_IN_ONE_GROUP:
            return {"agents": list(agent_names)}
        return {name: [name] for name in agent_names}


def check_marl_grouping(group_map: Mapping[str, Sequence[str]], agent_names: Sequence[str]) -> None:
    """Raises a ``ValueError`` unless ``group_map`` puts each of ``agent_names`` in exactly one non-empty group.

    Examples:
        >>> names = ["agent_0", "agent_1"]
        >>> check_marl_grouping(MarlGroupMapType.ALL_IN_ONE_GROUP.get_group_map(names), names)
        >>> check_marl_grouping({"g": ["agent_0"]}, names)
        Traceback (most recent call last):
        ...
        ValueError: agent 'agent_1' is in no group of the group map
    """
    if not agent_names:
        raise ValueError("check_marl_grouping: no agents given")
    if len(set(agent_names)) != len(agent_names):
        dupes = sorted({n for n in agent_names if list(agent_names).count(n) > 1})
        raise ValueError(f"agent names must be unique, got duplicates {dupes}")
    if len(group_map) > len(agent_names):
        raise ValueError(f"{len(group_map)} groups for {len(agent_names)} agents: more groups than agents")
    seen: dict[str, str] = {}
    for group, members in group_map.items():
        if not members:
            raise ValueError(f"group {group!r} is empty")
        for name in members:
            if name not in agent_names:
                raise ValueError(f"agent {name!r} of group {group!r} is not an agent of the env {list(agent_names)}")
            if name in seen:
                raise ValueError(f"agent {name!r} is in more than one group ({seen[name]!r} and {group!r})")
            seen[name] = group
    for name in agent_names:
        if name not in seen:
            raise ValueError(f"agent {name!r} is in no group of the group map")
