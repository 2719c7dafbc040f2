"""Model architectures and GPU products as data, each number with its source."""
