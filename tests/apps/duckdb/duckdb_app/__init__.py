"""DuckDB (C++): SQL over a table, a window function, and a query over a Python list."""

import json


def main():
    import duckdb

    db = duckdb.connect()
    db.execute("CREATE TABLE t (k VARCHAR, v INTEGER)")
    db.executemany("INSERT INTO t VALUES (?, ?)", [("a", 1), ("b", 2), ("a", 3), ("c", 4)])
    grouped = db.execute("SELECT k, SUM(v) FROM t GROUP BY k ORDER BY k").fetchall()
    ranked = db.execute(
        "SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) FROM t ORDER BY k, v"
    ).fetchall()
    squares = db.execute("SELECT SUM(x * x) FROM unnest(?::INTEGER[]) AS u(x)", [[1, 2, 3]]).fetchone()
    print(json.dumps({
        "grouped": grouped,
        "ranked": ranked,
        "squares": squares[0],
        "version": duckdb.__version__,
    }))
