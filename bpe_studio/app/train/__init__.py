"""The Train tab: settings, progress, the live merges table, charts and the result summary."""
