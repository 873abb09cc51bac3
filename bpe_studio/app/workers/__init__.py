"""Background work for the window: jobs in worker threads, and the training process."""
