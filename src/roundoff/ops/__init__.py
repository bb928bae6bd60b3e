"""roundoff.ops"""
