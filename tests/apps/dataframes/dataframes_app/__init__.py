"""pandas and pyarrow: a DataFrame with strings, integers, floats and time stamps written to a
Parquet file (pyarrow's C++ library from the archive), read back, grouped and summed."""

import json
import sys


def main():
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    frame = pd.DataFrame({
        "city": ["Oslo", "Lima", "Oslo", "Pune", "Lima"],
        "visits": [3, 5, 7, 11, 13],
        "ratio": [0.5, 1.25, 2.0, 0.75, 1.5],
        "when": pd.date_range("2024-01-01", periods=5, freq="D", tz="Europe/Oslo"),
    })
    path = sys.argv[1]
    frame.to_parquet(path, engine="pyarrow", index=False)
    back = pd.read_parquet(path)
    table = pq.read_table(path)
    totals = back.groupby("city")["visits"].sum().to_dict()
    print(json.dumps({
        "equal": bool(back.equals(frame)),
        "totals": totals,
        "mean_ratio": float(back["ratio"].mean()),
        "schema": [str(field.type) for field in table.schema],
        "rows": table.num_rows,
        "last": back["when"].iloc[-1].isoformat(),
        "arrow": pa.__version__,
    }))
