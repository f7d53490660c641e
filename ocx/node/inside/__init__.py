"""The relay's old module path, kept for runner pages already on deployed wikis (D14)."""
