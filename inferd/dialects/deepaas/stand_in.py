"""inferd's equivalents of the names DEEPaaS models import, so deepaas itself is never required.

Models written for deepaas 2.x import ``deepaas.model.v2.base.BaseModel`` and
``deepaas.model.v2.wrapper.UploadedFile`` and check ``isinstance(arg, UploadedFile)`` in ``predict``.
`install_aliases` makes both module paths resolve to this module when deepaas is not installed, or is
installed but cannot be imported (``pip install --no-deps deepaas`` leaves out oslo.config and
oslo.log, which its ``deepaas.model.v2`` package imports). With a working deepaas, its own modules are
used and `uploaded_file_type` is its class, so uploads are instances of what the model imported.
"""

from __future__ import annotations

import abc
import functools
import logging
import sys
from typing import Any, NamedTuple

from inferd.core.importer import stand_in_modules

logger = logging.getLogger("inferd.deepaas")

#: The modules models import, as they are named in deepaas 2.x.
BASE, WRAPPER = "deepaas.model.v2.base", "deepaas.model.v2.wrapper"


class UploadedFile(NamedTuple):
    """An uploaded file: the field's name, the path of a temporary copy, its content type and the
    client's file name (deepaas's namedtuple has the same fields in the same order)."""

    name: str
    filename: str
    content_type: str
    original_filename: str


class BaseModel(abc.ABC):
    """Optional base class of a DEEPaaS model: the methods the server calls. Subclassing is not
    required; the server looks the methods up on any object."""

    #: The predict response schema: a marshmallow Schema class, a dict of fields, or None.
    schema: Any = None

    @abc.abstractmethod
    def get_metadata(self) -> dict[str, Any]:
        raise NotImplementedError

    @abc.abstractmethod
    def warm(self) -> None:
        raise NotImplementedError

    @abc.abstractmethod
    def get_predict_args(self) -> dict[str, Any]:
        raise NotImplementedError

    @abc.abstractmethod
    def predict(self, **kwargs: Any) -> Any:
        raise NotImplementedError

    @abc.abstractmethod
    def get_train_args(self) -> dict[str, Any]:
        raise NotImplementedError

    @abc.abstractmethod
    def train(self, **kwargs: Any) -> Any:
        raise NotImplementedError


def install_aliases() -> bool:
    """``deepaas.model.v2.base`` and ``.wrapper`` importable for model code: deepaas's own when they
    import, else this module. Returns whether deepaas's own are used."""
    this = sys.modules[__name__]
    return stand_in_modules({BASE: this, WRAPPER: this}, logger)


@functools.cache
def uploaded_file_type() -> Any:
    """The ``UploadedFile`` class model code imports: deepaas's when it is installed and works."""
    install_aliases()
    return sys.modules[WRAPPER].UploadedFile


def uploaded_file(name: str, filename: str, content_type: str, original_filename: str) -> Any:
    """An ``UploadedFile`` of the class model code sees (`uploaded_file_type`)."""
    return uploaded_file_type()(name, filename, content_type, original_filename)


def is_uploaded_file(value: Any) -> bool:
    return isinstance(value, (UploadedFile, uploaded_file_type()))
