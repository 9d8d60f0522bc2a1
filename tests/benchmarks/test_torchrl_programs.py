"""``benchmarks/torchrl_programs.py``: the harness that runs TorchRL's tutorials on tdrl after the import swap.

Checked on small synthetic program texts written here (no TorchRL code): the import rewrite, the budget
overrides, the error extraction, a subprocess run, and the doc section.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def harness():
    spec = importlib.util.spec_from_file_location("torchrl_programs", ROOT / "benchmarks" / "torchrl_programs.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_rewrite_touches_import_statements_only(harness):
    source = (
        "from torchrl.envs import GymEnv, StepCounter\n"
        "from torchrl._utils import logger as torchrl_logger\n"
        "import torchrl.envs as e\n"
        "import torch, torchrl  # both\n"
        "    import torchrl.objectives\n"
        "from torchrl import envs\n"
        "print(torchrl.__version__, 'torchrl is great')  # torchrl in a comment\n"
        "x = torchrl_logger\n"
        "import torchrlx\n"
        "from torchrl_extra import y\n"
    )
    assert harness.rewrite_imports(source) == (
        "from tdrl.envs import GymEnv, StepCounter\n"
        "from tdrl._utils import logger as torchrl_logger\n"
        "import tdrl.envs as e\n"
        "import torch, tdrl as torchrl  # both\n"
        "    import tdrl.objectives; import tdrl as torchrl\n"
        "from tdrl import envs\n"
        "print(torchrl.__version__, 'torchrl is great')  # torchrl in a comment\n"
        "x = torchrl_logger\n"
        "import torchrlx\n"
        "from torchrl_extra import y\n"
    )


def test_rewritten_program_resolves_torchrl_names_to_tdrl(harness, tmp_path):
    source = "import torchrl.envs\nimport torchrl\nout = (torchrl.__name__, torchrl.envs.__name__)\n"
    namespace: dict = {}
    sys.path.insert(0, str(ROOT / "src"))
    try:
        exec(compile(harness.rewrite_imports(source), "prog.py", "exec"), namespace)
    finally:
        sys.path.remove(str(ROOT / "src"))
    assert namespace["out"] == ("tdrl", "tdrl.envs")


def test_overrides_apply_and_a_stale_pattern_is_an_error(harness, tmp_path):
    toml = tmp_path / "o.toml"
    toml.write_text(
        '[files."p.py"]\nenv = { SEED = 3 }\n'
        "replace = [ { pattern = 'total_frames = 50_000', repl = 'total_frames = 500' },"
        " { pattern = 'n_iter = \\d+', repl = 'n_iter = 2' } ]\n"
    )
    entry = harness.load_overrides(toml)["p.py"]
    assert entry["env"] == {"SEED": 3}
    text = "total_frames = 50_000\nn_iter = 100\nkeep = 50_000\n"
    assert harness.apply_overrides(text, entry, "p.py") == "total_frames = 500\nn_iter = 2\nkeep = 50_000\n"
    with pytest.raises(ValueError, match="for p.py matches nothing"):
        harness.apply_overrides("total_frames = 10\n", entry, "p.py")
    toml.write_text('[files."p.py"]\nlogic = 1\n')
    with pytest.raises(ValueError, match="unknown keys \\['logic'\\]"):
        harness.load_overrides(toml)


def test_first_error_names_the_exception_and_the_last_library_frame(harness):
    stderr = (
        "some warning\n"
        "Traceback (most recent call last):\n"
        '  File "/tmp/x/prog.py", line 12, in <module>\n'
        "    loss = DQNLoss(policy)\n"
        '  File "/repo/src/tdrl/objectives/dqn.py", line 40, in __init__\n'
        "    self._check()\n"
        '  File "/repo/src/tdrl/objectives/common.py", line 7, in _check\n'
        "    raise KeyError(k)\n"
        '  File "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 9, in f\n'
        "    raise\n"
        "KeyError: 'action_value'\n"
    )
    assert harness.first_error(stderr, "tdrl") == (
        "KeyError: 'action_value' (at tdrl/objectives/common.py:7 in _check)")
    only_program = ('Traceback (most recent call last):\n  File "/tmp/x/prog.py", line 3, in <module>\n'
                    "    from tdrl.envs import Nope\n"
                    "ImportError: cannot import name 'Nope' from 'tdrl.envs'\n")
    assert harness.first_error(only_program, "tdrl") == (
        "ImportError: cannot import name 'Nope' from 'tdrl.envs' (at prog.py:3 in <module>)")
    assert harness.first_error("Killed\n", "tdrl") == "Killed"


def test_run_program_passes_fails_and_times_out(harness, tmp_path):
    good = tmp_path / "good.py"
    good.write_text("import os\nfrom torchrl.envs import GymEnv\nassert os.environ['MPLBACKEND'] == 'Agg'\n"
                    "assert os.environ['N'] == '2'\nsteps = 10\nassert steps == 1\n")
    entry = {"env": {"N": 2}, "replace": [{"pattern": "steps = 10", "repl": "steps = 1"}]}
    result = harness.run_program(good, "tdrl", entry, 120, Path(sys.executable))
    assert result.passed, result.error
    bad = tmp_path / "bad.py"
    bad.write_text("from torchrl.envs import NoSuchEnvAnywhere\n")
    result = harness.run_program(bad, "tdrl", {}, 120, Path(sys.executable))
    assert not result.passed
    assert result.error.startswith("ImportError: cannot import name 'NoSuchEnvAnywhere' from 'tdrl.envs'")
    slow = tmp_path / "slow.py"
    slow.write_text("import time\ntime.sleep(30)\n")
    result = harness.run_program(slow, "tdrl", {"timeout": 1}, 120, Path(sys.executable))
    assert (result.passed, result.error) == (False, "timeout after 1 s")


def test_doc_section_is_written_between_markers_and_replaced(harness):
    results = {
        "sources": {"a.py": "f" * 40},
        "tdrl": {"date": "2026-01-02", "files": {
            "a.py": {"passed": True, "error": ""}, "b.py": {"passed": False, "error": "KeyError: 'x|y'"}}},
        "torchrl": {"date": "2026-01-01", "files": {
            "a.py": {"passed": True, "error": ""}, "b.py": {"passed": False, "error": "ImportError: old"}}},
    }
    section = harness.render_section(results, results["sources"], "python run")
    assert section.startswith(harness.START) and section.endswith(harness.END)
    assert "Runs on tdrl: 1/2; runs on TorchRL 0.14.1: 1/2." in section
    assert "torchrl run on 2026-01-01; tdrl run on 2026-01-02" in section
    assert f"| `a.py` | [`ffffffffff`](https://github.com/pytorch/rl/blob/{'f' * 40}/tutorials/sphinx-tutorials/a.py)"\
        " | runs | runs |  |" in section
    assert "| `b.py` | unknown | **fails** | **fails** | KeyError: 'x\\|y'<br>(TorchRL 0.14.1: ImportError: old) |" \
        in section
    doc = "# Title\n\n## Summary\n\nkeep me\n\n## Every name\n\nrows\n"
    once = harness.replace_section(doc, section)
    assert once.index("keep me") < once.index(harness.START) < once.index("## Every name")
    twice = harness.replace_section(once, section.replace("1/2", "2/2"))
    assert twice.count(harness.START) == 1 and "Runs on tdrl: 2/2" in twice and "rows" in twice
    json.dumps(results)  # the results file format is plain JSON


def test_first_error_drops_machine_specific_paths(harness):
    stderr = ('Traceback (most recent call last):\n  File "/tmp/p.py", line 1, in <module>\n    import x\n'
              "ImportError: cannot import name 'A' from 'torchrl.collectors' "
              "(/root/venv/lib/python3.11/site-packages/torchrl/collectors/__init__.py)\n")
    assert harness.first_error(stderr, "torchrl") == (
        "ImportError: cannot import name 'A' from 'torchrl.collectors' (torchrl/collectors/__init__.py)"
        " (at p.py:1 in <module>)")
