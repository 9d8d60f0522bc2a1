"""tdrl.envs: environments, ``step_mdp`` and environment utilities."""

from tdrl.envs.step_mdp import step_mdp

__all__: list[str] = ["step_mdp"]
