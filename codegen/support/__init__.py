"""Hand-written modules that ``codegen`` copies into ``generated/`` (see :mod:`codegen.render`).

Each file here becomes the file of the same name in ``generated/``, below the do-not-edit stamp,
byte for byte otherwise. They are checked here like any other source (ruff, mypy strict) and, as
generated code, import only the standard library; nothing imports them from this package.
"""
