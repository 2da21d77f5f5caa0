"""What the core apps (accounts, minds, memories) share: the errors they raise."""
