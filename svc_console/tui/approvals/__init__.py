"""The approvals screen (home): the queue of requests, their detail and history."""
