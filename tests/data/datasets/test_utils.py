from __future__ import annotations

import pytest

from tdrl.data.datasets import load_dataset, register_dataset
from tdrl.data.datasets.utils import _REGISTRY


class _Toy:
    def __init__(self, dataset_id, **kwargs):
        self.dataset_id, self.kwargs = dataset_id, kwargs


@pytest.fixture(autouse=True)
def _restore_registry():
    saved = dict(_REGISTRY)
    yield
    _REGISTRY.clear()
    _REGISTRY.update(saved)


def test_register_and_load_with_kwargs_and_case_insensitive_prefix():
    register_dataset("Toy", _Toy)
    ds = load_dataset("TOY:a:b", batch_size=2)
    assert ds.dataset_id == "a:b" and ds.kwargs == {"batch_size": 2}


def test_string_factories_are_imported_lazily():
    register_dataset("lazy", "tests_missing_module_xyz:Thing")
    with pytest.raises(ModuleNotFoundError, match="tests_missing_module_xyz"):
        load_dataset("lazy:x")


def test_builtin_sources_resolve_to_the_dataset_classes():
    from tdrl.data.datasets import D4RLExperienceReplay, MinariExperienceReplay
    from tdrl.data.datasets.utils import _REGISTRY as reg

    assert reg["d4rl"].endswith(":D4RLExperienceReplay") and reg["minari"].endswith(":MinariExperienceReplay")
    assert D4RLExperienceReplay.__module__ == reg["d4rl"].split(":")[0]
    assert MinariExperienceReplay.__module__ == reg["minari"].split(":")[0]


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: register_dataset("", _Toy), ValueError, "non-empty"),
        (lambda: register_dataset("a:b", _Toy), ValueError, "hold no ':'"),
        (lambda: register_dataset("toy2", 3), TypeError, "got int"),
        (lambda: register_dataset("toy2", "no_colon"), ValueError, "module:attribute"),
        (lambda: register_dataset("d4rl", _Toy), KeyError, "replace=True"),
        (lambda: load_dataset("no-prefix"), ValueError, "<source>:<dataset-id>"),
        (lambda: load_dataset("nope:x"), ValueError, "unknown dataset source 'nope'"),
    ],
)
def test_bad_input_is_explained(call, error, match):
    with pytest.raises(error, match=match):
        call()
