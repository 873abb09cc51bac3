"""A regular install works: the wheel built from this checkout, in a fresh virtual environment.

The tests run in an editable install, which finds everything in the checkout, so they
cannot see what a wheel leaves out (a sub-package, the sample corpus, the style sheet).
Here the wheel is built from a copy of the sources, installed with ``--no-deps`` into a
new venv, and run from a folder outside the repository: the ``bpe-studio`` console script
trains, the packages and compiled kernels load from the new venv, the resources are
inside it, and the main window opens (offscreen) with the sample corpus preselected. The
documentation comes with it: ``bpe-studio docs`` and every ``--help`` point to the copy
inside the venv, and Help › Documentation shows it.

Kept fast and offline: no build isolation (the build backend comes from the ``test``
extra) and ``--no-index``, so nothing is downloaded; the new venv reaches numpy, regex,
PySide6 and pyqtgraph through one ``.pth`` line naming this environment's site-packages.
A ``.pth`` line puts that folder *after* the new venv's own site-packages, and the
``.pth`` files inside it are not run, so this environment's editable-install finder stays
out; `test_installed_app_loads_from_the_fresh_venv` checks that too.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCES = ("pyproject.toml", "README.md", "core", "bpe_studio", "resources", "docs")
RESOURCES = ("icon.svg", "sample_corpus.txt", "style.qss")  # what the application opens
KERNELS = ("core.training._merge_kernel", "core.encode._bpe_kernel", "core.variants._picky_kernel")
# Checked only where they were built: without a C compiler the install succeeds without them.
BUILT_KERNELS = [name for name in KERNELS if importlib.util.find_spec(name) is not None]


@dataclass(frozen=True)
class Installed:
    wheel: Path
    sources: Path  # the copy the wheel was built from
    venv: Path
    site_packages: Path
    workdir: Path  # outside the repository

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def script(self) -> Path:
        return self.venv / "bin" / "bpe-studio"


def _run(args: list[str | Path], *, cwd: Path, timeout: float = 300, **extra_env: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "BPE_STUDIO_PURE_PYTHON")}
    env.update(
        QT_QPA_PLATFORM="offscreen",
        PYTHONNOUSERSITE="1",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PIP_NO_INPUT="1",
        **extra_env,
    )
    return subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def _check(result: subprocess.CompletedProcess[str], what: str) -> str:
    assert result.returncode == 0, f"{what} failed ({result.returncode}):\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    root = tmp_path_factory.mktemp("wheel")
    # Build from a copy: an in-tree build would leave build/ and *.egg-info in the checkout,
    # and a stale build/ could smuggle deleted files into the wheel.
    sources = root / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.so", "*.egg-info", "build")
    for name in SOURCES:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, sources / name, ignore=ignore)
        else:
            sources.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, sources / name)

    wheels = root / "dist"
    pip = [sys.executable, "-m", "pip"]
    _check(
        # (the kernels unoptimized, which compiles them several times faster: this checks what
        # the wheel holds and that it loads, not its speed; CFLAGS come after Python's own)
        _run([*pip, "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", wheels, sources], cwd=root,
             CFLAGS="-O0"),
        "pip wheel",
    )
    (wheel,) = wheels.glob("bpe_studio-*.whl")

    venv = root / "venv"
    _check(_run([sys.executable, "-m", "venv", "--without-pip", venv], cwd=root), "python -m venv")
    python = venv / "bin" / "python"
    _check(_run([*pip, "--python", python, "install", "--no-deps", "--no-index", wheel], cwd=root), "pip install")

    site_packages = Path(
        _check(_run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=root), "purelib").strip()
    )
    ours = dict.fromkeys(sysconfig.get_paths()[key] for key in ("purelib", "platlib"))
    (site_packages / "_bpe_studio_test_dependencies.pth").write_text("".join(f"{p}\n" for p in ours))

    workdir = root / "elsewhere"
    workdir.mkdir()
    assert not workdir.resolve().is_relative_to(REPO)
    return Installed(wheel, sources, venv, site_packages, workdir)


def test_wheel_holds_every_module_the_resources_and_the_kernels(installed: Installed) -> None:
    names = set(zipfile.ZipFile(installed.wheel).namelist())

    modules = {
        path.relative_to(installed.sources).as_posix()
        for package in ("core", "bpe_studio")
        for path in (installed.sources / package).rglob("*.py")
    }
    missing = sorted(modules - names)
    assert not missing, f"not in the wheel (add the package to [tool.setuptools] packages): {missing}"

    assert "core/py.typed" in names
    resources = sorted(n.removeprefix("bpe_studio/resources/") for n in names if n.startswith("bpe_studio/resources/"))
    assert resources == sorted(RESOURCES)  # the screenshot goes with the documentation
    docs = sorted(n.removeprefix("bpe_studio/docs/") for n in names if n.startswith("bpe_studio/docs/"))
    pages = sorted(f"docs/{p.name}" for p in (installed.sources / "docs").glob("*.md"))
    assert docs == sorted(["README.md", *pages, "resources/screenshot.png"])
    assert not [n for n in names if n.endswith(".c")]
    for kernel in BUILT_KERNELS:
        prefix = kernel.replace(".", "/") + "."
        assert any(n.startswith(prefix) and n.endswith((".so", ".pyd")) for n in names), kernel


def test_console_script_trains_outside_the_repository(installed: Installed) -> None:
    text = (REPO / "resources" / "sample_corpus.txt").read_text(encoding="utf-8")[:20_000]
    corpus = installed.workdir / "small corpus.txt"
    corpus.write_text(text, encoding="utf-8")
    out = installed.workdir / "tok"

    result = _run([installed.script, "train", corpus.name, "--vocab-size", "300", "--out", out.name], cwd=installed.workdir)

    stdout = _check(result, "bpe-studio train")
    assert stdout.strip(), "no summary printed"
    for name in ("vocab.json", "merges.txt", "tokenizer.json", "tokenizer_config.json"):
        assert (out / name).is_file(), name
    assert len(json.loads((out / "vocab.json").read_text(encoding="utf-8"))) == 300
    merges = [line for line in (out / "merges.txt").read_text(encoding="utf-8").splitlines() if not line.startswith("#")]
    assert len(merges) == 300 - 256


PROBE = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path

    import bpe_studio, core
    from bpe_studio.app.models.sample_corpus import SAMPLE_CORPUS_PATH
    from bpe_studio.app.resources import resource

    kernels = {}
    for name in KERNELS:
        module = __import__(name, fromlist=["_"])
        kernels[name] = module.__file__

    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication
    from bpe_studio.app.main_window import MainWindow

    app = QApplication([])
    settings = QSettings(str(Path("settings.ini").resolve()), QSettings.Format.IniFormat)
    window = MainWindow(settings=settings)
    window.show()
    app.processEvents()
    shown = {"corpus": window.settings_panel.corpus(), "style_sheet": window.styleSheet()}
    from bpe_studio.app.help_menu import DocsWindow, about_text
    window.help_actions["docs"].trigger()
    docs = window.findChild(DocsWindow)
    shown["docs"] = {"path": str(docs.current_path()), "text": docs.browser.toPlainText()[:2000],
                     "pages": docs.page_list.count()}
    shown["about"] = about_text(window)
    window.close()

    print(json.dumps({
        "prefix": sys.prefix,
        "packages": {"bpe_studio": bpe_studio.__file__, "core": core.__file__},
        "kernels": kernels,
        "resources": {name: str(resource(name)) for name in RESOURCES},
        "sample_corpus": str(SAMPLE_CORPUS_PATH),
        "window": shown,
        "finders": [getattr(f, "__name__", type(f).__name__) for f in sys.meta_path],
        "editable_modules": sorted(m for m in sys.modules if "__editable__" in m),
    }))
    """
)


def test_installed_app_loads_from_the_fresh_venv(installed: Installed) -> None:
    probe = f"KERNELS = {BUILT_KERNELS!r}\nRESOURCES = {RESOURCES!r}\n{PROBE}"
    found = json.loads(_check(_run([installed.python, "-c", probe], cwd=installed.workdir), "probe"))

    def inside_venv(path: str) -> bool:
        return Path(path).resolve().is_relative_to(installed.site_packages.resolve())

    assert Path(found["prefix"]).resolve() == installed.venv.resolve()
    # Nothing of the checkout or of this environment's editable install comes in.
    assert not [f for f in found["finders"] if "Editable" in f], found["finders"]
    assert found["editable_modules"] == []
    for name, path in {**found["packages"], **found["kernels"]}.items():
        assert inside_venv(path), f"{name} imported from {path}, not from the fresh venv"
    assert sorted(found["kernels"]) == sorted(BUILT_KERNELS)

    for name, path in found["resources"].items():
        assert inside_venv(path) and Path(path).is_file(), f"{name}: {path}"
    sample = Path(found["sample_corpus"])
    assert sample == Path(found["resources"]["sample_corpus.txt"]) and sample.is_file()
    assert sample.read_bytes() == (REPO / "resources" / "sample_corpus.txt").read_bytes()

    # A first launch preselects the sample corpus and applies the style sheet.
    assert found["window"]["corpus"] == str(sample)
    assert found["window"]["style_sheet"].strip()
    assert found["window"]["style_sheet"] == (REPO / "resources" / "style.qss").read_text(encoding="utf-8")

    # Help › Documentation shows the README shipped inside the venv; About says where things are.
    docs = found["window"]["docs"]
    assert inside_venv(docs["path"]) and Path(docs["path"]).name == "README.md", docs["path"]
    assert "pip install" in docs["text"] and docs["pages"] == 1 + len(list((installed.sources / "docs").glob("*.md")))
    about = found["window"]["about"]
    assert str(Path(found["packages"]["bpe_studio"]).parent) in about
    assert str(Path(docs["path"])) in about and str(installed.workdir / "settings.ini") in about


def test_installed_help_points_to_docs_that_are_there(installed: Installed) -> None:
    for args in ([], ["train"], ["eval"], ["docs"]):
        stdout = _check(_run([installed.script, *args, "--help"], cwd=installed.workdir), f"{args} --help")
        match = re.search(r"^README\.md and docs/\*\.md are in (.+)$", stdout, re.M)  # on a line of its own
        assert match, stdout
        folder = Path(match.group(1))
        assert folder.resolve().is_relative_to(installed.site_packages.resolve()), folder
        assert (folder / "README.md").is_file() and (folder / "docs" / "semantics.md").is_file()

    listing = _check(_run([installed.script, "docs"], cwd=installed.workdir), "bpe-studio docs")
    assert "formats" in listing and str(folder / "docs" / "formats.md") in listing
    page = _check(_run([installed.script, "docs", "semantics"], cwd=installed.workdir), "bpe-studio docs semantics")
    assert page == (installed.sources / "docs" / "semantics.md").read_text(encoding="utf-8")
