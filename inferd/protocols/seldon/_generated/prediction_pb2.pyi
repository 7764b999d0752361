from google.protobuf import any_pb2 as _any_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import empty_pb2 as _empty_pb2
import tensorflow_tensor_pb2 as _tensorflow_tensor_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SeldonMessage(_message.Message):
    __slots__ = ("status", "meta", "data", "binData", "strData", "jsonData", "customData")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    BINDATA_FIELD_NUMBER: _ClassVar[int]
    STRDATA_FIELD_NUMBER: _ClassVar[int]
    JSONDATA_FIELD_NUMBER: _ClassVar[int]
    CUSTOMDATA_FIELD_NUMBER: _ClassVar[int]
    status: Status
    meta: Meta
    data: DefaultData
    binData: bytes
    strData: str
    jsonData: _struct_pb2.Value
    customData: _any_pb2.Any
    def __init__(self, status: _Optional[_Union[Status, _Mapping]] = ..., meta: _Optional[_Union[Meta, _Mapping]] = ..., data: _Optional[_Union[DefaultData, _Mapping]] = ..., binData: _Optional[bytes] = ..., strData: _Optional[str] = ..., jsonData: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ..., customData: _Optional[_Union[_any_pb2.Any, _Mapping]] = ...) -> None: ...

class DefaultData(_message.Message):
    __slots__ = ("names", "tensor", "ndarray", "tftensor")
    NAMES_FIELD_NUMBER: _ClassVar[int]
    TENSOR_FIELD_NUMBER: _ClassVar[int]
    NDARRAY_FIELD_NUMBER: _ClassVar[int]
    TFTENSOR_FIELD_NUMBER: _ClassVar[int]
    names: _containers.RepeatedScalarFieldContainer[str]
    tensor: Tensor
    ndarray: _struct_pb2.ListValue
    tftensor: _tensorflow_tensor_pb2.TensorProto
    def __init__(self, names: _Optional[_Iterable[str]] = ..., tensor: _Optional[_Union[Tensor, _Mapping]] = ..., ndarray: _Optional[_Union[_struct_pb2.ListValue, _Mapping]] = ..., tftensor: _Optional[_Union[_tensorflow_tensor_pb2.TensorProto, _Mapping]] = ...) -> None: ...

class Tensor(_message.Message):
    __slots__ = ("shape", "values")
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    shape: _containers.RepeatedScalarFieldContainer[int]
    values: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, shape: _Optional[_Iterable[int]] = ..., values: _Optional[_Iterable[float]] = ...) -> None: ...

class Meta(_message.Message):
    __slots__ = ("puid", "tags", "routing", "requestPath", "metrics")
    class TagsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _struct_pb2.Value
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ...) -> None: ...
    class RoutingEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    class RequestPathEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    PUID_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    ROUTING_FIELD_NUMBER: _ClassVar[int]
    REQUESTPATH_FIELD_NUMBER: _ClassVar[int]
    METRICS_FIELD_NUMBER: _ClassVar[int]
    puid: str
    tags: _containers.MessageMap[str, _struct_pb2.Value]
    routing: _containers.ScalarMap[str, int]
    requestPath: _containers.ScalarMap[str, str]
    metrics: _containers.RepeatedCompositeFieldContainer[Metric]
    def __init__(self, puid: _Optional[str] = ..., tags: _Optional[_Mapping[str, _struct_pb2.Value]] = ..., routing: _Optional[_Mapping[str, int]] = ..., requestPath: _Optional[_Mapping[str, str]] = ..., metrics: _Optional[_Iterable[_Union[Metric, _Mapping]]] = ...) -> None: ...

class Metric(_message.Message):
    __slots__ = ("key", "type", "value", "tags")
    class MetricType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        COUNTER: _ClassVar[Metric.MetricType]
        GAUGE: _ClassVar[Metric.MetricType]
        TIMER: _ClassVar[Metric.MetricType]
    COUNTER: Metric.MetricType
    GAUGE: Metric.MetricType
    TIMER: Metric.MetricType
    class TagsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    KEY_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    key: str
    type: Metric.MetricType
    value: float
    tags: _containers.ScalarMap[str, str]
    def __init__(self, key: _Optional[str] = ..., type: _Optional[_Union[Metric.MetricType, str]] = ..., value: _Optional[float] = ..., tags: _Optional[_Mapping[str, str]] = ...) -> None: ...

class SeldonMessageList(_message.Message):
    __slots__ = ("seldonMessages",)
    SELDONMESSAGES_FIELD_NUMBER: _ClassVar[int]
    seldonMessages: _containers.RepeatedCompositeFieldContainer[SeldonMessage]
    def __init__(self, seldonMessages: _Optional[_Iterable[_Union[SeldonMessage, _Mapping]]] = ...) -> None: ...

class Status(_message.Message):
    __slots__ = ("code", "info", "reason", "status")
    class StatusFlag(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        SUCCESS: _ClassVar[Status.StatusFlag]
        FAILURE: _ClassVar[Status.StatusFlag]
    SUCCESS: Status.StatusFlag
    FAILURE: Status.StatusFlag
    CODE_FIELD_NUMBER: _ClassVar[int]
    INFO_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    code: int
    info: str
    reason: str
    status: Status.StatusFlag
    def __init__(self, code: _Optional[int] = ..., info: _Optional[str] = ..., reason: _Optional[str] = ..., status: _Optional[_Union[Status.StatusFlag, str]] = ...) -> None: ...

class Feedback(_message.Message):
    __slots__ = ("request", "response", "reward", "truth")
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    REWARD_FIELD_NUMBER: _ClassVar[int]
    TRUTH_FIELD_NUMBER: _ClassVar[int]
    request: SeldonMessage
    response: SeldonMessage
    reward: float
    truth: SeldonMessage
    def __init__(self, request: _Optional[_Union[SeldonMessage, _Mapping]] = ..., response: _Optional[_Union[SeldonMessage, _Mapping]] = ..., reward: _Optional[float] = ..., truth: _Optional[_Union[SeldonMessage, _Mapping]] = ...) -> None: ...

class RequestResponse(_message.Message):
    __slots__ = ("request", "response")
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    request: SeldonMessage
    response: SeldonMessage
    def __init__(self, request: _Optional[_Union[SeldonMessage, _Mapping]] = ..., response: _Optional[_Union[SeldonMessage, _Mapping]] = ...) -> None: ...

class SeldonModelMetadataRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class SeldonMessageMetadata(_message.Message):
    __slots__ = ("messagetype", "schema", "name", "datatype", "shape")
    MESSAGETYPE_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DATATYPE_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    messagetype: str
    schema: _struct_pb2.Value
    name: str
    datatype: str
    shape: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, messagetype: _Optional[str] = ..., schema: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ..., name: _Optional[str] = ..., datatype: _Optional[str] = ..., shape: _Optional[_Iterable[int]] = ...) -> None: ...

class SeldonModelMetadata(_message.Message):
    __slots__ = ("name", "versions", "platform", "inputs", "outputs", "custom")
    class CustomEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSIONS_FIELD_NUMBER: _ClassVar[int]
    PLATFORM_FIELD_NUMBER: _ClassVar[int]
    INPUTS_FIELD_NUMBER: _ClassVar[int]
    OUTPUTS_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_FIELD_NUMBER: _ClassVar[int]
    name: str
    versions: _containers.RepeatedScalarFieldContainer[str]
    platform: str
    inputs: _containers.RepeatedCompositeFieldContainer[SeldonMessageMetadata]
    outputs: _containers.RepeatedCompositeFieldContainer[SeldonMessageMetadata]
    custom: _containers.ScalarMap[str, str]
    def __init__(self, name: _Optional[str] = ..., versions: _Optional[_Iterable[str]] = ..., platform: _Optional[str] = ..., inputs: _Optional[_Iterable[_Union[SeldonMessageMetadata, _Mapping]]] = ..., outputs: _Optional[_Iterable[_Union[SeldonMessageMetadata, _Mapping]]] = ..., custom: _Optional[_Mapping[str, str]] = ...) -> None: ...

class SeldonGraphMetadata(_message.Message):
    __slots__ = ("name", "models", "inputs", "outputs")
    class ModelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: SeldonModelMetadata
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[SeldonModelMetadata, _Mapping]] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    MODELS_FIELD_NUMBER: _ClassVar[int]
    INPUTS_FIELD_NUMBER: _ClassVar[int]
    OUTPUTS_FIELD_NUMBER: _ClassVar[int]
    name: str
    models: _containers.MessageMap[str, SeldonModelMetadata]
    inputs: _containers.RepeatedCompositeFieldContainer[SeldonMessageMetadata]
    outputs: _containers.RepeatedCompositeFieldContainer[SeldonMessageMetadata]
    def __init__(self, name: _Optional[str] = ..., models: _Optional[_Mapping[str, SeldonModelMetadata]] = ..., inputs: _Optional[_Iterable[_Union[SeldonMessageMetadata, _Mapping]]] = ..., outputs: _Optional[_Iterable[_Union[SeldonMessageMetadata, _Mapping]]] = ...) -> None: ...
