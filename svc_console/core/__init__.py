"""The domain: requests, states, money, risk and inert text. Knows nothing of I/O or Textual."""
