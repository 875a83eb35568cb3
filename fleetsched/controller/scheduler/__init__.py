"""The scheduler operator: decide -> compute (the pure core, off the event loop) -> reserve -> write."""
