"""The account screen: signing up and signing in to the marketplace."""
