"""Build ``forewarn-vm.pyz``: the VM side of a forewarn wheel as one file (standard
``zipapp``), run by any ``python3`` >= 3.11 with nothing else installed
(``python3 -I forewarn-vm.pyz agent run -c agent.toml``).

It holds the packages of the VM wing (``forewarn/__init__.py`` names them), the table of
the emulator's commands (so ``--help`` lists them and each names the ``[server]`` extra),
and the wheel's metadata (``--version``). Usage: vm_zipapp.py WHEEL OUT.pyz
"""

from __future__ import annotations

import sys
import tempfile
import zipapp
import zipfile
from pathlib import Path

#: What of the wheel the VM side is: the root's modules, its packages, the emulator's
#: command table (a click-free module) and the metadata.
VM_FILES = ("forewarn/__init__.py", "forewarn/__main__.py", "forewarn/script.py",
            "forewarn/py.typed", "forewarn/cli/__init__.py",
            "forewarn/cli/commands.py")  # fmt: skip
VM_PACKAGES = ("forewarn/vm/", "forewarn/client/", "forewarn/agent/", "forewarn/conformance/",
               "forewarn/contract/")  # fmt: skip

MAIN = """from forewarn.script import main

main(prog_name="forewarn")
"""


def wanted(name: str) -> bool:
    if name.endswith("/") or "__pycache__" in name:
        return False
    if ".dist-info/" in name:
        return name.endswith("/METADATA")
    return name in VM_FILES or name.startswith(VM_PACKAGES)


def build(wheel: Path, out: Path) -> None:
    with tempfile.TemporaryDirectory() as work, zipfile.ZipFile(wheel) as archive:
        tree = Path(work)
        names = [name for name in archive.namelist() if wanted(name)]
        archive.extractall(tree, names)
        (tree / "__main__.py").write_text(MAIN, encoding="utf-8")
        zipapp.create_archive(tree, out, interpreter="/usr/bin/env python3", compressed=True)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    build(Path(sys.argv[1]), Path(sys.argv[2]))
