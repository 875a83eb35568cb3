"""What both controllers share: start-up, the queue, caches, Events, HTTP endpoints, leadership
and the shard view. Imports neither the scheduler operator nor the policy controller."""
