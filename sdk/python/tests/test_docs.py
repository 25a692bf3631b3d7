"""docs/runtimes.md "Write a runtime in Python" runs as written: its program and its
examples/worker-py command, against the real server; and the README's section links to it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import unittest
from typing import Dict, List

from . import support as s

SECTION = "## Write a runtime in Python"


def section(path: str) -> str:
    text = (s.REPO / path).read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    return text[start:] if end < 0 else text[start:end]


def blocks(text: str, lang: str) -> List[str]:
    return re.findall(r"```%s\n(.*?)```" % lang, text, re.S)


class Docs(unittest.TestCase):
    def env(self) -> Dict[str, str]:
        srv = s.server()
        return dict(os.environ, LEDGER_URL=srv.url, LEDGER_KEY=srv.runtime_key, LEDGER_ADMIN_KEY=srv.admin_key,
                    RUNTIME=srv.runtime_key, ADMIN=srv.admin_key,
                    PYTHONPATH=str(s.SDK) + os.pathsep + os.environ.get("PYTHONPATH", ""))

    def test_the_program_runs(self) -> None:
        (program,) = blocks(section("docs/runtimes.md"), "python")
        r = subprocess.run([sys.executable, "-c", program], env=self.env(), cwd=s.REPO,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        run_id, outcome = r.stdout.split()
        self.assertEqual(outcome, "succeeded")
        last = s.server().client().last_checkpoint(run_id)
        assert last is not None
        self.assertEqual(last.adapter_state_ref, "3")

    def test_the_example_command_runs(self) -> None:
        (cmd,) = blocks(section("docs/runtimes.md"), "sh")
        r = subprocess.run(["bash", "-c", cmd], env=self.env(), cwd=s.REPO, capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        enqueued = re.findall(r"^run (\S+): enqueued$", r.stdout, re.M)
        self.assertEqual(len(enqueued), 2, r.stdout)
        for rid in enqueued:
            self.assertIn("run %s: step 3/3 done" % rid, r.stdout)
            self.assertIn("run %s: succeeded" % rid, r.stdout)

    def test_the_example_resumes_after_a_kill(self) -> None:
        """Killed mid-run and started again, the example resumes after its last checkpoint."""
        env = self.env()
        kind = s.unique("toy")
        args = [sys.executable, str(s.REPO / "examples" / "worker-py" / "worker.py"), "--kind", kind,
                "--steps", "4", "--step-time", "0.3", "--lease", "2"]
        first = subprocess.Popen(args + ["--enqueue", "1"], env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
        self.addCleanup(first.kill)
        line = s.read_line(first, re.compile(r"^run (\S+): step 2/4 done$"))
        run_id = line.split()[1].rstrip(":")
        first.kill()
        first.communicate()
        r = subprocess.run(args + ["--runs", "1"], env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("run %s: resuming after step 2 of 4 (attempt 2)" % run_id, r.stdout)
        self.assertNotIn("step 2/4 done", r.stdout)
        self.assertIn("run %s: step 4/4 done" % run_id, r.stdout)
        self.assertIn("run %s: succeeded" % run_id, r.stdout)

    def test_readme_links_to_the_section(self) -> None:
        readme = section("README.md")
        self.assertIn("docs/runtimes.md#write-a-runtime-in-python", readme)


if __name__ == "__main__":
    unittest.main()
