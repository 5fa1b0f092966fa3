"""An executable that carries pip runs `sys.executable -m pip --version` (a self-call in Python
mode: pip from the executable's archive) and `sys.executable -c ...`, and prints what they said."""

import json
import subprocess
import sys


def main():
    pip = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True,
                         text=True, timeout=60)
    code = subprocess.run([sys.executable, "-I", "-c", "import pip, sys; print(pip.__file__);"
                           "print(sys.argv)", "one", "two"], capture_output=True, text=True,
                          timeout=60)
    print(json.dumps({
        "executable": sys.executable,
        "pip": [pip.returncode, pip.stdout, pip.stderr],
        "code": [code.returncode, code.stdout, code.stderr],
    }))
