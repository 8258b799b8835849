"""The catalogue screen: the cached listing of endpoints and datasets, searched and synced."""
