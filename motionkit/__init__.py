__version__ = "0.32.1"
