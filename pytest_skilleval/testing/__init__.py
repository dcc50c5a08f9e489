"""Test kit shipped with the package: a scripted model server that real agents, Harbor and litellm talk to."""
