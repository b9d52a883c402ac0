"""The public modules keep their promise as a type checker and an IDE read them: every
name in `__all__` is documented, and the annotations of every public function and
method resolve (typing.get_type_hints, what IDEs, pydantic-style tools and
`help()` evaluate) in the module that defines it, not only under TYPE_CHECKING."""
from __future__ import annotations

import importlib
import inspect
import typing

import pytest

PUBLIC = ["sampler.api", "sampler.graph_tensor", "sampler.torch"]


def _public(module_name: str):
    if module_name == "sampler.torch":
        pytest.importorskip("torch", reason="sampler.torch needs the [torch] extra")
    module = importlib.import_module(module_name)
    return [(name, getattr(module, name)) for name in module.__all__]


def _callables(value):
    """The value itself when it is a function; a class's own public methods and init."""
    if inspect.isfunction(value):
        return [value]
    if inspect.isclass(value):
        return [member for key, member in vars(value).items()
                if inspect.isfunction(member) and (not key.startswith("_") or key == "__init__")]
    return []


@pytest.mark.parametrize("module_name", PUBLIC)
def test_every_public_name_is_documented(module_name):
    undocumented = [name for name, value in _public(module_name)
                    if (inspect.isfunction(value) or inspect.isclass(value))
                    and not value.__module__.endswith("_pb2")  # TF-GNN's protos, as generated
                    and not (value.__doc__ or "").strip()]
    assert not undocumented, undocumented


@pytest.mark.parametrize("module_name", PUBLIC)
def test_every_public_annotation_resolves(module_name):
    unresolved = []
    for name, value in _public(module_name):
        for function in _callables(value):
            try:
                typing.get_type_hints(function)
            except Exception as error:  # NameError, mostly: a TYPE_CHECKING-only import
                unresolved.append(f"{name}.{function.__name__}: {error}")
    assert not unresolved, unresolved
