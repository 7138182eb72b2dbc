__version__ = "0.30.0"
