"""Screenshots of the window on a real X server, at laptop and desktop screen sizes.

    xvfb-run -a -s "-screen 0 1024x700x24" .venv/bin/python tools/window_screenshots.py /tmp/window-1024.png
    xvfb-run -a -s "-screen 0 1600x1000x24" .venv/bin/python tools/window_screenshots.py /tmp/window-1600.png

Opens the window as `bpe-studio` does (settings in a fresh folder, so nothing of a user's
is read or changed), trains on the built-in sample with one click on Train, waits until
the result is browsable and grabs the whole screen with ImageMagick's ``import`` (the
window where the window manager would see it: whether it fits the screen shows). Prints
the window's frame and its minimum size. Needs the X libraries the README lists, Xvfb
and ImageMagick (``apt-get install xvfb imagemagick``). ``--corpus`` trains on a file
instead of the sample; ``--tab explore`` grabs the Explore tab.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="the PNG to write")
    parser.add_argument("--corpus", help="a corpus to train on (default: the built-in sample)")
    parser.add_argument("--tab", choices=["train", "explore", "evaluate"], default="train")
    args = parser.parse_args()

    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from bpe_studio import MainWindow

    app = QApplication(sys.argv[:1])
    settings = QSettings(str(Path(tempfile.mkdtemp(prefix="bpe-studio-shots-")) / "settings.ini"),
                         QSettings.Format.IniFormat)
    window = MainWindow(corpus=args.corpus, settings=settings)
    window.ask_before_quitting = False
    window.show()

    def pump(seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            app.processEvents()
            time.sleep(0.01)

    pump(1.0)
    window.start_training()
    while window.is_training() or window.tokenizer is None:
        pump(0.05)
    window.tabs.setCurrentIndex(["train", "explore", "evaluate"].index(args.tab))
    pump(1.5)
    frame, minimum = window.frameGeometry(), window.minimumSizeHint()
    print(f"window at {frame.x()},{frame.y()} size {frame.width()}x{frame.height()}, "
          f"minimum {minimum.width()}x{minimum.height()}")
    subprocess.run(["import", "-window", "root", args.out], check=True)
    window.close()
    pump(0.3)


if __name__ == "__main__":
    main()
