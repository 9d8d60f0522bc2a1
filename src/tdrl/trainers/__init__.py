"""tdrl.trainers."""

__all__: list[str] = []
