"""Turning user targets (``pkg.mod:attr``, ``path/to/file.py:Class``) into Python objects.

This is the only place inferd edits ``sys.path``: a file target's folder goes first, so the user's
sibling modules import as they would when the user runs the file themselves. A platform that loaded
user files by path (Cortex's handlers) gets `import_file_privately` instead, which leaves ``sys.path``
alone and keeps the file's name from shadowing a library of that name.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import logging
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

from inferd.core.errors import TargetError


def split_target(target: str) -> tuple[str, str | None]:
    """``"a/b.py:Cls"`` → ``("a/b.py", "Cls")``; a Windows drive colon is not a separator."""
    module, sep, attr = target.rpartition(":")
    if not sep or not module or "/" in attr or "\\" in attr:
        return target, None
    return module, attr or None


def import_module(module: str) -> ModuleType:
    """Import a dotted module name or a ``.py`` file path."""
    if module.endswith(".py") or "/" in module:
        return import_file_as(Path(module), Path(module).stem)
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name and module.startswith(exc.name):
            raise TargetError(
                f"no module named '{module}' (expected a module name or a path to a .py file)"
            ) from exc
        raise


def import_from_string(target: str) -> Any:
    """Import ``module:attr`` (attr may be dotted) and return the object."""
    module_name, attr = split_target(target)
    module = import_module(module_name)
    if attr is None:
        return module
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise TargetError(_missing(module, module_name, attr)) from None
    return obj


def _missing(module: ModuleType, module_name: str, attr: str) -> str:
    """``no class 'Irs' in model.py; it has: Iris``: what a target names that its module lacks, and the
    classes the module defines (a typo's likely meaning)."""
    defined = sorted(
        name
        for name, value in vars(module).items()
        if inspect.isclass(value) and value.__module__ == module.__name__
    )
    has = f"; it has: {', '.join(defined)}" if defined else "; it defines no class"
    return f"no class '{attr}' in {module_name}{has}"


@contextlib.contextmanager
def working_directory(folder: Path | None) -> Iterator[None]:
    """Run user module code with relative paths (and module names) resolving against ``folder``, the
    project's, then return to the working directory of before (None: stay where it is)."""
    if folder is None:
        yield
        return
    before = Path.cwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


def add_to_path(folder: Path) -> None:
    """Put ``folder`` first on ``sys.path`` (once), so user modules in it import by name."""
    entry = str(folder.resolve())
    if entry not in sys.path:
        sys.path.insert(0, entry)


def import_file_as(path: Path, name: str) -> ModuleType:
    """Import the ``.py`` file ``path`` as module ``name`` (cached in ``sys.modules`` by name and file);
    its folder goes on ``sys.path`` first so its sibling modules import."""
    path = path.resolve()
    if not path.is_file():
        raise TargetError(f"no such file: {path}")
    add_to_path(path.parent)
    return _load_file(path, name)


def import_file_privately(path: Path, name: str) -> ModuleType:
    """Import the ``.py`` file ``path`` by its path as module ``name``, a name of the caller's (Cortex's
    ``request_handler_<api>``), leaving ``sys.path`` alone. The file's own name never shadows a library:
    a handler called ``onnx.py`` in a folder on ``sys.path`` must not answer ``import onnx``, neither
    for the handler itself nor for the libraries it or inferd import (see `_HiddenFiles`)."""
    path = path.resolve()
    if not path.is_file():
        raise TargetError(f"no such file: {path}")
    _HiddenFiles.hide(path)
    return _load_file(path, name)


def hide_file_names(paths: Iterable[Path]) -> None:
    """Keep these ``.py`` files, about to be loaded by `import_file_privately`, from answering imports
    of their names before they load too (one API's handler importing ``sklearn`` while another API's
    handler is the project's ``sklearn.py``)."""
    for path in paths:
        if path.suffix == ".py":
            _HiddenFiles.hide(path.resolve())


def _load_file(path: Path, name: str) -> ModuleType:
    existing = sys.modules.get(name)
    if existing is not None and getattr(existing, "__file__", None) == str(path):
        return existing
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TargetError(f"cannot import {path} as Python code")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]  # a module that failed to run is not left half-made for the next import
        raise
    return module


class _HiddenFiles(importlib.abc.MetaPathFinder):
    """Resolves a top-level import whose name is the stem of a privately loaded file (``onnx`` for a
    handler ``onnx.py``) past that file's folder first. When nothing else has that name (a project
    importing its own handler module), the import goes on as usual and finds the file."""

    files: ClassVar[set[Path]] = set()

    @classmethod
    def hide(cls, path: Path) -> None:
        cls.files.add(path)
        if not any(isinstance(finder, cls) for finder in sys.meta_path):
            sys.meta_path.insert(0, cls())

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if path is not None:
            return None
        folders = {file.parent for file in self.files if file.stem == fullname}
        if not folders:
            return None
        entries = [entry for entry in sys.path if Path(entry or os.getcwd()).resolve() not in folders]
        for finder in sys.meta_path:
            if finder is self:
                continue
            if finder is importlib.machinery.PathFinder:
                spec = importlib.machinery.PathFinder.find_spec(fullname, entries, target)
            else:
                find = getattr(finder, "find_spec", None)
                spec = find(fullname, None, target) if find is not None else None
            if spec is not None and not (spec.origin and Path(spec.origin).resolve() in self.files):
                return spec
        return None


def stand_in_modules(modules: dict[str, ModuleType], logger: logging.Logger, label: str = "") -> bool:
    """Make the dotted names of ``modules`` importable for user code written against a platform's
    package that inferd does not need: the installed package's own modules when they all import,
    else the given stand-ins (their parent packages made up as empty packages). A working install is
    never shadowed; a broken one (missing or clashing dependencies) is logged, then replaced. Returns
    whether the installed package is used. ``label`` names the package in the log (its top module's
    name by default)."""
    top = next(iter(modules)).split(".")[0]
    if all(name in sys.modules for name in modules):
        return all(sys.modules[name] is not stand_in for name, stand_in in modules.items())
    if importlib.util.find_spec(top) is not None:
        try:
            for name in modules:
                importlib.import_module(name)
            return True
        except Exception as exc:  # any failure of an installed package must not stop serving
            logger.warning(
                "%s is installed but cannot be imported (%s: %s); %s resolve to inferd's equivalents",
                label or top,
                type(exc).__name__,
                exc,
                ", ".join(modules),
            )
            for name in [name for name in sys.modules if name.split(".")[0] == top]:
                del sys.modules[name]
    for name, stand_in in modules.items():
        sys.modules[name] = stand_in
        parent, _, leaf = name.rpartition(".")
        child: ModuleType = stand_in
        while parent:
            package = sys.modules.get(parent)
            if package is None:
                package = ModuleType(parent, f"inferd's stand-in for {parent}.")
                package.__path__ = []
                sys.modules[parent] = package
            setattr(package, leaf, child)
            child, (parent, _, leaf) = package, parent.rpartition(".")
    return False


def forget_modules_under(folder: Path) -> list[str]:
    """Drop from ``sys.modules`` every module loaded from a file under ``folder``, so the next import
    runs its code as it is now: a model repository's folder that changed must not be served from the
    modules of its old files (`import_file_as` reuses a module of the same name and file). Returns the
    names dropped."""
    prefix = os.path.join(str(folder.resolve()), "")
    dropped = []
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if isinstance(file, str) and os.path.abspath(file).startswith(prefix):
            del sys.modules[name]
            dropped.append(name)
    return dropped
