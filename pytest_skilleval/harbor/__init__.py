"""Everything that talks to Harbor: staging tasks, running trials, the `local` env, the `replay` agent, the verifier adapter."""
