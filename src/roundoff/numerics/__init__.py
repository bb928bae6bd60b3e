"""roundoff.numerics"""
