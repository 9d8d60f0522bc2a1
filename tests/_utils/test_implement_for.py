from __future__ import annotations

import pytest

from tdrl._utils import implement_for


@implement_for("torch", None, "1.0")
def _which():
    return "old"


@implement_for("torch", "1.0", None)
def _which():  # noqa: F811 - the second registration of the same name is the point
    return "new"


@implement_for("a_package_that_is_not_installed_xyz")
def _missing():
    return "never"


class _Holder:
    @implement_for("torch", "1.0")
    def method(self, x):
        return ("new", x)

    @implement_for("torch", None, "1.0")
    def method(self, x):  # noqa: F811
        return ("old", x)

    @implement_for("torch", "1.0", class_method=True)
    def build(cls):
        return cls


def test_dispatch_picks_the_installed_version_range():
    assert _which() == "new"


def test_methods_and_class_methods_bind():
    holder = _Holder()
    assert holder.method(3) == ("new", 3)
    assert _Holder.build() is _Holder


def test_no_matching_implementation_names_the_package():
    with pytest.raises(ModuleNotFoundError, match="a_package_that_is_not_installed_xyz"):
        _missing()


def test_version_bounds():
    assert implement_for("torch", "1.0", "999.0").matches()
    assert not implement_for("torch", "999.0").matches()
    assert not implement_for("torch", None, "1.0").matches()
