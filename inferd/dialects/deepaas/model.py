"""One DEEPaaS model: the entry point's object, its arguments, metadata and response schema.

The object is built in each worker process (a class is instantiated; a module or an instance is used
as it is) and ``warm()`` runs there before the server reports ready; later calls use that same object,
so state ``warm()`` sets is kept (upstream lost it). ``predict`` runs on the event loop unless
``INFERD_PREDICT_IN_THREAD`` is set, as in every dialect: a thread hand-off gives fast models a long
latency tail under load. Over V2 the predict arguments are named input tensors (scalars and strings)
and the answer is one BYTES tensor ``predictions`` holding its JSON.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
import orjson
from marshmallow import Schema, ValidationError, fields

from inferd.core.errors import InvalidInput, ModelLoadError
from inferd.core.model import Model, PredictInThread
from inferd.core.types import Tensors
from inferd.dialects.deepaas import arguments, swagger

logger = logging.getLogger("inferd.deepaas")

PREDICTIONS = "predictions"
NO_DESCRIPTION = "Could not load description from underlying model (loaded '{name}')"


class MetadataFailed(Exception):
    """get_metadata raised when the model was loaded (logged then)."""


def build(entry: Any) -> Any:
    """The object calls go to: a class is instantiated (no arguments), anything else used as is."""
    return entry() if inspect.isclass(entry) else entry


class DeepaasModel(Model):
    platform: ClassVar[str] = "deepaas"

    def __init__(
        self,
        name: str,
        load_entry: Callable[[], Any],
        warm: bool = True,
        predict_in_thread: PredictInThread = False,
    ) -> None:
        self.entry_name, self.load_entry, self.warm = name, load_entry, warm
        self.predict_in_thread = predict_in_thread

    def load(self) -> None:
        self.user = build(self.load_entry())
        self.predict_args = arguments.declare(self._optional("get_predict_args", {}), for_predict=True)
        self.train_args = arguments.declare(self._optional("get_train_args", {}))
        self.schema = response_schema(getattr(self.user, "schema", None))
        self.about, self.metadata_failed = None, False
        try:
            self.about = self._optional("get_metadata", None)
        except Exception:
            # deepaas-run called get_metadata per request, so a failing one only broke the metadata
            # routes; predict and train keep working here too.
            logger.exception(
                "get_metadata of model '%s' failed; its metadata routes answer 500", self.entry_name
            )
            self.metadata_failed = True
        if self.warm:
            self._optional("warm", None)

    def _optional(self, method: str, default: Any) -> Any:
        """``method()`` if the object has it; a missing method or NotImplementedError gives ``default``."""
        function = getattr(self.user, method, None)
        if not callable(function):
            return default
        try:
            return function()
        except NotImplementedError:
            return default

    def has(self, method: str) -> bool:
        return callable(getattr(self.user, method, None))

    def document(self, base_path: str) -> dict[str, Any]:
        """The model's metadata document (§3.3): id, name, self link, overlaid with get_metadata().
        Raises `MetadataFailed` when get_metadata failed at load (the route answers 500)."""
        if self.metadata_failed:
            raise MetadataFailed(f"get_metadata of model '{self.entry_name}' failed")
        about = self.about if isinstance(self.about, dict) else None
        if about is None:
            about = {
                "id": "0",
                "name": self.entry_name,
                "description": NO_DESCRIPTION.format(name=self.entry_name),
            }
        links = [{"rel": "self", "href": f"{base_path}/v2/models/{self.entry_name}"}]
        return {"id": self.entry_name, "name": self.entry_name, "links": links, **about}

    def swagger(self, name: str) -> swagger.ModelDoc:
        schema = type(self.schema) if self.schema is not None else None
        return swagger.ModelDoc(
            name, self.predict_args.fields, self.train_args.fields, self.predict_args.accept, schema
        )

    def predict_parameters(self, base_path: str) -> tuple[dict[str, Any], ...]:
        """The Swagger parameters of the predict route, as ``/swagger.json`` lists them."""
        document = swagger.document(
            [self.swagger(self.entry_name)], version="", base_path=base_path, train=False
        )
        operation = document["paths"][f"{base_path}/v2/models/{self.entry_name}/predict/"]["post"]
        return tuple(operation["parameters"])

    def run_predict(self, values: dict[str, Any]) -> Any:
        return self.user.predict(**values)

    def check_output(self, output: Any) -> None:
        """Load ``output`` with the response schema; raises ValidationError (500 for the client)."""
        if self.schema is not None:
            self.schema.load(output)

    # --- V2 ---------------------------------------------------------------------------------------

    def predict(self, inputs: Tensors) -> Tensors:
        if not self.has("predict"):
            raise InvalidInput(f"model '{self.entry_name}' has no predict")
        raw = {name: _scalar(array) for name, array in inputs.items() if name in self.predict_args.fields}
        try:
            values = self.predict_args.schema.load(raw)
        except ValidationError as exc:
            raise InvalidInput(orjson.dumps(exc.messages).decode()) from None
        output = self.run_predict(values)
        self.check_output(output)
        try:
            document = orjson.dumps(output, option=orjson.OPT_SERIALIZE_NUMPY)
        except TypeError:
            document = orjson.dumps(str(output))
        return {PREDICTIONS: np.array([document], dtype=object)}


def _scalar(array: np.ndarray) -> Any:
    value = array.reshape(-1)[0] if array.size else None
    if isinstance(value, bytes):
        return value.decode()
    return value.item() if isinstance(value, np.generic) else value


def response_schema(schema: Any) -> Schema | None:
    """The predict response schema: a marshmallow Schema subclass or a dict of fields (§4.1)."""
    if schema is None:
        return None
    if inspect.isclass(schema) and issubclass(schema, Schema):
        return schema()
    if isinstance(schema, dict) and all(isinstance(value, fields.Field) for value in schema.values()):
        return Schema.from_dict(schema, name="ModelPredictionResponse")()
    raise ModelLoadError(
        f"the model's schema must be a marshmallow Schema class or a dict of fields, not {schema!r}"
    )
