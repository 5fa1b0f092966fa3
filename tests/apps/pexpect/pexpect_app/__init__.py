"""pexpect: a child `sys.executable -c CODE` on a pty, whose code imports getpass, which nothing
else of the app imports: the build follows the imports of code held in a string. The child asks
for a password on its terminal (getpass: echo off), pexpect answers it."""

import json
import sys

CHILD = "import getpass; p = getpass.getpass('Password: '); print('got', len(p), p[::-1])"


def main():
    import pexpect

    child = pexpect.spawn(sys.executable, ["-c", CHILD], encoding="utf-8", timeout=60)
    child.expect("Password: ")
    child.sendline("s3cret")
    child.expect(r"got (\d+) (\S+)")
    length, reversed_ = child.match.group(1), child.match.group(2)
    child.expect(pexpect.EOF)
    child.close()
    print(json.dumps({
        "length": int(length),
        "reversed": reversed_,
        "status": child.exitstatus,
        "getpass_imported_here": "getpass" in sys.modules,
    }))
