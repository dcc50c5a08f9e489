"""The skill as the plugin reads it: its folder, dataset, evals/config.yml, case ids, native tasks and run plan."""
