"""tdrl.envs."""

__all__: list[str] = []
