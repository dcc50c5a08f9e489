"""The grading engine: reads a trial's trajectory and scores it. Imports neither pytest nor Harbor's runtime."""
