"""The `local` environment's isolation: finding bubblewrap, the per-trial sandbox argv, and the process keeper."""
