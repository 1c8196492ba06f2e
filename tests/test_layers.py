"""koed_core stays free of Streamlit, so notebooks and the CLI can use it."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import koed_core


def test_koed_core_never_imports_streamlit() -> None:
    modules = [f"koed_core.{m.name}" for m in pkgutil.iter_modules(koed_core.__path__)]
    assert "koed_core.dataset" in modules
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "print('streamlit' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
