"""Build step that pyproject.toml cannot express: ship the knowledge pages in the wheel.

The pages are written at the repository root (``knowledge/*.md``, next to AGENTS.md whose facts they
grew from) and copied into the built package as ``kernelcraft/knowledge/pages/``, where a
pip-installed kernelcraft finds them (``kernelcraft.knowledge._paths``). An editable install reads
the checkout's ``knowledge/`` directly, so nothing is copied there. MANIFEST.in puts the pages in
the sdist, so a wheel built from the sdist has them too.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


class build_py_with_knowledge(build_py):  # noqa: N801 - setuptools command naming
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        pages = sorted((ROOT / "knowledge").glob("*.md"))
        if not pages:
            raise SystemExit("knowledge/*.md not found beside setup.py: the wheel would ship without its pages")
        dest = Path(self.build_lib) / "kernelcraft" / "knowledge" / "pages"
        dest.mkdir(parents=True, exist_ok=True)
        for page in pages:
            shutil.copy2(page, dest / page.name)


setup(cmdclass={"build_py": build_py_with_knowledge})
