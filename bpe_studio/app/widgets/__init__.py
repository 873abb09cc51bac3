"""Small widgets the application's areas share (banner, splitters, token pane)."""
