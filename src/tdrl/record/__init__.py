"""tdrl.record."""

__all__: list[str] = []
