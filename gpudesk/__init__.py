"""gpudesk: size, rent, sync, train and watch cloud GPUs from one desktop app."""

__version__ = "0.1.0"
