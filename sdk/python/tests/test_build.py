"""The package builds with nothing from a package index: the in-tree PEP 517 backend writes
the wheel and the sdist with the standard library (pip, when present, builds it with
--no-index and build isolation), and the installed wheel imports with its py.typed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest
import zipfile

import ledger_client as lc

from . import support as s

BACKEND = """
import sys
sys.path.insert(0, {tools!r})
import ledger_build
print(ledger_build.build_wheel({out!r}))
print(ledger_build.build_sdist({out!r}))
"""


class Build(unittest.TestCase):
    def setUp(self) -> None:
        self.out = tempfile.mkdtemp(prefix="ledger-py-build-")
        self.addCleanup(shutil.rmtree, self.out, True)

    def test_backend_builds_wheel_and_sdist_that_install(self) -> None:
        r = subprocess.run([sys.executable, "-c", BACKEND.format(tools=str(s.SDK / "tools"), out=self.out)],
                           capture_output=True, text=True, check=True)
        wheel, sdist = r.stdout.split()
        self.assertEqual(wheel, "ledger_client-%s-py3-none-any.whl" % lc.__version__)
        with zipfile.ZipFile(os.path.join(self.out, wheel)) as z:
            names = set(z.namelist())
            self.assertIn("ledger_client/py.typed", names)
            self.assertIn("ledger_client/wire.py", names)
            self.assertIn("ledger_client-%s.dist-info/RECORD" % lc.__version__, names)
            meta = z.read("ledger_client-%s.dist-info/METADATA" % lc.__version__).decode()
            self.assertIn("Requires-Python: >=3.10", meta)
            self.assertNotIn("Requires-Dist", meta)  # standard library only
            site = os.path.join(self.out, "site")
            z.extractall(site)
        with tarfile.open(os.path.join(self.out, sdist)) as t:
            self.assertIn("ledger_client-%s/pyproject.toml" % lc.__version__, t.getnames())
        # The installed copy imports on its own, from another directory.
        r = subprocess.run([sys.executable, "-c", "import ledger_client as lc; print(lc.__file__, lc.__version__)"],
                           cwd=self.out, env=dict(os.environ, PYTHONPATH=site), capture_output=True, text=True, check=True)
        self.assertTrue(r.stdout.startswith(site), r.stdout)

    def test_pip_builds_without_an_index(self) -> None:
        probe = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True)
        if probe.returncode != 0:
            self.skipTest("pip is not installed for %s" % sys.executable)
        r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-index", "--no-deps", "-q", "-w", self.out,
                            str(s.SDK)], capture_output=True, text=True,
                           env=dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1"))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertTrue(any(n.endswith(".whl") for n in os.listdir(self.out)))

    def test_versions_agree(self) -> None:
        text = (s.SDK / "pyproject.toml").read_text()
        self.assertIn('version = "%s"' % lc.__version__, text)
        self.assertIn('requires = []', text)


if __name__ == "__main__":
    unittest.main()
