"""model.ipupkg: the lowered program written as one checksummed file, read back and validated."""
