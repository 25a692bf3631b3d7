"""A PEP 517 build backend for ledger_client in the standard library alone: it writes the
wheel (the package, py.typed included) and the sdist itself, so that building needs nothing
from a package index (pyproject.toml's build-system.requires is empty)."""

from __future__ import annotations

import base64
import hashlib
import importlib
import io
import os
import re
import tarfile
import time
import zipfile
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "ledger_client"


def _project() -> Dict[str, Any]:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    try:
        tomllib = importlib.import_module("tomllib")  # Python 3.11+
    except ImportError:  # Python 3.10: the few flat keys used here
        section = text.split("[project]", 1)[1].split("\n[", 1)[0]
        return {k: v for k, v in re.findall(r'^([\w-]+)\s*=\s*"([^"]*)"', section, re.M)}
    project: Dict[str, Any] = tomllib.loads(text)["project"]
    return project


def _names() -> Tuple[str, str, Dict[str, Any]]:
    p = _project()
    dist = re.sub(r"[-_.]+", "_", p["name"]).lower()
    return dist, p["version"], p


def _metadata() -> str:
    _, version, p = _names()
    lines = ["Metadata-Version: 2.1", "Name: %s" % p["name"], "Version: %s" % version,
             "Summary: %s" % p.get("description", ""), "Requires-Python: %s" % p.get("requires-python", ">=3.10")]
    for c in p.get("classifiers", []) if isinstance(p.get("classifiers"), list) else []:
        lines.append("Classifier: %s" % c)
    readme = ROOT / "README.md"
    lines.append("Description-Content-Type: text/markdown")
    return "\n".join(lines) + "\n\n" + (readme.read_text(encoding="utf-8") if readme.exists() else "")


def _package_files() -> List[Path]:
    return sorted(f for f in (ROOT / PACKAGE).rglob("*")
                  if f.is_file() and "__pycache__" not in f.parts and f.suffix in (".py", ".typed"))


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (name, digest, len(data))


def _write_wheel(directory: str, files: List[Tuple[str, bytes]]) -> str:
    dist, version, _ = _names()
    name = "%s-%s-py3-none-any.whl" % (dist, version)
    info = "%s-%s.dist-info" % (dist, version)
    files = files + [
        (info + "/METADATA", _metadata().encode("utf-8")),
        (info + "/WHEEL", b"Wheel-Version: 1.0\nGenerator: ledger_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
    ]
    record = [_record_line(n, d) for n, d in files] + [info + "/RECORD,,"]
    files.append((info + "/RECORD", ("\n".join(record) + "\n").encode("utf-8")))
    with zipfile.ZipFile(os.path.join(directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in files:
            zi = zipfile.ZipInfo(n, date_time=(2020, 1, 1, 0, 0, 0))
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, d)
    return name


def get_requires_for_build_wheel(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_editable(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def build_wheel(wheel_directory: str, config_settings: Optional[Dict[str, Any]] = None,
                metadata_directory: Optional[str] = None) -> str:
    files = [(f.relative_to(ROOT).as_posix(), f.read_bytes()) for f in _package_files()]
    return _write_wheel(wheel_directory, files)


def build_editable(wheel_directory: str, config_settings: Optional[Dict[str, Any]] = None,
                   metadata_directory: Optional[str] = None) -> str:
    """PEP 660: a wheel holding a .pth file that puts this source tree on sys.path."""
    dist, _, _ = _names()
    return _write_wheel(wheel_directory, [("%s.pth" % dist, (str(ROOT) + "\n").encode("utf-8"))])


def build_sdist(sdist_directory: str, config_settings: Optional[Dict[str, Any]] = None) -> str:
    dist, version, _ = _names()
    base = "%s-%s" % (dist, version)
    name = base + ".tar.gz"
    members = [ROOT / "pyproject.toml", ROOT / "README.md", ROOT / "tools" / "ledger_build.py"] + _package_files()
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as t:
        def add(arcname: str, data: bytes) -> None:
            ti = tarfile.TarInfo(base + "/" + arcname)
            ti.size, ti.mtime, ti.mode = len(data), int(time.time()), 0o644
            t.addfile(ti, io.BytesIO(data))
        for f in members:
            if f.exists():
                add(f.relative_to(ROOT).as_posix(), f.read_bytes())
        add("PKG-INFO", _metadata().encode("utf-8"))
    return name
