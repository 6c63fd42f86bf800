"""Every SQL statement the service sends is written in connectapi/storage or in the budgets'
package (its statements and SQL functions): the architecture page says so, and a reader
looking for what touches a table greps two places."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).parents[2] / "connectapi"
ALLOWED = (PACKAGE / "storage", PACKAGE / "budgets")
# Not statements: patterns that read a pg_dump archive's lines (a backup's checks).
NOT_STATEMENTS = {PACKAGE / "domain" / "record_archive.py"}
# As the house writes SQL: keywords in capitals.
STATEMENT = re.compile(r"^\s*(SELECT\b.+\bFROM\b|INSERT INTO\b|UPDATE \w+ .*\bSET\b|DELETE FROM\b|WITH \w+ AS \()",
                       re.DOTALL)


def statement_lines(source: str) -> list[int]:
    """The lines of string literals (f-strings by their literal parts) that are statements."""
    tree = ast.parse(source)
    parts = {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in parts:
            text = node.value
        elif isinstance(node, ast.JoinedStr):
            text = "".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
        else:
            continue
        if STATEMENT.match(text):
            found.append(node.lineno)
    return sorted(found)


def test_no_sql_statement_outside_storage() -> None:
    outside = [f"{path.relative_to(PACKAGE.parent)}:{line}" for path in sorted(PACKAGE.rglob("*.py"))
               if not any(root in path.parents for root in ALLOWED) and path not in NOT_STATEMENTS
               for line in statement_lines(path.read_text())]
    assert outside == []


def test_the_check_finds_a_statement_where_it_is_written() -> None:
    source = ('A = "SELECT mode FROM properties WHERE id = $1"\n'
              'B = f"""UPDATE leases SET until = {1} WHERE key = $1"""\n'
              'C = "Select the plan from the list, or update it"\n'
              'D = "WITH gone AS (DELETE FROM leases) SELECT 1"\n')
    assert statement_lines(source) == [1, 2, 4]
