__version__ = "0.5.3"
