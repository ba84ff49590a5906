"""SGD-family optimizers (NAG, Signum, FTML, LARS, LAMB, LBSGD, DCASGD, SGLD)."""
__all__: list = []
