"""``SerialEnv``: several envs stepped one after the other in the current process."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase

from tdrl.envs.batched._base import BatchedEnvBase, stack_entries
from tdrl.envs.batched._runner import EnvRunner

__all__ = ["SerialEnv"]


class SerialEnv(BatchedEnvBase):
    """Runs ``num_workers`` copies of an env in-process, as one env with batch size ``[num_workers, ...]``.

    See :class:`~tdrl.envs.batched._base.BatchedEnvBase` for the arguments.

    Examples:
        >>> from tdrl.envs import PendulumEnv
        >>> env = SerialEnv(2, PendulumEnv)
        >>> env.rollout(3)["next", "reward"].shape
        torch.Size([2, 3, 1])
        >>> env.close()
    """

    def _start(self) -> None:
        if self.num_threads is not None:
            torch.set_num_threads(self.num_threads)
        envs = [fn(**kw) for fn, kw in zip(self.create_env_fn, self.create_env_kwargs)]
        runners = [EnvRunner(env) for env in envs]
        first = envs[0]
        for i, env in enumerate(envs[1:], 1):
            if env.batch_size != first.batch_size:
                raise ValueError(
                    f"SerialEnv: sub-env {i} has batch_size {tuple(env.batch_size)}, "
                    f"sub-env 0 has {tuple(first.batch_size)}"
                )
        self.__dict__["_runners"] = runners
        self.__dict__["_envs"] = envs
        self._set_metadata(first.output_spec, first.input_spec, first.batch_size, first.device, runners[0].layout)

    def _shutdown(self) -> None:
        for env in self.__dict__.pop("_envs", []):
            env.close(raise_if_closed=False)
        self.__dict__.pop("_runners", None)

    @property
    def envs(self) -> list[Any]:
        """The sub-envs (built on first access)."""
        self._ensure_started()
        return self.__dict__["_envs"]

    def _seed_worker(self, index: int, seed: int | None, static_seed: bool) -> int | None:
        return self.__dict__["_runners"][index].set_seed(seed, static_seed)

    def _actions(self, tensordict: TensorDictBase, index: int) -> dict:
        return {k: tensordict.get(k)[index] for k in self._layout.action_keys}

    def _reset_workers(self, workers: list[int], masks: list | None, kwargs: dict) -> TensorDictBase:
        runners = self.__dict__["_runners"]
        for i in workers:
            runners[i].reset(mask=None if masks is None else masks[i], **kwargs)
        roots = [r.root for r in runners]
        return stack_entries(roots, self._layout.root_keys, self.batch_size, self.device)

    def _step_workers(self, tensordict: TensorDictBase, workers: list[int]) -> TensorDictBase:
        runners = self.__dict__["_runners"]
        outs = []
        for i, runner in enumerate(runners):
            if i in workers:
                outs.append(runner.step(self._actions(tensordict, i)))
            else:
                outs.append(runner.root)
        return stack_entries(outs, self._layout.next_keys, self.batch_size, self.device)

    def _rollout_workers(self, max_steps: int, seeds: list[int]) -> list[TensorDictBase]:
        return [r.rollout(max_steps, seed) for r, seed in zip(self.__dict__["_runners"], seeds)]

    def _step_and_maybe_reset_workers(self, tensordict: TensorDictBase) -> tuple[TensorDictBase, TensorDictBase]:
        layout = self._layout
        actions = [tensordict.get(k) for k in layout.action_keys]
        nexts, roots = [], []
        for i, runner in enumerate(self.__dict__["_runners"]):
            nxt, root = runner.step_and_maybe_reset({k: a[i] for k, a in zip(layout.action_keys, actions)})
            nexts.append(nxt)
            roots.append(root)
        bs, dev = self.batch_size, self.device
        return stack_entries(nexts, layout.next_keys, bs, dev), stack_entries(roots, layout.root_keys, bs, dev)
