"""Build-time generator: the pinned ``a2a.proto`` becomes the value classes in ``generated/``.

Three stages, one module each: :mod:`codegen.descriptors` runs protoc and returns descriptors,
:mod:`codegen.model` turns them into a frozen IR, :mod:`codegen.render` prints the IR through
Jinja2 templates. Nothing under ``generated/`` or ``runtime/`` imports this package.
"""

GENERATOR_VERSION = "1"
PROTO_SHA256 = "e195bf96ab630c69797851970203e1b2b6b19528f2e9803b7d904b91a5104016"
PROTO_URL = "https://raw.githubusercontent.com/a2aproject/A2A/v1.0.1/specification/a2a.proto"
