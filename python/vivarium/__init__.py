"""vivarium: what runs inside the sandbox's Python interpreter."""
