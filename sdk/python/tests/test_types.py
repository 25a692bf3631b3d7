"""The type hints are checked: one mypy --strict run (for Python 3.10, the oldest supported)
over the package, its tools, the tests and examples/worker-py, which use the package as a
typed consumer does (so a name the package does not export fails too), when mypy is
installed (.ci/run installs Debian's); and every public annotation resolves at run time."""

from __future__ import annotations

import atexit
import inspect
import shutil
import subprocess
import typing
import unittest

import ledger_client as lc

from . import support as s


def _start_mypy() -> "typing.Optional[subprocess.Popen[str]]":
    exe = shutil.which("mypy")
    if exe is None:
        return None
    return subprocess.Popen([exe, "--strict", "--python-version", "3.10", "--no-error-summary",
                             "ledger_client", "tools", "tests", str(s.REPO / "examples" / "worker-py")],
                            cwd=s.SDK, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


# Started when the tests are loaded, so that it runs while the others wait on the server;
# stopped at exit when no test waited for it (a run narrowed with -k).
_MYPY = _start_mypy()


@atexit.register
def _stop_mypy() -> None:
    if _MYPY is not None and _MYPY.poll() is None:
        _MYPY.kill()
        _MYPY.wait()


class Mypy(unittest.TestCase):
    def test_strict(self) -> None:
        if _MYPY is None:
            self.skipTest("mypy is not installed (apt-get install mypy): the type hints were not checked")
        out, _ = _MYPY.communicate(timeout=300)
        self.assertEqual(_MYPY.returncode, 0, out)


class Annotations(unittest.TestCase):
    def test_every_public_annotation_resolves(self) -> None:
        n = 0
        for name in lc.__all__:
            obj = getattr(lc, name)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            targets = [obj]
            if inspect.isclass(obj):
                targets += [m for _, m in inspect.getmembers(obj, inspect.isfunction)]
            for t in targets:
                if getattr(t, "__module__", "").startswith("ledger_client"):
                    typing.get_type_hints(t)
                    n += 1
        self.assertGreater(n, 100)
        self.assertTrue((s.SDK / "ledger_client" / "py.typed").exists())
        self.assertEqual(sorted(set(lc.__all__)), sorted(lc.__all__))  # no name twice


if __name__ == "__main__":
    unittest.main()
