"""roundoff.policy"""
