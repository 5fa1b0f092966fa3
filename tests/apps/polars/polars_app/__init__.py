"""Polars (Rust): a group-by, a join and a SQL query over dataframes."""

import json


def main():
    import polars as pl

    sales = pl.DataFrame({"shop": ["a", "b", "a", "c", "b"], "amount": [10, 20, 30, 40, 50]})
    shops = pl.DataFrame({"shop": ["a", "b", "c"], "city": ["Oslo", "Lima", "Pune"]})
    totals = sales.group_by("shop").agg(pl.col("amount").sum()).sort("shop")
    joined = totals.join(shops, on="shop").sort("amount", descending=True)
    sql = pl.SQLContext(sales=sales).execute(
        "SELECT shop, COUNT(*) AS n FROM sales GROUP BY shop ORDER BY shop", eager=True
    )
    print(json.dumps({
        "totals": totals.rows(),
        "cities": joined["city"].to_list(),
        "sql": sql.rows(),
        "lazy": sales.lazy().filter(pl.col("amount") > 25).select(pl.len()).collect().item(),
    }))
