"""numpy: a float64 matrix product (cblas_dgemm in OpenBLAS, the library numpy.libs carries and
_multiarray_umath needs through its $ORIGIN rpath), checked entry by entry against plain Python,
an inverse (LAPACK in OpenBLAS through _umath_linalg), an FFT and a random generator."""

import json


def main():
    import numpy as np

    rng = np.random.default_rng(20240506)
    a = rng.standard_normal((256, 256))
    b = rng.standard_normal((256, 256))
    c = a @ b
    worst = max(abs(c[i, j] - sum(float(a[i, k]) * float(b[k, j]) for k in range(256)))
                for i, j in [(0, 0), (17, 42), (128, 3), (255, 255)])
    inverse = np.linalg.inv(a)
    spectrum = np.fft.rfft(np.sin(2 * np.pi * 5 * np.arange(64) / 64))
    with open("/proc/self/maps") as maps:
        mapped = sorted({line.split(None, 5)[5].strip() for line in maps
                         if len(line.split(None, 5)) == 6})
    blas = np.__config__.CONFIG["Build Dependencies"]["blas"]
    print(json.dumps({
        "version": np.__version__,
        "matmul_error": worst,
        "identity": bool(np.allclose(a @ inverse, np.eye(256), atol=1e-8)),
        "fft_peak": int(np.argmax(np.abs(spectrum))),
        "blas": blas["name"],
        "umath": np._core._multiarray_umath.__file__,
        "memfds": [entry for entry in mapped if "memfd:" in entry],
    }))
