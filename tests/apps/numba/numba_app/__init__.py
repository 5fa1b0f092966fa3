"""numba compiles functions with LLVM (llvmlite's library, which it loads by path through
ctypes) and runs them on NumPy arrays."""

import json


def main():
    import numba
    import numpy as np
    from llvmlite import binding

    @numba.njit
    def total(values):
        result = 0.0
        for value in values:
            result += value * value
        return result

    @numba.vectorize(["float64(float64, float64)"])
    def hypot(x, y):
        return (x * x + y * y) ** 0.5

    print(json.dumps({
        "total": total(np.arange(10.0)),
        "hypot": hypot(np.array([3.0, 5.0]), np.array([4.0, 12.0])).tolist(),
        "compiled": len(total.signatures),
        "llvm": ".".join(map(str, binding.llvm_version_info[:1])) != "",
        "version": numba.__version__,
    }))
