"""The grants screen: decisions the operator made for a while."""
