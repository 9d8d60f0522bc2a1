"""``python -m tdrl`` runs the ``tdrl`` command (so that ``torchrun -m tdrl train ...`` starts one rank each)."""

import sys

from tdrl.trainers.cli import main

if __name__ == "__main__":
    sys.exit(main())
