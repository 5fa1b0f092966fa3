"""matplotlib with the Agg backend: a line plot with a title, labels and a legend (text drawn
with the bundled DejaVu font) saved as a PNG file, which is read back with Pillow."""

import json
import sys


def main():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib import font_manager
    from PIL import Image

    figure, axes = plt.subplots(figsize=(4, 3), dpi=100)
    x = np.linspace(0, 2 * np.pi, 50)
    axes.plot(x, np.sin(x), label="sin")
    axes.set_title("From memory")
    axes.set_xlabel("x")
    axes.legend()
    path = sys.argv[1] + "/plot.png"
    figure.savefig(path)
    with Image.open(path) as image:
        size, mode = list(image.size), image.mode
        colors = len(image.getcolors(maxcolors=1 << 20) or [])
    print(json.dumps({
        "backend": matplotlib.get_backend(), "size": size, "mode": mode,
        "many_colors": colors > 50,
        "font": font_manager.FontProperties(family="DejaVu Sans").get_family(),
        "font_file": font_manager.findfont("DejaVu Sans").rsplit("/", 1)[-1],
    }))
