"""``python -m kernelcraft`` is the ``kernelcraft`` command."""

from kernelcraft.cli import main

main()
