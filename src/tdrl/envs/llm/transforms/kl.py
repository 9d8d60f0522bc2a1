"""KL-to-reference transforms: ``RetrieveLogProb``, ``KLComputation``, ``RetrieveKL``, ``KLRewardTransform``.

``RetrieveLogProb`` scores the tokens of each step with a (reference) policy wrapper built with
``generate=False`` and writes their log-probs, aligned with ``("tokens", "full")``. ``KLComputation``
turns two such entries into a per-token KL estimate ``log p_gen - log p_ref`` and, optionally, subtracts
``coeff * KL`` from the reward (the reward then has one entry per token). ``RetrieveKL`` chains the three;
``KLRewardTransform`` is TorchRL's older one-model form.

Ragged batches are handled as lists of per-sample tensors, so a sample's length always comes from its own
tokens, never from pad ids.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from tensordict import LazyStackedTensorDict, NestedKey, TensorDictBase, unravel_key

from tdrl.data import Composite, Unbounded
from tdrl.envs.transforms import Compose, Transform

__all__ = ["KLComputation", "KLRewardTransform", "RetrieveKL", "RetrieveLogProb"]


def _per_sample(td: TensorDictBase, key: NestedKey) -> list[torch.Tensor] | None:
    if key not in td.keys(True):
        return None
    if isinstance(td, LazyStackedTensorDict):
        return [torch.as_tensor(t) for t in td.get(key, as_list=True)]
    try:
        value = td.get(key)
    except RuntimeError:  # a ragged lazy stack below the root (e.g. a wrapper's LogProbs): one tensor per sample
        return [torch.as_tensor(t) for t in td.get(key, as_list=True)]
    return list(value.unbind()) if value.is_nested else list(value.unbind(0))


def _nested(tensors: list[torch.Tensor]) -> torch.Tensor:
    # Jagged nested tensors (TorchRL uses the strided prototype layout, which warns on every use).
    return torch.nested.as_nested_tensor(tensors, layout=torch.jagged)


def _check_scorer(model: Any, what: str) -> None:
    if not getattr(model, "return_log_probs", True):
        raise ValueError(f"{what} must be built with return_log_probs=True.")
    if getattr(model, "generate", False):
        raise ValueError(f"{what} must be built with generate=False (it scores tokens, it does not generate).")


def score_tokens(model: Any, tensordict: TensorDictBase, *, detach: bool, assistant_only: bool) -> list[torch.Tensor]:
    """Per-sample log-probs ``model`` assigns to the tokens of ``tensordict`` (0 off the assistant's tokens)."""
    with torch.set_grad_enabled(not detach):
        out = model(tensordict.copy())
    model_key = (getattr(model, "log_probs_key", "log_probs"), "full")
    log_probs = _per_sample(out, model_key)
    if log_probs is None:
        raise KeyError(f"{type(model).__name__} wrote no {model_key!r} entry when scoring.")
    if assistant_only:
        masks = _per_sample(out, ("masks", "all_assistant_mask"))
        if masks is None:
            raise KeyError(f"assistant_only=True: {type(model).__name__} wrote no ('masks', 'all_assistant_mask').")
        log_probs = [lp.masked_fill(~m.bool(), 0.0) for lp, m in zip(log_probs, masks, strict=True)]
    return log_probs


class _StepOnCollectedData(Transform):
    """A step-only transform that can also run on collected data (``transform(td)`` scores it in place).

    Reset passes through unchanged; calling the transform on a tensordict writes under ``"next"`` when the
    tensordict has one, else at its root.
    """

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return tensordict_reset

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """On collected data: runs the step on ``tensordict`` and writes under ``"next"`` (at the root without it)."""
        target = tensordict.get("next", None)
        self._step(tensordict, tensordict if target is None else target)
        return tensordict


class RetrieveLogProb(_StepOnCollectedData):
    """Writes the log-probs a policy wrapper assigns to each step's tokens.

    Args:
        model: a policy wrapper (e.g. ``TransformersWrapper``) with ``generate=False`` and
            ``return_log_probs=True``; it reads ``model.in_keys`` from the step input.
        log_probs_full_key: where the log-probs go (default ``(model.log_probs_key, "full")``).
        assistant_only: zero every log-prob outside the assistant's tokens (``("masks",
            "all_assistant_mask")``); needs a history-mode model.
        tokenizer_kwargs, tokenizer, padding_side: accepted for TorchRL compatibility (the wrapper owns
            its tokenizer; padded outputs follow the wrapper's padding).
        detach: score without gradients.
        device: where the model runs.
    """

    def __init__(
        self,
        model: Any,
        *,
        log_probs_full_key: NestedKey | None = None,
        assistant_only: bool = True,
        tokenizer_kwargs: dict | None = None,
        detach: bool = True,
        device: torch.device | str | None = None,
        tokenizer: Any = None,
        padding_side: str = "left",
    ) -> None:
        _check_scorer(model, f"{type(self).__name__}'s model")
        if assistant_only and getattr(model, "input_mode", "history") != "history":
            raise ValueError(
                f"{type(self).__name__}(assistant_only=True) needs a model with input_mode='history' (got "
                f"{model.input_mode!r}); pass assistant_only=False to score every token."
            )
        key = (getattr(model, "log_probs_key", "log_probs"), "full") if log_probs_full_key is None else log_probs_full_key
        super().__init__(in_keys=list(model.in_keys), out_keys=[unravel_key(key)])
        self.log_probs_full_key = unravel_key(key)
        self.model = model if device is None else model.to(device)
        self.assistant_only = assistant_only
        self.detach = detach
        self.tokenizer = tokenizer
        self.padding_side = padding_side
        self.tokenizer_kwargs = dict(tokenizer_kwargs or {})

    def _required_keys(self) -> list[NestedKey]:
        # The model reads the policy's action (e.g. ("history", "full")), a container, not a spec leaf.
        return []

    def _score(self, tensordict: TensorDictBase) -> list[torch.Tensor]:
        return score_tokens(self.model, tensordict, detach=self.detach, assistant_only=self.assistant_only)

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        log_probs = self._score(tensordict)
        if getattr(self.model, "pad_output", False):
            next_tensordict.set(self.log_probs_full_key, torch.nn.utils.rnn.pad_sequence(
                log_probs, batch_first=True, padding_side=self.padding_side))
        else:
            next_tensordict.set(self.log_probs_full_key, _nested(log_probs))
        return next_tensordict

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        observation_spec[self.log_probs_full_key] = Unbounded(
            shape=(*observation_spec.shape, -1), device=observation_spec.device
        )
        return observation_spec


class KLComputation(_StepOnCollectedData):
    """``kl = log p_gen - log p_ref`` per token (0 where either is NaN); optionally ``reward -= coeff * kl``.

    Args:
        gen_log_probs_full_key: the generating policy's log-probs.
        ref_log_probs_full_key: the reference policy's log-probs.
        kl_key: where the per-token KL goes.
        add_to_reward: subtract ``coeff * kl`` from ``"reward"``; the reward becomes per token
            (``[T, 1]`` per sample; a ``[1, 1]`` sequence reward is broadcast over the tokens).
        coeff: the KL coefficient.
        padding_side: accepted for TorchRL compatibility.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = TensorDict({"lp": torch.tensor([[0.0, -1.0]]), "ref": torch.tensor([[0.0, -1.5]]),
        ...                  "reward": torch.ones(1, 1, 1)}, batch_size=[1])
        >>> out = KLComputation("lp", "ref", coeff=0.5)(td)
        >>> out["reward"][0].flatten()
        tensor([1.0000, 0.7500])
    """

    def __init__(
        self,
        gen_log_probs_full_key: NestedKey = ("log_probs", "full"),
        ref_log_probs_full_key: NestedKey = ("ref_log_probs", "full"),
        *,
        kl_key: NestedKey = "kl_penalty",
        add_to_reward: bool = True,
        coeff: float = 1.0,
        padding_side: str = "left",
    ) -> None:
        in_keys = [gen_log_probs_full_key, ref_log_probs_full_key] + (["reward"] if add_to_reward else [])
        super().__init__(in_keys=in_keys, out_keys=[kl_key] + (["reward"] if add_to_reward else []))
        self.gen_log_probs_full_key = unravel_key(gen_log_probs_full_key)
        self.ref_log_probs_full_key = unravel_key(ref_log_probs_full_key)
        self.kl_key = unravel_key(kl_key)
        self.add_to_reward = add_to_reward
        self.coeff = coeff
        self.padding_side = padding_side

    def kl(self, next_tensordict: TensorDictBase) -> list[torch.Tensor]:
        """The per-sample KL tensors of ``next_tensordict``'s two log-prob entries."""
        gen = _per_sample(next_tensordict, self.gen_log_probs_full_key)
        ref = _per_sample(next_tensordict, self.ref_log_probs_full_key)
        if gen is None or ref is None:
            raise KeyError(
                f"KLComputation: log-probs not found; expected {self.gen_log_probs_full_key!r} and "
                f"{self.ref_log_probs_full_key!r}."
            )
        if len(gen) != len(ref):
            raise ValueError(f"KLComputation: {len(gen)} generation samples but {len(ref)} reference samples.")
        out = []
        for i, (g, r) in enumerate(zip(gen, ref)):
            if g.shape != r.shape:
                raise ValueError(f"KLComputation: sample {i} has log-prob shapes {tuple(g.shape)} and {tuple(r.shape)}.")
            out.append(torch.where(torch.isnan(g) | torch.isnan(r), torch.zeros_like(g), g - r))
        return out

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        kl = self.kl(next_tensordict)
        next_tensordict.set(self.kl_key, _nested(kl))
        rewards = _per_sample(next_tensordict, "reward") if self.add_to_reward else None
        if rewards is not None:
            if rewards[0].ndim != kl[0].ndim + 1:
                raise ValueError(
                    f"KLComputation: rewards of shape {tuple(rewards[0].shape)} need one more dimension than the "
                    f"KL (shape {tuple(kl[0].shape)})."
                )
            next_tensordict.set("reward", _nested([r - self.coeff * k.unsqueeze(-1) for r, k in zip(rewards, kl)]))
        return next_tensordict

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        observation_spec[self.kl_key] = Unbounded(shape=(*observation_spec.shape, -1), device=observation_spec.device)
        return observation_spec

    def transform_reward_spec(self, reward_spec: Composite) -> Composite:
        if self.add_to_reward and "reward" in reward_spec.keys():
            reward_spec["reward"] = Unbounded(shape=(*reward_spec.shape, -1, 1), device=reward_spec.device)
        return reward_spec


class RetrieveKL(Compose):
    """Scores each step with the generating and the reference model and writes their KL (and reward).

    Equivalent to ``Compose(RetrieveLogProb(gen_model), RetrieveLogProb(ref_model), KLComputation(...))``.

    Args:
        gen_model: the generating policy as a scorer (``generate=False``); TorchRL's ``"from_collector"``
            (taking it from a collector later) is not supported: pass the model.
        ref_model: the reference scorer; it must use a different ``log_probs_key`` and the same
            ``pad_output`` as ``gen_model``.
        gen_model_factory, ref_model_factory: build the models instead.
        assistant_only, tokenizer_kwargs, detach, device, tokenizer, padding_side: as in ``RetrieveLogProb``.
        history_key: accepted for TorchRL compatibility.
        gen_log_probs_full_key, ref_log_probs_full_key, kl_key, add_to_reward, coeff: as in
            ``KLComputation``.
        use_ray_service: must be False (no Ray service in tdrl).
    """

    def __init__(
        self,
        gen_model: Any = "from_collector",
        ref_model: Any = None,
        *,
        gen_model_factory: Callable[[], Any] | None = None,
        ref_model_factory: Callable[[], Any] | None = None,
        assistant_only: bool = True,
        history_key: str = "history",
        tokenizer_kwargs: dict[str, Any] | None = None,
        detach: bool = True,
        device: torch.device | str | None = None,
        tokenizer: Any = None,
        padding_side: str = "left",
        gen_log_probs_full_key: NestedKey = ("log_probs", "full"),
        ref_log_probs_full_key: NestedKey = ("ref_log_probs", "full"),
        kl_key: NestedKey = "kl_penalty",
        add_to_reward: bool = True,
        coeff: float = 1.0,
        use_ray_service: bool = False,
    ) -> None:
        if use_ray_service:
            raise ValueError("RetrieveKL(use_ray_service=True) is not available in tdrl.")
        gen_model = gen_model_factory() if gen_model_factory is not None else gen_model
        ref_model = ref_model_factory() if ref_model_factory is not None else ref_model
        if isinstance(gen_model, str) or gen_model is None:
            raise ValueError(
                "RetrieveKL needs the generating model as a scorer (gen_model=wrapper.get_new_version("
                "generate=False, ...)); gen_model='from_collector' is not supported in tdrl."
            )
        if ref_model is None:
            raise ValueError("RetrieveKL needs a ref_model (or ref_model_factory).")
        _check_scorer(gen_model, "RetrieveKL's gen_model")
        _check_scorer(ref_model, "RetrieveKL's ref_model")
        if getattr(gen_model, "pad_output", None) != getattr(ref_model, "pad_output", None):
            raise ValueError(
                f"RetrieveKL: pad_output mismatch (gen_model={gen_model.pad_output}, ref_model={ref_model.pad_output}); "
                "both models must pad (or not) alike."
            )
        kwargs = dict(assistant_only=assistant_only, tokenizer_kwargs=tokenizer_kwargs, detach=detach, device=device,
                      tokenizer=tokenizer, padding_side=padding_side)
        super().__init__(
            RetrieveLogProb(gen_model, log_probs_full_key=gen_log_probs_full_key, **kwargs),
            RetrieveLogProb(ref_model, log_probs_full_key=ref_log_probs_full_key, **kwargs),
            KLComputation(gen_log_probs_full_key, ref_log_probs_full_key, kl_key=kl_key, add_to_reward=add_to_reward,
                          coeff=coeff),
        )
        self.history_key = history_key


class KLRewardTransform(_StepOnCollectedData):
    """TorchRL's legacy KL reward: ``reward - coef * (log p_cur - log p_ref)`` on every response token.

    The current policy's log-probs are read from ``log_prob_key`` in the step input (written by the
    generating wrapper); the reference ``ref_model`` (``generate=False``, ``input_mode="tokens"``)
    scores the same tokens. With ``assistant_only`` only the response tokens count (the prompt's
    log-probs are zeroed on both sides, found from the prompt length, never from pad ids).

    Args:
        ref_model: the reference scorer (or ``ref_model_factory``).
        coef: the KL coefficient (a buffer, so a ``KLController`` can update ``kl_coef``).
        in_keys: the reward entry (default ``["reward"]``); out_keys: ``[reward, "kl_penalty",
            "ref_log_probs"]`` by default.
        log_prob_key: the current log-probs (default ``("log_probs", "full")``).
        device: where the reference model runs.
        add_to_reward: subtract the KL from the reward (else only log it).
        tokenizer, padding_side: accepted for TorchRL compatibility.
        assistant_only: score only the response tokens.
        use_ray_service: must be False.
    """

    DEFAULT_IN_KEYS = ["reward"]

    def __init__(
        self,
        ref_model: Any = None,
        *,
        ref_model_factory: Callable[[], Any] | None = None,
        coef: float = 1.0,
        in_keys: list[NestedKey] | None = None,
        out_keys: list[NestedKey] | None = None,
        log_prob_key: NestedKey = ("log_probs", "full"),
        device: torch.device | str | None = None,
        add_to_reward: bool = True,
        tokenizer: Any = None,
        assistant_only: bool = True,
        padding_side: str = "left",
        use_ray_service: bool = False,
    ) -> None:
        if use_ray_service:
            raise ValueError("KLRewardTransform(use_ray_service=True) is not available in tdrl.")
        if (ref_model is None) == (ref_model_factory is None):
            raise ValueError("KLRewardTransform needs exactly one of `ref_model` or `ref_model_factory`.")
        ref_model = ref_model_factory() if ref_model is None else ref_model
        _check_scorer(ref_model, "KLRewardTransform's ref_model")
        if getattr(ref_model, "input_mode", "tokens") != "tokens":
            raise ValueError("KLRewardTransform's ref_model must use input_mode='tokens'.")
        in_keys = list(self.DEFAULT_IN_KEYS if in_keys is None else in_keys)
        out_keys = list(in_keys if out_keys is None else out_keys)
        if len(out_keys) == len(in_keys):
            out_keys += ["kl_penalty", "ref_log_probs"]
        if len(in_keys) != 1 or len(out_keys) != 3:
            raise ValueError(f"KLRewardTransform takes one in_key and three out_keys, got {in_keys} and {out_keys}.")
        super().__init__(in_keys=in_keys, out_keys=out_keys)
        self.ref_model = ref_model if device is None else ref_model.to(device)
        self.log_prob_full_key = unravel_key(log_prob_key)
        self.add_to_reward = add_to_reward
        self._tokenizer = tokenizer
        self.assistant_only = assistant_only
        self.padding_side = padding_side
        self.register_buffer("coef", torch.as_tensor(coef, dtype=torch.float32))

    @property
    def kl_coef(self) -> float:
        return float(self.coef)

    @kl_coef.setter
    def kl_coef(self, value: float) -> None:  # the attribute KL controllers write
        self.coef.fill_(value)

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        ref = score_tokens(self.ref_model, tensordict, detach=True, assistant_only=False)
        cur = _per_sample(tensordict, self.log_prob_full_key)
        if cur is None:
            raise KeyError(f"KLRewardTransform: no current log-probs at {self.log_prob_full_key!r}.")
        if self.assistant_only:
            prompts = _per_sample(tensordict, ("tokens", "prompt"))
            if prompts is None:
                raise KeyError("KLRewardTransform(assistant_only=True) needs ('tokens', 'prompt') to find the response.")
            keep = [torch.arange(len(c)) >= p.numel() for c, p in zip(cur, prompts)]
            cur = [c.masked_fill(~k, 0.0) for c, k in zip(cur, keep)]
            ref = [r.masked_fill(~k, 0.0) for r, k in zip(ref, keep)]
        kl = []
        for i, (c, r) in enumerate(zip(cur, ref, strict=True)):
            if c.shape != r.shape:
                raise ValueError(f"KLRewardTransform: sample {i} has log-prob shapes {tuple(c.shape)} and {tuple(r.shape)}.")
            kl.append((c - r).unsqueeze(-1))
        reward_key, kl_key, ref_key = self.out_keys
        if self.add_to_reward:
            rewards = _per_sample(next_tensordict, self.in_keys[0]) or [torch.zeros(1, 1)] * len(kl)
            next_tensordict.set(reward_key, _nested([r.reshape(-1, 1) - self.coef * k for r, k in zip(rewards, kl)]))
        next_tensordict.set(kl_key, _nested(kl))
        next_tensordict.set(ref_key, _nested([r.unsqueeze(-1) for r in ref]))
        return next_tensordict

    def transform_reward_spec(self, reward_spec: Composite) -> Composite:
        reward_spec[self.out_keys[0]] = Unbounded(shape=(*reward_spec.shape, -1, 1), device=reward_spec.device)
        return reward_spec

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        for key in self.out_keys[1:]:
            observation_spec[key] = Unbounded(shape=(*observation_spec.shape, -1, 1), device=observation_spec.device)
        return observation_spec

