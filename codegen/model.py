"""Stage 2: the intermediate representation, computed in full from descriptors before rendering.

Every derived value a template prints (Python name, JSON name, annotation, default, codec kind,
docstring line) is worked out here once and frozen; templates only print. Name collisions stop the
build here, not in the output.
"""

from __future__ import annotations

from dataclasses import dataclass

from google.protobuf import descriptor_pb2

FDP = descriptor_pb2.FieldDescriptorProto
PACKAGE = "lf.a2a.v1"

# Scalar proto types: (codec kind, Python type, proto3 default expression, docstring type name).
_SCALARS: dict[int, tuple[str, str, str, str]] = {
    FDP.TYPE_STRING: ("string", "str", '""', "string"),
    FDP.TYPE_BOOL: ("bool", "bool", "False", "bool"),
    FDP.TYPE_INT32: ("int32", "int", "0", "int32"),
    FDP.TYPE_SINT32: ("int32", "int", "0", "sint32"),
    FDP.TYPE_SFIXED32: ("int32", "int", "0", "sfixed32"),
    FDP.TYPE_UINT32: ("uint32", "int", "0", "uint32"),
    FDP.TYPE_FIXED32: ("uint32", "int", "0", "fixed32"),
    FDP.TYPE_INT64: ("int64", "int", "0", "int64"),
    FDP.TYPE_SINT64: ("int64", "int", "0", "sint64"),
    FDP.TYPE_SFIXED64: ("int64", "int", "0", "sfixed64"),
    FDP.TYPE_UINT64: ("uint64", "int", "0", "uint64"),
    FDP.TYPE_FIXED64: ("uint64", "int", "0", "fixed64"),
    FDP.TYPE_DOUBLE: ("double", "float", "0.0", "double"),
    FDP.TYPE_FLOAT: ("double", "float", "0.0", "float"),
    FDP.TYPE_BYTES: ("bytes", "bytes", 'b""', "bytes"),
}

# Well-known types mapped to plain Python JSON values rather than generated classes.
_JSON_WKTS: dict[str, tuple[str, str]] = {
    ".google.protobuf.Struct": ("struct", "dict[str, Any]"),
    ".google.protobuf.Value": ("value", "Any"),
    ".google.protobuf.ListValue": ("listvalue", "list[Any]"),
}
# Well-known types generated as classes alongside the package's own messages.
CLASS_WKTS = (".google.protobuf.Timestamp", ".google.protobuf.Empty")


class ModelError(Exception):
    """The proto cannot be represented (a name collision, an unsupported construct)."""


@dataclass(frozen=True)
class Field:
    """One field of a message, with everything the templates print for it."""

    proto_name: str
    py_name: str
    json_name: str
    alt_name: str  # the proto name when it differs from the JSON name, else ""
    number: int
    kind: str  # element codec: string, bool, int32, ..., enum, message, timestamp, struct, value
    cardinality: str  # "single", "repeated" or "map"
    presence: str  # "implicit" (default omitted), "explicit" (None when absent), "value" (UNSET)
    required: bool
    oneof: str  # oneof group name, "" when none
    element: str  # Python type of one element (class name for messages and enums)
    annotation: str  # attribute type
    param: str  # __init__ parameter type
    default: str  # __init__ parameter default
    zero: str  # proto3 default of the element (implicit presence only)
    doc: str  # one line for the class docstring's Attributes section
    shape: str  # decode shape: "<cardinality>-<presence>"
    decoder: str  # callable decoding one element: JSON value -> Python value
    encoder: str  # callable encoding one element, "" when the value is its own JSON
    inline_type: str  # "str" or "bool" when a singular value is checked inline, else ""
    enc_when: str  # when to write: always, truthy, not_none, not_unset, not_zero
    repr_when: str  # when the repr shows it: truthy, not_none, not_unset, not_zero
    missing_when: str  # REQUIRED and absent when: falsy, zero, none; "" when never
    child: str  # "single", "repeated" or "map" for message fields checked recursively, else ""
    deep_copy: str  # expression copying ``self.<py_name>`` for ``__deepcopy__``


@dataclass(frozen=True)
class Oneof:
    """A oneof group and its member fields' Python names."""

    name: str
    members: tuple[str, ...]
    json_members: tuple[str, ...]


@dataclass(frozen=True)
class Message:
    """A generated class."""

    full_name: str
    name: str
    template: str  # partial that renders it: "_message.j2", "_timestamp.j2"
    fields: tuple[Field, ...]
    oneofs: tuple[Oneof, ...]
    doc: str


@dataclass(frozen=True)
class EnumValue:
    """One enum member."""

    py_name: str
    wire_name: str
    number: int


@dataclass(frozen=True)
class Enum:
    """A generated enum."""

    full_name: str
    name: str
    values: tuple[EnumValue, ...]
    decoder: str  # module-level decode function name
    doc: str


@dataclass(frozen=True)
class Method:
    """One RPC of the service, as the JSON-RPC binding names it."""

    name: str
    py_name: str
    const: str
    params: str
    result: str
    streaming: bool


@dataclass(frozen=True)
class Module:
    """Everything one generation run renders."""

    proto_sha256: str
    generator_version: str
    messages: tuple[Message, ...]
    enums: tuple[Enum, ...]
    methods: tuple[Method, ...]
    service: str

    @property
    def exported(self) -> tuple[str, ...]:
        """Sorted public names of ``types.py``."""
        return tuple(sorted([m.name for m in self.messages] + [e.name for e in self.enums]))
