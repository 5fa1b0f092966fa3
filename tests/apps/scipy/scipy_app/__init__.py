"""SciPy: a linear system (LAPACK from OpenBLAS), a minimization, a quadrature, a special
function and a sparse solve."""

import json


def main():
    import numpy as np
    from scipy import integrate, linalg, optimize, sparse, special
    from scipy.sparse.linalg import spsolve

    a = np.array([[3.0, 2.0, -1.0], [2.0, -2.0, 4.0], [-1.0, 0.5, -1.0]])
    solution = linalg.solve(a, np.array([1.0, -2.0, 0.0]))
    minimum = optimize.minimize(optimize.rosen, [1.3, 0.7, 0.8], method="BFGS")
    area, _ = integrate.quad(np.sin, 0, np.pi)
    laplacian = sparse.diags([-1, 2, -1], [-1, 0, 1], shape=(5, 5), format="csc")
    print(json.dumps({
        "solve": [round(value, 6) for value in solution],
        "rosen": [round(value, 4) for value in minimum.x],
        "quad": round(area, 9),
        "gamma": float(special.gamma(5)),
        "sparse": [round(value, 6) for value in spsolve(laplacian, np.ones(5))],
        "eigvals": [round(value, 6) for value in sorted(linalg.eigvalsh(laplacian.toarray()))][:2],
    }))
