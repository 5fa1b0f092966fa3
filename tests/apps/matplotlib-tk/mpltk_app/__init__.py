"""matplotlib embedded in a tkinter window: FigureCanvasTkAgg, whose `_tkagg` finds Tcl/Tk's
functions with `dlopen(_tkinter.__file__)` (a path inside the executable). The figure fills the
window: white, a red rectangle, a blue disc, "ingot" in DejaVu Sans. The window stays up until the
test has taken its screenshot: `mpltk-app DIR` writes DIR/ready (with what it drew), then waits
for DIR/done."""

import json
import os
import sys


def main():
    import tkinter

    import matplotlib

    matplotlib.use("TkAgg")
    from matplotlib.backends.backend_tkagg import FigureCanvasTkAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Circle, Rectangle

    directory = sys.argv[1]
    root = tkinter.Tk()
    root.title("ingot matplotlib-tk")
    root.resizable(False, False)
    figure = Figure(figsize=(2, 1.2), dpi=100, facecolor="white")
    axes = figure.add_axes((0, 0, 1, 1))
    axes.set_axis_off()
    axes.set_xlim(0, 200)
    axes.set_ylim(120, 0)
    axes.add_patch(Rectangle((20, 20), 100, 60, facecolor="#c81e1e", linewidth=0,
                             antialiased=False))
    axes.add_patch(Circle((160, 60), 20, facecolor="#1e3cc8", linewidth=0, antialiased=False))
    axes.text(20, 112, "ingot", color="black", fontsize=12)
    canvas = FigureCanvasTkAgg(figure, master=root)
    canvas.draw()
    widget = canvas.get_tk_widget()
    widget.configure(highlightthickness=0, borderwidth=0)
    widget.pack()
    root.update()
    report = {
        "backend": matplotlib.get_backend(),
        "size": [root.winfo_width(), root.winfo_height()],
        "tkagg": sys.modules["matplotlib.backends._tkagg"].__file__,
    }

    def announce():
        with open(os.path.join(directory, "ready.tmp"), "w") as file:
            json.dump(report, file)
        os.rename(os.path.join(directory, "ready.tmp"), os.path.join(directory, "ready"))

    def poll():
        if os.path.exists(os.path.join(directory, "done")):
            root.destroy()
        else:
            root.after(50, poll)

    root.after(300, announce)
    root.after(50, poll)
    root.after(60000, root.destroy)
    root.mainloop()
    print(json.dumps(report))
