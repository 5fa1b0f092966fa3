# /// script
# dependencies = ["scipy==1.14.1", "numpy==2.1.3"]
# ///
"""The scipy workload of bench/peers.py (issue 42): a big scientific app. Dense linear algebra,
BFGS, a sparse solve, quadrature and a normal CDF; one line of rounded results."""

import numpy as np
import scipy.integrate
import scipy.linalg
import scipy.optimize
import scipy.sparse
import scipy.sparse.linalg
import scipy.stats


def main() -> None:
    n = 200
    i = np.arange(n)
    a = 1.0 / (1.0 + np.abs(i[:, None] - i[None, :])) + n * np.eye(n)  # symmetric, definite
    b = np.cos(i)
    x = scipy.linalg.solve(a, b, assume_a="pos")
    w = scipy.linalg.eigh(a, eigvals_only=True)

    x0 = np.array([1.3, 0.7, 0.8, 1.9, 1.2])
    opt = scipy.optimize.minimize(
        scipy.optimize.rosen, x0, method="BFGS", jac=scipy.optimize.rosen_der
    )

    m = 1000  # 1-D Poisson: tridiagonal (-1, 2, -1), b = 1
    lap = scipy.sparse.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(m, m), format="csc")
    u = scipy.sparse.linalg.spsolve(lap, np.ones(m))

    q, _ = scipy.integrate.quad(lambda t: np.exp(-t * t), -np.inf, np.inf)
    cdf = scipy.stats.norm.cdf(1.96)

    print(
        f"solve {x.sum():.6f} eigh {w[0]:.6f} {w[-1]:.6f} bfgs {opt.success} "
        f"{' '.join(f'{v:.4f}' for v in opt.x)} sparse {u[m // 2]:.3f} quad {q:.6f} "
        f"cdf {cdf:.6f}"
    )


if __name__ == "__main__":
    main()
