"""The desktop application (PySide6 + pyqtgraph), one sub-package per area:

- `bpe_studio.app.models`: Qt-free state the views read (training run, session, vocabulary columns);
- `bpe_studio.app.workers`: background work (threads and the training process);
- `bpe_studio.app.controllers`: what the window's actions do (training, export, sessions,
  encoding, closing), QObjects without widgets, testable without a window;
- `bpe_studio.app.train`, `.explore`, `.compare`, `.encode`: the views of each area;
- `bpe_studio.app.widgets`: small widgets the areas share;
- `bpe_studio.app.main_window` assembles them and connects them to the controllers;
  `bpe_studio.app.application` starts Qt.
"""
