"""The subcommands of the ``tdrl`` command, one small module each (registered in :mod:`tdrl.trainers.cli`).

Each module defines ``register(subparsers)``, which adds its parser and sets ``func``; at the top it imports
only the standard library and the torch-free config modules, and it imports what trains or evaluates
(torch, tensordict, gymnasium, matplotlib) inside ``func``, so that ``tdrl --help`` answers at once.
"""

__all__: list[str] = []
