"""Stage 1: run grpcio-tools' protoc on the pinned proto and return its descriptors.

The proto imports ``google/api/*.proto`` (shipped by googleapis-common-protos) and the well-known
types (shipped inside grpcio-tools); both folders are put on protoc's include path. Importing
``field_behavior_pb2`` registers the ``google.api.field_behavior`` extension so that the REQUIRED
markers are readable from the parsed field options.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import google.api
import grpc_tools
from google.api import field_behavior_pb2
from google.protobuf import descriptor_pb2
from grpc_tools import protoc


class ProtocError(Exception):
    """protoc refused the proto."""


@dataclass(frozen=True)
class DescriptorSet:
    """The compiled proto: every file protoc produced, and the name of the pinned one."""

    files: tuple[descriptor_pb2.FileDescriptorProto, ...]
    target: str

    def file(self, name: str) -> descriptor_pb2.FileDescriptorProto:
        """Return the file descriptor called ``name``.

        Raises:
            KeyError: no such file was compiled.
        """
        for f in self.files:
            if f.name == name:
                return f
        raise KeyError(name)


def _include_paths() -> list[str]:
    googleapis_root = Path(next(iter(google.api.__path__))).parent.parent
    wkt_root = Path(next(iter(grpc_tools.__path__))) / "_proto"
    return [str(googleapis_root), str(wkt_root)]


def compile_proto(proto: Path) -> DescriptorSet:
    """Compile ``proto`` (with imports and source info) into a :class:`DescriptorSet`.

    Raises:
        ProtocError: protoc exits non-zero.
    """
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "set.pb"
        args = ["protoc", f"-I{proto.parent}"]
        args += [f"-I{p}" for p in _include_paths()]
        args += ["--include_imports", "--include_source_info"]
        args += [f"--descriptor_set_out={out}", str(proto)]
        if protoc.main(args) != 0:
            raise ProtocError(f"protoc failed on {proto}")
        fds = descriptor_pb2.FileDescriptorSet()
        fds.ParseFromString(out.read_bytes())
    return DescriptorSet(files=tuple(fds.file), target=proto.name)


def is_required(field: descriptor_pb2.FieldDescriptorProto) -> bool:
    """Whether ``field`` carries ``(google.api.field_behavior) = REQUIRED``."""
    behaviors = field.options.Extensions[field_behavior_pb2.field_behavior]
    return field_behavior_pb2.FieldBehavior.REQUIRED in behaviors
