"""The package builds with nothing from a package index: the in-tree PEP 517 backend writes
the wheel and the sdist with the standard library (pip, when present, builds it with
--no-index and build isolation), and the installed wheel imports with its py.typed."""

from __future__ import annotations

import atexit
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


def _start_pip() -> "tuple[subprocess.Popen[str], str] | None":
    if subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode != 0:
        return None
    out = tempfile.mkdtemp(prefix="ledger-py-pip-")
    atexit.register(shutil.rmtree, out, True)
    p = subprocess.Popen([sys.executable, "-m", "pip", "wheel", "--no-index", "--no-deps", "-q", "-w", out,
                          str(s.SDK)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         env=dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1"))


    def stop() -> None:
        if p.poll() is None:
            p.kill()
            p.wait()

    atexit.register(stop)
    return p, out


# Started when the tests are loaded, so that it runs while the others wait on the server.
_PIP = _start_pip()


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
        if _PIP is None:
            self.skipTest("pip is not installed for %s" % sys.executable)
        p, out = _PIP
        log, _ = p.communicate(timeout=300)
        self.assertEqual(p.returncode, 0, log)
        self.assertTrue(any(n.endswith(".whl") for n in os.listdir(out)))

    def test_versions_agree(self) -> None:
        text = (s.SDK / "pyproject.toml").read_text()
        self.assertIn('version = "%s"' % lc.__version__, text)
        self.assertIn('requires = []', text)


if __name__ == "__main__":
    unittest.main()
