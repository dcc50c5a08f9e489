"""pytest hooks only; each delegates to a module with one job."""
