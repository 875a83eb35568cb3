from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class LegacyNodeClaim(_message.Message):
    __slots__ = ("nodeAffinity", "tolerations")
    NODEAFFINITY_FIELD_NUMBER: _ClassVar[int]
    TOLERATIONS_FIELD_NUMBER: _ClassVar[int]
    nodeAffinity: bytes
    tolerations: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, nodeAffinity: _Optional[bytes] = ..., tolerations: _Optional[_Iterable[bytes]] = ...) -> None: ...

class LegacyReplicaRequirements(_message.Message):
    __slots__ = ("nodeClaim", "resourceRequest")
    class ResourceRequestEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: bytes
        def __init__(self, key: _Optional[str] = ..., value: _Optional[bytes] = ...) -> None: ...
    NODECLAIM_FIELD_NUMBER: _ClassVar[int]
    RESOURCEREQUEST_FIELD_NUMBER: _ClassVar[int]
    nodeClaim: LegacyNodeClaim
    resourceRequest: _containers.ScalarMap[str, bytes]
    def __init__(self, nodeClaim: _Optional[_Union[LegacyNodeClaim, _Mapping]] = ..., resourceRequest: _Optional[_Mapping[str, bytes]] = ...) -> None: ...

class LegacyComponentReplicaRequirements(_message.Message):
    __slots__ = ("nodeClaim", "resourceRequest")
    class ResourceRequestEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: bytes
        def __init__(self, key: _Optional[str] = ..., value: _Optional[bytes] = ...) -> None: ...
    NODECLAIM_FIELD_NUMBER: _ClassVar[int]
    RESOURCEREQUEST_FIELD_NUMBER: _ClassVar[int]
    nodeClaim: LegacyNodeClaim
    resourceRequest: _containers.ScalarMap[str, bytes]
    def __init__(self, nodeClaim: _Optional[_Union[LegacyNodeClaim, _Mapping]] = ..., resourceRequest: _Optional[_Mapping[str, bytes]] = ...) -> None: ...
