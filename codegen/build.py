"""Descriptors to IR: walks the compiled proto and produces a :class:`codegen.model.Module`."""

from __future__ import annotations

from google.protobuf import descriptor_pb2

from codegen import descriptors, naming
from codegen.model import (
    _JSON_WKTS,
    _SCALARS,
    CLASS_WKTS,
    FDP,
    PACKAGE,
    Enum,
    EnumValue,
    Field,
    Message,
    Method,
    ModelError,
    Module,
    Oneof,
)


class _Index:
    """Full proto names of every message and enum in the set, and map-entry types."""

    def __init__(self, ds: descriptors.DescriptorSet) -> None:
        self.messages: dict[str, descriptor_pb2.DescriptorProto] = {}
        self.enums: dict[str, descriptor_pb2.EnumDescriptorProto] = {}
        for f in ds.files:
            for m in f.message_type:
                self._add(f"{f.package}", m)
            for e in f.enum_type:
                self.enums[f".{f.package}.{e.name}"] = e

    def _add(self, scope: str, m: descriptor_pb2.DescriptorProto) -> None:
        full = f".{scope}.{m.name}"
        self.messages[full] = m
        for nested in m.nested_type:
            self._add(full[1:], nested)
        for e in m.enum_type:
            self.enums[f"{full}.{e.name}"] = e

    def is_map_entry(self, type_name: str) -> bool:
        entry = self.messages.get(type_name)
        return entry is not None and entry.options.map_entry


def _short(type_name: str) -> str:
    return type_name.rsplit(".", 1)[-1]


def _element(index: _Index, f: descriptor_pb2.FieldDescriptorProto) -> tuple[str, str, str, str]:
    """Return (kind, Python element type, proto3 zero, docstring type) of one element of ``f``."""
    if f.type in _SCALARS:
        return _SCALARS[f.type]
    if f.type == FDP.TYPE_ENUM:
        enum = index.enums[f.type_name]
        zero = naming.enum_member_name(enum.name, enum.value[0].name)
        return "enum", enum.name, f"{enum.name}.{zero}", f"enum ``{enum.name}``"
    if f.type_name in _JSON_WKTS:
        kind, py = _JSON_WKTS[f.type_name]
        return kind, py, "None", f"``{f.type_name[1:]}`` as plain JSON"
    if f.type_name == ".google.protobuf.Timestamp":
        return "timestamp", "Timestamp", "None", "``google.protobuf.Timestamp`` (RFC 3339 string)"
    if f.type == FDP.TYPE_MESSAGE:
        return "message", _short(f.type_name), "None", f"message ``{_short(f.type_name)}``"
    raise ModelError(f"unsupported field type {f.type} for {f.name}")


_DECODERS = {
    "string": "_s.dec_str",
    "bool": "_s.dec_bool",
    "int32": "_s.dec_int32",
    "uint32": "_s.dec_uint32",
    "int64": "_s.dec_int64",
    "uint64": "_s.dec_uint64",
    "double": "_s.dec_double",
    "bytes": "_s.dec_bytes",
    "struct": "_s.dec_struct",
    "value": "_s.dec_value",
    "listvalue": "_s.dec_list_value",
    "timestamp": "Timestamp.parse",
}
_ENCODERS = {
    "int64": "_s.enc_int64",
    "uint64": "_s.enc_int64",
    "double": "_s.enc_double",
    "bytes": "_s.enc_bytes",
    "enum": "_v.enc_enum",
    "timestamp": "Timestamp.to_rfc3339",
}


def _codec(kind: str, element: str, enum_decoder: str) -> tuple[str, str, str]:
    """Return (decoder, encoder, inline type) of one element."""
    if kind == "message":
        return f"{element}.from_dict", f"{element}.to_dict", ""
    decoder = enum_decoder if kind == "enum" else _DECODERS[kind]
    inline = {"string": "str", "bool": "bool"}.get(kind, "")
    return decoder, _ENCODERS.get(kind, ""), inline


def _conditions(kind: str, cardinality: str, presence: str, required: bool) -> tuple[str, str, str]:
    """Return (enc_when, repr_when, missing_when) for a field."""
    if cardinality != "single" or presence == "implicit":
        shown = "not_zero" if kind == "enum" and cardinality == "single" else "truthy"
    else:
        shown = {"explicit": "not_none", "value": "not_unset"}[presence]
    written = "always" if required and shown in ("truthy", "not_zero") else shown
    missing = ""
    if required:
        if cardinality != "single" or kind in ("string", "bytes"):
            missing = "falsy"
        elif kind == "enum":
            missing = "zero"
        elif presence == "explicit":
            missing = "none"
    return written, shown, missing


def _shape(
    index: _Index, f: descriptor_pb2.FieldDescriptorProto, oneof: str
) -> tuple[str, str, str, str, str, str, str, str, str]:
    """(kind, py, zero, tdoc, cardinality, annotation, param, default, presence) of one field."""
    if f.label == FDP.LABEL_REPEATED and index.is_map_entry(f.type_name):
        entry = index.messages[f.type_name]
        kind, py, zero, tdoc = _element(index, entry.field[1])
        cardinality, annotation = "map", f"dict[str, {py}]"
        param, default, presence = f"dict[str, {py}] | None", "None", "implicit"
        tdoc = f"map of string to {tdoc}"
    elif f.label == FDP.LABEL_REPEATED:
        kind, py, zero, tdoc = _element(index, f)
        cardinality, annotation = "repeated", f"list[{py}]"
        param, default, presence = f"list[{py}] | None", "None", "implicit"
        tdoc = f"repeated {tdoc}"
    else:
        kind, py, zero, tdoc = _element(index, f)
        cardinality = "single"
        if kind == "value":
            presence, annotation, param, default = "value", "Any", "Any", "UNSET"
        elif f.proto3_optional or oneof or zero == "None":
            presence, annotation = "explicit", f"{py} | None"
            param, default = annotation, "None"
        else:
            presence, annotation, param, default = "implicit", py, py, zero
    return kind, py, zero, tdoc, cardinality, annotation, param, default, presence


def _field_doc(
    f: descriptor_pb2.FieldDescriptorProto, py_name: str, tdoc: str, kind: str, oneof: str
) -> str:
    """The structural docstring line of one field: proto name, number, JSON name, notes."""
    notes = [tdoc]
    if descriptors.is_required(f):
        notes.append("REQUIRED")
    if f.proto3_optional:
        notes.append("optional (``None`` when absent)")
    if oneof:
        notes.append(f"member of oneof ``{oneof}``")
    if kind == "value":
        notes.append("``UNSET`` when absent, ``None`` is JSON null")
    return (
        f"{py_name}: Field ``{f.name}`` = {f.number}, JSON ``{f.json_name}``; {', '.join(notes)}."
    )


def _field(
    index: _Index, owner: descriptor_pb2.DescriptorProto, f: descriptor_pb2.FieldDescriptorProto
) -> Field:
    required = descriptors.is_required(f)
    oneof = ""
    if f.HasField("oneof_index") and not f.proto3_optional:
        oneof = owner.oneof_decl[f.oneof_index].name
    shape = _shape(index, f, oneof)
    kind, py, zero, tdoc, cardinality, annotation, param, default, presence = shape
    py_name = naming.field_py_name(f.name)
    doc = _field_doc(f, py_name, tdoc, kind, oneof)
    enum_decoder = ""
    if kind == "enum":
        enum_decoder = f"_decode_{naming.snake_case(py)}"
    decoder, encoder, inline = _codec(kind, py, enum_decoder)
    enc_when, repr_when, missing_when = _conditions(kind, cardinality, presence, required)
    return Field(
        proto_name=f.name,
        py_name=py_name,
        json_name=f.json_name,
        alt_name=f.name if f.name != f.json_name else "",
        number=f.number,
        kind=kind,
        cardinality=cardinality,
        presence=presence,
        required=required,
        oneof=oneof,
        element=py,
        annotation=annotation,
        param=param,
        default=default,
        zero=zero,
        doc=doc,
        shape=f"{cardinality}-{presence}",
        decoder=decoder,
        encoder=encoder,
        inline_type=inline if cardinality == "single" else "",
        enc_when=enc_when,
        repr_when=repr_when,
        missing_when=missing_when,
        child=cardinality if kind == "message" else "",
        deep_copy=_deep_copy(kind, cardinality, f"self.{py_name}"),
    )


_CLASS_KINDS = frozenset({"message", "timestamp"})  # generated classes: their own __deepcopy__
_JSON_KINDS = frozenset({"struct", "value", "listvalue"})  # plain JSON values: _v.copy_json


def _deep_copy(kind: str, cardinality: str, value: str) -> str:
    """The expression copying ``value`` (a field's attribute) deeply, for ``__deepcopy__``.

    Scalars, enums and bytes are immutable and kept; lists and maps are new containers. Empty
    containers and absent values skip the comprehension or call (most fields of most messages).
    """
    one = ""
    if kind in _CLASS_KINDS:
        one = "x.__deepcopy__(memo)"
    elif kind in _JSON_KINDS:
        one = "_v.copy_json(x)"
    if cardinality == "map":
        return (
            f"{{k: {one} for k, x in {value}.items()}} if {value} else {{}}"
            if one
            else f"dict({value})"
        )
    if cardinality == "repeated":
        return f"[{one} for x in {value}] if {value} else []" if one else f"list({value})"
    if kind in _CLASS_KINDS:  # singular messages are None when absent
        return f"None if {value} is None else {value}.__deepcopy__(memo)"
    if kind == "value":  # UNSET when absent, None is JSON null
        return f"_v.copy_json({value})"
    if kind in _JSON_KINDS:
        return f"None if {value} is None else _v.copy_json({value})"
    return value


def _message(index: _Index, full_name: str, template: str) -> Message:
    m = index.messages[full_name]
    fields = tuple(_field(index, m, f) for f in m.field)
    wire_names = [n for f in fields for n in {f.json_name, f.alt_name} - {""}]
    if len(set(wire_names)) != len(wire_names):
        raise ModelError(f"two fields of {full_name} share a JSON or proto name")
    if len({f.py_name for f in fields}) != len(fields):
        raise ModelError(f"two fields of {full_name} share a Python name")
    oneofs = []
    for i, decl in enumerate(m.oneof_decl):
        members = [
            f
            for f, d in zip(fields, m.field, strict=True)
            if d.HasField("oneof_index") and d.oneof_index == i and not d.proto3_optional
        ]
        if members:
            oneofs.append(
                Oneof(
                    decl.name,
                    tuple(f.py_name for f in members),
                    tuple(f.json_name for f in members),
                )
            )
    doc = f"Proto message ``{full_name[1:]}``."
    return Message(full_name[1:], m.name, template, fields, tuple(oneofs), doc)


def _enum(full_name: str, e: descriptor_pb2.EnumDescriptorProto) -> Enum:
    values = tuple(
        EnumValue(naming.enum_member_name(e.name, v.name), v.name, v.number) for v in e.value
    )
    if len({v.py_name for v in values}) != len(values):
        raise ModelError(f"two members of {full_name} share a Python name")
    decoder = f"_decode_{naming.snake_case(e.name)}"
    doc = f"Proto enum ``{full_name[1:]}``; members carry their wire names, ``number`` the tag."
    return Enum(full_name[1:], e.name, values, decoder, doc)


def build(ds: descriptors.DescriptorSet, proto_sha256: str, generator_version: str) -> Module:
    """Build the IR for package ``lf.a2a.v1`` of ``ds``, plus the well-known classes it uses.

    Raises:
        ModelError: a construct cannot be represented or two names collide.
    """
    index = _Index(ds)
    target = ds.file(ds.target)
    if target.package != PACKAGE:
        raise ModelError(f"expected package {PACKAGE}, found {target.package}")
    messages = [_message(index, name, "_timestamp.j2") for name in CLASS_WKTS[:1]]
    messages.append(_message(index, CLASS_WKTS[1], "_message.j2"))
    for m in target.message_type:
        if m.nested_type and not all(n.options.map_entry for n in m.nested_type):
            raise ModelError(f"nested messages in {m.name} are not supported")
        messages.append(_message(index, f".{PACKAGE}.{m.name}", "_message.j2"))
    enums = [_enum(f".{PACKAGE}.{e.name}", e) for e in target.enum_type]
    names = [m.name for m in messages] + [e.name for e in enums]
    if len(set(names)) != len(names) or any(naming.is_reserved(n) for n in names):
        raise ModelError("a generated class name collides with another or with a builtin")
    if len(target.service) != 1:
        raise ModelError("expected exactly one service")
    service = target.service[0]
    methods = tuple(
        Method(
            name=r.name,
            py_name=naming.snake_case(r.name),
            const=naming.snake_case(r.name).upper(),
            params=_short(r.input_type),
            result=_short(r.output_type),
            streaming=r.server_streaming,
        )
        for r in service.method
    )
    return Module(
        proto_sha256=proto_sha256,
        generator_version=generator_version,
        messages=tuple(messages),
        enums=tuple(enums),
        methods=methods,
        service=f"{PACKAGE}.{service.name}",
    )
