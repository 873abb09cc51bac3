"""Qt-free models: the state that views read and repaint from (a test keeps Qt out of here)."""
