"""The usage screen: what the service charged, reconciled with the decisions that allowed it."""
