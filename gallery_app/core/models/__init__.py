"""Model specs, where their files come from, and the runtimes that run them."""
