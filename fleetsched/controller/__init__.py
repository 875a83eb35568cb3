"""The two controllers (scheduler operator, policy controller) and the runtime they share."""
