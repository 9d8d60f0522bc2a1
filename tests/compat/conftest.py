"""The programs are run by ``test_programs.py`` (and by ``validate_on_torchrl.py``), never imported by pytest."""

collect_ignore = ["validate_on_torchrl.py"]
collect_ignore_glob = ["programs/*"]
