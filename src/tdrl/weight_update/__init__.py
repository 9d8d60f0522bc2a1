"""tdrl.weight_update."""

__all__: list[str] = []
