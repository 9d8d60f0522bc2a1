"""One ensemble call that scores several action sets at the same states, running the state-only part once.

Off-policy losses evaluate a Q ensemble at the batch's states twice: with the trainable parameters on the
stored actions (the Q loss) and with detached parameters on the policy's actions (the actor loss). When
the Q network starts with an action-free prefix (a state trunk, ``obs -> hidden``), that prefix gives the
same output in both calls, so it runs once per member; the detached heads read its output detached, so
the actor loss still sends no gradient into the critic. Values and gradients are those of the separate
calls (``tests/objectives/test_ensemble_heads.py``).

Under ``torch.compile`` inductor removes such duplicates by itself only when the two calls stay separate
graphs of the same parameters; REDQ stacks its parameter sets into one call, where it cannot.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictSequential
from tensordict.utils import NestedKey
from torch import Tensor

from tdrl.objectives.common import LossModule, _leaves

__all__ = ["ensemble_heads", "policy_and_data_q"]


def ensemble_heads(
    loss: LossModule,
    name: str,
    split: tuple[TensorDictSequential, TensorDictSequential],
    data: TensorDictBase,
    action_key: NestedKey,
    out_key: NestedKey,
    actions: Sequence[Tensor],
    detached: Sequence[bool],
) -> list[Tensor]:
    """``Q_i(s, actions[j])`` for every member ``i`` of ensemble ``name``: one ``[N, *batch, 1]`` tensor
    per action set, computed with detached parameters where ``detached[j]``.

    ``data`` holds the states (the prefix's inputs); the prefix runs once per member, with the trainable
    parameters unless every head is detached.
    """
    prefix, suffix = split
    needed = [k for k in suffix.in_keys if k != action_key]
    train = [j for j, d in enumerate(detached) if not d]
    frozen = [j for j, d in enumerate(detached) if d]

    def heads(hidden: dict, js: list[int], outs: list) -> None:
        for j in js:
            td = TensorDict({**hidden, action_key: actions[j]}, batch_size=data.batch_size)
            outs[j] = suffix(td).get(out_key)

    module = loss.__dict__[name]
    params = getattr(loss, name + "_params")
    if torch.compiler.is_compiling():

        def run(p: TensorDictBase, x: TensorDictBase) -> tuple[Tensor, ...]:
            outs: list = [None] * len(actions)
            with (p if train else p.detach()).to_module(module, preserve_module_state=False):
                out = prefix(x)
                hidden = {k: out.get(k) for k in needed}
                heads(hidden, train, outs)
            if frozen:
                hidden = {k: v.detach() for k, v in hidden.items()}
                with p.detach().to_module(module, preserve_module_state=False):
                    heads(hidden, frozen, outs)
            return tuple(outs)

        return list(torch.vmap(run, (0, None), randomness=loss.vmap_randomness)(params, data))
    # Eager: a loop over the members (see LossModule._vmap_call).
    slots = loss._slots[name]
    stacked = _leaves(params, loss._keys_of(name))
    # Empty when unused: each is indexed only under its flag.
    members_train = list(zip(*[v.unbind(0) for v in stacked])) if train else []
    members_frozen = loss._grad_free_members(name, "detached", stacked, True) if frozen else []
    per_member: list[list] = []
    for i in range(stacked[0].shape[0]):
        outs: list = [None] * len(actions)
        with slots.swap(members_train[i] if train else members_frozen[i]):
            out = prefix(data.copy())
            hidden = {k: out.get(k) for k in needed}
            heads(hidden, train, outs)
        if frozen:
            hidden = {k: v.detach() for k, v in hidden.items()}
            with slots.swap(members_frozen[i]):
                heads(hidden, frozen, outs)
        per_member.append(outs)
    return [torch.stack([m[j] for m in per_member], 0) for j in range(len(actions))]


def policy_and_data_q(loss: LossModule, tensordict: TensorDictBase, policy_action: Tensor) -> tuple[Tensor, Tensor]:
    """``(Q_i(s, policy_action) with detached parameters, Q_i(s, a) with the trainable ones)`` for the
    ``"qvalue_network"`` ensemble of ``loss``, each ``[N, *batch]``: the actor loss's and the Q loss's
    critic calls. With a state-only prefix (``loss._splits``) it runs once per member, else two full calls."""
    keys = loss._tensor_keys
    action = loss._get(tensordict, keys.action)
    split = loss._splits["qvalue_network"]
    if split is None:
        td_q = tensordict.select(*loss.qvalue_network.in_keys, strict=False)
        policy_td = td_q.copy().set(keys.action, policy_action)
        q_policy = loss._vmap_call("qvalue_network", policy_td, keys.state_action_value, "detached")
        q_data = loss._vmap_call("qvalue_network", td_q, keys.state_action_value, "params")
        return q_policy.squeeze(-1), q_data.squeeze(-1)
    td_q = tensordict.select(*split[0].in_keys, strict=False)
    q_policy, q_data = ensemble_heads(
        loss, "qvalue_network", split, td_q, keys.action, keys.state_action_value, [policy_action, action], [True, False]
    )
    return q_policy.squeeze(-1), q_data.squeeze(-1)
