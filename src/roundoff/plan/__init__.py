"""roundoff.plan"""
