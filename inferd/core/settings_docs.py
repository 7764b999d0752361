"""The docstring written under each settings field, as its description, read when something shows it.

Every settings field is documented by the docstring under it; ``serve``'s option help and the settings
reference (docs/settings.md) are made from these. pydantic can read them itself
(``use_attribute_docstrings``), but it does so while the class is built, through
``inspect.getsource`` for each class, which parses the class's whole module every time: about a
tenth of a second of every ``inferd serve`` start, spent on text no server reads. `describe` reads
them only when asked, with one parse of each module.
"""

from __future__ import annotations

import ast
import functools
import inspect
import sys
from pathlib import Path

from pydantic import BaseModel


def describe(model: type[BaseModel]) -> None:
    """Give each field of ``model`` that has no description the docstring under its declaration in
    ``model`` or the nearest base declaring it. Idempotent; the fields of the bases are described too."""
    for cls in reversed(model.__mro__):
        if isinstance(cls, type) and issubclass(cls, BaseModel) and cls is not BaseModel:
            _describe_one(cls)


def _describe_one(model: type[BaseModel]) -> None:
    for name, field in model.model_fields.items():
        if field.description is None:
            field.description = _docstring(model, name)


def _docstring(model: type[BaseModel], name: str) -> str | None:
    for cls in model.__mro__:
        found = _class_docs(cls.__module__, cls.__qualname__).get(name)
        if found is not None:
            return found
    return None


@functools.cache
def _class_docs(module: str, qualname: str) -> dict[str, str]:
    return _module_docs(module).get(qualname, {})


@functools.cache
def _module_docs(module: str) -> dict[str, dict[str, str]]:
    """For each class of ``module``, by qualified name (a class made in a function included): its
    fields' docstrings (a string right under an annotated assignment), cleaned as ``inspect.cleandoc``
    does."""
    file = getattr(sys.modules.get(module), "__file__", None)
    if file is None or not file.endswith(".py"):
        return {}
    found: dict[str, dict[str, str]] = {}
    _walk(ast.parse(Path(file).read_text(encoding="utf-8")).body, "", found)
    return found


def _walk(body: list[ast.stmt], prefix: str, found: dict[str, dict[str, str]]) -> None:
    for node in body:
        if isinstance(node, ast.ClassDef):
            found[prefix + node.name] = _field_docs(node)
            _walk(node.body, f"{prefix}{node.name}.", found)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            _walk(node.body, f"{prefix}{node.name}.<locals>.", found)


def _field_docs(node: ast.ClassDef) -> dict[str, str]:
    docs = {}
    for first, second in zip(node.body, node.body[1:], strict=False):
        if (
            isinstance(first, ast.AnnAssign)
            and isinstance(first.target, ast.Name)
            and isinstance(second, ast.Expr)
            and isinstance(second.value, ast.Constant)
            and isinstance(second.value.value, str)
        ):
            docs[first.target.id] = inspect.cleandoc(second.value.value)
    return docs
