"""The type hints are checked: mypy --strict (for Python 3.10, the oldest supported) over the
package and its generator, and a plain check of the tests and the example, when mypy is
installed (.ci/run installs Debian's); and every public annotation resolves at run time."""

from __future__ import annotations

import inspect
import shutil
import subprocess
import typing
import unittest

import ledger_client as lc

from . import support as s


class Mypy(unittest.TestCase):
    def mypy(self, *args: str) -> None:
        exe = shutil.which("mypy")
        if exe is None:
            self.skipTest("mypy is not installed (apt-get install mypy): the type hints were not checked")
        r = subprocess.run([exe, "--python-version", "3.10", "--no-error-summary", *args],
                           cwd=s.SDK, capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_package_is_strictly_typed(self) -> None:
        self.mypy("--strict", "ledger_client", "tools")

    def test_tests_and_example_type_check(self) -> None:
        self.mypy("--check-untyped-defs", "tests", str(s.REPO / "examples" / "worker-py"))


class Annotations(unittest.TestCase):
    def test_every_public_annotation_resolves(self) -> None:
        n = 0
        for name in dir(lc):
            obj = getattr(lc, name)
            if name.startswith("_") or not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            targets = [obj] + [m for _, m in inspect.getmembers(obj, inspect.isfunction)] if inspect.isclass(obj) else [obj]
            for t in targets:
                if getattr(t, "__module__", "").startswith("ledger_client"):
                    typing.get_type_hints(t)
                    n += 1
        self.assertGreater(n, 100)
        self.assertIn("PyTyped", "PyTyped" if (s.SDK / "ledger_client" / "py.typed").exists() else "")


if __name__ == "__main__":
    unittest.main()
