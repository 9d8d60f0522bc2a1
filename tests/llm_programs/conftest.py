"""The programs here import ``torchrl``: pytest must not import them (the tests run them after the swap)."""

collect_ignore = ["grpo_history_program.py"]
