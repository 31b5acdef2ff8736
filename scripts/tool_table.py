"""Prints README.md's tool table from schemas/*.json, or rewrites it in place with --write.

Usage: python3 scripts/tool_table.py [--write]

The tool, title and parameters columns come from the schemas: every parameter, in the schema's
order, required ones in bold, and the fields of an array's objects in parentheses after it
(`edits`). The returns column is prose, not in the schemas: each row keeps the one README.md
has, and a new tool gets a placeholder to fill in. Rows keep README's order; new tools go last.
tests/it/docs.rs checks the table against the schemas the same way, so it fails until this is
run (or the table is fixed by hand).
"""

from __future__ import annotations

import json
import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
HEADER = "| tool | title | parameters | returns |"


def params(schema: dict) -> str:
    required = set(schema.get("required", []))
    out = []
    for name, prop in schema.get("properties", {}).items():
        cell = f"**`{name}`**" if name in required else f"`{name}`"
        nested = prop.get("items", {}) if prop.get("type") == "array" else prop
        if nested.get("properties"):
            cell += f" ({params(nested)})"
        out.append(cell)
    return ", ".join(out) or "–"


def cells(row: str) -> list[str]:
    """A table row's cells; `\\|` inside a cell is not a separator."""
    parts, cur, prev = [], "", ""
    for ch in row.strip()[1:-1]:
        if ch == "|" and prev != "\\":
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
        prev = ch
    parts.append(cur.strip())
    return parts


def main() -> int:
    write = sys.argv[1:] == ["--write"]
    if sys.argv[1:] not in ([], ["--write"]):
        print(__doc__, file=sys.stderr)
        return 2
    schemas = {}
    for name in sorted(os.listdir(os.path.join(ROOT, "schemas"))):
        if name.endswith(".json"):
            with open(os.path.join(ROOT, "schemas", name), encoding="utf-8") as f:
                d = json.load(f)
            schemas[d["name"]] = d
    readme_path = os.path.join(ROOT, "README.md")
    with open(readme_path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    start = lines.index(HEADER)
    end = start + 2
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    returns = {}
    for row in lines[start + 2 : end]:
        c = cells(row)
        returns[c[0].strip("`")] = c[3]
    order = [t for t in returns if t in schemas] + [t for t in schemas if t not in returns]
    table = [HEADER, "|---|---|---|---|"]
    for tool in order:
        d = schemas[tool]
        ret = returns.get(tool, "TODO: what it returns")
        table.append(f"| `{tool}` | {d['title']} | {params(d['inputSchema'])} | {ret} |")
    if write:
        lines[start:end] = table
        with open(readme_path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines))
    else:
        print("\n".join(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
