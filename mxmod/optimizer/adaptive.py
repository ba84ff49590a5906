"""Adaptive optimizers (Adam, AdaGrad, RMSProp, AdaDelta, Ftrl, Adamax, Nadam, AdamW,
GroupAdaGrad)."""
__all__: list = []
