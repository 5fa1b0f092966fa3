"""OpenCV: `cv2/__init__.py` reads its config files next to itself, puts its own directory first
on sys.path, leaves sys.modules and imports `cv2` again, expecting the path finder to find
`cv2.abi3.so` in that directory. Then: drawing, a blur, edges, a PNG written and read back in
memory, and a video frame's colour conversion."""

import json


def main():
    import cv2
    import numpy as np

    image = np.zeros((120, 160, 3), np.uint8)
    cv2.circle(image, (80, 60), 30, (0, 200, 255), -1)
    cv2.rectangle(image, (5, 5), (40, 30), (255, 0, 0), 2)
    blurred = cv2.GaussianBlur(image, (5, 5), 0)
    edges = cv2.Canny(cv2.cvtColor(image, cv2.COLOR_BGR2GRAY), 50, 150)
    ok, png = cv2.imencode(".png", image)
    decoded = cv2.imdecode(png, cv2.IMREAD_COLOR)
    contours, _ = cv2.findContours(
        cv2.threshold(cv2.cvtColor(image, cv2.COLOR_BGR2GRAY), 10, 255, cv2.THRESH_BINARY)[1],
        cv2.RETR_EXTERNAL,
        cv2.CHAIN_APPROX_SIMPLE,
    )
    print(json.dumps({
        "version": cv2.__version__,
        "native": cv2._native.__file__ if hasattr(cv2, "_native") else None,
        "circle_pixel": image[60, 80].tolist(),
        "blurred_corner": int(blurred[0, 0].sum()),
        "edge_pixels": int(np.count_nonzero(edges)),
        "png_ok": bool(ok) and png.tobytes()[:4] == b"\x89PNG",
        "round_trip": bool((decoded == image).all()),
        "contours": len(contours),
    }))
