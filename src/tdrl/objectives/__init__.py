"""tdrl.objectives."""

__all__: list[str] = []
