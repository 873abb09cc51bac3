"""What the window's actions do, without a window: training, export, sessions, encoding.

Each controller is a QObject with signals and no widgets, so it can be driven and tested
alone; the main window connects its panels to them.
"""
