from __future__ import annotations

import pytest

from tdrl._utils import auto_unwrap_transformed_env, set_auto_unwrap_transformed_env
from tdrl.envs import PendulumEnv, StepCounter, TransformedEnv


@pytest.fixture(autouse=True)
def _no_setting(monkeypatch):
    # setenv first so that monkeypatch records (and restores) the original state, even when .set() writes it
    monkeypatch.setenv("AUTO_UNWRAP_TRANSFORMED_ENV", "True")
    monkeypatch.delenv("AUTO_UNWRAP_TRANSFORMED_ENV")


def test_default_and_allow_none():
    assert auto_unwrap_transformed_env() is True
    assert auto_unwrap_transformed_env(allow_none=True) is None


def test_context_manager_restores_and_set_persists():
    with set_auto_unwrap_transformed_env(False):
        assert auto_unwrap_transformed_env() is False
    assert auto_unwrap_transformed_env(allow_none=True) is None
    set_auto_unwrap_transformed_env(False).set()
    assert auto_unwrap_transformed_env() is False


def test_decorator():
    @set_auto_unwrap_transformed_env(False)
    def read():
        return auto_unwrap_transformed_env()

    assert read() is False
    assert auto_unwrap_transformed_env() is True


def test_bad_environment_value(monkeypatch):
    monkeypatch.setenv("AUTO_UNWRAP_TRANSFORMED_ENV", "maybe")
    with pytest.raises(ValueError, match="AUTO_UNWRAP_TRANSFORMED_ENV"):
        auto_unwrap_transformed_env()


def test_transformed_env_follows_the_setting():
    inner = TransformedEnv(PendulumEnv(), StepCounter())
    assert not isinstance(TransformedEnv(inner).base_env, TransformedEnv)
    with set_auto_unwrap_transformed_env(False):
        assert isinstance(TransformedEnv(inner).base_env, TransformedEnv)
