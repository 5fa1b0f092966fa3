"""tkinter: a real window on the X server in $DISPLAY, drawn on a Tk canvas. `import tkinter` is
a module the defaults leave out (carried because it is imported); Tcl and Tk are the runtime's,
static in `_tkinter`, and read their script libraries (init.tcl, tk.tcl, encodings) by path, so
the build gives tkinter real files; libX11 is the system's. The window stays up until the test
has taken its screenshot: `tkinter-app DIR` writes DIR/ready (with what it drew), then waits for
DIR/done."""

import json
import os
import sys
import tkinter


def main():
    directory = sys.argv[1]
    root = tkinter.Tk()
    root.title("ingot tkinter")
    root.resizable(False, False)
    canvas = tkinter.Canvas(
        root, width=200, height=120, background="white", highlightthickness=0, borderwidth=0
    )
    canvas.pack()
    canvas.create_rectangle(20, 20, 120, 80, fill="#c81e1e", width=0)
    canvas.create_oval(140, 40, 180, 80, fill="#1e3cc8", width=0)
    canvas.create_text(20, 90, text="ingot", anchor="nw", fill="black")
    root.update()
    report = {
        "windowing": root.tk.call("tk", "windowingsystem"),
        "tk": root.tk.call("info", "patchlevel"),
        "size": [root.winfo_width(), root.winfo_height()],
        "library": root.tk.call("info", "library"),
        "encoding": root.tk.call("encoding", "system"),
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

    root.after(300, announce)  # (once the window is mapped and drawn)
    root.after(50, poll)
    root.after(60000, root.destroy)
    root.mainloop()
    print(json.dumps(report))
