"""The policies screen: editing, checking, simulating and saving the spending policy."""
