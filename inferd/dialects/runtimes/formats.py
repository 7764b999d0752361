"""Which model-file format a file or folder holds, told by the file's name (MLServer's and KServe's
well-known names), and whether the library reading it is installed.

A folder serves the one well-known model file it holds. ``model.json`` and ``model.txt`` are common
names, so without a format chosen they count only when their first bytes are XGBoost's JSON
(``{"learner"``) or LightGBM's text (``tree``). ``model.bst`` is XGBoost's or LightGBM's: a
chosen format decides, else the model tries each library installed, in turn (`candidates`).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

from inferd.core.errors import TargetError


@dataclass(frozen=True)
class FileFormat:
    """One format: the files it is recognised by, and what reads it."""

    name: str
    title: str
    #: Well-known file names (MLServer's and KServe's), looked for in a folder.
    files: tuple[str, ...]
    #: Suffixes that tell the format of a file of another name.
    suffixes: tuple[str, ...]
    #: The module that must import, and the extra installing it.
    module: str
    extra: str
    #: ``module:function`` building the model from the file's path.
    runtime: str

    def install_line(self) -> str:
        return f"{self.title} models need {self.module}: pip install 'inferd[{self.extra}]'"


FORMATS: tuple[FileFormat, ...] = (
    FileFormat(
        "sklearn",
        "scikit-learn",
        ("model.joblib", "model.pkl", "model.pickle"),
        (".joblib", ".pkl", ".pickle"),
        "sklearn",
        "sklearn",
        "inferd.dialects.runtimes.sklearn:load",
    ),
    FileFormat(
        "xgboost",
        "XGBoost",
        ("model.bst", "model.json", "model.ubj"),
        (".bst", ".ubj"),
        "xgboost",
        "xgboost",
        "inferd.dialects.runtimes.xgboost:load",
    ),
    FileFormat(
        "lightgbm",
        "LightGBM",
        ("model.bst", "model.txt"),
        (".bst",),
        "lightgbm",
        "lightgbm",
        "inferd.dialects.runtimes.lightgbm:load",
    ),
    FileFormat(
        "onnx",
        "ONNX",
        ("model.onnx",),
        (".onnx",),
        "onnxruntime",
        "onnx",
        "inferd.dialects.runtimes.onnx:load",
    ),
    FileFormat(
        "tensorflow",
        "TensorFlow SavedModel",
        ("saved_model.pb",),
        (),
        "tensorflow",
        "tensorflow",
        "inferd.dialects.runtimes.tensorflow:SavedModelModel",
    ),
    FileFormat(
        "mlflow",
        "MLflow",
        ("MLmodel",),
        (),
        "yaml",  # the MLmodel file is YAML; a flavour needing mlflow itself says so when it loads
        "mlflow",
        "inferd.dialects.runtimes.mlflow:load",
    ),
)
BY_NAME = {found.name: found for found in FORMATS}
#: Every well-known file name, in the order a folder is searched.
KNOWN_FILES: tuple[str, ...] = tuple(dict.fromkeys(name for found in FORMATS for name in found.files))
#: Files whose name alone does not tell: their first bytes must, unless a format is chosen.
SNIFFED = {"model.json": (b"{", b'"learner"'), "model.txt": (b"tree",)}


def looked_for() -> str:
    """The files this module recognises, for messages."""
    return ", ".join(KNOWN_FILES) + " (or a file ending " + ", ".join(_suffixes()) + ")"


def _suffixes() -> list[str]:
    return list(dict.fromkeys(suffix for found in FORMATS for suffix in found.suffixes))


def formats_of(path: Path, chosen: str | None) -> list[FileFormat]:
    """The formats file ``path`` may be in (``chosen`` alone when given and it fits)."""
    named = [found for found in FORMATS if path.name in found.files or path.suffix.lower() in found.suffixes]
    if chosen is not None:
        wanted = BY_NAME[chosen]
        return [wanted] if wanted in named or path.name not in KNOWN_FILES else []
    if path.name in SNIFFED and not _sniffs(path, SNIFFED[path.name]):
        return []
    return named


def _sniffs(path: Path, marks: tuple[bytes, ...]) -> bool:
    """Whether the file's first bytes, spaces aside, hold ``marks`` in order."""
    try:
        with path.open("rb") as file:
            head = b"".join(file.read(256).split())
    except OSError:
        return False
    return head.startswith(b"".join(marks))


def find(target: str, chosen: str | None) -> tuple[Path, list[FileFormat]] | None:
    """The model file ``target`` (a file, or a folder holding one) names and its possible formats;
    None when it names no model file. A folder holding several is a TargetError naming them."""
    path = Path(target)
    if path.is_file():
        found = formats_of(path, chosen)
        return (path, found) if found else None
    if not path.is_dir():
        return None
    if (path / "MLmodel").is_file() and chosen in (None, "mlflow"):
        held = [path / "MLmodel"]  # an MLflow model's folder: its pickle is a part of it
    else:
        held = [path / name for name in KNOWN_FILES if (path / name).is_file()] or _versioned(path)
    usable = [(file, formats_of(file, chosen)) for file in held]
    usable = [(file, found) for file, found in usable if found]
    if len(usable) > 1:
        names = ", ".join(file.name for file, _ in usable)
        raise TargetError(f"{path} holds several model files ({names}); serve one of them as the target")
    return usable[0] if usable else None


def _versioned(folder: Path) -> list[Path]:
    """TF Serving's layout: ``saved_model.pb`` in the highest numeric version folder."""
    try:
        versions = [entry for entry in folder.iterdir() if entry.name.isdigit() and entry.is_dir()]
    except OSError:
        return []
    found = [entry / "saved_model.pb" for entry in versions if (entry / "saved_model.pb").is_file()]
    return [max(found, key=lambda file: int(file.parent.name))] if found else []


def model_file(target: str, chosen: str | None) -> tuple[Path, list[FileFormat]]:
    """`find`, or a TargetError naming the target and the files looked for."""
    found = find(target, chosen)
    if found is None:
        kind = f"a {BY_NAME[chosen].title} model file" if chosen else "a model file in a known format"
        raise TargetError(f"'{target}' is not {kind}; looked for {looked_for()}")
    return found


def installed(file: Path, formats: list[FileFormat]) -> list[FileFormat]:
    """Those of ``formats`` whose library imports; none is a TargetError with the install line(s)."""
    usable = []
    for found in formats:
        try:
            importlib.import_module(found.module)
        except ImportError:
            continue
        usable.append(found)
    if not usable:
        lines = "; or ".join(found.install_line() for found in formats)
        raise TargetError(f"cannot serve {file}: {lines}")
    return usable
