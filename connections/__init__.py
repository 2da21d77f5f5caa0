"""Apps connected to a mind by OAuth: a hosted assistant acting as one mind's agent on /mcp."""
