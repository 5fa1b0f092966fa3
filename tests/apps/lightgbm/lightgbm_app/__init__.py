"""LightGBM trains a small regression (two threads, OpenMP) and predicts; reports where its
library and the OpenMP runtime were loaded from."""

import json


def main():
    import lightgbm as lgb
    import numpy as np

    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 3))
    y = 3 * x[:, 0] - 2 * x[:, 1] + rng.normal(scale=0.1, size=400)
    params = {"objective": "regression", "verbose": -1, "num_threads": 2, "seed": 1}
    booster = lgb.train(params, lgb.Dataset(x, label=y), num_boost_round=40)
    residual = booster.predict(x) - y
    r2 = 1 - float((residual**2).sum() / ((y - y.mean()) ** 2).sum())
    with open("/proc/self/maps") as maps:
        mapped = {line.split(None, 5)[5].strip() for line in maps if len(line.split(None, 5)) == 6}
    print(json.dumps({
        "trees": booster.num_trees(),
        "fits": r2 > 0.9,
        "version": lgb.__version__,
        "libraries": sorted(
            path for path in mapped if "lightgbm" in path or "gomp" in path
        ),
    }))
