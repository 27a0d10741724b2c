"""docs/prose-and-proto.md stays honest: every row names tests, and every named test exists.

A row's last column lists test ids (``tests/<path>.py::<name>`` or ``...::<Class>::<name>``).
An id is resolved by parsing the file with :mod:`ast` (nothing is imported), so a renamed or
deleted test fails here until the register is updated.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "prose-and-proto.md"
TEST_ID = re.compile(r"tests/[\w/]+\.py(?:::\w+)+")
ROW = re.compile(r"^\|\s*(\d+)\s*\|")


def rows(text: str) -> dict[int, str]:
    """The register's rows by number: the text of each row's last cell."""
    found: dict[int, str] = {}
    for line in text.splitlines():
        match = ROW.match(line)
        if match:
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            found[int(match[1])] = cells[-1]
    return found


def _defined(tree: ast.Module, path: list[str]) -> bool:
    body: list[ast.stmt] = tree.body
    for i, name in enumerate(path):
        last = i == len(path) - 1
        kinds = (ast.FunctionDef, ast.AsyncFunctionDef) if last else (ast.ClassDef,)
        node = next((n for n in body if isinstance(n, kinds) and n.name == name), None)
        if node is None:
            return False
        body = node.body if isinstance(node, ast.ClassDef) else []
    return True


def exists(test_id: str, root: Path = ROOT) -> bool:
    """Whether ``test_id`` names a test function defined in the repository."""
    file, *path = test_id.split("::")
    source = root / file
    if not source.is_file() or not path or not path[-1].startswith("test"):
        return False
    return _defined(ast.parse(source.read_text(encoding="utf-8")), path)


def test_rows_are_numbered_in_order() -> None:
    numbers = list(rows(DOC.read_text(encoding="utf-8")))
    assert numbers == list(range(1, len(numbers) + 1))
    assert len(numbers) >= 45


def test_every_row_names_a_test() -> None:
    bare = [
        n for n, cell in rows(DOC.read_text(encoding="utf-8")).items() if not TEST_ID.search(cell)
    ]
    assert bare == [], f"rows without a test id: {bare}"


def test_every_named_test_exists() -> None:
    missing = [
        (number, test_id)
        for number, cell in rows(DOC.read_text(encoding="utf-8")).items()
        for test_id in TEST_ID.findall(cell)
        if not exists(test_id)
    ]
    assert missing == [], f"rows naming tests that do not exist: {missing}"


@pytest.mark.parametrize(
    ("test_id", "found"),
    [
        ("tests/test_prose_and_proto.py::test_every_named_test_exists", True),
        ("tests/test_prose_and_proto.py::test_no_such_test", False),
        ("tests/no_such_file.py::test_x", False),
        ("tests/test_prose_and_proto.py::rows", False),  # not a test
        ("tests/test_prose_and_proto.py::exists", False),
    ],
)
def test_resolver(test_id: str, found: bool) -> None:
    assert exists(test_id) is found


def test_resolver_follows_classes(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text(
        "class TestA:\n    def test_b(self):\n        pass\n\nasync def test_c():\n    pass\n"
    )
    assert exists("tests/test_x.py::TestA::test_b", tmp_path)
    assert exists("tests/test_x.py::test_c", tmp_path)
    assert not exists("tests/test_x.py::TestA::test_c", tmp_path)
    assert not exists("tests/test_x.py::test_b", tmp_path)


def test_rows_parser_reads_the_last_cell() -> None:
    text = "| # | a | Test |\n|---|---|---|\n| 1 | x | `tests/a.py::test_b` |\n| 2 | y | TODO |\n"
    assert rows(text) == {1: "`tests/a.py::test_b`", 2: "TODO"}
    assert TEST_ID.findall(rows(text)[1]) == ["tests/a.py::test_b"]
